// SPDX-License-Identifier: MIT
/* Known answers for every time and duration form parse_time/parse_duration accept or refuse. */
#include <errno.h>
#include <stdint.h>

#include <check.h>

#include "suites.h"
#include "timeparse.h"

#define SEC 1000000000LL
/* A fixed "now" for relative times: 2026-11-22T03:14:00Z. */
#define NOW (1795317240LL * SEC)

struct time_case {
	const char *in;
	int64_t ns;
};

static const struct time_case good_times[] = {
	{"now", NOW},
	{"1795317240", 1795317240LL * SEC},
	{"0", 0},
	{"2026-11-22T03:14:00Z", 1795317240LL * SEC},
	{"2026-11-22t03:14:00z", 1795317240LL * SEC},
	{"2026-11-22 03:14:00Z", 1795317240LL * SEC},
	{"2026-11-22T03:14Z", 1795317240LL * SEC},
	{"2026-11-22", 1795305600LL * SEC},
	{"2026-11-22T04:14:00+01:00", 1795317240LL * SEC},
	{"2026-11-21T21:44:00-05:30", 1795317240LL * SEC},
	{"2026-11-22T03:14:00-00:00", 1795317240LL * SEC},
	{"2026-11-22T03:14:00.5Z", 1795317240LL * SEC + 500000000},
	{"2026-11-22T03:14:00.000000001Z", 1795317240LL * SEC + 1},
	{"2026-11-22T03:14:00.1234567891234Z", 1795317240LL * SEC + 123456789},
	{"2024-02-29T00:00:00Z", 1709164800LL * SEC},
	{"2000-02-29T12:00:00Z", (951782400LL + 43200) * SEC},
	{"1970-01-01T00:00:00Z", 0},
	{"1969-12-31T23:59:59.5Z", -SEC / 2},
	{"2262-04-11T23:47:16.854775807Z", INT64_MAX},
	{"1677-09-21T00:12:43.145224192Z", INT64_MIN},
	{"-15m", NOW - 15 * 60 * SEC},
	{"-2h", NOW - 2 * 3600 * SEC},
	{"-1d", NOW - 86400 * SEC},
	{"-30s", NOW - 30 * SEC},
	{"-30", NOW - 30 * SEC},
	{"-500ms", NOW - SEC / 2},
	{"-0s", NOW},
	/* journalctl's forms; days are UTC: 2026-11-22T00:00:00Z is 1795305600 */
	{"today", 1795305600LL * SEC},
	{"yesterday", (1795305600LL - 86400) * SEC},
	{"tomorrow", (1795305600LL + 86400) * SEC},
	{"10 min ago", NOW - 600 * SEC},
	{"10min ago", NOW - 600 * SEC},
	{"1 minute ago", NOW - 60 * SEC},
	{"15 minutes ago", NOW - 900 * SEC},
	{"2 hours ago", NOW - 7200 * SEC},
	{"1 hour ago", NOW - 3600 * SEC},
	{"3 hr ago", NOW - 3 * 3600 * SEC},
	{"3h ago", NOW - 3 * 3600 * SEC},
	{"2 days ago", NOW - 2 * 86400 * SEC},
	{"1 day ago", NOW - 86400 * SEC},
	{"1 week ago", NOW - 7 * 86400 * SEC},
	{"30 s ago", NOW - 30 * SEC},
	{"30 sec ago", NOW - 30 * SEC},
	{"30 seconds ago", NOW - 30 * SEC},
	{"250 ms ago", NOW - SEC / 4},
	{"250 msec ago", NOW - SEC / 4},
	{"1 hour 30 min ago", NOW - 5400 * SEC},
	{"1h 30min 15s ago", NOW - 5415 * SEC},
	{"0 s ago", NOW},
	{"10 min  ago", NOW - 600 * SEC},
};

static const char *const bad_times[] = {
	"",
	"   ",
	" now",
	"now ",
	"Now",
	"Yesterday",
	"today ",
	"todays",
	"last tuesday",
	"10 ago",
	"10 min",
	"min ago",
	"10 mins ago",
	"10 Min ago",
	"10 min ago ",
	" 10 min ago",
	"10 min before",
	"10 min agox",
	"10 months ago",
	"1.5 h ago",
	"-10 min ago",
	"10 min 5 ago",
	"99999999999 days ago",
	"106752 days ago", /* past int64 ns */
	"-",
	"--15m",
	"-15x",
	"-15 m",
	"-m",
	"+15m",
	"1795317240.5",
	"1795317240 ",
	"0x10",
	"1e9",
	"9223372037", /* unix seconds past 2262 overflow int64 ns */
	"99999999999999999999999",
	"-9999999999999999999s",
	"2026-11-22T03:14:00", /* no offset: RFC 3339 requires one */
	"2026-11-22Z",
	"2026-11-22T",
	"2026-11-22T03Z",
	"2026-11-22T03:14:Z",
	"2026-11-22T03:14:00.Z",
	"2026-11-22T03:14:00+01",
	"2026-11-22T03:14:00+0100",
	"2026-11-22T03:14:00+24:00",
	"2026-11-22T03:14:00+01:60",
	"2026-11-22T03:14:00ZZ",
	"2026-13-01T00:00:00Z",
	"2026-00-01T00:00:00Z",
	"2026-11-00T00:00:00Z",
	"2026-11-31T00:00:00Z",
	"2025-02-29T00:00:00Z",
	"1900-02-29T00:00:00Z",
	"2026-11-22T24:00:00Z",
	"2026-11-22T03:60:00Z",
	"2026-11-22T23:59:60Z",
	"26-11-22T03:14:00Z",
	"2026-1-22T03:14:00Z",
	"2026/11/22T03:14:00Z",
	"2262-04-11T23:47:16.854775808Z",
	"1677-09-21T00:12:43Z",
	"9999-12-31T23:59:59Z",
	"0000-01-01T00:00:00Z",
};

