// SPDX-License-Identifier: MIT
/*
 * A damaged history: one page overwritten with garbage. Readers read on past
 * it and count what they lost; a writer's open moves the file aside, copies
 * over every row that reads and starts afresh; a whole file of garbage.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "history.h"
#include "suites.h"

#define ROWS 200
#define BLOB 3000 /* incompressible: about one row per 4 KiB page */

static char tmpdir[64];
static char datadir[96];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/ember-check-damage-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(datadir, sizeof(datadir), "%s/data", tmpdir);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static void fill(void)
{
	struct history *h = history_open(datadir, false, NULL);
	uint8_t buf[BLOB];
	uint32_t x = 12345;

	ck_assert_ptr_nonnull(h);
	for (int i = 0; i < ROWS; i++) {
		struct history_meta m = {.start_ns = (int64_t)i * 1000,
					 .end_ns = (int64_t)i * 1000 + 1000,
					 .type = "cpu",
					 .app = "a",
					 .labels = "",
					 .samples = 1,
					 .processes = 1};

		for (size_t k = 0; k < sizeof(buf); k++) {
			x = x * 1103515245u + 12345u;
			buf[k] = (uint8_t)(x >> 16);
		}
		ck_assert_int_eq(history_put(h, &m, buf, sizeof(buf), NULL), 0);
	}
	history_close(h); /* the last close checkpoints the WAL into the file */
}

/* Overwrites page (1-based) of dir/history.db with garbage, as dd would. */
static void damage_page(const char *dir, long page)
{
	char path[160], junk[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/history.db", dir);
	memset(junk, 0xa5, sizeof(junk));
	fd = open(path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, junk, sizeof(junk), (page - 1) * 4096), (ssize_t)sizeof(junk));
	close(fd);
}

static int count(const struct history_row *row, void *arg)
{
	(void)row;
	++*(uint64_t *)arg;
	return 0;
}

static uint64_t rows_of(struct history *h, int *ret)
{
	struct history_query q = {.since_ns = INT64_MIN, .until_ns = INT64_MAX};
	uint64_t n = 0;

	*ret = history_query(h, &q, true, count, &n);
	return n;
}

/* The damaged-* directory a writer's open made, or "" when none. */
static void moved_dir(char *out, size_t len)
{
	struct dirent *e;
	DIR *d = opendir(datadir);

	out[0] = '\0';
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "damaged-", 8))
			snprintf(out, len, "%s/%.64s", datadir, e->d_name);
	closedir(d);
}

START_TEST(test_reader_reads_on)
{
	struct history_damage d;
	struct history *h;
	uint64_t n;
	int ret;

	fill();
	damage_page(datadir, 100);
	h = history_open(datadir, true, NULL);
	ck_assert_ptr_nonnull(h);
	n = rows_of(h, &ret);
	ck_assert_int_eq(ret, 0);
	history_damage_info(h, &d);
	ck_assert(d.damaged);
	/* one page lost: most rows read, a few not, and every id accounted for */
	ck_assert_uint_ge(n, ROWS - 10);
	ck_assert_uint_lt(n, ROWS);
	ck_assert_uint_eq(d.rows_read, n);
	ck_assert_uint_ge(d.unreadable, 1);
	ck_assert_uint_eq(d.rows_read + d.unreadable, ROWS);
	history_close(h);
}
END_TEST

START_TEST(test_writer_moves_aside)
{
	struct history_recovery r;
	struct history *h, *old;
	char dir[512];
	uint64_t readable, n;
	int ret;

	fill();
	damage_page(datadir, 100);
	h = history_open(datadir, true, NULL);
	readable = rows_of(h, &ret);
	history_close(h);

	h = history_open(datadir, false, NULL);
	ck_assert_ptr_nonnull(h);
	history_recovery_info(h, &r);
	ck_assert_uint_eq(r.moved, 1);
	ck_assert_int_eq(r.err, 0);
	ck_assert_uint_eq(r.salvaged, readable);
	ck_assert_uint_eq(r.salvaged + r.unreadable, ROWS);
	moved_dir(dir, sizeof(dir));
	ck_assert_str_eq(dir, r.moved_to);
	/* the fresh file holds what was salvaged, reads whole and takes new rows */
	n = rows_of(h, &ret);
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(n, readable);
	ck_assert_int_eq(
		history_put(h, &(struct history_meta){.start_ns = 1, .end_ns = 2, .type = "cpu"},
			    (const uint8_t *)"x", 1, NULL),
		0);
	history_close(h);
	/* the damaged file is kept, as it was, and still reads as far as it can */
	old = history_open(dir, true, NULL);
	ck_assert_ptr_nonnull(old);
	ck_assert_uint_eq(rows_of(old, &ret), readable);
	history_close(old);
}
END_TEST

START_TEST(test_garbage_file)
{
	char path[160], junk[8192];
	struct history_recovery r;
	struct history *h;
	int fd, ret;

	ck_assert_int_eq(mkdir(datadir, 0700), 0);
	snprintf(path, sizeof(path), "%s/history.db", datadir);
	memset(junk, 'z', sizeof(junk));
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	ck_assert_int_eq(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	close(fd);
	/* a reader cannot open it and says why; a writer starts afresh */
	ck_assert_ptr_null(history_open(datadir, true, NULL));
	h = history_open(datadir, false, NULL);
	ck_assert_ptr_nonnull(h);
	history_recovery_info(h, &r);
	ck_assert_uint_eq(r.moved, 1);
	ck_assert_uint_eq(r.salvaged, 0);
	ck_assert_uint_eq(rows_of(h, &ret), 0);
	ck_assert_int_eq(ret, 0);
	history_close(h);
}
END_TEST

START_TEST(test_recover_sound_file)
{
	struct history_recovery r;
	struct history *h;
	int ret;

	fill();
	h = history_open(datadir, false, NULL);
	history_recovery_info(h, &r);
	ck_assert_uint_eq(r.moved, 0); /* a sound file is left alone */
	ck_assert_int_eq(history_recover(h, "test"), 0);
	history_recovery_info(h, &r);
	ck_assert_uint_eq(r.moved, 1);
	ck_assert_uint_eq(r.salvaged, ROWS);
	ck_assert_uint_eq(r.unreadable, 0);
	ck_assert_uint_eq(rows_of(h, &ret), ROWS);
	history_close(h);
}
END_TEST

Suite *history_damage_suite(void)
{
	Suite *s = suite_create("history_damage");
	TCase *tc = tcase_create("damage");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_reader_reads_on);
	tcase_add_test(tc, test_writer_moves_aside);
	tcase_add_test(tc, test_garbage_file);
	tcase_add_test(tc, test_recover_sound_file);
	suite_add_tcase(s, tc);
	return s;
}
