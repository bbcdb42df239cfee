// SPDX-License-Identifier: MIT
/* A deferred sample record checked: what of it is walked, what is left out. */
#include <stdlib.h>
#include <string.h>

#include "deferrec.h"
#include "suites.h"

#define BASE 0x7ffc0000ull

/* A record with pages of stack after its header, sp at BASE + off. */
static struct ember_deferred_sample *rec(uint64_t off, uint32_t stack_len, size_t pages,
					 size_t *size)
{
	struct ember_deferred_sample *r;

	*size = sizeof(*r) + pages * EMBER_DEFER_PAGE;
	r = calloc(1, *size);
	ck_assert_ptr_nonnull(r);
	r->sp = BASE + off;
	r->stack_base = BASE;
	r->stack_len = stack_len;
	r->kstack_len = 2;
	return r;
}

START_TEST(test_sound)
{
	size_t size;
	struct ember_deferred_sample *r = rec(0x200, EMBER_DEFER_PAGE, 1, &size);
	struct deferrec_view v;

	r->rt.kind = EMBER_RT_PYTHON;
	r->rt.n = 3;
	ck_assert(deferrec_view(r, size, &v));
	ck_assert(!v.bad_stack && !v.bad_kstack);
	/* from sp less the 128-byte red zone to the page's end */
	ck_assert_uint_eq(v.stack_base, BASE + 0x200 - 128);
	ck_assert_uint_eq(v.stack_len, EMBER_DEFER_PAGE - 0x200 + 128);
	ck_assert_ptr_eq(v.stack, r->stack + 0x200 - 128);
	ck_assert_uint_eq(v.kstack_len, 2);
	ck_assert_ptr_eq(v.rt, &r->rt);
	ck_assert_uint_eq(v.rt_bytes, offsetof(struct ember_rt_trace, words) + 3 * 8);
	/* sp in the red zone's reach of the page's start: nothing below the page */
	r->sp = BASE + 16;
	ck_assert(deferrec_view(r, size, &v));
	ck_assert_uint_eq(v.stack_base, BASE);
	ck_assert_uint_eq(v.stack_len, EMBER_DEFER_PAGE);
	free(r);
}
END_TEST

START_TEST(test_unsound)
{
	size_t size;
	struct ember_deferred_sample *r = rec(0x200, 2 * EMBER_DEFER_PAGE, 1, &size);
	struct deferrec_view v;

	ck_assert(!deferrec_view(r, sizeof(*r) - 1, &v)); /* shorter than its header */
	ck_assert(deferrec_view(r, size, &v));		  /* says 2 pages, holds 1 */
	ck_assert(v.bad_stack);
	ck_assert_uint_eq(v.stack_len, 0);
	r->stack_len = 100; /* not whole pages */
	ck_assert(deferrec_view(r, size, &v) && v.bad_stack && !v.stack_len);
	r->stack_len = EMBER_DEFER_PAGE;
	r->stack_base = BASE + EMBER_DEFER_PAGE; /* not the page holding sp */
	ck_assert(deferrec_view(r, size, &v) && v.bad_stack && !v.stack_len);
	r->stack_base = BASE;
	r->kstack_len = EMBER_DEFER_KSTACK_MAX + 1;
	r->rt.kind = EMBER_RT_PYTHON;
	r->rt.n = EMBER_RT_TRACE_MAX + 1;
	ck_assert(deferrec_view(r, size, &v));
	ck_assert(!v.bad_stack && v.bad_kstack);
	ck_assert_uint_eq(v.kstack_len, 0);
	ck_assert_ptr_null(v.rt);
	ck_assert_uint_eq(v.rt_bytes, 0);
	free(r);
}
END_TEST

Suite *deferrec_suite(void)
{
	Suite *s = suite_create("deferrec");
	TCase *tc = tcase_create("view");

	tcase_add_test(tc, test_sound);
	tcase_add_test(tc, test_unsound);
	suite_add_tcase(s, tc);
	return s;
}
