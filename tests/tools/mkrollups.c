// SPDX-License-Identifier: MIT
/*
 * mkrollups: builds the missing rollups of an existing history without
 * emberd, as emberd does one per interval (lib/store/rollup.c): for
 * bench/views_speed.sh and tests/integration/rollup.sh.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "history.h"
#include "rollup.h"

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr, "usage: mkrollups [-b BEFORE] [-p SECONDS] [-v] DIR\n"
			"  builds the rollup of every series and period of DIR/history.db that\n"
			"  has raw profiles and no rollup, for the periods that end at or before\n"
			"  BEFORE (Unix seconds; default: every period, the last one too).\n"
			"  -p  the rollup period in seconds (test only; default 3600): records it\n"
			"      in the history and drops the rollups of another period\n"
			"  -v  one line per rollup\n");
	exit(2);
}

static int64_t number(const char *arg)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno || end == arg || *end || v <= 0 || v > INT64_MAX / NS_PER_SEC) {
		fprintf(stderr, "mkrollups: \"%s\" is not a positive number of seconds\n", arg);
		exit(2);
	}
	return (int64_t)v;
}

int main(int argc, char **argv)
{
	int64_t before = INT64_MAX, period = 0;
	struct rollup_cursor cursor = {0};
	struct rollup_result r;
	uint64_t built = 0, merged = 0, skipped = 0;
	const char *err = NULL;
	struct history *h;
	bool verbose = false;
	int c, ret = 0;

	while ((c = getopt(argc, argv, "b:p:v")) != -1) {
		if (c == 'b')
			before = number(optarg) * NS_PER_SEC;
		else if (c == 'p')
			period = number(optarg) * NS_PER_SEC;
		else if (c == 'v')
			verbose = true;
		else
			usage();
	}
	if (optind != argc - 1)
		usage();
	h = history_open(argv[optind], false, &err);
	if (!h) {
		fprintf(stderr, "mkrollups: %s: %s\n", argv[optind], err ? err : strerror(errno));
		return 1;
	}
	if (period)
		ret = history_set_rollup_period(h, period);
	while (!ret && (ret = history_rollup_next(h, before, &cursor, NULL, &r)) == 0) {
		if (verbose)
			printf("rollup of %s app \"%s\" at %" PRId64 ": %" PRIu32
			       " profiles, %" PRIu64 " samples%s\n",
			       r.series.type, r.series.app, (int64_t)(r.period_start / NS_PER_SEC),
			       r.profiles, r.samples, r.stored ? "" : " (none merged: not stored)");
		built += r.stored;
		merged += r.profiles;
		skipped += r.skipped;
		rollup_result_free(&r);
	}
	history_close(h);
	if (ret != -ENOENT) {
		fprintf(stderr, "mkrollups: %s\n", strerror(-ret));
		return 1;
	}
	printf("mkrollups: %" PRIu64 " rollups of %" PRIu64 " profiles (%" PRIu64 " skipped)\n",
	       built, merged, skipped);
	return 0;
}
