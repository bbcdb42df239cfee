// SPDX-License-Identifier: MIT
/*
 * Clocks and the formats times are shown in. Every module reads time here, so
 * that a clock and its unit are chosen once (ns in int64_t everywhere).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"

int64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	if (clock_gettime(clk, &ts))
		return 0;
	return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

int64_t real_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

int64_t mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

struct timespec ns_to_timespec(int64_t abs_ns)
{
	struct timespec ts = {.tv_sec = abs_ns / NS_PER_SEC, .tv_nsec = abs_ns % NS_PER_SEC};

	if (ts.tv_nsec < 0) {
		ts.tv_sec--;
		ts.tv_nsec += NS_PER_SEC;
	}
	return ts;
}

/* Splits ns into whole seconds (rounded down, also before 1970) and the ns past them. */
static time_t split_secs(int64_t ns, int64_t *frac)
{
	int64_t secs = ns / NS_PER_SEC;

	*frac = ns % NS_PER_SEC;
	if (*frac < 0) {
		secs--;
		*frac += NS_PER_SEC;
	}
	return (time_t)secs;
}

void format_time(int64_t ns, char *buf, size_t len)
{
	int64_t frac;
	time_t t = split_secs(ns, &frac);
	struct tm tm;

	if (!gmtime_r(&t, &tm)) {
		snprintf(buf, len, "@%" PRId64, ns);
		return;
	}
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	if (frac / NS_PER_MS)
		snprintf(buf + strlen(buf), len - strlen(buf), ".%03" PRId64, frac / NS_PER_MS);
	snprintf(buf + strlen(buf), len - strlen(buf), "Z");
}

void format_local_time(int64_t ns, char *buf, size_t len)
{
	int64_t frac;
	time_t t = split_secs(ns, &frac);
	struct tm tm;

	if (!localtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, len, "%lld", (long long)t);
}

void format_time_of_day(int64_t ns, char *buf, size_t len)
{
	int64_t frac;
	time_t t = split_secs(ns, &frac);
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%H:%M:%S UTC", &tm))
		snprintf(buf, len, "?");
}

void format_duration(int64_t ns, char *buf, size_t len)
{
	int64_t secs = ns / NS_PER_SEC;

	if (ns < 0)
		snprintf(buf, len, "?");
	else if (ns % NS_PER_SEC)
		snprintf(buf, len, "%.3fs", (double)ns / NS_PER_SEC);
	else if (secs && secs % SECS_PER_DAY == 0)
		snprintf(buf, len, "%lldd", (long long)(secs / SECS_PER_DAY));
	else if (secs && secs % 3600 == 0)
		snprintf(buf, len, "%lldh", (long long)(secs / 3600));
	else if (secs && secs % 60 == 0)
		snprintf(buf, len, "%lldm", (long long)(secs / 60));
	else
		snprintf(buf, len, "%llds", (long long)secs);
}
