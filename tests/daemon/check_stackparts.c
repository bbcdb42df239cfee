// SPDX-License-Identifier: MIT
/*
 * stackparts: stacks cut into parts as bpf/stack.bpf.h stores them, read back
 * by hash: one part is used in place, more are joined in order, a missing
 * part or stack is a lost stack, hash 0 no stack.
 */
#include <stdlib.h>
#include <string.h>

#include "stackparts.h"
#include "suites.h"

static struct stack_parts d;
static struct ember_stack join;

static void setup(void)
{
	memset(&d, 0, sizeof(d));
}

static void teardown(void)
{
	stack_parts_free(&d);
}

/* Frame j of the stack of hash: known, and different across stacks. */
static uint64_t frame(uint64_t hash, uint32_t j)
{
	return hash * 1000 + j + 1;
}

/* Appends the parts of a stack of len frames, as the BPF side cuts them (words). */
static void put_stack(uint64_t hash, uint32_t len, uint32_t flags)
{
	/* padded to whole parts, like the BPF scratch */
	uint64_t w[EMBER_STACK_PARTS_MAX * EMBER_STACK_PART_WORDS] = {0};
	struct ember_stack st = {.len = len, .flags = flags};
	uint32_t n = EMBER_STACK_PARTS(len < EMBER_MAX_STACK_DEPTH ? len : EMBER_MAX_STACK_DEPTH);

	for (uint32_t j = 0; j < len && j < EMBER_MAX_STACK_DEPTH; j++)
		st.ips[j] = frame(hash, j);
	memcpy(w, &st, sizeof(st));
	ck_assert_int_eq(stack_parts_reserve(&d, d.n + n), 0);
	for (uint32_t i = 0; i < n; i++) {
		d.keys[d.n] = (struct ember_stack_key){.hash = hash, .part = i};
		memcpy(d.parts[d.n].w, w + i * EMBER_STACK_PART_WORDS, sizeof(d.parts[0].w));
		d.n++;
	}
}

/* Removes part p of hash (a store that failed half-way, or a collision). */
static void drop_part(uint64_t hash, uint32_t p)
{
	for (size_t i = 0; i < d.n; i++)
		if (d.keys[i].hash == hash && d.keys[i].part == p)
			d.keys[i].hash = 0; /* no stack has hash 0 */
}

static void check_stack(uint64_t hash, uint32_t len, bool truncated)
{
	struct sampler_stack s;

	stack_parts_find(&d, hash, false, &join, &s);
	ck_assert(!s.lost);
	ck_assert_uint_eq(s.n, len);
	ck_assert(s.truncated == truncated);
	for (uint32_t j = 0; j < len; j++)
		ck_assert_uint_eq(s.ips[j], frame(hash, j));
}

START_TEST(test_one_part_in_place)
{
	struct sampler_stack s;

	put_stack(7, 31, 0); /* the deepest of one part */
	put_stack(8, 1, 0);
	ck_assert_uint_eq(d.n, 2);
	ck_assert_int_eq(stack_parts_index(&d), 0);
	check_stack(7, 31, false);
	check_stack(8, 1, false);
	stack_parts_find(&d, 7, false, &join, &s);
	ck_assert_ptr_eq(s.ips, &d.parts[0].w[1]); /* not copied */
}
END_TEST

START_TEST(test_parts_joined)
{
	put_stack(11, 32, 0); /* 33 words: two parts */
	put_stack(12, 100, 0);
	put_stack(13, EMBER_MAX_STACK_DEPTH, EMBER_STACK_TRUNCATED);
	ck_assert_uint_eq(d.n, 2 + 4 + EMBER_STACK_PARTS_MAX);
	ck_assert_int_eq(stack_parts_index(&d), 0);
	check_stack(11, 32, false);
	check_stack(12, 100, false);
	check_stack(13, EMBER_MAX_STACK_DEPTH, true);
}
END_TEST

START_TEST(test_missing_is_lost)
{
	struct sampler_stack s;

	put_stack(21, 70, 0);
	put_stack(22, 3, 0);
	drop_part(21, 1);
	ck_assert_int_eq(stack_parts_index(&d), 0);
	stack_parts_find(&d, 21, false, &join, &s);
	ck_assert(s.lost);
	ck_assert_uint_eq(s.n, 0);
	/* never stored (a full map): lost */
	stack_parts_find(&d, 99, false, &join, &s);
	ck_assert(s.lost);
	ck_assert_uint_eq(s.n, 0);
	/* none (hash 0): empty, lost only as the key's flags say */
	stack_parts_find(&d, 0, false, &join, &s);
	ck_assert(!s.lost);
	ck_assert_uint_eq(s.n, 0);
	stack_parts_find(&d, 0, true, &join, &s);
	ck_assert(s.lost);
	check_stack(22, 3, false);
}
END_TEST

START_TEST(test_len_clamped)
{
	struct sampler_stack s;

	/* a length past the deepest (not from our BPF side): the stored frames only */
	put_stack(31, EMBER_MAX_STACK_DEPTH + 40, 0);
	ck_assert_int_eq(stack_parts_index(&d), 0);
	stack_parts_find(&d, 31, false, &join, &s);
	ck_assert(!s.lost);
	ck_assert_uint_eq(s.n, EMBER_MAX_STACK_DEPTH);
	ck_assert_uint_eq(s.ips[EMBER_MAX_STACK_DEPTH - 1], frame(31, EMBER_MAX_STACK_DEPTH - 1));
}
END_TEST

START_TEST(test_many)
{
	/* hashes alike in their low bits, and parts of every count */
	for (uint64_t h = 1; h <= 3000; h++)
		put_stack(h << 40 | h, (uint32_t)(h % 90), 0);
	ck_assert_int_eq(stack_parts_index(&d), 0);
	for (uint64_t h = 1; h <= 3000; h++) {
		struct sampler_stack s;
		uint32_t len = h % 90;

		stack_parts_find(&d, h << 40 | h, false, &join, &s);
		ck_assert(!s.lost);
		ck_assert_uint_eq(s.n, len);
		if (len)
			ck_assert_uint_eq(s.ips[len - 1], frame(h << 40 | h, len - 1));
	}
}
END_TEST

START_TEST(test_empty)
{
	struct sampler_stack s;

	/* a drain that read nothing, or failed before indexing */
	stack_parts_find(&d, 5, false, &join, &s);
	ck_assert(s.lost);
	ck_assert_int_eq(stack_parts_index(&d), 0);
	stack_parts_find(&d, 5, false, &join, &s);
	ck_assert(s.lost);
}
END_TEST

Suite *stackparts_suite(void)
{
	Suite *s = suite_create("stackparts");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_one_part_in_place);
	tcase_add_test(tc, test_parts_joined);
	tcase_add_test(tc, test_missing_is_lost);
	tcase_add_test(tc, test_len_clamped);
	tcase_add_test(tc, test_many);
	tcase_add_test(tc, test_empty);
	suite_add_tcase(s, tc);
	return s;
}
