// SPDX-License-Identifier: MIT
/* emberctl list: one line per stored profile. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char list_help[] =
	"Usage: emberctl list [--since T] [--until T] [--type TYPE] [--app NAME] [--label K=V]\n"
	"\n"
	"Prints one line per stored profile, oldest first: start time (UTC), the\n"
	"interval it covers, its type, its application (\"-\" for host-wide), its\n"
	"samples and distinct processes; then the totals and the history's size.\n"
	"Raw profiles only: the hourly rollups emberd builds for the views (see\n"
	"docs/history.md, \"Hourly rollups\") are not listed; \"emberctl status\" counts them.\n"
	"\n"
	"  -s, --since T    first time of the window (default: the oldest profile)\n"
	"  -u, --until T    end of the window, excluded (default: open)\n"
	"  -t, --type TYPE  only profiles of this type, e.g. cpu (default: all)\n"
	"  -a, --app NAME   only this application's profiles (default: all)\n"
	"  -l, --label K=V  only profiles carrying this label (repeatable: all must hold)\n"
	"  -h, --help       show this help\n"
	"Times: see \"emberctl --help\". Example: emberctl list --since -30m --type cpu\n";

static const struct option list_options[] = {
	{"since", required_argument, NULL, 's'},
	{"until", required_argument, NULL, 'u'},
	{"type", required_argument, NULL, 't'},
	{"app", required_argument, NULL, 'a'},
	{"label", required_argument, NULL, 'l'},
	{"help", no_argument, NULL, 'h'},
	{0},
};

static void parse_list(int argc, char **argv, struct selection *sel)
{
	int64_t now = real_ns();
	int c;

	selection_init(sel, NULL);
	optind = 0;
	while ((c = getopt_long(argc, argv, "+:s:u:t:a:l:h", list_options, NULL)) != -1) {
		if (c == 'h')
			show(list_help);
		if (!selection_option(sel, c, optarg, now))
			bad_option(c, argv);
	}
	no_operands(argc, argv);
	check_window(sel);
}

struct list_totals {
	uint64_t profiles, samples;
};

static int print_row(const struct history_row *row, void *arg)
{
	struct list_totals *t = arg;
	char start[40], dur[32], app[512];

	if (t->profiles++ == 0)
		printf("%-24s %8s %-5s %-20s %10s %9s\n", "START", "DURATION", "TYPE", "APP",
		       "SAMPLES", "PROCESSES");
	format_time(row->meta.start_ns, start, sizeof(start));
	format_duration(row->meta.end_ns - row->meta.start_ns, dur, sizeof(dur));
	/* the history may hold names written before emberd sanitized them */
	printf("%-24s %8s %-5s %-20s %10" PRIu64 " %9" PRIu32 "\n", start, dur, row->meta.type,
	       *row->meta.app ? term_safe(row->meta.app, app, sizeof(app)) : "-", row->meta.samples,
	       row->meta.processes);
	t->samples += row->meta.samples;
	return 0;
}

int cmd_list(const char *data_dir, int argc, char **argv)
{
	struct list_totals totals = {0};
	struct selection sel;
	struct history_query q;
	struct history *h;
	char window[128], size[32];
	int ret;

	parse_list(argc, argv, &sel);
	h = open_history(data_dir);
	if (!h)
		return EXIT_RUNTIME;
	if (check_type(h, &sel)) {
		close_history(h);
		return EXIT_RUNTIME;
	}
	q = selection_query(&sel);
	q.use_rollups = false; /* the rows as stored, one per interval */
	ret = history_query(h, &q, false, print_row, &totals);
	if (ret) {
		note("cannot read %s: %s", history_path(h), history_strerror(ret));
		close_history(h);
		return EXIT_RUNTIME;
	}
	format_window(&sel, window, sizeof(window));
	format_bytes(history_disk_bytes(h), size, sizeof(size));
	printf("%" PRIu64 " profile%s %s, %" PRIu64 " samples; history.db: %s on disk\n",
	       totals.profiles, totals.profiles == 1 ? "" : "s", window, totals.samples, size);
	close_history(h);
	return fflush(stdout) || ferror(stdout) ? EXIT_RUNTIME : EXIT_SUCCESS;
}
