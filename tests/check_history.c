// SPDX-License-Identifier: MIT
/*
 * The local history in a temporary directory: round trips, window overlap,
 * filters, order, a reader beside a writer, and damaged rows or files.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>
#include <sqlite3.h>

#include "history.h"
#include "suites.h"

#define MAX_ROWS 16

struct seen_row {
	int64_t id, start_ns, end_ns;
	char type[16], app[16], labels[32];
	uint64_t samples;
	uint32_t processes;
	bool has_pprof;
	size_t pprof_len;
	uint8_t pprof[64];
};

struct seen {
	int n;
	struct seen_row rows[MAX_ROWS];
	int stop_after; /* return 1 from the callback after this many rows; 0: never */
};

static char tmpdir[64];
static char datadir[96];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/ember-check-history-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(datadir, sizeof(datadir), "%s/data", tmpdir);
}

static void teardown(void)
{
	static const char *const files[] = {"history.db", "history.db-wal", "history.db-shm"};
	char path[160];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", datadir, files[i]);
		unlink(path);
	}
	rmdir(datadir);
	rmdir(tmpdir);
}

static int collect(const struct history_row *row, void *arg)
{
	struct seen *seen = arg;
	struct seen_row *r;

	ck_assert_int_lt(seen->n, MAX_ROWS);
	r = &seen->rows[seen->n++];
	r->id = row->id;
	r->start_ns = row->meta.start_ns;
	r->end_ns = row->meta.end_ns;
	snprintf(r->type, sizeof(r->type), "%s", row->meta.type);
	snprintf(r->app, sizeof(r->app), "%s", row->meta.app);
	snprintf(r->labels, sizeof(r->labels), "%s", row->meta.labels);
	r->samples = row->meta.samples;
	r->processes = row->meta.processes;
	r->has_pprof = row->pprof != NULL;
	r->pprof_len = row->pprof_len;
	if (row->pprof && row->pprof_len <= sizeof(r->pprof))
		memcpy(r->pprof, row->pprof, row->pprof_len);
	return seen->stop_after && seen->n == seen->stop_after ? 1 : 0;
}

/* The stored "pprof" is opaque to the history: a recognizable byte pattern will do. */
static int64_t put(struct history *h, int64_t start, int64_t end, const char *type, const char *app,
		   uint8_t fill)
{
	struct history_meta m = {
		.start_ns = start,
		.end_ns = end,
		.type = type,
		.app = app,
		.labels = "env=test\nservice_name=x",
		.samples = 7,
		.processes = 2,
	};
	uint8_t buf[40];
	int64_t id = -1;

	memset(buf, fill, sizeof(buf));
	buf[0] = (uint8_t)start;
	ck_assert_int_eq(history_put(h, &m, buf, sizeof(buf), &id), 0);
	ck_assert_int_gt(id, 0);
	return id;
}

static struct seen query(struct history *h, int64_t since, int64_t until, const char *type,
			 const char *app, bool with_blob)
{
	struct history_query q = {.since_ns = since, .until_ns = until, .type = type, .app = app};
	struct seen seen = {0};

	ck_assert_int_eq(history_query(h, &q, with_blob, collect, &seen), 0);
	return seen;
}

static struct history *open_rw(void)
{
	const char *err = NULL;
	struct history *h = history_open(datadir, false, &err);

	ck_assert_msg(h != NULL, "history_open: %s", err ? err : "?");
	return h;
}

static void sql(const char *stmt)
{
	char path[160], *msg = NULL;
	sqlite3 *db;

	snprintf(path, sizeof(path), "%s/history.db", datadir);
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 2000);
	ck_assert_msg(sqlite3_exec(db, stmt, NULL, NULL, &msg) == SQLITE_OK, "%s: %s", stmt, msg);
	sqlite3_close(db);
}

