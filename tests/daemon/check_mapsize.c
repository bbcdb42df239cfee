// SPDX-License-Identifier: MIT
/*
 * mapsize: the cpu sampler's map sizes from hz, interval and CPUs, with known
 * answers (the defaults, the 999 Hz case of issue 15), the bounds, and the
 * order sampler_fits() relies on (a shorter interval never needs more).
 */
#include <limits.h>

#include "clock.h"
#include "mapsize.h"
#include "suites.h"

START_TEST(test_defaults)
{
	struct map_sizes m;

	/* 19 Hz, 10 s, 2 CPUs: 19 x 11 x 2 = 418 samples, the smallest maps */
	map_sizes_for(2, 19, 10 * NS_PER_SEC, &m);
	ck_assert_uint_eq(m.counts, MAPSIZE_COUNTS_MIN);
	ck_assert_uint_eq(m.stack_parts, MAPSIZE_PARTS_MIN);
}
END_TEST

START_TEST(test_999hz_holds_every_stack)
{
	struct map_sizes m;

	/* 999 x 11 x 2 = 21978 samples; two stacks each: 43956 parts, in steps of 1024 */
	map_sizes_for(2, 999, 10 * NS_PER_SEC, &m);
	ck_assert_uint_eq(m.counts, 32768);
	ck_assert_uint_eq(m.stack_parts, 44032);
	/* 16384 whole stacks before: the 8.3 % lost */
	ck_assert_uint_ge(m.stack_parts, 2 * 999 * 10 * 2);
}
END_TEST

START_TEST(test_bounds)
{
	struct map_sizes m;

	map_sizes_for(64, 999, 3600 * NS_PER_SEC, &m);
	ck_assert_uint_eq(m.counts, MAPSIZE_COUNTS_MAX);
	ck_assert_uint_eq(m.stack_parts, MAPSIZE_PARTS_MAX);
	/* nothing overflows past the caps */
	map_sizes_for(UINT_MAX, UINT_MAX, INT64_MAX, &m);
	ck_assert_uint_eq(m.counts, MAPSIZE_COUNTS_MAX);
	ck_assert_uint_eq(m.stack_parts, MAPSIZE_PARTS_MAX);
	/* no interval (or a bad one) sizes for one second */
	map_sizes_for(1, 1, 0, &m);
	ck_assert_uint_eq(m.counts, MAPSIZE_COUNTS_MIN);
	ck_assert_uint_eq(m.stack_parts, MAPSIZE_PARTS_MIN);
	map_sizes_for(1, 4000, -1, &m);
	ck_assert_uint_eq(m.counts, 8192);	/* 4000 + 1000 -> 8192 */
	ck_assert_uint_eq(m.stack_parts, 8192); /* 8000 -> 8 x 1024 */
}
END_TEST

START_TEST(test_shorter_never_needs_more)
{
	struct map_sizes prev = {0, 0}, m;

	for (int64_t s = 1; s <= 3600; s++) {
		map_sizes_for(2, 999, s * NS_PER_SEC, &m);
		ck_assert_uint_ge(m.counts, prev.counts);
		ck_assert_uint_ge(m.stack_parts, prev.stack_parts);
		ck_assert_uint_eq(m.stack_parts % MAPSIZE_PARTS_STEP, 0);
		prev = m;
	}
}
END_TEST

START_TEST(test_roundup_pow2)
{
	ck_assert_uint_eq(map_roundup_pow2(0, 16, 1024), 16);
	ck_assert_uint_eq(map_roundup_pow2(17, 16, 1024), 32);
	ck_assert_uint_eq(map_roundup_pow2(64, 16, 1024), 64);
	ck_assert_uint_eq(map_roundup_pow2(UINT64_MAX, 16, 1024), 1024);
}
END_TEST

Suite *mapsize_suite(void)
{
	Suite *s = suite_create("mapsize");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_999hz_holds_every_stack);
	tcase_add_test(tc, test_bounds);
	tcase_add_test(tc, test_shorter_never_needs_more);
	tcase_add_test(tc, test_roundup_pow2);
	suite_add_tcase(s, tc);
	return s;
}
