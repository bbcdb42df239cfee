// SPDX-License-Identifier: MIT
/* retention.c against a temporary history: what goes, what stays, and what it logs (once). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* A profile of 1 KiB of noise (zstd cannot shrink it) that ended at end_ns. */
static void put(int64_t end_ns)
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

	for (size_t i = 0; i < sizeof(buf); i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
	ck_assert_int_eq(history_put(h, &m, buf, sizeof(buf), NULL), 0);
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

Suite *retention_suite(void)
{
	Suite *s = suite_create("retention");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, deletes_old);
	tcase_add_test(tc, keeps_recent);
	tcase_add_test(tc, protects_pending);
	tcase_add_test(tc, size_bound);
	suite_add_tcase(s, tc);
	return s;
}
