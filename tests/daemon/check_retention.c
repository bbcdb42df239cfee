// SPDX-License-Identifier: MIT
/* retention.c against a temporary history: what goes, what stays, and what it logs (once). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "clock.h"
#include "config.h"
#include "history.h"
#include "retention.h"
#include "suites.h"

static char dir[64], logpath[96];
static struct ember_config cfg;
static struct history *h;

/* stderr (where log lines go) into a file the test reads. */
static void setup(void)
{
	int fd;

	snprintf(dir, sizeof(dir), "/tmp/check_retention.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(logpath, sizeof(logpath), "%s/log", dir);
	fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_ge(dup2(fd, STDERR_FILENO), 0);
	close(fd);
	config_defaults(&cfg);
	cfg.retention_ns = 7 * NS_PER_DAY;
	h = history_open(dir, false, NULL);
	ck_assert_ptr_nonnull(h);
}

static void teardown(void)
{
	char cmd[128];

	history_close(h);
	config_free(&cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* How many times needle occurs in what was logged so far. */
static int logged(const char *needle)
{
	static char buf[16384];
	FILE *f = fopen(logpath, "r");
	size_t n;
	int count = 0;

	ck_assert_ptr_nonnull(f);
	fflush(stderr);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (char *p = strstr(buf, needle); p; p = strstr(p + 1, needle))
		count++;
	return count;
}

/* A profile of 1 KiB of noise (zstd cannot shrink it) that ended at end_ns; its id. */
static int64_t put(int64_t end_ns)
{
	struct history_meta m = {
		.start_ns = end_ns - 10 * NS_PER_SEC,
		.end_ns = end_ns,
		.type = "cpu",
		.app = "a",
		.labels = "",
		.samples = 1,
		.processes = 1,
	};
	static uint8_t buf[1024];
	uint64_t x = 0x9e3779b97f4a7c15ULL ^ (uint64_t)end_ns;
	int64_t id = -1;

	for (size_t i = 0; i < sizeof(buf); i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
	ck_assert_int_eq(history_put(h, &m, buf, sizeof(buf), &id), 0);
	return id;
}

/* n profiles ending step, 2 step, ... before now, then one prune; returns the oldest's end. */
static int64_t put_recent(int n, int64_t step_ns)
{
	int64_t now = real_ns();

	for (int i = 0; i < n; i++)
		put(now - (i + 1) * step_ns);
	retention_prune(h, &cfg);
	return now - n * step_ns;
}

static uint64_t stored(void)
{
	struct history_push_counts c;

	ck_assert_int_eq(history_push_counts(h, &c), 0);
	return c.pending + c.sent + c.rejected + c.expired;
}

/* Past the retention: deleted, and said once with the count and the bound. */
START_TEST(deletes_old)
{
	int64_t now = real_ns();

	for (int i = 0; i < 3; i++)
		put(now - 8 * NS_PER_DAY + i * NS_PER_SEC);
	put(now - 6 * NS_PER_DAY);
	put(now - 60 * NS_PER_SEC);
	retention_prune(h, &cfg);
	ck_assert_uint_eq(stored(), 2);
	ck_assert_int_eq(logged("retention: deleted 3 profiles older than 7d"), 1);
	/* nothing more to delete: nothing more said */
	retention_prune(h, &cfg);
	ck_assert_uint_eq(stored(), 2);
	ck_assert_int_eq(logged("retention: deleted"), 1);
}
END_TEST

/* Nothing past a bound: nothing deleted, nothing logged. */
START_TEST(keeps_recent)
{
	put_recent(4, NS_PER_HOUR);
	ck_assert_uint_eq(stored(), 4);
	ck_assert_int_eq(logged("retention:"), 0);
}
END_TEST

/* Over max_size with a collector: unsent profiles stay; the warning comes once. */
START_TEST(protects_pending)
{
	snprintf(cfg.collector.url, sizeof(cfg.collector.url), "http://collector.invalid/");
	cfg.max_size = 4096;
	put_recent(20, NS_PER_MIN);
	retention_prune(h, &cfg);
	ck_assert_uint_eq(stored(), 20);
	ck_assert_int_eq(logged("not yet pushed to the collector"), 1);
	ck_assert_int_eq(logged("retention: deleted"), 0);
}
END_TEST

/* Without a collector, max_size deletes the oldest first. */
START_TEST(size_bound)
{
	struct history_push_counts c;
	int64_t oldest_end;

	cfg.max_size = 48 * 1024;
	oldest_end = put_recent(20, NS_PER_MIN);
	ck_assert_uint_lt(stored(), 20);
	ck_assert_uint_gt(stored(), 0);
	/* what is left is the newest: the oldest went first */
	ck_assert_int_eq(history_push_counts(h, &c), 0);
	ck_assert_int_gt(c.oldest_pending_ns, oldest_end - 10 * NS_PER_SEC);
	ck_assert_int_eq(logged("profiles over max_size 48.0 KiB"), 1);
}
END_TEST

/* More than any file system has: making room always goes as far as it may. */
#define NEED_ALL (UINT64_MAX / 4)

/* The reserve beside the history holds at least bytes. */
static bool reserved(uint64_t bytes)
{
	char path[160];
	struct stat st;

	snprintf(path, sizeof(path), "%s/history.db-reserve", dir);
	return stat(path, &st) == 0 && (uint64_t)st.st_blocks * 512 >= bytes;
}

/*
 * With a collector, room is made from sent profiles only, the oldest first;
 * unsent ones stay, however full the disk: then -ENOSPC, said by the caller.
 * The reserve (max_size / 8 within 128 KiB..1 MiB) goes first, and comes back
 * at the next prune.
 */
START_TEST(room_from_sent_only)
{
	struct history_push_counts c;
	struct room_made r;
	int64_t now = real_ns(), id[20];

	snprintf(cfg.data_dir, sizeof(cfg.data_dir), "%s", dir);
	snprintf(cfg.collector.url, sizeof(cfg.collector.url), "http://collector.invalid/");
	for (int i = 0; i < 20; i++)
		id[i] = put(now - (20 - i) * NS_PER_MIN);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(history_mark(h, id[i], HISTORY_SENT, NULL, now), 0);
	retention_prune(h, &cfg);
	ck_assert(reserved(1 << 20));
	ck_assert_uint_eq(retention_keep_free(&cfg), 512 * 1024);
	ck_assert_int_eq(retention_make_room(h, &cfg, NEED_ALL, &r), 0);
	ck_assert_uint_eq(r.profiles, 5);
	ck_assert_uint_ge(r.bytes, 5 * 1024);
	ck_assert(!reserved(1));
	ck_assert_uint_eq(retention_keep_free(&cfg), 512 * 1024 + (1 << 20));
	ck_assert_int_eq(history_push_counts(h, &c), 0);
	ck_assert_uint_eq(c.pending, 15);
	ck_assert_uint_eq(c.sent, 0);
	ck_assert_int_eq(logged("deleted the 5 oldest profiles that may go"), 1);
	/* only unsent ones left: nothing goes */
	ck_assert_int_eq(retention_make_room(h, &cfg, NEED_ALL, &r), -ENOSPC);
	ck_assert_uint_eq(r.profiles, 0);
	ck_assert_uint_eq(r.pending, 15);
	ck_assert_uint_eq(stored(), 15);
	retention_prune(h, &cfg);
	ck_assert(reserved(1 << 20));
}
END_TEST

/* Without a collector, only what is past retention may go to make room. */
START_TEST(room_from_expired_only)
{
	struct room_made r;
	int64_t now = real_ns();

	snprintf(cfg.data_dir, sizeof(cfg.data_dir), "%s", dir);
	put(now - 9 * NS_PER_DAY);
	put(now - 8 * NS_PER_DAY);
	for (int i = 0; i < 4; i++)
		put(now - (i + 1) * NS_PER_HOUR);
	ck_assert_int_eq(retention_make_room(h, &cfg, NEED_ALL, &r), 0);
	ck_assert_uint_eq(r.profiles, 2);
	ck_assert_uint_eq(stored(), 4);
	ck_assert_int_eq(retention_make_room(h, &cfg, NEED_ALL, &r), -ENOSPC);
	ck_assert_uint_eq(r.profiles, 0);
	ck_assert_uint_eq(r.pending, 0);
	ck_assert_uint_eq(stored(), 4);
}
END_TEST

/* Plenty of room: a checkpoint, nothing deleted. */
START_TEST(room_enough)
{
	struct room_made r;

	snprintf(cfg.data_dir, sizeof(cfg.data_dir), "%s", dir);
	put(real_ns() - 9 * NS_PER_DAY);
	ck_assert_uint_gt(retention_free_bytes(&cfg), 4 << 20);
	ck_assert_int_eq(retention_make_room(h, &cfg, 4096, &r), 0);
	ck_assert_uint_eq(r.profiles, 0);
	ck_assert_uint_eq(stored(), 1);
}
END_TEST

Suite *retention_suite(void)
{
	Suite *s = suite_create("retention");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, deletes_old);
	tcase_add_test(tc, keeps_recent);
	tcase_add_test(tc, protects_pending);
	tcase_add_test(tc, size_bound);
	tcase_add_test(tc, room_from_sent_only);
	tcase_add_test(tc, room_from_expired_only);
	tcase_add_test(tc, room_enough);
	suite_add_tcase(s, tc);
	return s;
}
