// SPDX-License-Identifier: MIT
/*
 * symshare: the symbol cache's charges per user and per process, and the room
 * each bound leaves a new binary (known answers at a 24 MiB cache).
 */
#include "suites.h"
#include "symshare.h"

#define MIB (1ull << 20)
#define CAP (24 * MIB)

/* A charge counts for its user and its process, a refund gives back, 0 removes the entry. */
START_TEST(test_charges)
{
	struct symshare t = {0};

	ck_assert_int_eq(symshare_charge(&t, 65534, 100, 5 * MIB), 0);
	ck_assert_int_eq(symshare_charge(&t, 65534, 101, 3 * MIB), 0);
	ck_assert_int_eq(symshare_charge(&t, 0, 1, 2 * MIB), 0);
	ck_assert_uint_eq(symshare_user(&t, 65534), 8 * MIB);
	ck_assert_uint_eq(symshare_proc(&t, 100), 5 * MIB);
	ck_assert_uint_eq(symshare_proc(&t, 101), 3 * MIB);
	ck_assert_uint_eq(symshare_user(&t, 0), 2 * MIB);
	ck_assert_uint_eq(t.total, 10 * MIB);
	/* uid 100 and pid 100 are not the same entry */
	ck_assert_uint_eq(symshare_user(&t, 100), 0);
	ck_assert_int_eq(symshare_charge(&t, 65534, 100, -(int64_t)(5 * MIB)), 0);
	ck_assert_uint_eq(symshare_proc(&t, 100), 0);
	ck_assert_uint_eq(symshare_user(&t, 65534), 3 * MIB);
	ck_assert_uint_eq(t.total, 5 * MIB);
	ck_assert_uint_eq(t.n, 4); /* pid 100's entry went */
	/* a refund larger than the charge stops at 0 */
	ck_assert_int_eq(symshare_charge(&t, 0, 1, -(int64_t)(9 * MIB)), 0);
	ck_assert_uint_eq(symshare_user(&t, 0), 0);
	ck_assert_uint_eq(t.total, 3 * MIB);
	symshare_free(&t);
	ck_assert_uint_eq(t.n, 0);
}
END_TEST

/* Many users and processes: the table grows and every charge stays its own. */
START_TEST(test_many)
{
	struct symshare t = {0};

	for (uint32_t i = 0; i < 1000; i++)
		ck_assert_int_eq(symshare_charge(&t, 1000 + i % 10, (pid_t)(2000 + i), i + 1), 0);
	ck_assert_uint_eq(symshare_proc(&t, 2999), 1000);
	ck_assert_uint_eq(symshare_user(&t, 1009), 50500);
	ck_assert_uint_eq(t.total, 1000 * 1001 / 2);
	for (uint32_t i = 0; i < 1000; i++)
		symshare_charge(&t, 1000 + i % 10, (pid_t)(2000 + i), -(int64_t)(i + 1));
	ck_assert_uint_eq(t.n, 0);
	ck_assert_uint_eq(t.total, 0);
	symshare_free(&t);
}
END_TEST

/* The room of a new binary: the least of its own share and what the others leave. */
START_TEST(test_room)
{
	struct symshare t = {0};
	enum symshare_by by;

	/* an empty cache: a binary may take half */
	ck_assert_uint_eq(symshare_room(&t, 65534, 100, CAP, &by), 12 * MIB);
	ck_assert_int_eq(by, SYMSHARE_BY_FILE);
	/* nobody's process 100 holds 10 MiB: 2 left to it */
	symshare_charge(&t, 65534, 100, 10 * MIB);
	ck_assert_uint_eq(symshare_room(&t, 65534, 100, CAP, &by), 2 * MIB);
	ck_assert_int_eq(by, SYMSHARE_BY_PROC);
	/* another process of nobody's: what the user's half has left */
	ck_assert_uint_eq(symshare_room(&t, 65534, 101, CAP, &by), 2 * MIB);
	ck_assert_int_eq(by, SYMSHARE_BY_USER);
	/* nobody at its half: nothing for any of its processes */
	symshare_charge(&t, 65534, 101, 2 * MIB);
	ck_assert_uint_eq(symshare_room(&t, 65534, 102, CAP, &by), 0);
	ck_assert_int_eq(by, SYMSHARE_BY_USER);
	/* another user keeps the other half */
	ck_assert_uint_eq(symshare_room(&t, 1000, 200, CAP, &by), 12 * MIB);
	ck_assert_int_eq(by, SYMSHARE_BY_FILE);
	/* root's processes are bounded each, not together; the cache bounds all */
	symshare_charge(&t, 0, 1, 8 * MIB);
	ck_assert_uint_eq(symshare_room(&t, 0, 2, CAP, &by), 4 * MIB);
	ck_assert_int_eq(by, SYMSHARE_BY_CACHE);
	ck_assert_uint_eq(symshare_room(&t, 0, 1, CAP, &by), 4 * MIB);
	ck_assert_int_eq(by, SYMSHARE_BY_PROC);
	/* over a share (a smaller cap since): no room, never a wrap */
	ck_assert_uint_eq(symshare_room(&t, 65534, 100, 8 * MIB, &by), 0);
	ck_assert_uint_eq(symshare_room(&t, 65534, 100, 0, &by), 0);
	symshare_free(&t);
}
END_TEST

Suite *symshare_suite(void)
{
	Suite *s = suite_create("symshare");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_charges);
	tcase_add_test(tc, test_many);
	tcase_add_test(tc, test_room);
	suite_add_tcase(s, tc);
	return s;
}
