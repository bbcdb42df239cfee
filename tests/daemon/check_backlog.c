// SPDX-License-Identifier: MIT
/* The store backlog: order, the byte cap, oldest-first drops counted, a smaller cap. */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "backlog.h"
#include "suites.h"

static const uint8_t blob[4000];

static int push(struct backlog *b, int64_t start, size_t len)
{
	struct history_meta m = {.start_ns = start,
				 .end_ns = start + 1,
				 .type = "cpu",
				 .app = "app",
				 .labels = "k=v",
				 .samples = 3};

	return backlog_push(b, &m, blob, len);
}

/* What one entry of len bytes costs. */
static uint64_t cost(size_t len)
{
	return sizeof(struct backlog_entry) + strlen("cpu") + strlen("app") + strlen("k=v") + 3 +
	       len;
}

START_TEST(test_fifo_copies)
{
	struct backlog b;
	const struct backlog_entry *e;

	backlog_init(&b, 1 << 20);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(push(&b, i, 100), 0);
	ck_assert_uint_eq(b.n, 5);
	ck_assert_uint_eq(b.bytes, 5 * cost(100));
	for (int i = 0; i < 5; i++) {
		e = backlog_peek(&b);
		ck_assert_ptr_nonnull(e);
		ck_assert_int_eq(e->meta.start_ns, i);
		ck_assert_str_eq(e->meta.type, "cpu");
		ck_assert_str_eq(e->meta.app, "app");
		ck_assert_str_eq(e->meta.labels, "k=v");
		ck_assert_uint_eq(e->len, 100);
		backlog_pop(&b);
	}
	ck_assert_ptr_null(backlog_peek(&b));
	ck_assert_uint_eq(b.bytes, 0);
	ck_assert_uint_eq(b.dropped, 0);
	backlog_free(&b);
}
END_TEST

START_TEST(test_cap_drops_oldest)
{
	struct backlog b;

	backlog_init(&b, 3 * cost(500)); /* room for three */
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(push(&b, i, 500), 0);
	ck_assert_uint_eq(b.n, 3);
	ck_assert_uint_le(b.bytes, b.cap);
	ck_assert_uint_eq(b.dropped, 7);
	ck_assert_uint_eq(b.dropped_bytes, 7 * cost(500));
	ck_assert_int_eq(backlog_peek(&b)->meta.start_ns, 7); /* the newest three stay */
	/* one larger than the cap alone is refused and counted; the others stay */
	ck_assert_int_eq(push(&b, 99, sizeof(blob)), -E2BIG);
	ck_assert_uint_eq(b.dropped, 8);
	ck_assert_uint_eq(b.n, 3);
	/* a smaller cap drops the oldest until the rest fits */
	backlog_set_cap(&b, cost(500));
	ck_assert_uint_eq(b.n, 1);
	ck_assert_int_eq(backlog_peek(&b)->meta.start_ns, 9);
	ck_assert_uint_eq(b.dropped, 10);
	backlog_free(&b);
	ck_assert_uint_eq(b.n, 0);
}
END_TEST

START_TEST(test_zero_cap)
{
	struct backlog b;

	backlog_init(&b, 0); /* store_backlog = 0: nothing kept, every one counted */
	ck_assert_int_eq(push(&b, 1, 10), -E2BIG);
	ck_assert_uint_eq(b.n, 0);
	ck_assert_uint_eq(b.dropped, 1);
	backlog_free(&b);
}
END_TEST

Suite *backlog_suite(void)
{
	Suite *s = suite_create("backlog");
	TCase *tc = tcase_create("backlog");

	tcase_add_test(tc, test_fifo_copies);
	tcase_add_test(tc, test_cap_drops_oldest);
	tcase_add_test(tc, test_zero_cap);
	suite_add_tcase(s, tc);
	return s;
}