START_TEST(test_round_trip)
{
	struct history *h = open_rw();
	struct seen s;
	struct stat st;
	int64_t id;

	ck_assert_int_eq(stat(datadir, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0700);
	ck_assert_str_eq(strrchr(history_path(h), '/'), "/history.db");
	id = put(h, 100, 200, "cpu", "checkout", 0xab);
	history_close(h);

	h = open_rw(); /* reopening keeps the rows and the schema */
	s = query(h, INT64_MIN, INT64_MAX, NULL, NULL, true);
	ck_assert_int_eq(s.n, 1);
	ck_assert_int_eq(s.rows[0].id, id);
	ck_assert_int_eq(s.rows[0].start_ns, 100);
	ck_assert_int_eq(s.rows[0].end_ns, 200);
	ck_assert_str_eq(s.rows[0].type, "cpu");
	ck_assert_str_eq(s.rows[0].app, "checkout");
	ck_assert_str_eq(s.rows[0].labels, "env=test\nservice_name=x");
	ck_assert_uint_eq(s.rows[0].samples, 7);
	ck_assert_uint_eq(s.rows[0].processes, 2);
	ck_assert(s.rows[0].has_pprof);
	ck_assert_uint_eq(s.rows[0].pprof_len, 40);
	ck_assert_uint_eq(s.rows[0].pprof[0], 100);
	ck_assert_uint_eq(s.rows[0].pprof[39], 0xab);

	s = query(h, INT64_MIN, INT64_MAX, NULL, NULL, false);
	ck_assert_int_eq(s.n, 1);
	ck_assert(!s.rows[0].has_pprof);
	ck_assert_uint_eq(s.rows[0].samples, 7);
	history_close(h);
}
END_TEST

/* Rows [10,20) [20,30) [30,40): a window [since, until) takes every row it overlaps. */
START_TEST(test_window_overlap)
{
	static const struct {
		int64_t since, until;
		int n, first;
	} cases[] = {
		{20, 30, 1, 20}, {15, 25, 2, 10},
		{19, 21, 2, 10}, {0, 10, 0, 0},
		{0, 11, 1, 10},	 {40, 50, 0, 0},
		{39, 50, 1, 30}, {25, 25, 0, 0},
		{30, 20, 0, 0},	 {INT64_MIN, INT64_MAX, 3, 10},
	};
	struct history *h = open_rw();

	put(h, 30, 40, "cpu", "", 1);
	put(h, 10, 20, "cpu", "", 2);
	put(h, 20, 30, "cpu", "", 3);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct seen s = query(h, cases[i].since, cases[i].until, "cpu", NULL, false);

		ck_assert_msg(s.n == cases[i].n, "[%lld, %lld): %d rows, want %d",
			      (long long)cases[i].since, (long long)cases[i].until, s.n,
			      cases[i].n);
		if (s.n)
			ck_assert_int_eq(s.rows[0].start_ns, cases[i].first);
	}
	history_close(h);
}
END_TEST

START_TEST(test_filters)
{
	struct history *h = open_rw();
	struct seen s;

	put(h, 10, 20, "cpu", "", 1);
	put(h, 10, 20, "mem", "", 2);
	put(h, 20, 30, "cpu", "checkout", 3);
	put(h, 20, 30, "mem", "checkout", 4);

	s = query(h, INT64_MIN, INT64_MAX, "cpu", NULL, false);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.rows[0].type, "cpu");
	ck_assert_str_eq(s.rows[1].type, "cpu");
	s = query(h, INT64_MIN, INT64_MAX, "mem", "checkout", true);
	ck_assert_int_eq(s.n, 1);
	ck_assert_int_eq(s.rows[0].start_ns, 20);
	ck_assert_uint_eq(s.rows[0].pprof[1], 4);
	s = query(h, INT64_MIN, INT64_MAX, NULL, "", false);
	ck_assert_int_eq(s.n, 2);
	s = query(h, INT64_MIN, INT64_MAX, "wall", NULL, false);
	ck_assert_int_eq(s.n, 0);
	history_close(h);
}
END_TEST