struct duration_case {
	const char *in;
	int64_t ns;
};

static const struct duration_case good_durations[] = {
	{"0", 0},
	{"10", 10 * SEC},
	{"10s", 10 * SEC},
	{"500ms", SEC / 2},
	{"2m", 120 * SEC},
	{"1h", 3600 * SEC},
	{"7d", 7 * 86400 * SEC},
	{"9223372036", 9223372036LL * SEC},
	{"9223372036854ms", 9223372036854LL * 1000000},
};

static const char *const bad_durations[] = {
	"",	 "s",	 "-1s", "+1s", " 1s", "1s ",	    "1 s",     "1.5s",
	"1w",	 "1sec", "1S",	"1ns", "1us", "9223372037", "106752d", "99999999999999999999",
	"10ms5",
};

START_TEST(test_good_time)
{
	const struct time_case *c = &good_times[_i];
	int64_t ns = 42;

	ck_assert_msg(parse_time(c->in, NOW, &ns) == 0, "refused \"%s\"", c->in);
	ck_assert_msg(ns == c->ns, "\"%s\": %lld, want %lld", c->in, (long long)ns,
		      (long long)c->ns);
}
END_TEST

START_TEST(test_bad_time)
{
	int64_t ns = 42;

	ck_assert_msg(parse_time(bad_times[_i], NOW, &ns) == -EINVAL, "accepted \"%s\"",
		      bad_times[_i]);
	ck_assert_int_eq(ns, 42);
}
END_TEST

START_TEST(test_good_duration)
{
	const struct duration_case *c = &good_durations[_i];
	int64_t ns = 42;

	ck_assert_msg(parse_duration(c->in, &ns) == 0, "refused \"%s\"", c->in);
	ck_assert_msg(ns == c->ns, "\"%s\": %lld, want %lld", c->in, (long long)ns,
		      (long long)c->ns);
}
END_TEST

START_TEST(test_bad_duration)
{
	int64_t ns = 42;

	ck_assert_msg(parse_duration(bad_durations[_i], &ns) == -EINVAL, "accepted \"%s\"",
		      bad_durations[_i]);
	ck_assert_int_eq(ns, 42);
}
END_TEST

/* Relative times step off the int64 range rather than wrapping. */
START_TEST(test_relative_overflow)
{
	int64_t ns = 42;

	ck_assert_int_eq(parse_time("1 s ago", INT64_MIN + SEC - 1, &ns), -EINVAL);
	ck_assert_int_eq(parse_time("yesterday", INT64_MIN + 1, &ns), -EINVAL);
	ck_assert_int_eq(parse_time("tomorrow", INT64_MAX, &ns), -EINVAL);
	/* before 1970, today is still the midnight before now */
	ck_assert_int_eq(parse_time("today", -1, &ns), 0);
	ck_assert_int_eq(ns, -86400 * SEC);

	ck_assert_int_eq(parse_time("-1s", INT64_MIN + SEC - 1, &ns), -EINVAL);
	ck_assert_int_eq(parse_time("-1s", INT64_MIN + SEC, &ns), 0);
	ck_assert_int_eq(ns, INT64_MIN);
}
END_TEST

START_TEST(test_null_arguments)
{
	int64_t ns;

	ck_assert_int_eq(parse_time(NULL, NOW, &ns), -EINVAL);
	ck_assert_int_eq(parse_time("now", NOW, NULL), -EINVAL);
	ck_assert_int_eq(parse_duration(NULL, &ns), -EINVAL);
	ck_assert_int_eq(parse_duration("1s", NULL), -EINVAL);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

Suite *timeparse_suite(void)
{
	Suite *s = suite_create("timeparse");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_good_time, 0, N(good_times));
	tcase_add_loop_test(tc, test_bad_time, 0, N(bad_times));
	tcase_add_loop_test(tc, test_good_duration, 0, N(good_durations));
	tcase_add_loop_test(tc, test_bad_duration, 0, N(bad_durations));
	tcase_add_test(tc, test_relative_overflow);
	tcase_add_test(tc, test_null_arguments);
	suite_add_tcase(s, tc);
	return s;
}
