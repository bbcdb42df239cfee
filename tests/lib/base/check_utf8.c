// SPDX-License-Identifier: MIT
/*
 * utf8: known answers for the inputs that break collectors: a thread name cut
 * inside a 3-byte character, overlong encodings, surrogates, lone continuation
 * bytes, code points past U+10FFFF, and truncation on a character boundary.
 */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "suites.h"
#include "utf8.h"

#define R UTF8_REPLACEMENT

static const char *clean(const char *in, size_t outlen, unsigned int flags)
{
	static char buf[256];

	ck_assert_uint_le(outlen, sizeof(buf));
	utf8_sanitize(in, strlen(in), buf, outlen, flags);
	ck_assert(utf8_valid(buf, strlen(buf)));
	return buf;
}

START_TEST(valid_kept)
{
	/* ASCII, 2, 3 and 4 bytes, and the edges of each range */
	static const char *ok[] = {
		"",
		"worker",
		"caf\xc3\xa9",
		"\xe2\x82\xac",
		"\xf0\x9f\x94\xa5",
		"\xc2\x80",
		"\xdf\xbf",
		"\xe0\xa0\x80",
		"\xed\x9f\xbf",
		"\xee\x80\x80",
		"\xef\xbf\xbf",
		"\xf0\x90\x80\x80",
		"\xf4\x8f\xbf\xbf",
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_msg(utf8_valid(ok[i], strlen(ok[i])), "case %zu", i);
		ck_assert_str_eq(clean(ok[i], 64, 0), ok[i]);
	}
}
END_TEST

START_TEST(comm_cut_inside_character)
{
	/* "Ω-Überprüf€" cut by the kernel at 15 bytes: the € (e2 82 ac) lost its last byte */
	const char comm[] = "\xce\xa9-\xc3\x9c"
			    "berpr\xc3\xbc"
			    "f\xe2\x82";

	ck_assert_uint_eq(strlen(comm), 15);
	ck_assert(!utf8_valid(comm, strlen(comm)));
	/* a thread name: the partial character goes */
	ck_assert_str_eq(clean(comm, 64, UTF8_CUT_TAIL), "\xce\xa9-\xc3\x9c"
							 "berpr\xc3\xbc"
							 "f");
	/* anywhere else it is one U+FFFD (a maximal subpart of two bytes) */
	ck_assert_str_eq(clean(comm, 64, 0), "\xce\xa9-\xc3\x9c"
					     "berpr\xc3\xbc"
					     "f" R);
	/* a cut tail is only the end: an invalid byte in the middle is still replaced */
	ck_assert_str_eq(clean("a\xe2\x82"
			       "b",
			       64, UTF8_CUT_TAIL),
			 "a" R "b");
	/* a byte that can never start a character is not a cut */
	ck_assert_str_eq(clean("a\xff", 64, UTF8_CUT_TAIL), "a" R);
	ck_assert_str_eq(clean("a\x80", 64, UTF8_CUT_TAIL), "a" R);
}
END_TEST

START_TEST(overlong_encodings)
{
	/* '/' as 2, 3 and 4 bytes; C0 and C1 can never appear */
	ck_assert(!utf8_valid("\xc0\xaf", 2));
	ck_assert_str_eq(clean("\xc0\xaf", 64, 0), R R);
	ck_assert(!utf8_valid("\xe0\x80\xaf", 3));
	ck_assert_str_eq(clean("\xe0\x80\xaf", 64, 0), R R R);
	ck_assert(!utf8_valid("\xf0\x80\x80\xaf", 4));
	ck_assert_str_eq(clean("\xf0\x80\x80\xaf", 64, 0), R R R R);
	ck_assert_str_eq(clean("x\xc1\xbfy", 64, 0), "x" R R "y");
}
END_TEST

START_TEST(surrogates_and_beyond)
{
	/* U+D800 and U+DFFF (CESU-8 halves), U+110000, F5..FF */
	ck_assert(!utf8_valid("\xed\xa0\x80", 3));
	ck_assert_str_eq(clean("\xed\xa0\x80", 64, 0), R R R);
	ck_assert_str_eq(clean("\xed\xbf\xbf", 64, 0), R R R);
	ck_assert(!utf8_valid("\xf4\x90\x80\x80", 4));
	ck_assert_str_eq(clean("\xf4\x90\x80\x80", 64, 0), R R R R);
	ck_assert_str_eq(clean("\xf5\x80", 64, 0), R R);
	ck_assert_str_eq(clean("\xfe\xff", 64, 0), R R);
}
END_TEST

START_TEST(lone_continuation_bytes)
{
	ck_assert(!utf8_valid("\x80", 1));
	ck_assert_str_eq(clean("\x80", 64, 0), R);
	ck_assert_str_eq(clean("ab\xbf\x80"
			       "cd",
			       64, 0),
			 "ab" R R "cd");
	/* a valid character followed by a stray continuation byte */
	ck_assert_str_eq(clean("\xc3\xa9\xa9", 64, 0), "\xc3\xa9" R);
	/* a truncated 4-byte character in the middle: one U+FFFD for its 3 bytes */
	ck_assert_str_eq(clean("a\xf0\x9f\x94z", 64, 0), "a" R "z");
}
END_TEST

START_TEST(truncation_on_boundary)
{
	/* 5 bytes of room (4 + NUL): "a€" is 4 bytes, "a€b" would not fit */
	ck_assert_str_eq(clean("a\xe2\x82\xac"
			       "b",
			       5, 0),
			 "a\xe2\x82\xac");
	/* 4 bytes of room: the € does not fit whole, so it goes */
	ck_assert_str_eq(clean("a\xe2\x82\xac", 4, 0), "a");
	/* a replacement is never cut either */
	ck_assert_str_eq(clean("a\xff", 4, 0), "a");
	ck_assert_str_eq(clean("abc", 1, 0), "");
	/* utf8_cut on a valid string */
	ck_assert_uint_eq(utf8_cut("a\xe2\x82\xac", 4, 3), 1);
	ck_assert_uint_eq(utf8_cut("a\xe2\x82\xac", 4, 4), 4);
	ck_assert_uint_eq(utf8_cut("a\xe2\x82\xac"
				   "b",
				   5, 4),
			  4);
	ck_assert_uint_eq(utf8_cut("\xf0\x9f\x94\xa5", 4, 2), 0);
}
END_TEST

START_TEST(dup_repairs)
{
	char *s = utf8_dup("fn\xc0\xaf\xff");

	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, "fn" R R R);
	free(s);
	s = utf8_dup("caf\xc3\xa9");
	ck_assert_str_eq(s, "caf\xc3\xa9");
	free(s);
}
END_TEST

Suite *utf8_suite(void)
{
	Suite *s = suite_create("utf8");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, valid_kept);
	tcase_add_test(tc, comm_cut_inside_character);
	tcase_add_test(tc, overlong_encodings);
	tcase_add_test(tc, surrogates_and_beyond);
	tcase_add_test(tc, lone_continuation_bytes);
	tcase_add_test(tc, truncation_on_boundary);
	tcase_add_test(tc, dup_repairs);
	suite_add_tcase(s, tc);
	return s;
}