/* Oldest first; rows starting together come in the order they were stored. */
START_TEST(test_order)
{
	struct history *h = open_rw();
	int64_t a, b, c, d;
	struct seen s;

	c = put(h, 50, 60, "cpu", "", 1);
	a = put(h, -5, 60, "cpu", "", 2);
	b = put(h, 10, 60, "cpu", "", 3);
	d = put(h, 50, 55, "cpu", "", 4);
	for (int with_type = 0; with_type < 2; with_type++) {
		s = query(h, INT64_MIN, INT64_MAX, with_type ? "cpu" : NULL, NULL, false);
		ck_assert_int_eq(s.n, 4);
		ck_assert_int_eq(s.rows[0].id, a);
		ck_assert_int_eq(s.rows[1].id, b);
		ck_assert_int_eq(s.rows[2].id, c);
		ck_assert_int_eq(s.rows[3].id, d);
	}
	history_close(h);
}
END_TEST

START_TEST(test_callback_stops)
{
	struct history_query q = {.since_ns = INT64_MIN, .until_ns = INT64_MAX};
	struct history *h = open_rw();
	struct seen s = {.stop_after = 2};

	for (int i = 0; i < 4; i++)
		put(h, i * 10, i * 10 + 10, "cpu", "", 1);
	ck_assert_int_eq(history_query(h, &q, true, collect, &s), 1);
	ck_assert_int_eq(s.n, 2);
	/* the statement was reset: the next query starts from the beginning */
	s = query(h, INT64_MIN, INT64_MAX, NULL, NULL, true);
	ck_assert_int_eq(s.n, 4);
	history_close(h);
}
END_TEST

START_TEST(test_put_refuses_bad_input)
{
	struct history_meta m = {.start_ns = 10, .end_ns = 20, .type = "cpu"};
	struct history *h = open_rw();
	uint8_t buf[4] = {1, 2, 3, 4};

	ck_assert_int_eq(history_put(h, &m, buf, 0, NULL), -EINVAL);
	ck_assert_int_eq(history_put(h, &m, NULL, 4, NULL), -EINVAL);
	m.type = NULL;
	ck_assert_int_eq(history_put(h, &m, buf, sizeof(buf), NULL), -EINVAL);
	m.type = "";
	ck_assert_int_eq(history_put(h, &m, buf, sizeof(buf), NULL), -EINVAL);
	m.type = "cpu";
	m.start_ns = 30;
	ck_assert_int_eq(history_put(h, &m, buf, sizeof(buf), NULL), -EINVAL);
	m.start_ns = 10;
	ck_assert_int_eq(history_put(h, &m, buf, sizeof(buf), NULL), 0); /* NULL app, labels ok */
	ck_assert_int_eq(query(h, INT64_MIN, INT64_MAX, NULL, NULL, false).n, 1);
	history_close(h);
}
END_TEST

/*
 * emberctl opens read-only while emberd writes: committed rows are visible,
 * an open write transaction neither blocks the reader nor shows through.
 */
