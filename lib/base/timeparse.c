// SPDX-License-Identifier: MIT
/*
 * Times and durations as people type them: RFC 3339, unix seconds, "-15m"
 * before a given now, journalctl's "10 min ago", "today" and "yesterday", and
 * "500ms"-style durations. Pure: no clock, no locale,
 * no time zone database; every step checks for int64 overflow.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "timeparse.h"

struct unit {
	const char *suffix;
	int64_t ns;
};

/* Suffixes of a duration; "" (a bare number) means seconds. */
static const struct unit units[] = {
	{"", NS_PER_SEC},  {"ms", NS_PER_MS},  {"s", NS_PER_SEC},
	{"m", NS_PER_MIN}, {"h", NS_PER_HOUR}, {"d", NS_PER_DAY},
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Reads exactly n digits at *p; stops at the first non-digit (or NUL). */
static bool fixed_digits(const char **p, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!is_digit((*p)[i]))
			return false;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*out = v;
	return true;
}

/* Reads one or more digits at *p; false when there are none or on overflow. */
static bool uint_digits(const char **p, int64_t *out)
{
	const char *s = *p;
	int64_t v = 0;

	if (!is_digit(*s))
		return false;
	for (; is_digit(*s); s++) {
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *s - '0', &v))
			return false;
	}
	*p = s;
	*out = v;
	return true;
}

static bool is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
	static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

int parse_duration(const char *s, int64_t *out_ns)
{
	int64_t n, ns;

	if (!s || !out_ns || !uint_digits(&s, &n))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(s, units[i].suffix) != 0)
			continue;
		if (__builtin_mul_overflow(n, units[i].ns, &ns))
			return -EINVAL;
		*out_ns = ns;
		return 0;
	}
	return -EINVAL;
}

static int parse_unix(const char *s, int64_t *out_ns)
{
	int64_t secs, ns;

	if (!uint_digits(&s, &secs) || *s != '\0')
		return -EINVAL;
	if (__builtin_mul_overflow(secs, NS_PER_SEC, &ns))
		return -EINVAL;
	*out_ns = ns;
	return 0;
}

/* ".123456789": up to nanoseconds; further digits are accepted and dropped. */
static bool parse_fraction(const char **p, int64_t *frac_ns)
{
	const char *s = *p + 1;
	int64_t scale = NS_PER_SEC / 10;

	if (!is_digit(*s))
		return false;
	*frac_ns = 0;
	for (; is_digit(*s); s++, scale /= 10)
		*frac_ns += (*s - '0') * scale;
	*p = s;
	return true;
}

/* "Z" or "+hh:mm" / "-hh:mm"; the offset is what to subtract to get UTC. */
static bool parse_offset(const char **p, int64_t *offset_secs)
{
	const char *s = *p;
	int hh, mm, sign;

	if (*s == 'Z' || *s == 'z') {
		*offset_secs = 0;
		*p = s + 1;
		return true;
	}
	if (*s != '+' && *s != '-')
		return false;
	sign = *s++ == '-' ? -1 : 1;
	if (!fixed_digits(&s, 2, &hh) || *s++ != ':' || !fixed_digits(&s, 2, &mm))
		return false;
	if (hh > 23 || mm > 59)
		return false;
	*offset_secs = sign * (hh * 3600LL + mm * 60LL);
	*p = s;
	return true;
}

/*
 * "YYYY-MM-DD", or "YYYY-MM-DDThh:mm[:ss[.frac]]" followed by "Z" or an
 * offset ('t' and ' ' also separate date and time, as RFC 3339 allows).
 * Leap seconds (":60") are refused: unix time has no room for them.
 */
static int parse_rfc3339(const char *s, int64_t *out_ns)
{
	int y, mo, d, h = 0, mi = 0, sec = 0;
	int64_t frac_ns = 0, offset = 0, secs, ns;

	if (!fixed_digits(&s, 4, &y) || *s++ != '-' || !fixed_digits(&s, 2, &mo) || *s++ != '-' ||
	    !fixed_digits(&s, 2, &d))
		return -EINVAL;
	if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
		return -EINVAL;
	if (*s != '\0') {
		if (*s != 'T' && *s != 't' && *s != ' ')
			return -EINVAL;
		s++;
		if (!fixed_digits(&s, 2, &h) || *s++ != ':' || !fixed_digits(&s, 2, &mi))
			return -EINVAL;
		if (*s == ':') {
			s++;
			if (!fixed_digits(&s, 2, &sec))
				return -EINVAL;
		}
		if (*s == '.' && !parse_fraction(&s, &frac_ns))
			return -EINVAL;
		if (!parse_offset(&s, &offset) || *s != '\0')
			return -EINVAL;
		if (h > 23 || mi > 59 || sec > 59)
			return -EINVAL;
	}
	/* Years 0000..9999 times 86400 s fit easily; only the ns step can overflow. */
	secs = days_from_civil(y, mo, d) * SECS_PER_DAY + h * 3600LL + mi * 60LL + sec - offset;
	if (secs < 0 && frac_ns > 0) {
		/* borrow a second so that INT64_MIN (1677-09-21T00:12:43.145224192Z) fits */
		secs++;
		frac_ns -= NS_PER_SEC;
	}
	if (__builtin_mul_overflow(secs, NS_PER_SEC, &ns) ||
	    __builtin_add_overflow(ns, frac_ns, &ns))
		return -EINVAL;
	*out_ns = ns;
	return 0;
}

