// SPDX-License-Identifier: MIT
/* The unwind tables waiting to be compiled: order, one job per file, its waiters (jobqueue.c). */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "jobqueue.h"
#include "suites.h"

static struct jobqueue q;

static void teardown(void)
{
	jobqueue_free(&q);
}

/* pid maps the file of inode ino and size bytes (0: unknown) at /lib/<ino>. */
static bool add(pid_t pid, uint64_t ino, uint64_t size)
{
	char path[32];
	struct proc_map m = {.start = 0x1000 * ino, .end = 0x1000 * ino + 0x1000, .path = path};
	struct file_key key = {.dev = 1, .ino = ino, .size = size};

	snprintf(path, sizeof(path), "/lib/%llu", (unsigned long long)ino);
	return jobqueue_add(&q, pid, &m, &key);
}

/* Takes the next job: its file's inode, and its waiters in pids[0..*npids). */
static uint64_t take(pid_t *pids, size_t *npids)
{
	struct job j;
	uint64_t ino;

	ck_assert(jobqueue_take(&q, &j));
	ino = j.key.ino;
	*npids = j.npids;
	memcpy(pids, j.pids, j.npids * sizeof(*pids));
	job_free(&j);
	return ino;
}

START_TEST(test_smallest_first)
{
	static const struct {
		pid_t pid;
		uint64_t ino, size;
	} asked[] = {{10, 1, 300}, {11, 2, 100}, {12, 3, 200}, {13, 4, 50}, {14, 5, 250}};
	static const uint64_t order[] = {4, 2, 3, 5, 1};
	pid_t pids[4];
	size_t n;

	for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++)
		ck_assert(add(asked[i].pid, asked[i].ino, asked[i].size));
	ck_assert_uint_eq(q.n, 5);
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		ck_assert_uint_eq(take(pids, &n), order[i]);
		ck_assert_uint_eq(n, 1);
		ck_assert_int_eq(pids[0], 9 + (pid_t)order[i]);
	}
	ck_assert_uint_eq(q.n, 0);
}
END_TEST

START_TEST(test_take_empty)
{
	struct job j;

	ck_assert(!jobqueue_take(&q, &j));
}
END_TEST

/* The mapping and its path are the job's own: the caller's buffer can go. */
START_TEST(test_mapping_copied)
{
	char path[] = "/usr/lib/libc.so.6";
	struct proc_map m = {.start = 0x7000, .end = 0x9000, .offset = 0x2000, .path = path};
	struct file_key key = {.dev = 8, .ino = 77, .size = 4096};
	struct job j;

	ck_assert(jobqueue_add(&q, 5, &m, &key));
	memset(path, 'x', sizeof(path) - 1);
	ck_assert(jobqueue_take(&q, &j));
	ck_assert_str_eq(j.m.path, "/usr/lib/libc.so.6");
	ck_assert_uint_eq(j.m.start, 0x7000);
	ck_assert_uint_eq(j.m.offset, 0x2000);
	ck_assert_uint_eq(j.key.ino, 77);
	job_free(&j);
}
END_TEST

/* Processes that map one file wait for one job, each once, in the order they asked. */
START_TEST(test_one_job_per_file)
{
	pid_t pids[4];
	size_t n;

	ck_assert(add(20, 1, 100));
	ck_assert(add(21, 1, 100));
	ck_assert(add(20, 1, 100));
	ck_assert(add(22, 2, 100)); /* another file of the same size */
	ck_assert(add(23, 1, 100));
	ck_assert_uint_eq(q.n, 2);
	ck_assert_uint_eq(take(pids, &n), 1);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(pids[0], 20);
	ck_assert_int_eq(pids[1], 21);
	ck_assert_int_eq(pids[2], 23);
}
END_TEST

/* A file whose size is unknown is no file's twin: each mapping of it is a job. */
START_TEST(test_unknown_size_not_shared)
{
	ck_assert(add(30, 1, 0));
	ck_assert(add(31, 1, 0));
	ck_assert(add(30, 1, 0));
	ck_assert_uint_eq(q.n, 3);
}
END_TEST

/* Past JOBQUEUE_WAITERS a process is refused as a waiter (reloaded once every job is done). */
START_TEST(test_waiter_cap)
{
	static pid_t pids[JOBQUEUE_WAITERS];
	size_t n;

	for (pid_t pid = 1; pid <= JOBQUEUE_WAITERS + 1; pid++)
		ck_assert(add(pid, 1, 100)); /* the job is there: the process asked */
	ck_assert_uint_eq(q.n, 1);
	ck_assert_uint_eq(take(pids, &n), 1);
	ck_assert_uint_eq(n, JOBQUEUE_WAITERS);
	ck_assert_int_eq(pids[0], 1);
	ck_assert_int_eq(pids[JOBQUEUE_WAITERS - 1], JOBQUEUE_WAITERS);
}
END_TEST

/* Past JOBQUEUE_MAX files a new one is refused; a file queued still takes waiters. */
START_TEST(test_queue_full)
{
	pid_t pids[2];
	size_t n;

	for (uint64_t ino = 1; ino <= JOBQUEUE_MAX; ino++)
		ck_assert(add(40, ino, 1000 + ino));
	ck_assert(!add(41, JOBQUEUE_MAX + 1, 10));
	ck_assert(add(41, 1, 1001));
	ck_assert_uint_eq(q.n, JOBQUEUE_MAX);
	ck_assert_uint_eq(take(pids, &n), 1);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(pids[1], 41);
	ck_assert(add(41, JOBQUEUE_MAX + 1, 10));
	ck_assert_uint_eq(take(pids, &n), JOBQUEUE_MAX + 1);
}
END_TEST

Suite *jobqueue_suite(void)
{
	Suite *s = suite_create("jobqueue");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, test_smallest_first);
	tcase_add_test(tc, test_take_empty);
	tcase_add_test(tc, test_mapping_copied);
	tcase_add_test(tc, test_one_job_per_file);
	tcase_add_test(tc, test_unknown_size_not_shared);
	tcase_add_test(tc, test_waiter_cap);
	tcase_add_test(tc, test_queue_full);
	suite_add_tcase(s, tc);
	return s;
}
