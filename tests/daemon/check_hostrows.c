// SPDX-License-Identifier: MIT
/*
 * hostrows: the deferred walks' searches give the row uwalk_search() finds
 * over the whole table, read at most one block of the map each (none while it
 * stays cached), and never a block of a table dropped since.
 */
#include <stdlib.h>
#include <string.h>

#include "hostrows.h"
#include "suites.h"
#include "uwalk.h"

#define N EMBER_ROWS_PER_BLOCK
/* A fake rows map: room for a few tables, in blocks as the unwinder writes them. */
#define MAP_BLOCKS 64

static struct ember_unwind_row map[MAP_BLOCKS * N];
static unsigned reads;
static bool fail_reads;

static bool read_block(void *arg, uint32_t block, struct ember_unwind_row *rows)
{
	(void)arg;
	reads++;
	if (fail_reads || block >= MAP_BLOCKS)
		return false;
	memcpy(rows, &map[block * N], N * sizeof(*rows));
	return true;
}

/* nrows rows from first on, the table's pcs 0, step, 2 step...; cfa_off tells tables apart. */
static void write_table(uint32_t first, uint32_t nrows, uint32_t step, int32_t tag)
{
	for (uint32_t i = 0; i < nrows; i++)
		map[first + i] = (struct ember_unwind_row){
			.pc = 0x1000 + i * step, .cfa_kind = EMBER_CFA_RSP, .cfa_off = tag};
}

static bool whole_row(void *arg, uint32_t i, struct ember_unwind_row *out)
{
	*out = ((const struct ember_unwind_row *)arg)[i];
	return true;
}

static struct hostrows *setup(void)
{
	struct hostrows *h = hostrows_new(read_block, NULL);

	ck_assert_ptr_nonnull(h);
	memset(map, 0, sizeof(map));
	reads = 0;
	fail_reads = false;
	return h;
}

START_TEST(test_same_rows_as_the_whole_search)
{
	struct hostrows *h = setup();
	uint32_t nrows = 5 * N + 7; /* a partly filled last block */
	struct ember_unwind_row a, b;
	uint64_t lo, hi;

	write_table(2 * N, nrows, 16, 1);
	ck_assert_int_eq(hostrows_add(h, 3, 2 * N, &map[2 * N], nrows), 0);
	for (uint64_t pc = 0; pc < 0x1000 + nrows * 16 + 64; pc += 5) {
		bool whole = uwalk_search(nrows, whole_row, &map[2 * N], pc, &a, &lo, &hi);

		ck_assert_int_eq(hostrows_find(h, 3, pc, &b), whole);
		if (whole)
			ck_assert_int_eq(memcmp(&a, &b, sizeof(a)), 0);
	}
	/* past 32 bits: the last row, as the walk's search gives it */
	ck_assert(hostrows_find(h, 3, 1ull << 40, &b));
	ck_assert_uint_eq(b.pc, 0x1000 + (nrows - 1) * 16);
	hostrows_free(h);
}
END_TEST

START_TEST(test_one_read_per_block)
{
	struct hostrows *h = setup();
	struct ember_unwind_row r;

	write_table(0, 3 * N, 16, 1);
	ck_assert_int_eq(hostrows_add(h, 0, 0, map, 3 * N), 0);
	ck_assert_uint_eq(reads, 0); /* the index is made from the rows written: no read */
	ck_assert(hostrows_find(h, 0, 0x1000 + 10 * 16, &r));
	ck_assert_uint_eq(reads, 1);
	ck_assert(hostrows_find(h, 0, 0x1000 + 20 * 16 + 3, &r)); /* same block: cached */
	ck_assert_uint_eq(reads, 1);
	ck_assert(hostrows_find(h, 0, 0x1000 + (2 * N + 1) * 16, &r));
	ck_assert_uint_eq(reads, 2);
	ck_assert_uint_eq(r.pc, 0x1000 + (2 * N + 1) * 16);
	/* before the first row: nothing, and nothing read */
	ck_assert(!hostrows_find(h, 0, 0xfff, &r));
	ck_assert_uint_eq(reads, 2);
	hostrows_free(h);
}
END_TEST

START_TEST(test_dropped_table_not_read)
{
	struct hostrows *h = setup();
	struct ember_unwind_row r;

	write_table(0, N, 16, 1);
	ck_assert_int_eq(hostrows_add(h, 7, 0, map, N), 0);
	ck_assert(hostrows_find(h, 7, 0x1010, &r));
	ck_assert_int_eq(r.cfa_off, 1);
	ck_assert_uint_eq(hostrows_drops(h), 0);
	hostrows_drop(h, 7);
	ck_assert(!hostrows_find(h, 7, 0x1010, &r));
	/* the walks' sign that a table went under them: counted once, unknown ids not */
	ck_assert_uint_eq(hostrows_drops(h), 1);
	hostrows_drop(h, 7);
	hostrows_drop(h, 9);
	ck_assert_uint_eq(hostrows_drops(h), 1);
	/* another table in the same blocks, under another id: its rows, not the cached ones */
	write_table(0, N, 32, 2);
	ck_assert_int_eq(hostrows_add(h, 8, 0, map, N), 0);
	ck_assert(hostrows_find(h, 8, 0x1010, &r));
	ck_assert_int_eq(r.cfa_off, 2);
	ck_assert_uint_eq(r.pc, 0x1000);
	hostrows_free(h);
}
END_TEST

START_TEST(test_reused_id_and_failed_read)
{
	struct hostrows *h = setup();
	struct ember_unwind_row r;
	struct hostrows_stats st;

	write_table(0, N, 16, 1);
	ck_assert_int_eq(hostrows_add(h, 1, 0, map, N), 0);
	ck_assert(hostrows_find(h, 1, 0x1000, &r));
	/* the id given again to a table elsewhere: the old blocks are not its */
	write_table(4 * N, N, 16, 3);
	ck_assert_int_eq(hostrows_add(h, 1, 4 * N, &map[4 * N], N), 0);
	ck_assert_uint_eq(hostrows_drops(h), 1); /* the id's old table went */
	ck_assert(hostrows_find(h, 1, 0x1000, &r));
	ck_assert_int_eq(r.cfa_off, 3);
	/* a read that fails: no row, counted, tried again next time */
	hostrows_drop(h, 1);
	ck_assert_int_eq(hostrows_add(h, 1, 4 * N, &map[4 * N], N), 0);
	fail_reads = true;
	ck_assert(!hostrows_find(h, 1, 0x1000, &r));
	fail_reads = false;
	ck_assert(hostrows_find(h, 1, 0x1000, &r));
	hostrows_stats(h, &st);
	ck_assert_uint_eq(st.failed, 1);
	ck_assert_uint_eq(st.reads, reads);
	/* what the unwinder never gives */
	ck_assert_int_lt(hostrows_add(h, EMBER_UNWIND_TABLES_MAX, 0, map, N), 0);
	ck_assert_int_lt(hostrows_add(h, 2, 1, map, N), 0); /* not a block's first row */
	ck_assert(!hostrows_find(h, EMBER_UNWIND_TABLES_MAX, 0x1000, &r));
	ck_assert(!hostrows_find(h, 5, 0x1000, &r)); /* never added */
	hostrows_free(h);
}
END_TEST

Suite *hostrows_suite(void)
{
	Suite *s = suite_create("hostrows");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_same_rows_as_the_whole_search);
	tcase_add_test(tc, test_one_read_per_block);
	tcase_add_test(tc, test_dropped_table_not_read);
	tcase_add_test(tc, test_reused_id_and_failed_read);
	suite_add_tcase(s, tc);
	return s;
}