static int parse_relative(const char *s, int64_t now_ns, int64_t *out_ns)
{
	int64_t ago, ns;
	int err;

	err = parse_duration(s, &ago);
	if (err)
		return err;
	if (__builtin_sub_overflow(now_ns, ago, &ns))
		return -EINVAL;
	*out_ns = ns;
	return 0;
}

/* The units of "N UNIT ago" as journalctl spells them; not months or years, which are uneven. */
static const struct unit ago_units[] = {
	{"ms", NS_PER_MS},	  {"msec", NS_PER_MS},	     {"s", NS_PER_SEC},
	{"sec", NS_PER_SEC},	  {"second", NS_PER_SEC},    {"seconds", NS_PER_SEC},
	{"m", NS_PER_MIN},	  {"min", NS_PER_MIN},	     {"minute", NS_PER_MIN},
	{"minutes", NS_PER_MIN},  {"h", NS_PER_HOUR},	     {"hr", NS_PER_HOUR},
	{"hour", NS_PER_HOUR},	  {"hours", NS_PER_HOUR},    {"d", NS_PER_DAY},
	{"day", NS_PER_DAY},	  {"days", NS_PER_DAY},	     {"w", 7 * NS_PER_DAY},
	{"week", 7 * NS_PER_DAY}, {"weeks", 7 * NS_PER_DAY},
};

static bool is_lower(char c)
{
	return c >= 'a' && c <= 'z';
}

/* The ns of the unit word at *p (letters up to a space or NUL); 0 when unknown. */
static int64_t ago_unit(const char **p)
{
	const char *s = *p;
	size_t n = 0;

	while (is_lower(s[n]))
		n++;
	if (s[n] != ' ' && s[n] != '\0')
		return 0;
	for (size_t i = 0; i < sizeof(ago_units) / sizeof(ago_units[0]); i++) {
		if (strlen(ago_units[i].suffix) == n && !strncmp(s, ago_units[i].suffix, n)) {
			*p = s + n;
			return ago_units[i].ns;
		}
	}
	return 0;
}

static void skip_spaces(const char **p)
{
	while (**p == ' ')
		(*p)++;
}

/*
 * journalctl's "N UNIT ... ago": "10 min ago", "2h ago", "1 hour 30 min ago".
 * Spaces separate the words; none may lead or trail.
 */
static int parse_ago(const char *s, int64_t now_ns, int64_t *out_ns)
{
	int64_t sum = 0, n, unit, ns;

	do {
		if (!uint_digits(&s, &n))
			return -EINVAL;
		skip_spaces(&s);
		unit = ago_unit(&s);
		if (!unit || *s != ' ')
			return -EINVAL;
		if (__builtin_mul_overflow(n, unit, &ns) || __builtin_add_overflow(sum, ns, &sum))
			return -EINVAL;
		skip_spaces(&s);
	} while (is_digit(*s));
	if (strcmp(s, "ago") != 0 || __builtin_sub_overflow(now_ns, sum, &ns))
		return -EINVAL;
	*out_ns = ns;
	return 0;
}

/* "today", "yesterday", "tomorrow": midnight UTC (not local time) of that day. */
static int parse_day_word(const char *s, int64_t now_ns, int64_t *out_ns)
{
	int64_t days = now_ns / NS_PER_DAY, ns;

	if (now_ns % NS_PER_DAY < 0)
		days--; /* floor: before 1970 too */
	if (!strcmp(s, "yesterday"))
		days--;
	else if (!strcmp(s, "tomorrow"))
		days++;
	else if (strcmp(s, "today") != 0)
		return -EINVAL;
	if (__builtin_mul_overflow(days, NS_PER_DAY, &ns))
		return -EINVAL;
	*out_ns = ns;
	return 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++) {
		if (!is_digit(*s))
			return false;
	}
	return true;
}

int parse_time(const char *s, int64_t now_ns, int64_t *out_ns)
{
	if (!s || !out_ns)
		return -EINVAL;
	if (strcmp(s, "now") == 0) {
		*out_ns = now_ns;
		return 0;
	}
	if (s[0] == '-')
		return parse_relative(s + 1, now_ns, out_ns);
	if (all_digits(s))
		return parse_unix(s, out_ns);
	if (is_lower(s[0]))
		return parse_day_word(s, now_ns, out_ns);
	if (is_digit(s[0]) && strstr(s, " ago"))
		return parse_ago(s, now_ns, out_ns);
	return parse_rfc3339(s, out_ns);
}
