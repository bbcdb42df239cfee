// SPDX-License-Identifier: MIT
/* The exits and execs the deferred walks read lately (recentprocs.c). */
#include "recentprocs.h"
#include "suites.h"

START_TEST(test_exit)
{
	static struct recent_procs r;

	ck_assert(!recent_exited(&r, 0)); /* nothing noted: not even pid 0's slot */
	recent_exit(&r, 42);
	ck_assert(recent_exited(&r, 42));
	ck_assert(!recent_exited(&r, 43));
}
END_TEST

/* A sample taken before the exec is the old program's; one taken after, the new one's. */
START_TEST(test_exec)
{
	static struct recent_procs r;

	recent_exec(&r, 7, 1000);
	ck_assert(recent_execd_after(&r, 7, 999));
	ck_assert(!recent_execd_after(&r, 7, 1000));
	ck_assert(!recent_execd_after(&r, 7, 1001));
	ck_assert(!recent_execd_after(&r, 8, 0));
	/* a second exec of the same process: its samples before that one too */
	recent_exec(&r, 7, 5000);
	ck_assert(recent_execd_after(&r, 7, 4000));
	ck_assert(!recent_exited(&r, 7)); /* an exec is no exit */
}
END_TEST

/*
 * The last RECENT_PROCS_MAX are remembered, the older forgotten; past 2^32
 * exits or execs (50 days at 1,000 a second) the rings are still whole.
 */
START_TEST(test_rings)
{
	static struct recent_procs r;

	for (uint32_t pid = 1; pid <= RECENT_PROCS_MAX + 10; pid++) {
		recent_exit(&r, pid);
		recent_exec(&r, pid, pid);
	}
	ck_assert(!recent_exited(&r, 10));
	ck_assert(recent_exited(&r, 11));
	ck_assert(recent_exited(&r, RECENT_PROCS_MAX + 10));
	ck_assert(!recent_execd_after(&r, 10, 0));
	ck_assert(recent_execd_after(&r, 11, 0));
	r.nexited = UINT32_MAX; /* the next ones: slot 255, then slot 0 */
	recent_exit(&r, 9999);
	recent_exit(&r, 9998);
	ck_assert_uint_eq(r.exited[RECENT_PROCS_MAX - 1], 9999);
	ck_assert_uint_eq(r.exited[0], 9998);
	ck_assert(recent_exited(&r, 9999) && recent_exited(&r, 9998));
	ck_assert(recent_exited(&r, 200)); /* an older one, still in the ring */
	r.nexecs = UINT32_MAX;		   /* the same for the execs */
	recent_exec(&r, 9999, 1);
	recent_exec(&r, 9998, 1);
	ck_assert_uint_eq(r.execs[RECENT_PROCS_MAX - 1].pid, 9999);
	ck_assert_uint_eq(r.execs[0].pid, 9998);
	ck_assert(recent_execd_after(&r, 9999, 0) && recent_execd_after(&r, 9998, 0));
	ck_assert(recent_execd_after(&r, 200, 0));
}
END_TEST

Suite *recentprocs_suite(void)
{
	Suite *s = suite_create("recentprocs");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_exit);
	tcase_add_test(tc, test_exec);
	tcase_add_test(tc, test_rings);
	suite_add_tcase(s, tc);
	return s;
}