START_TEST(test_reader_beside_writer)
{
	struct history *w = open_rw(), *r;
	char path[160];
	const char *err = NULL;
	sqlite3 *raw;
	struct seen s;
	uint8_t buf[4] = {0};
	struct history_meta m = {.start_ns = 1, .end_ns = 2, .type = "cpu"};

	put(w, 10, 20, "cpu", "", 1);
	r = history_open(datadir, true, &err);
	ck_assert_msg(r != NULL, "read-only open: %s", err ? err : "?");
	ck_assert_int_eq(history_put(r, &m, buf, sizeof(buf), NULL), -EROFS);

	snprintf(path, sizeof(path), "%s/history.db", datadir);
	ck_assert_int_eq(sqlite3_open(path, &raw), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(raw,
				      "BEGIN IMMEDIATE; INSERT INTO profiles (start_ns, end_ns, "
				      "type, app, labels, samples, processes, raw_size, blob) "
				      "VALUES (5, 6, 'cpu', '', '', 1, 1, 1, x'00')",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	s = query(r, INT64_MIN, INT64_MAX, NULL, NULL, true);
	ck_assert_int_eq(s.n, 1);
	ck_assert(s.rows[0].has_pprof);
	ck_assert_int_eq(sqlite3_exec(raw, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(raw);

	put(w, 20, 30, "cpu", "", 2);
	s = query(r, INT64_MIN, INT64_MAX, NULL, NULL, true);
	ck_assert_int_eq(s.n, 2);
	history_close(r);
	history_close(w);
}
END_TEST

/* A damaged blob is reported as pprof == NULL, and the rows around it still come. */
START_TEST(test_corrupt_blob)
{
	struct history *h = open_rw();
	char stmt[160];
	int64_t bad, short_raw;
	struct seen s;

	put(h, 10, 20, "cpu", "", 1);
	bad = put(h, 20, 30, "cpu", "", 2);
	short_raw = put(h, 30, 40, "cpu", "", 3);
	put(h, 40, 50, "cpu", "", 4);
	snprintf(stmt, sizeof(stmt), "UPDATE profiles SET blob = x'28b52ffd00ff' WHERE id = %lld",
		 (long long)bad);
	sql(stmt);
	/* a blob that decompresses fine but not to the size it was stored with */
	snprintf(stmt, sizeof(stmt), "UPDATE profiles SET raw_size = 39 WHERE id = %lld",
		 (long long)short_raw);
	sql(stmt);
	sql("UPDATE profiles SET samples = -5, processes = 99999999999 WHERE start_ns = 40");

	s = query(h, INT64_MIN, INT64_MAX, "cpu", NULL, true);
	ck_assert_int_eq(s.n, 4);
	ck_assert(s.rows[0].has_pprof);
	ck_assert(!s.rows[1].has_pprof);
	ck_assert_int_eq(s.rows[1].id, bad);
	ck_assert_uint_eq(s.rows[1].pprof_len, 0);
	ck_assert(!s.rows[2].has_pprof);
	ck_assert(s.rows[3].has_pprof);
	ck_assert_uint_eq(s.rows[3].samples, 0);
	ck_assert_uint_eq(s.rows[3].processes, UINT32_MAX);
	history_close(h);
}
END_TEST

START_TEST(test_missing_read_only)
{
	const char *err = NULL;
	struct history *h;
	struct stat st;

	errno = 0;
	h = history_open(datadir, true, &err);
	ck_assert_ptr_null(h);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(stat(datadir, &st), -1); /* a reader creates nothing */

	ck_assert_int_eq(mkdir(datadir, 0700), 0);
	errno = 0;
	ck_assert_ptr_null(history_open(datadir, true, NULL));
	ck_assert_int_eq(errno, ENOENT);
}
END_TEST

START_TEST(test_newer_schema)
{
	const char *err = NULL;

	history_close(open_rw());
	sql("PRAGMA user_version = 99");
	errno = 0;
	ck_assert_ptr_null(history_open(datadir, false, &err));
	ck_assert_int_eq(errno, EPROTO);
	ck_assert_ptr_nonnull(err);
	ck_assert_ptr_null(history_open(datadir, true, NULL));
}
END_TEST

START_TEST(test_not_a_database)
{
	char path[160];
	FILE *f;

	ck_assert_int_eq(mkdir(datadir, 0700), 0);
	snprintf(path, sizeof(path), "%s/history.db", datadir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("this is not a database, but it is long enough to look like a header.....", f);
	fclose(f);
	ck_assert_ptr_null(history_open(datadir, true, NULL));
	ck_assert_ptr_null(history_open(datadir, false, NULL));
	history_close(NULL);
}
END_TEST

Suite *history_suite(void)
{
	Suite *s = suite_create("history");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_window_overlap);
	tcase_add_test(tc, test_filters);
	tcase_add_test(tc, test_order);
	tcase_add_test(tc, test_callback_stops);
	tcase_add_test(tc, test_put_refuses_bad_input);
	tcase_add_test(tc, test_reader_beside_writer);
	tcase_add_test(tc, test_corrupt_blob);
	tcase_add_test(tc, test_missing_read_only);
	tcase_add_test(tc, test_newer_schema);
	tcase_add_test(tc, test_not_a_database);
	suite_add_tcase(s, tc);
	return s;
}
