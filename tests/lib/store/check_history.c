// SPDX-License-Identifier: MIT
/*
 * The local history in a temporary directory: round trips, window overlap,
 * filters, order, a reader beside a writer, damaged rows or files, the push
 * queue, and retention (age, size, unsent rows, the file shrinking).
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>
#include <sqlite3.h>

#include "history.h"
#include "pprof.h"
#include "rollup.h"
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
	static const char *const files[] = {"history.db", "history.db-wal", "history.db-shm",
					    "history.db-reserve"};
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

/* What the heap holds, when malloc is glibc's (not under AddressSanitizer): else 0. */
static uint64_t heap_in_use(void)
{
#ifdef EMBER_ASAN_ALLOCATOR
	return 0;
#else
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
#endif
}

/*
 * A writer that stores rarely (the rollups) hands back its page cache and its
 * compression context between uses, and stores as before after it.
 */
START_TEST(test_release_memory)
{
	enum { LEN = 512 * 1024 };
	struct history_meta m = {
		.start_ns = 1, .end_ns = 2, .type = "cpu", .app = "a", .labels = ""};
	uint8_t *buf = malloc(LEN);
	uint64_t x = 88172645463325252ull, sql_before, heap_before;
	struct history *h = open_rw();
	int64_t id;

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(history_set_cache_kib(h, 0), -EINVAL);
	ck_assert_int_eq(history_set_cache_kib(h, 64), 0);
	ck_assert_int_eq(history_set_cache_kib(h, 512), 0);
	for (size_t i = 0; i < LEN; i++) { /* xorshift: zstd cannot shrink it */
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
	ck_assert_int_eq(history_put(h, &m, buf, LEN, &id), 0);
	(void)query(h, INT64_MIN, INT64_MAX, NULL, NULL, false);
	sql_before = (uint64_t)sqlite3_memory_used();
	heap_before = heap_in_use();
	history_release_memory(h);
	/* the blob's 128 overflow pages were in the cache: most of them go */
	ck_assert_msg((uint64_t)sqlite3_memory_used() + 256 * 1024 < sql_before,
		      "SQLite holds %lld bytes after the release, %llu before",
		      (long long)sqlite3_memory_used(), (unsigned long long)sql_before);
	/* and the compression context, sized by a 512 KiB input, with them */
	if (heap_before)
		ck_assert_msg(heap_in_use() + 512 * 1024 < heap_before,
			      "heap in use %llu after the release, %llu before",
			      (unsigned long long)heap_in_use(), (unsigned long long)heap_before);
	m.start_ns = 3, m.end_ns = 4;
	ck_assert_int_eq(history_put(h, &m, buf, LEN, &id), 0);
	ck_assert_int_eq(query(h, INT64_MIN, INT64_MAX, NULL, NULL, false).n, 2);
	history_close(h);
	free(buf);
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

/* The WAL's size now (0 when there is none). */
static int64_t wal_bytes(void)
{
	char path[160];
	struct stat st;

	snprintf(path, sizeof(path), "%s/history.db-wal", datadir);
	return stat(path, &st) ? 0 : (int64_t)st.st_size;
}

#define PUT_ALL_ROWS 12

/* Row i of test_put_all's interval: two types, six applications. */
static struct history_put put_all_row(int i, uint8_t *buf, size_t len, char *app, size_t app_len)
{
	snprintf(app, app_len, "app%d", i / 2);
	memset(buf, 'a' + i, len);
	return (struct history_put){.meta = {.start_ns = 100,
					     .end_ns = 110,
					     .type = i % 2 ? "memory_growth" : "cpu",
					     .app = app,
					     .labels = "env=test",
					     .samples = (uint64_t)i + 1,
					     .processes = 1},
				    .pprof = buf,
				    .len = len};
}

/*
 * An interval's profiles in one transaction: every one stored and read back,
 * with a fraction of the WAL that as many single puts write; a bad one among
 * them stores none.
 */
START_TEST(test_put_all)
{
	static uint8_t bufs[PUT_ALL_ROWS][40];
	char apps[PUT_ALL_ROWS][8];
	struct history_put v[PUT_ALL_ROWS];
	struct history *h = open_rw(), *ro;
	int64_t one_by_one, at_once;
	struct seen seen;

	for (int i = 0; i < PUT_ALL_ROWS; i++)
		v[i] = put_all_row(i, bufs[i], sizeof(bufs[i]), apps[i], sizeof(apps[i]));
	/* the same rows one by one, then at once, each from an empty WAL */
	sql("PRAGMA wal_checkpoint(TRUNCATE)");
	ck_assert_int_eq(wal_bytes(), 0);
	for (int i = 0; i < PUT_ALL_ROWS; i++)
		ck_assert_int_eq(history_put(h, &v[i].meta, v[i].pprof, v[i].len, NULL), 0);
	one_by_one = wal_bytes();
	sql("DELETE FROM profiles; PRAGMA wal_checkpoint(TRUNCATE)");
	ck_assert_int_eq(wal_bytes(), 0);
	ck_assert_int_eq(history_put_all(h, v, PUT_ALL_ROWS), 0);
	at_once = wal_bytes();
	ck_assert_msg(at_once > 0 && at_once * 4 < one_by_one,
		      "the WAL took %lld bytes at once, %lld one by one", (long long)at_once,
		      (long long)one_by_one);

	seen = query(h, INT64_MIN, INT64_MAX, NULL, NULL, true);
	ck_assert_int_eq(seen.n, PUT_ALL_ROWS);
	for (int i = 0; i < PUT_ALL_ROWS; i++) {
		ck_assert_str_eq(seen.rows[i].type, v[i].meta.type);
		ck_assert_str_eq(seen.rows[i].app, apps[i]);
		ck_assert_uint_eq(seen.rows[i].samples, (uint64_t)i + 1);
		ck_assert_uint_eq(seen.rows[i].pprof_len, sizeof(bufs[i]));
		ck_assert_mem_eq(seen.rows[i].pprof, bufs[i], sizeof(bufs[i]));
	}

	/* one bad row (no type): none of the others is stored either */
	v[PUT_ALL_ROWS / 2].meta.type = "";
	ck_assert_int_eq(history_put_all(h, v, PUT_ALL_ROWS), -EINVAL);
	ck_assert_int_eq(query(h, INT64_MIN, INT64_MAX, NULL, NULL, false).n, PUT_ALL_ROWS);
	/* and the handle goes on storing */
	ck_assert_int_eq(history_put_all(h, v, 2), 0);
	ck_assert_int_eq(query(h, INT64_MIN, INT64_MAX, NULL, NULL, false).n, PUT_ALL_ROWS + 2);

	ck_assert_int_eq(history_put_all(h, NULL, 0), 0);
	ck_assert_int_eq(history_put_all(h, NULL, 1), -EINVAL);
	ro = history_open(datadir, true, NULL);
	ck_assert_ptr_nonnull(ro);
	ck_assert_int_eq(history_put_all(ro, v, 1), -EROFS);
	history_close(ro);
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
	struct history_recovery r;
	char path[160], cmd[256];
	struct history *h;
	FILE *f;

	ck_assert_int_eq(mkdir(datadir, 0700), 0);
	snprintf(path, sizeof(path), "%s/history.db", datadir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("this is not a database, but it is long enough to look like a header.....", f);
	fclose(f);
	ck_assert_ptr_null(history_open(datadir, true, NULL));
	/* a writer moves it aside and starts afresh (check_history_damage.c) */
	h = history_open(datadir, false, NULL);
	ck_assert_ptr_nonnull(h);
	history_recovery_info(h, &r);
	ck_assert_uint_eq(r.moved, 1);
	history_close(h);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'/damaged-* '%s'/history.lock", datadir, datadir);
	ck_assert_int_eq(system(cmd), 0);
	history_close(NULL);
}
END_TEST

/* --- the push queue ------------------------------------------------------------------ */

static void expect_pending(struct history *h, bool newest, int64_t id)
{
	struct history_pending p;

	ck_assert_int_eq(history_next_pending(h, newest, &p), 0);
	ck_assert_int_eq(p.id, id);
	history_pending_free(&p);
}

static struct history_push_counts counts(struct history *h)
{
	struct history_push_counts c;

	ck_assert_int_eq(history_push_counts(h, &c), 0);
	return c;
}

START_TEST(test_pending_order)
{
	struct history *h = open_rw();
	struct history_pending p;
	int64_t a, b, c, d;

	ck_assert_int_eq(history_next_pending(h, false, &p), -ENOENT);
	ck_assert_int_eq(history_next_pending(h, true, &p), -ENOENT);
	b = put(h, 200, 300, "cpu", "x", 2);
	a = put(h, 100, 200, "cpu", "x", 1); /* stored late, started first */
	c = put(h, 300, 400, "cpu", "x", 3);
	d = put(h, 300, 400, "cpu", "y", 4); /* same start: the later id is newer */
	expect_pending(h, false, a);
	expect_pending(h, true, d);

	ck_assert_int_eq(history_next_pending(h, false, &p), 0);
	ck_assert_int_eq(p.start_ns, 100);
	ck_assert_int_eq(p.end_ns, 200);
	ck_assert_str_eq(p.type, "cpu");
	ck_assert_str_eq(p.app, "x");
	ck_assert_str_eq(p.labels, "env=test\nservice_name=x");
	ck_assert_uint_eq(p.attempts, 0);
	ck_assert_ptr_nonnull(p.pprof);
	ck_assert_uint_eq(p.pprof_len, 40);
	ck_assert_uint_eq(p.pprof[0], 100);
	ck_assert_uint_eq(p.pprof[1], 1);
	history_pending_free(&p);
	history_pending_free(&p); /* twice is harmless */

	ck_assert_int_eq(history_mark(h, a, HISTORY_SENT, NULL, 1000), 0);
	ck_assert_int_eq(history_mark(h, d, HISTORY_SENT, NULL, 1000), 0);
	expect_pending(h, false, b);
	expect_pending(h, true, c);
	history_close(h);
}
END_TEST

START_TEST(test_push_states)
{
	struct history *h = open_rw();
	struct history_push_counts c;
	struct history_pending p;
	int64_t a, b, d, e;
	uint64_t n = 99;
	int64_t oldest;
	struct seen s;

	a = put(h, 100, 200, "cpu", "x", 1);
	b = put(h, 200, 300, "cpu", "x", 2);
	d = put(h, 300, 400, "cpu", "x", 3);
	e = put(h, 400, 500, "cpu", "x", 4);
	c = counts(h);
	ck_assert_uint_eq(c.pending, 4);
	ck_assert_int_eq(c.oldest_pending_ns, 100);

	/* a failed attempt keeps the row pending and counts */
	ck_assert_int_eq(history_mark_attempt(h, a, "HTTP 503", 1000), 0);
	ck_assert_int_eq(history_mark_attempt(h, a, "timeout", 2000), 0);
	ck_assert_int_eq(history_next_pending(h, false, &p), 0);
	ck_assert_int_eq(p.id, a);
	ck_assert_uint_eq(p.attempts, 2);
	history_pending_free(&p);

	ck_assert_int_eq(history_mark(h, a, HISTORY_SENT, NULL, 3000), 0);
	ck_assert_int_eq(history_mark(h, b, HISTORY_REJECTED, "HTTP 400: bad labels", 3000), 0);
	ck_assert_int_eq(history_mark_attempt(h, b, "late", 3000), -ENOENT); /* not pending */
	ck_assert_int_eq(history_mark(h, d, HISTORY_PENDING, NULL, 3000), -EINVAL);
	ck_assert_int_eq(history_mark(h, 9999, HISTORY_SENT, NULL, 3000), -ENOENT);
	c = counts(h);
	ck_assert_uint_eq(c.pending, 2);
	ck_assert_uint_eq(c.sent, 1);
	ck_assert_uint_eq(c.rejected, 1);
	ck_assert_uint_eq(c.expired, 0);
	ck_assert_int_eq(c.oldest_pending_ns, 300);

	/* expiry: rows that started before the cutoff, pending only */
	ck_assert_int_eq(history_expire_pending(h, 400, 4000, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(history_expire_pending(h, 400, 4000, &n), 0);
	ck_assert_uint_eq(n, 0);
	c = counts(h);
	ck_assert_uint_eq(c.pending, 1);
	ck_assert_uint_eq(c.expired, 1);
	ck_assert_int_eq(history_pending_count(h, &n, &oldest), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(oldest, 400);
	ck_assert_uint_eq(c.sent, 1);
	ck_assert_int_eq(c.oldest_pending_ns, 400);
	expect_pending(h, false, e);

	/* expired rows stay in the local history */
	s = query(h, INT64_MIN, INT64_MAX, NULL, NULL, false);
	ck_assert_int_eq(s.n, 4);
	ck_assert_int_eq(history_mark(h, e, HISTORY_SENT, NULL, 5000), 0);
	c = counts(h);
	ck_assert_uint_eq(c.pending, 0);
	ck_assert_int_eq(c.oldest_pending_ns, 0);
	ck_assert_int_eq(history_pending_count(h, &n, &oldest), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(oldest, 0);
	ck_assert_int_eq(history_next_pending(h, true, &p), -ENOENT);
	history_close(h);
}
END_TEST

START_TEST(test_push_state_read_only)
{
	struct history *h = open_rw(), *ro;
	struct history_push_counts c;

	put(h, 100, 200, "cpu", "x", 1);
	ro = history_open(datadir, true, NULL);
	ck_assert_ptr_nonnull(ro);
	ck_assert_int_eq(history_push_counts(ro, &c), 0);
	ck_assert_uint_eq(c.pending, 1);
	ck_assert_int_eq(history_mark(ro, 1, HISTORY_SENT, NULL, 1), -EROFS);
	ck_assert_int_eq(history_state_set(ro, "k", "v"), -EROFS);
	history_close(ro);
	history_close(h);
}
END_TEST

/* A file as ember 0.1 wrote it: the v1 schema, rows but no push state. */
/* What a query returned, summed. */
struct sums {
	uint64_t samples, profiles, rows, rollups;
};

static int sum_rows(const struct history_row *row, void *arg)
{
	struct sums *s = arg;

	s->samples += row->meta.samples;
	s->profiles += row->profiles;
	s->rows++;
	s->rollups += row->rollup;
	ck_assert_uint_ge(row->profiles, 1);
	return 0;
}

static struct sums sum_query(struct history *h, int64_t since, int64_t until, const char *type,
			     const char *app, bool rollups)
{
	struct history_query q = {.since_ns = since,
				  .until_ns = until,
				  .type = type,
				  .app = app,
				  .use_rollups = rollups};
	struct sums s = {0};

	ck_assert_int_eq(history_query(h, &q, true, sum_rows, &s), 0);
	return s;
}

START_TEST(test_migrate_v1)
{
	uint64_t rows, bytes;
	struct history_push_counts c;
	struct history *h, *ro;
	struct seen s;
	int64_t id;

	ck_assert_int_eq(mkdir(datadir, 0700), 0);
	sql("CREATE TABLE profiles (id INTEGER PRIMARY KEY, start_ns INTEGER NOT NULL, "
	    "end_ns INTEGER NOT NULL, type TEXT NOT NULL, app TEXT NOT NULL, "
	    "labels TEXT NOT NULL, samples INTEGER NOT NULL, processes INTEGER NOT NULL, "
	    "raw_size INTEGER NOT NULL, blob BLOB NOT NULL);"
	    "CREATE INDEX profiles_type_start ON profiles(type, start_ns);"
	    "INSERT INTO profiles VALUES (1, 10, 20, 'cpu', 'a', 'service_name=a', 5, 1, 0, x'00');"
	    "INSERT INTO profiles VALUES (2, 20, 30, 'cpu', 'b', 'service_name=b', 6, 1, 0, x'00');"
	    "PRAGMA user_version = 1;");

	/* read-only: the old rows list, push state does not exist yet */
	ro = history_open(datadir, true, NULL);
	ck_assert_ptr_nonnull(ro);
	s = query(ro, INT64_MIN, INT64_MAX, NULL, NULL, false);
	ck_assert_int_eq(s.n, 2);
	/* no rollups in it: a query that wants them reads the raw rows */
	ck_assert_uint_eq(sum_query(ro, INT64_MIN, INT64_MAX, "cpu", NULL, true).rows, 2);
	ck_assert_int_eq(history_rollup_count(ro, &rows, &bytes), -ENODATA);
	ck_assert_int_eq(history_push_counts(ro, &c), -ENODATA);
	history_close(ro);

	h = open_rw(); /* migrates */
	c = counts(h);
	ck_assert_uint_eq(c.pending, 2);
	ck_assert_int_eq(c.oldest_pending_ns, 10);
	expect_pending(h, false, 1);
	expect_pending(h, true, 2);
	id = put(h, 40, 50, "cpu", "c", 9);
	ck_assert_int_eq(id, 3);
	expect_pending(h, true, 3);
	history_close(h);

	/* and stays migrated: a second open changes nothing */
	h = open_rw();
	c = counts(h);
	ck_assert_uint_eq(c.pending, 3);
	ck_assert_int_eq(history_rollup_count(h, &rows, &bytes), 0);
	ck_assert_uint_eq(rows, 0);
	history_close(h);
	sql("SELECT push_state, push_attempts, push_error, push_changed_ns FROM profiles;"
	    "SELECT key, value FROM collector_state;");
}
END_TEST

START_TEST(test_collector_state)
{
	struct history *h = open_rw(), *ro;
	struct history_collector_state st = {0}, got;
	char v[8];

	ck_assert_int_eq(history_collector_load(h, &got), 0); /* nothing saved yet */
	ck_assert_str_eq(got.url, "");
	ck_assert_int_eq(got.last_success_ns, 0);
	ck_assert_int_eq(history_state_get(h, "url", v, sizeof(v)), -ENOENT);

	snprintf(st.url, sizeof(st.url), "http://127.0.0.1:4040");
	st.last_success_ns = 1700000000123456789LL;
	st.last_error_ns = 1700000001000000000LL;
	st.last_status = 503;
	snprintf(st.last_error, sizeof(st.last_error), "HTTP 503 unavailable: overloaded");
	st.outage_since_ns = 1700000000999999999LL;
	ck_assert_int_eq(history_collector_save(h, &st), 0);

	ro = history_open(datadir, true, NULL); /* emberctl status with the daemon down */
	ck_assert_int_eq(history_collector_load(ro, &got), 0);
	ck_assert_str_eq(got.url, st.url);
	ck_assert_int_eq(got.last_success_ns, st.last_success_ns);
	ck_assert_int_eq(got.last_error_ns, st.last_error_ns);
	ck_assert_int_eq(got.last_status, 503);
	ck_assert_str_eq(got.last_error, st.last_error);
	ck_assert_int_eq(got.outage_since_ns, st.outage_since_ns);

	/* values are truncated to the caller's buffer */
	ck_assert_int_eq(history_state_get(ro, "url", v, sizeof(v)), 0);
	ck_assert_str_eq(v, "http://");
	history_close(ro);

	st.outage_since_ns = 0;
	ck_assert_int_eq(history_collector_save(h, &st), 0);
	ck_assert_int_eq(history_collector_load(h, &got), 0);
	ck_assert_int_eq(got.outage_since_ns, 0);
	history_close(h);
}
END_TEST

START_TEST(test_pending_corrupt_blob)
{
	struct history *h = open_rw();
	struct history_pending p;

	put(h, 100, 200, "cpu", "x", 1);
	sql("UPDATE profiles SET blob = x'0102030405'");
	ck_assert_int_eq(history_next_pending(h, false, &p), 0);
	ck_assert_ptr_null(p.pprof); /* reported, for the uploader to reject */
	ck_assert_str_eq(p.app, "x");
	history_pending_free(&p);
	history_close(h);
}
END_TEST

/* --- retention --------------------------------------------------------------------- */

#define KiB 1024ULL
#define BIG_ROW (16 * KiB)
#define NO_AGE_LIMIT (INT64_MAX / 2)

/* One integer from a query of the file, through a connection of its own. */
static int64_t sql_int(const char *stmt)
{
	char path[160];
	sqlite3_stmt *st;
	sqlite3 *db;
	int64_t v = -1;

	snprintf(path, sizeof(path), "%s/history.db", datadir);
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 2000);
	ck_assert_msg(sqlite3_prepare_v2(db, stmt, -1, &st, NULL) == SQLITE_OK, "%s: %s", stmt,
		      sqlite3_errmsg(db));
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/* history.db plus its WAL as the file system has them. */
static uint64_t disk_bytes(void)
{
	static const char *const files[] = {"history.db", "history.db-wal"};
	char path[160];
	struct stat st;
	uint64_t total = 0;

	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", datadir, files[i]);
		if (stat(path, &st) == 0)
			total += (uint64_t)st.st_size;
	}
	return total;
}

/* A row of len bytes that zstd cannot shrink (xorshift noise): its blob is len + a header. */
static int64_t put_big(struct history *h, int64_t start, const char *type, size_t len)
{
	struct history_meta m = {
		.start_ns = start,
		.end_ns = start + 10,
		.type = type,
		.app = "big",
		.labels = "",
		.samples = 1,
		.processes = 1,
	};
	static uint8_t buf[64 * KiB];
	uint64_t x = 0x9e3779b97f4a7c15ULL ^ (uint64_t)start;
	int64_t id = -1;

	ck_assert_uint_le(len, sizeof(buf));
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
	ck_assert_int_eq(history_put(h, &m, buf, len, &id), 0);
	return id;
}

static struct history_prune_result prune(struct history *h, int64_t now, int64_t retention,
					 uint64_t max_size, bool protect)
{
	struct history_prune_result r;

	ck_assert_int_eq(history_prune(h, now, retention, max_size, protect, &r), 0);
	return r;
}

/* Profiles whose interval ended before now - retention go; one ending at the cutoff stays. */
START_TEST(test_prune_age)
{
	struct history *h = open_rw();
	struct history_prune_result r;
	int64_t bytes;
	struct seen s;

	put(h, 100, 200, "cpu", "a", 1);
	put(h, 150, 250, "mem", "a", 2);
	put(h, 200, 300, "cpu", "b", 3);
	put(h, 250, 350, "cpu", "a", 4);
	bytes = sql_int("SELECT sum(length(blob)) FROM profiles WHERE end_ns < 300");
	ck_assert_int_gt(bytes, 0);

	r = prune(h, 1000, 700, 1 << 30, false);
	ck_assert_uint_eq(r.aged, 2);
	ck_assert_uint_eq(r.aged_bytes, (uint64_t)bytes);
	ck_assert_uint_eq(r.sized, 0);
	ck_assert(r.compacted);
	ck_assert(!r.over_size);
	ck_assert_uint_eq(r.wal_bytes, 0); /* truncated */
	ck_assert_uint_eq(r.db_bytes, (uint64_t)sql_int("PRAGMA page_count") * 4096);
	s = query(h, INT64_MIN, INT64_MAX, NULL, NULL, false);
	ck_assert_int_eq(s.n, 2);
	ck_assert_int_eq(s.rows[0].start_ns, 200);
	ck_assert_int_eq(s.rows[1].start_ns, 250);

	/* nothing past the bound: nothing deleted, no vacuum, no checkpoint */
	put(h, 400, 500, "cpu", "a", 5);
	r = prune(h, 1000, 700, 1 << 30, false);
	ck_assert_uint_eq(r.aged + r.sized, 0);
	ck_assert(!r.compacted);
	ck_assert_uint_gt(r.wal_bytes, 0);

	ck_assert_int_eq(history_prune(h, 1000, 0, 1 << 30, false, &r), -EINVAL);
	ck_assert_int_eq(history_prune(h, 1000, 700, 0, false, &r), -EINVAL);
	history_close(h);
}
END_TEST

/*
 * 24 rows of 16 KiB (~400 KiB) under a 160 KiB bound: the oldest go, whatever
 * their type, the newest stay, and the file with its WAL shrinks under it.
 */
START_TEST(test_prune_size)
{
	const uint64_t max_size = 160 * KiB;
	struct history *h = open_rw();
	struct history_prune_result r;
	int64_t bytes;
	struct seen s;
	int kept;

	for (int k = 0; k < 24; k++)
		put_big(h, 1000 + 10 * k, k % 3 ? "cpu" : "mem", BIG_ROW);
	ck_assert_uint_gt(disk_bytes(), 2 * max_size);

	r = prune(h, 2000, NO_AGE_LIMIT, max_size, false);
	ck_assert_uint_eq(r.aged, 0);
	ck_assert_uint_gt(r.sized, 0);
	kept = 24 - (int)r.sized;
	/* each row takes 16 KiB and a bit (5 pages): not more deleted than needed */
	ck_assert_int_ge(kept, (int)(max_size / (20 * KiB)) - 2);
	ck_assert(r.compacted);
	ck_assert(!r.over_size);
	ck_assert_uint_le(r.db_bytes + r.wal_bytes, max_size);
	ck_assert_uint_eq(r.file_bytes + r.wal_bytes, disk_bytes());
	ck_assert_uint_le(disk_bytes(), max_size);
	ck_assert_uint_ge(r.sized_bytes, r.sized * BIG_ROW);
	ck_assert_uint_le(r.sized_bytes, r.sized * (BIG_ROW + 64));

	/* the survivors are the newest rows */
	s = query(h, INT64_MIN, INT64_MAX, NULL, NULL, false);
	ck_assert_int_eq(s.n, kept);
	ck_assert_int_eq(s.rows[0].start_ns, 1000 + 10 * (int64_t)r.sized);
	ck_assert_int_eq(s.rows[kept - 1].start_ns, 1000 + 10 * 23);
	bytes = sql_int("SELECT sum(length(blob)) FROM profiles");
	ck_assert_int_le(bytes, (int64_t)max_size);

	/* under the bound: the next prune deletes nothing */
	r = prune(h, 2000, NO_AGE_LIMIT, max_size, false);
	ck_assert_uint_eq(r.sized, 0);
	ck_assert(!r.compacted);

	/* and it keeps holding as rows come in */
	for (int k = 24; k < 40; k++) {
		put_big(h, 1000 + 10 * k, "cpu", BIG_ROW);
		r = prune(h, 2000, NO_AGE_LIMIT, max_size, false);
		ck_assert_uint_le(r.db_bytes + r.wal_bytes, max_size);
	}
	ck_assert_uint_le(disk_bytes(), max_size);
	s = query(h, INT64_MIN, INT64_MAX, NULL, NULL, false);
	ck_assert_int_eq(s.rows[s.n - 1].start_ns, 1000 + 10 * 39);
	history_close(h);
	ck_assert_uint_le(disk_bytes(), max_size); /* the close's checkpoint adds nothing */
}
END_TEST

/* Rows waiting to be pushed survive both bounds while a collector is configured, not without. */
START_TEST(test_prune_pending)
{
	struct history *h = open_rw();
	struct history_prune_result r;
	int64_t id[7];
	struct seen s;

	for (int k = 0; k < 7; k++)
		id[k] = put(h, 100 * k, 100 * k + 100, "cpu", "a", (uint8_t)k);
	ck_assert_int_eq(history_mark(h, id[0], HISTORY_SENT, NULL, 1), 0);
	ck_assert_int_eq(history_mark(h, id[1], HISTORY_SENT, NULL, 1), 0);
	ck_assert_int_eq(history_mark(h, id[2], HISTORY_REJECTED, "400", 1), 0);
	ck_assert_int_eq(history_mark(h, id[3], HISTORY_EXPIRED, NULL, 1), 0);

	/* everything but the last row is past retention (cutoff 600) */
	r = prune(h, 1000, 400, 1 << 30, true);
	ck_assert_uint_eq(r.aged, 4);
	s = query(h, INT64_MIN, INT64_MAX, NULL, NULL, false);
	ck_assert_int_eq(s.n, 3);
	ck_assert_int_eq(s.rows[0].id, id[4]);
	ck_assert_int_eq(s.rows[1].id, id[5]);
	/* once expired (the uploader's max_age), it may go */
	ck_assert_int_eq(history_expire_pending(h, 450, 2, NULL), 0);
	r = prune(h, 1000, 400, 1 << 30, true);
	ck_assert_uint_eq(r.aged, 1);
	/* without a collector, pending means nothing (cutoff 700) */
	r = prune(h, 1100, 400, 1 << 30, true);
	ck_assert_uint_eq(r.aged, 0);
	r = prune(h, 1100, 400, 1 << 30, false);
	ck_assert_uint_eq(r.aged, 1);
	s = query(h, INT64_MIN, INT64_MAX, NULL, NULL, false);
	ck_assert_int_eq(s.n, 1);
	ck_assert_int_eq(s.rows[0].id, id[6]);
	history_close(h);
}
END_TEST

/*
 * What may go to make room: with a collector, a row not waiting to be pushed,
 * whatever its age; without one, only a row past retention.
 */
START_TEST(test_prunable)
{
	struct history *h = open_rw();
	bool any = true;
	int64_t id[2];

	ck_assert_int_eq(history_prunable(h, true, 1000, &any), 0);
	ck_assert(!any); /* empty */
	id[0] = put(h, 100, 200, "cpu", "a", 1);
	id[1] = put(h, 200, 300, "cpu", "a", 2);
	ck_assert_int_eq(history_prunable(h, true, 1000, &any), 0);
	ck_assert(!any); /* pending, even past retention */
	ck_assert_int_eq(history_prunable(h, false, 250, &any), 0);
	ck_assert(any); /* the first ended before the cutoff */
	ck_assert_int_eq(history_prunable(h, false, 150, &any), 0);
	ck_assert(!any); /* none ended before it */
	ck_assert_int_eq(history_mark(h, id[1], HISTORY_SENT, NULL, 1), 0);
	ck_assert_int_eq(history_prunable(h, true, 0, &any), 0);
	ck_assert(any); /* sent, within retention */
	ck_assert_int_eq(history_prunable(h, false, 150, &any), 0);
	ck_assert(!any); /* no collector: within retention stays */
	ck_assert_int_eq(history_prunable(NULL, false, 0, &any), -EINVAL);
	history_close(h);
}
END_TEST

/* The reserve holds its blocks, is completed when short, and is given back whole. */
START_TEST(test_reserve)
{
	struct history *h = open_rw(), *ro;
	char path[160];
	struct stat st;

	snprintf(path, sizeof(path), "%s/history.db-reserve", datadir);
	ck_assert_int_eq(history_unreserve(h), -ENOENT);
	ck_assert_int_eq(history_reserve(h, 64 * KiB), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_ge((uint64_t)st.st_blocks * 512, 64 * KiB);
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(history_reserve(h, 128 * KiB), 0); /* completed */
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_ge((uint64_t)st.st_blocks * 512, 128 * KiB);
	ck_assert_int_eq(history_reserve(h, 128 * KiB), 0); /* already whole */
	ro = history_open(datadir, true, NULL);
	ck_assert_ptr_nonnull(ro);
	ck_assert_int_eq(history_reserve(ro, 64 * KiB), -EINVAL);
	ck_assert_int_eq(history_unreserve(ro), -EINVAL);
	history_close(ro);
	ck_assert_int_eq(history_unreserve(h), 0);
	ck_assert_int_eq(stat(path, &st), -1);
	ck_assert_int_eq(errno, ENOENT);
	/* a symlink in its place is not followed */
	ck_assert_int_eq(symlink("/dev/null", path), 0);
	ck_assert_int_lt(history_reserve(h, 64 * KiB), 0);
	ck_assert_int_eq(unlink(path), 0);
	history_close(h);
}
END_TEST

/*
 * Over max_size, sent rows go before older pending ones; when only pending
 * rows are left over the bound, they stay and the result says so.
 */
START_TEST(test_prune_pending_size)
{
	const uint64_t max_size = 128 * KiB;
	struct history *h = open_rw();
	struct history_prune_result r;
	int64_t p[2], sent;
	struct seen s;

	p[0] = put_big(h, 1000, "cpu", BIG_ROW);
	p[1] = put_big(h, 1010, "cpu", BIG_ROW);
	for (int k = 2; k < 16; k++) {
		sent = put_big(h, 1000 + 10 * k, "cpu", BIG_ROW);
		ck_assert_int_eq(history_mark(h, sent, HISTORY_SENT, NULL, 1), 0);
	}
	r = prune(h, 2000, NO_AGE_LIMIT, max_size, true);
	ck_assert_uint_gt(r.sized, 0);
	ck_assert(!r.over_size);
	ck_assert_uint_le(r.db_bytes + r.wal_bytes, max_size);
	s = query(h, INT64_MIN, INT64_MAX, NULL, NULL, false);
	ck_assert_int_eq(s.rows[0].id, p[0]);
	ck_assert_int_eq(s.rows[1].id, p[1]);
	ck_assert_int_eq(s.rows[2].start_ns, 1000 + 10 * (2 + (int64_t)r.sized));

	/* ten pending rows alone exceed the bound: the sent ones go, the pending stay */
	for (int k = 16; k < 24; k++)
		put_big(h, 1000 + 10 * k, "cpu", BIG_ROW);
	r = prune(h, 2000, NO_AGE_LIMIT, max_size, true);
	ck_assert(r.over_size);
	ck_assert_uint_eq(r.pending, 10);
	ck_assert_uint_eq(sql_int("SELECT count(*) FROM profiles WHERE push_state = 0"), 10);
	ck_assert_uint_eq(sql_int("SELECT count(*) FROM profiles WHERE push_state != 0"), 0);
	ck_assert_uint_gt(r.db_bytes, max_size);

	/* without a collector they go, oldest first */
	r = prune(h, 2000, NO_AGE_LIMIT, max_size, false);
	ck_assert(!r.over_size);
	ck_assert_uint_gt(r.sized, 0);
	ck_assert_uint_le(r.db_bytes + r.wal_bytes, max_size);
	ck_assert_int_eq(sql_int("SELECT count(*) FROM profiles WHERE id = 1 OR id = 2"), 0);
	history_close(h);
}
END_TEST

/* A large backlog is deleted over several prunes, 4096 rows at most in each. */
START_TEST(test_prune_bounded)
{
	struct history *h = open_rw();
	struct history_prune_result r;

	for (int k = 0; k < 5000; k++)
		put(h, k, k + 1, "cpu", "a", 1);
	r = prune(h, 10000, 1000, 1 << 30, false);
	ck_assert_uint_eq(r.aged, 4096);
	ck_assert(r.more);
	ck_assert_int_eq(sql_int("SELECT min(start_ns) FROM profiles"), 4096);
	r = prune(h, 10000, 1000, 1 << 30, false);
	ck_assert_uint_eq(r.aged, 5000 - 4096);
	ck_assert(!r.more);
	ck_assert_int_eq(sql_int("SELECT count(*) FROM profiles"), 0);
	history_close(h);
}
END_TEST

/* A v2 file (no auto-vacuum, no start index) is vacuumed once when a writer opens it. */
START_TEST(test_migrate_v2_vacuum)
{
	struct history *h = open_rw(), *ro;
	const struct history_upgrade *u;
	struct history_prune_result r;
	struct history_size sz;

	for (int k = 0; k < 8; k++)
		put_big(h, 1000 + 10 * k, "cpu", BIG_ROW);
	ck_assert(!history_upgrade_info(h)->vacuumed); /* a new file has it from the start */
	history_close(h);
	ck_assert_int_eq(sql_int("PRAGMA auto_vacuum"), 2);
	sql("PRAGMA auto_vacuum = NONE; VACUUM; DROP INDEX profiles_start; "
	    "PRAGMA user_version = 2");
	ck_assert_int_eq(sql_int("PRAGMA auto_vacuum"), 0);

	/* a reader of a v2 file: sizes yes, prune no */
	ro = history_open(datadir, true, NULL);
	ck_assert_ptr_nonnull(ro);
	ck_assert_int_eq(history_size(ro, &sz), 0);
	ck_assert_uint_ge(sz.db_bytes, 8 * BIG_ROW);
	ck_assert_int_eq(history_prune(ro, 2000, 10, 64 * KiB, false, &r), -EROFS);
	history_close(ro);

	h = open_rw();
	u = history_upgrade_info(h);
	ck_assert(u->vacuumed);
	ck_assert_int_eq(u->err, 0);
	ck_assert_uint_ge(u->bytes_before, 8 * BIG_ROW);
	ck_assert_uint_ge(u->bytes_after, 8 * BIG_ROW);
	ck_assert_int_ge(u->took_ns, 0);
	ck_assert_int_eq(sql_int("PRAGMA auto_vacuum"), 2);
	ck_assert_int_eq(sql_int("PRAGMA user_version"), 4);
	ck_assert_int_eq(sql_int("SELECT count(*) FROM sqlite_master "
				 "WHERE name = 'profiles_start'"),
			 1);
	r = prune(h, 2000, NO_AGE_LIMIT, 64 * KiB, false);
	ck_assert_uint_gt(r.sized, 0);
	ck_assert_uint_le(disk_bytes(), 64 * KiB);
	history_close(h);

	h = open_rw(); /* once */
	ck_assert(!history_upgrade_info(h)->vacuumed);
	history_close(h);
}
END_TEST

/* --- rollups --------------------------------------------------------------------- */

#define HOUR HISTORY_ROLLUP_PERIOD_NS
#define MIN (60LL * 1000000000LL)

/* One raw row of series (type, app) with its own sample count. */
static void put_raw(struct history *h, int64_t start, int64_t end, const char *type,
		    const char *app, uint64_t samples)
{
	struct history_meta m = {.start_ns = start,
				 .end_ns = end,
				 .type = type,
				 .app = app,
				 .labels = app,
				 .samples = samples,
				 .processes = 1};
	uint8_t buf[16] = {1, 2, 3};

	ck_assert_int_eq(history_put(h, &m, buf, sizeof(buf), NULL), 0);
}

/* A rollup standing for the raw rows of its series and hour, built by hand from their sums. */
static void put_rollup_of(struct history *h, int64_t hour, const char *type, const char *app)
{
	char stmt[256];
	struct history_meta m = {
		.start_ns = hour, .type = type, .app = app, .labels = app, .processes = 1};
	uint8_t buf[16] = {4, 5, 6};

	snprintf(stmt, sizeof(stmt),
		 "SELECT %s FROM profiles WHERE rollup = 0 AND type = '%s' AND app = '%s' "
		 "AND start_ns >= %lld AND start_ns < %lld",
		 "sum(samples)", type, app, (long long)hour, (long long)(hour + HOUR));
	m.samples = (uint64_t)sql_int(stmt);
	snprintf(stmt, sizeof(stmt),
		 "SELECT max(end_ns) FROM profiles WHERE rollup = 0 AND type = '%s' AND app = '%s' "
		 "AND start_ns >= %lld AND start_ns < %lld",
		 type, app, (long long)hour, (long long)(hour + HOUR));
	m.end_ns = sql_int(stmt);
	snprintf(stmt, sizeof(stmt),
		 "SELECT count(*) FROM profiles WHERE rollup = 0 AND type = '%s' AND app = '%s' "
		 "AND start_ns >= %lld AND start_ns < %lld",
		 type, app, (long long)hour, (long long)(hour + HOUR));
	ck_assert_int_eq(history_put_rollup(h, &m, (uint32_t)sql_int(stmt), buf, sizeof(buf), NULL),
			 0);
}

/*
 * Three series over hours 1-4 (a row every 10 min, one more straddling 2h-3h
 * that belongs to hour 2), rollups for some of their hours: for every window,
 * type and app, the rollup query counts each raw row exactly once (same samples,
 * same profiles as the raw query) and uses the rollups of the whole hours.
 */
START_TEST(test_rollup_exactly_once)
{
	static const struct {
		const char *type, *app;
		int hours[4]; /* hours 1..4 with a rollup */
	} series[] = {
		{"cpu", "a", {1, 1, 1, 0}}, /* hour 4 has no rollup */
		{"cpu", "b", {1, 1, 1, 1}},
		{"mem", "a", {0, 0, 0, 0}}, /* none */
	};
	static const int64_t windows[][2] = {
		{INT64_MIN, INT64_MAX},
		{HOUR, 5 * HOUR},
		{HOUR + 30 * MIN, 4 * HOUR},
		{2 * HOUR, 3 * HOUR},
		{2 * HOUR + 1, 3 * HOUR + 1},
		{3 * HOUR, 3 * HOUR + 5 * MIN},
		{2 * HOUR + 58 * MIN, 3 * HOUR + 2 * MIN},
		{0, 4 * HOUR},
		{4 * HOUR, 6 * HOUR},
		{2 * HOUR - 1, 4 * HOUR + 1},
	};
	static const char *const types[] = {NULL, "cpu", "mem"};
	static const char *const apps[] = {NULL, "a", "b"};
	struct history *h = open_rw();
	uint64_t n = 0, rollups = 0, bytes = 0;

	for (size_t i = 0; i < 3; i++) {
		for (int64_t t = HOUR; t < 5 * HOUR; t += 10 * MIN)
			put_raw(h, t, t + 10 * MIN, series[i].type, series[i].app, ++n);
		put_raw(h, 3 * HOUR - 5 * MIN, 3 * HOUR + 5 * MIN, series[i].type, series[i].app,
			1000 + i);
	}
	for (size_t i = 0; i < 3; i++) {
		for (int hr = 1; hr <= 4; hr++) {
			if (series[i].hours[hr - 1])
				put_rollup_of(h, hr * HOUR, series[i].type, series[i].app);
		}
	}
	ck_assert_int_eq(history_rollup_count(h, &rollups, &bytes), 0);
	ck_assert_uint_eq(rollups, 7);
	ck_assert_uint_gt(bytes, 0);
	for (size_t w = 0; w < sizeof(windows) / sizeof(windows[0]); w++) {
		for (size_t t = 0; t < 3; t++) {
			for (size_t a = 0; a < 3; a++) {
				int64_t since = windows[w][0], until = windows[w][1];
				struct sums raw =
					sum_query(h, since, until, types[t], apps[a], false);
				struct sums ru =
					sum_query(h, since, until, types[t], apps[a], true);
				uint64_t want = 0;

				/* the rollups of the whole hours inside the window */
				for (size_t i = 0; i < 3; i++) {
					if ((types[t] && strcmp(types[t], series[i].type)) ||
					    (apps[a] && strcmp(apps[a], series[i].app)))
						continue;
					for (int hr = 1; hr <= 4; hr++)
						want += series[i].hours[hr - 1] &&
							hr * HOUR >= since &&
							(hr + 1) * HOUR <= until;
				}
				ck_assert_uint_eq(raw.rollups, 0);
				ck_assert_uint_eq(raw.profiles, raw.rows);
				ck_assert_uint_eq(ru.rollups, want);
				ck_assert_uint_eq(ru.samples, raw.samples);
				ck_assert_uint_eq(ru.profiles, raw.profiles);
				if (want)
					ck_assert_uint_lt(ru.rows, raw.rows);
			}
		}
	}
	/* the whole history of series a/cpu: 3 rollups + hour 4's 6 rows */
	ck_assert_uint_eq(sum_query(h, INT64_MIN, INT64_MAX, "cpu", "a", true).rows, 9);
	/* hour 2 of cpu/b: the rollup of 7 rows (6 and the straddling one) alone */
	ck_assert_uint_eq(sum_query(h, 2 * HOUR, 3 * HOUR, "cpu", "b", true).rows, 1);
	ck_assert_uint_eq(sum_query(h, 2 * HOUR, 3 * HOUR, "cpu", "b", true).profiles, 7);
	/* a second rollup of the same series and hour is refused; an unaligned one too */
	{
		struct history_meta m = {.start_ns = HOUR,
					 .end_ns = 2 * HOUR,
					 .type = "cpu",
					 .app = "a",
					 .labels = "a",
					 .samples = 1};
		uint8_t buf[4] = {1};

		ck_assert_int_eq(history_put_rollup(h, &m, 1, buf, sizeof(buf), NULL), -EEXIST);
		m.start_ns = HOUR + 1;
		ck_assert_int_eq(history_put_rollup(h, &m, 1, buf, sizeof(buf), NULL), -EINVAL);
	}
	history_close(h);
}
END_TEST

/* Rollups are local: never pending, never counted in a push state, never expired. */
START_TEST(test_rollup_push_state)
{
	struct history *h = open_rw();
	struct history_pending p;
	struct history_push_counts c;
	uint64_t n;

	put_raw(h, HOUR, HOUR + 10 * MIN, "cpu", "a", 5);
	put_raw(h, HOUR + 10 * MIN, HOUR + 20 * MIN, "cpu", "a", 6);
	put_rollup_of(h, HOUR, "cpu", "a");
	c = counts(h);
	ck_assert_uint_eq(c.pending, 2);
	ck_assert_uint_eq(c.sent + c.rejected + c.expired, 0);
	ck_assert_int_eq(sql_int("SELECT push_state FROM profiles WHERE rollup = 1"),
			 HISTORY_LOCAL);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(history_next_pending(h, i == 1, &p), 0);
		ck_assert_int_eq(sql_int("SELECT count(*) FROM profiles WHERE rollup = 1 AND id = "
					 "(SELECT max(id) FROM profiles)"),
				 1);
		ck_assert_int_ne(p.id, sql_int("SELECT id FROM profiles WHERE rollup = 1"));
		ck_assert_int_eq(history_mark(h, p.id, HISTORY_SENT, NULL, 1), 0);
		history_pending_free(&p);
	}
	ck_assert_int_eq(history_next_pending(h, false, &p), -ENOENT);
	ck_assert_int_eq(history_expire_pending(h, INT64_MAX, 1, &n), 0);
	ck_assert_uint_eq(n, 0);
	c = counts(h);
	ck_assert_uint_eq(c.pending, 0);
	ck_assert_uint_eq(c.sent, 2);
	ck_assert_uint_eq(c.expired, 0);
	ck_assert_int_eq(history_pending_count(h, &n, &c.oldest_pending_ns), 0);
	ck_assert_uint_eq(n, 0);
	history_close(h);
}
END_TEST

/*
 * Retention: a rollup goes by age like the raw rows (its end is its last raw
 * row's); by size, after the raw rows that started at its hour's start.
 */
START_TEST(test_rollup_retention)
{
	struct history *h = open_rw();
	struct history_prune_result r;
	uint64_t rows, bytes;

	for (int64_t t = HOUR; t < 3 * HOUR; t += 30 * MIN)
		put_raw(h, t, t + 30 * MIN, "cpu", "a", 1);
	put_rollup_of(h, HOUR, "cpu", "a");
	put_rollup_of(h, 2 * HOUR, "cpu", "a");
	/* by age: hour 1's rows end at 1h30 and 2h; the rollup with the last one */
	r = prune(h, 2 * HOUR + 1 + 700, 700, 1 << 30, false);
	ck_assert_uint_eq(r.aged, 3);
	ck_assert_int_eq(history_rollup_count(h, &rows, &bytes), 0);
	ck_assert_uint_eq(rows, 1);
	ck_assert_int_eq(sql_int("SELECT min(start_ns) FROM profiles WHERE rollup = 1"), 2 * HOUR);
	/* by size (the order of PRUNE_SIZE): hour 2's first raw row, then its rollup */
	sql("UPDATE profiles SET push_state = 1 WHERE rollup = 0");
	ck_assert_int_eq(sql_int("SELECT id FROM profiles ORDER BY start_ns, rollup, id LIMIT 1 "
				 "OFFSET 1"),
			 sql_int("SELECT id FROM profiles WHERE rollup = 1"));
	ck_assert_int_eq(sql_int("SELECT rollup FROM profiles WHERE id IN (SELECT id FROM "
				 "profiles ORDER BY start_ns, rollup, id LIMIT 1)"),
			 0);
	r = prune(h, 2 * HOUR, 700, 1, false); /* everything is over 1 byte */
	ck_assert_uint_eq(r.sized, 3);
	ck_assert(r.over_size);
	ck_assert_int_eq(history_rollup_count(h, &rows, &bytes), 0);
	ck_assert_uint_eq(rows, 0);
	history_close(h);
}
END_TEST

/* A cpu profile of two stacks: count samples of pid and 1 of pid + 1. */
static void put_pprof(struct history *h, int64_t start, const char *app, int64_t pid, int count)
{
	static const struct pprof_meta meta = {
		.sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
		.n_sample_types = 2,
		.period_type = {"cpu", "nanoseconds"},
		.period = 10000000,
	};
	struct pprof_builder *b = pprof_builder_new(&meta);
	struct history_meta m = {.start_ns = start,
				 .end_ns = start + 10 * MIN,
				 .type = "cpu",
				 .app = app,
				 .labels = app,
				 .samples = (uint64_t)count + 1,
				 .processes = 2};
	struct pprof_label l1 = {.key = "pid", .num = pid}, l2 = {.key = "pid", .num = pid + 1};
	int64_t v1[2] = {count, count * 10000000LL}, v2[2] = {1, 10000000};
	uint64_t f1, f2, loc[2];
	uint8_t *buf;
	size_t len;

	ck_assert_ptr_nonnull(b);
	f1 = pprof_function(b, "main", "main", "");
	f2 = pprof_function(b, "work", "work", "");
	loc[1] = pprof_location(b, 0, 0x1000, &f1, 1);
	loc[0] = pprof_location(b, 0, 0x2000, &f2, 1);
	ck_assert_int_eq(pprof_add_sample(b, loc, 2, v1, &l1, 1), 0);
	ck_assert_int_eq(pprof_add_sample(b, &loc[1], 1, v2, &l2, 1), 0);
	ck_assert_int_eq(pprof_encode(b, &buf, &len), 0);
	ck_assert_int_eq(history_put(h, &m, buf, len, NULL), 0);
	free(buf);
	pprof_builder_free(b);
}

/* The rollup row of app at hour: its samples and processes, and its pid's samples in the pprof. */
struct rollup_seen {
	const char *app;
	int64_t pid;
	uint64_t samples, pid_samples, processes, profiles;
	int64_t start_ns, end_ns, time_ns;
	int n;
};

static int seen_rollup(const struct history_row *row, void *arg)
{
	struct rollup_seen *rs = arg;
	struct pprof_filter f = {.by_pid = true, .pid = rs->pid};
	pprof_profile *p;

	if (!row->rollup || strcmp(row->meta.app, rs->app))
		return 0;
	rs->n++;
	rs->samples = row->meta.samples;
	rs->processes = row->meta.processes;
	rs->profiles = row->profiles;
	rs->start_ns = row->meta.start_ns;
	rs->end_ns = row->meta.end_ns;
	ck_assert_ptr_nonnull(row->pprof);
	ck_assert_int_eq(pprof_decode(row->pprof, row->pprof_len, &p, NULL, 0), 0);
	rs->time_ns = p->time_nanos;
	for (size_t i = 0; i < p->n_sample; i++) {
		if (pprof_sample_wanted(p, p->sample[i], &f))
			rs->pid_samples += (uint64_t)p->sample[i]->value[0];
	}
	pprof_profile_free(p);
	return 0;
}

/*
 * The builder: one series and hour per call, in order of hour then series, a
 * series whose rows are all corrupt skipped (not retried, not blocking the
 * others), an hour not yet complete left alone; a rollup keeps the pid labels
 * and counts the distinct pids.
 */
START_TEST(test_rollup_build)
{
	struct history *h = open_rw();
	struct rollup_cursor c = {0};
	struct rollup_result r;
	struct rollup_seen rs = {.app = "a", .pid = 10};
	struct history_query q = {.since_ns = HOUR, .until_ns = 2 * HOUR, .use_rollups = true};
	struct history_meta bad = {.start_ns = HOUR,
				   .end_ns = HOUR + MIN,
				   .type = "cpu",
				   .app = "m",
				   .labels = "m",
				   .samples = 1};
	uint8_t junk[8] = {0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4};
	uint64_t rows, bytes;

	put_pprof(h, HOUR + 5 * MIN, "a", 10, 3);
	put_pprof(h, HOUR + 20 * MIN, "a", 10, 4);
	put_pprof(h, HOUR + 50 * MIN, "a", 12, 5); /* pids 12, 13: 4 in the hour */
	ck_assert_int_eq(history_put(h, &bad, junk, sizeof(junk), NULL), 0);
	put_pprof(h, HOUR + 30 * MIN, "b", 30, 1);
	put_pprof(h, 2 * HOUR + 10 * MIN, "a", 10, 9); /* hour 2: not complete */

	ck_assert_int_eq(history_rollup_next(h, 2 * HOUR + 30 * MIN, &c, NULL, &r), 0);
	ck_assert_str_eq(r.series.app, "a");
	ck_assert(r.stored);
	ck_assert_int_eq(r.period_start, HOUR);
	ck_assert_uint_eq(r.profiles, 3);
	ck_assert_uint_eq(r.samples, 4 + 5 + 6);
	rollup_result_free(&r);
	ck_assert_int_eq(history_rollup_next(h, 2 * HOUR + 30 * MIN, &c, NULL, &r), 0);
	ck_assert_str_eq(r.series.app, "b");
	ck_assert(r.stored);
	rollup_result_free(&r);
	ck_assert_int_eq(history_rollup_next(h, 2 * HOUR + 30 * MIN, &c, NULL, &r), 0);
	ck_assert_str_eq(r.series.app, "m");
	ck_assert(!r.stored);
	ck_assert_uint_eq(r.skipped, 1);
	rollup_result_free(&r);
	ck_assert_int_eq(history_rollup_next(h, 2 * HOUR + 30 * MIN, &c, NULL, &r), -ENOENT);
	ck_assert_int_eq(history_rollup_count(h, &rows, &bytes), 0);
	ck_assert_uint_eq(rows, 2);

	ck_assert_int_eq(history_query(h, &q, true, seen_rollup, &rs), 0);
	ck_assert_int_eq(rs.n, 1);
	ck_assert_uint_eq(rs.samples, 15);
	ck_assert_uint_eq(rs.processes, 4);
	ck_assert_uint_eq(rs.profiles, 3);
	ck_assert_uint_eq(rs.pid_samples, 3 + 4); /* --pid 10 on the rollup */
	ck_assert_int_eq(rs.start_ns, HOUR);
	ck_assert_int_eq(rs.end_ns, 2 * HOUR);
	ck_assert_int_eq(rs.time_ns, HOUR + 5 * MIN); /* the first raw row's start */

	/* hour 2 once complete; the corrupt series of hour 1 is not retried */
	ck_assert_int_eq(history_rollup_next(h, 3 * HOUR, &c, NULL, &r), 0);
	ck_assert_str_eq(r.series.app, "a");
	ck_assert_int_eq(r.period_start, 2 * HOUR);
	rollup_result_free(&r);
	ck_assert_int_eq(history_rollup_next(h, 3 * HOUR, &c, NULL, &r), -ENOENT);
	/* a fresh cursor (a restart) tries it again, and still builds nothing more */
	c = (struct rollup_cursor){0};
	ck_assert_int_eq(history_rollup_next(h, 3 * HOUR, &c, NULL, &r), 0);
	ck_assert(!r.stored);
	rollup_result_free(&r);
	ck_assert_int_eq(history_rollup_next(h, 3 * HOUR, &c, NULL, &r), -ENOENT);
	ck_assert_int_eq(history_rollup_count(h, &rows, &bytes), 0);
	ck_assert_uint_eq(rows, 3);
	history_close(h);
}
END_TEST

Suite *history_suite(void)
{
	Suite *s = suite_create("history");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_release_memory);
	tcase_add_test(tc, test_window_overlap);
	tcase_add_test(tc, test_filters);
	tcase_add_test(tc, test_order);
	tcase_add_test(tc, test_put_all);
	tcase_add_test(tc, test_callback_stops);
	tcase_add_test(tc, test_put_refuses_bad_input);
	tcase_add_test(tc, test_reader_beside_writer);
	tcase_add_test(tc, test_corrupt_blob);
	tcase_add_test(tc, test_missing_read_only);
	tcase_add_test(tc, test_newer_schema);
	tcase_add_test(tc, test_not_a_database);
	tcase_add_test(tc, test_pending_order);
	tcase_add_test(tc, test_push_states);
	tcase_add_test(tc, test_push_state_read_only);
	tcase_add_test(tc, test_migrate_v1);
	tcase_add_test(tc, test_collector_state);
	tcase_add_test(tc, test_pending_corrupt_blob);
	tcase_add_test(tc, test_prune_age);
	tcase_add_test(tc, test_prune_size);
	tcase_add_test(tc, test_prune_pending);
	tcase_add_test(tc, test_prune_pending_size);
	tcase_add_test(tc, test_prunable);
	tcase_add_test(tc, test_reserve);
	tcase_add_test(tc, test_prune_bounded);
	tcase_add_test(tc, test_migrate_v2_vacuum);
	tcase_add_test(tc, test_rollup_exactly_once);
	tcase_add_test(tc, test_rollup_push_state);
	tcase_add_test(tc, test_rollup_retention);
	tcase_add_test(tc, test_rollup_build);
	suite_add_tcase(s, tc);
	return s;
}
