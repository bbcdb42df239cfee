// SPDX-License-Identifier: MIT
/* clock.c and the size format: clocks that move the right way, formats with known answers. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <check.h>

#include "clock.h"
#include "suites.h"
#include "timeparse.h"
#include "util.h"

/* 2026-11-22T03:14:00Z */
#define T_2026 (INT64_C(1795317240) * NS_PER_SEC)

START_TEST(clocks_read)
{
	struct timespec ts;
	int64_t a = mono_ns(), r = real_ns(), b;

	clock_gettime(CLOCK_REALTIME, &ts);
	/* the same clock, read twice a moment apart */
	ck_assert_int_le(r, (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec);
	ck_assert_int_gt(r, T_2026 - 365 * NS_PER_DAY * 10);
	b = mono_ns();
	ck_assert_int_gt(a, 0);
	ck_assert_int_le(a, b);
	ck_assert_int_ge(clock_ns(CLOCK_THREAD_CPUTIME_ID), 0);
	ck_assert_int_eq(clock_ns((clockid_t)-12345), 0);
}
END_TEST

START_TEST(timespec_split)
{
	struct timespec ts = ns_to_timespec(3 * NS_PER_SEC + 250);

	ck_assert_int_eq(ts.tv_sec, 3);
	ck_assert_int_eq(ts.tv_nsec, 250);
	ts = ns_to_timespec(-1);
	ck_assert_int_eq(ts.tv_sec, -1);
	ck_assert_int_eq(ts.tv_nsec, NS_PER_SEC - 1);
}
END_TEST

START_TEST(rfc3339)
{
	char buf[48];

	format_time(T_2026, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2026-11-22T03:14:00Z");
	format_time(T_2026 + 250 * NS_PER_MS + 999, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2026-11-22T03:14:00.250Z");
	/* below a millisecond: not shown */
	format_time(T_2026 + 999, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2026-11-22T03:14:00Z");
	/* before 1970, rounded down */
	format_time(-NS_PER_MS * 500, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1969-12-31T23:59:59.500Z");
	/* what parse_time reads back */
	{
		int64_t back;

		format_time(T_2026 + 250 * NS_PER_MS, buf, sizeof(buf));
		ck_assert_int_eq(parse_time(buf, 0, &back), 0);
		ck_assert_int_eq(back, T_2026 + 250 * NS_PER_MS);
	}
	/* a short buffer is cut, never overrun */
	memset(buf, 'x', sizeof(buf));
	format_time(T_2026, buf, 8);
	ck_assert_str_eq(buf, "2026-11");
	ck_assert_int_eq(buf[9], 'x');
}
END_TEST

START_TEST(local_and_time_of_day)
{
	char buf[48];

	setenv("TZ", "UTC", 1);
	tzset();
	format_local_time(T_2026 + 999 * NS_PER_MS, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2026-11-22 03:14:00");
	setenv("TZ", "CET-1", 1);
	tzset();
	format_local_time(T_2026, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2026-11-22 04:14:00");
	format_time_of_day(T_2026 + 5 * NS_PER_SEC, buf, sizeof(buf));
	ck_assert_str_eq(buf, "03:14:05 UTC");
}
END_TEST

START_TEST(durations)
{
	static const struct {
		int64_t ns;
		const char *text;
	} cases[] = {
		{0, "0s"},
		{45 * NS_PER_SEC, "45s"},
		{90 * NS_PER_MIN, "90m"},
		{12 * NS_PER_HOUR, "12h"},
		{7 * NS_PER_DAY, "7d"},
		{9998 * NS_PER_MS, "9.998s"},
		{-1, "?"},
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		format_duration(cases[i].ns, buf, sizeof(buf));
		ck_assert_str_eq(buf, cases[i].text);
	}
}
END_TEST

START_TEST(sizes)
{
	char buf[32];

	format_bytes(900, buf, sizeof(buf));
	ck_assert_str_eq(buf, "900 bytes");
	format_bytes(64 * 1024, buf, sizeof(buf));
	ck_assert_str_eq(buf, "64.0 KiB");
	format_bytes(812ULL << 20, buf, sizeof(buf));
	ck_assert_str_eq(buf, "812.0 MiB");
	format_bytes(3ULL << 29, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1.5 GiB");
	format_bytes(2048ULL << 40, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2048.0 TiB");
}
END_TEST

Suite *clock_suite(void)
{
	Suite *s = suite_create("clock");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, clocks_read);
	tcase_add_test(tc, timespec_split);
	tcase_add_test(tc, rfc3339);
	tcase_add_test(tc, local_and_time_of_day);
	tcase_add_test(tc, durations);
	tcase_add_test(tc, sizes);
	suite_add_tcase(s, tc);
	return s;
}
