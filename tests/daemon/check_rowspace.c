// SPDX-License-Identifier: MIT
/* The rows map's space among the unwind tables: fit, ids and eviction (rowspace.c). */
#include <check.h>

#include "rowspace.h"
#include "suites.h"

#define IDS 8
#define BLOCK 16

/* Tables by id, as the unwinder holds them: NULL where an id is free. */
struct space {
	struct rowspace_extent ext[IDS];
	const struct rowspace_extent *by_id[IDS];
};

static void put(struct space *s, int id, uint32_t first, uint32_t nrows, uint64_t used,
		uint32_t refs)
{
	s->ext[id] = (struct rowspace_extent){first, nrows, used, refs, false};
	s->by_id[id] = &s->ext[id];
}

START_TEST(test_fit_empty)
{
	struct space s = {};

	ck_assert_int_eq(rowspace_fit(s.by_id, IDS, 100, BLOCK, 100), 0);
	ck_assert_int_eq(rowspace_fit(s.by_id, IDS, 100, BLOCK, 101), -1);
	ck_assert_int_eq(rowspace_free_id(s.by_id, IDS), 0);
	ck_assert_int_eq(rowspace_victim(s.by_id, IDS), -1);
}
END_TEST

/* First fit, in row order whatever the ids, each table from a block's start. */
START_TEST(test_fit_gaps)
{
	struct space s = {};

	put(&s, 3, 64, 10, 1, 0); /* ends in block 4: the next free row is 80 */
	put(&s, 0, 0, 17, 1, 0);  /* ends in block 1: the next free row is 32 */
	/* between 32 and 64: 32 rows */
	ck_assert_int_eq(rowspace_fit(s.by_id, IDS, 200, BLOCK, 32), 32);
	ck_assert_int_eq(rowspace_fit(s.by_id, IDS, 200, BLOCK, 1), 32);
	/* 33 do not fit there: after the last, at 80 */
	ck_assert_int_eq(rowspace_fit(s.by_id, IDS, 200, BLOCK, 33), 80);
	ck_assert_int_eq(rowspace_fit(s.by_id, IDS, 200, BLOCK, 120), 80);
	ck_assert_int_eq(rowspace_fit(s.by_id, IDS, 200, BLOCK, 121), -1);
	ck_assert_int_eq(rowspace_free_id(s.by_id, IDS), 1);
}
END_TEST

/* A table that ends past the cap (a smaller cap after a restart) leaves no room after it. */
START_TEST(test_fit_past_cap)
{
	struct space s = {};

	put(&s, 0, 0, 150, 1, 0);
	ck_assert_int_eq(rowspace_fit(s.by_id, IDS, 100, BLOCK, 1), -1);
}
END_TEST

START_TEST(test_ids_full)
{
	struct space s = {};

	for (int i = 0; i < IDS; i++)
		put(&s, i, (uint32_t)i * BLOCK, 1, (uint64_t)i, 1);
	ck_assert_int_eq(rowspace_free_id(s.by_id, IDS), -1);
	/* every one in use: nothing to evict */
	ck_assert_int_eq(rowspace_victim(s.by_id, IDS), -1);
}
END_TEST

/* The least recently used of the tables no process uses; the vDSO's never. */
START_TEST(test_victim)
{
	struct space s = {};

	put(&s, 0, 0, 16, 5, 0);
	put(&s, 1, 16, 16, 1, 2); /* the oldest, in use */
	put(&s, 2, 32, 16, 3, 0);
	put(&s, 4, 48, 16, 2, 0);
	s.ext[4].pinned = true;
	ck_assert_int_eq(rowspace_victim(s.by_id, IDS), 2);
	s.by_id[2] = NULL;
	ck_assert_int_eq(rowspace_victim(s.by_id, IDS), 0);
	s.by_id[0] = NULL;
	ck_assert_int_eq(rowspace_victim(s.by_id, IDS), -1);
	/* what the evictions freed is found again */
	ck_assert_int_eq(rowspace_fit(s.by_id, IDS, 64, BLOCK, 16), 0);
	ck_assert_int_eq(rowspace_free_id(s.by_id, IDS), 0);
}
END_TEST

Suite *rowspace_suite(void)
{
	Suite *s = suite_create("rowspace");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_fit_empty);
	tcase_add_test(tc, test_fit_gaps);
	tcase_add_test(tc, test_fit_past_cap);
	tcase_add_test(tc, test_ids_full);
	tcase_add_test(tc, test_victim);
	suite_add_tcase(s, tc);
	return s;
}
