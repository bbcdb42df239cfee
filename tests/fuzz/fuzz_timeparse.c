// SPDX-License-Identifier: MIT
/*
 * Fuzzes parse_time and parse_duration. Beyond not crashing: every time that
 * parses is printed back as RFC 3339 and must parse to the same nanosecond.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timeparse.h"

/* Long enough for any valid input; longer ones only cost time. */
#define MAX_INPUT 128
#define NS_PER_SEC 1000000000LL
/* A fixed now (2026-11-22T03:14:00Z) keeps runs reproducible. */
#define NOW (1795317240LL * NS_PER_SEC)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_round_trip(int64_t ns)
{
	int64_t secs = ns / NS_PER_SEC, frac = ns % NS_PER_SEC, back;
	char buf[64];
	time_t t;
	struct tm tm;

	if (frac < 0) {
		secs--;
		frac += NS_PER_SEC;
	}
	t = (time_t)secs;
	if (!gmtime_r(&t, &tm))
		abort();
	snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%09" PRId64 "Z",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 frac);
	if (parse_time(buf, 0, &back) != 0 || back != ns) {
		fprintf(stderr, "round trip of %" PRId64 " via \"%s\" failed\n", ns, buf);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[MAX_INPUT + 1];
	int64_t ns;

	if (size > MAX_INPUT)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (parse_time(s, NOW, &ns) == 0)
		check_round_trip(ns);
	if (parse_duration(s, &ns) == 0 && ns < 0)
		abort();
	return 0;
}
