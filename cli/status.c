// SPDX-License-Identifier: MIT
/* emberctl status: the history and the collector, read from history.db. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

static const char status_help[] =
	"Usage: emberctl status\n"
	"\n"
	"Shows the history (size, profiles, time span) and the collector as emberd\n"
	"last recorded it in the history: its URL (credentials removed), whether it\n"
	"is reachable, the last success, the last error with its HTTP status and\n"
	"message, the push queue (pending profiles and the age of the oldest), and\n"
	"how many profiles were sent, rejected (the collector refused them) or\n"
	"expired (older than max_age, kept locally). Secrets are never shown.\n";


static void print_when(const char *what, int64_t ns, int64_t now)
{
	char t[40], ago[32];

	if (!ns) {
		printf("  %-13s never\n", what);
		return;
	}
	format_time(ns, t, sizeof(t));
	format_ago(ns, now, ago, sizeof(ago));
	printf("  %-13s %s (%s)\n", what, t, ago);
}

struct span {
	uint64_t profiles;
	int64_t first, last;
};

static int note_span(const struct history_row *row, void *arg)
{
	struct span *s = arg;

	if (!s->profiles++ || row->meta.start_ns < s->first)
		s->first = row->meta.start_ns;
	if (row->meta.end_ns > s->last)
		s->last = row->meta.end_ns;
	return 0;
}

static void print_history(struct history *h, int64_t now)
{
	struct history_query q = { .since_ns = INT64_MIN, .until_ns = INT64_MAX };
	struct span sp = {0};
	char size[32];

	history_query(h, &q, false, note_span, &sp);
	format_bytes(history_disk_bytes(h), size, sizeof(size));
	printf("history:       %s, %s, %" PRIu64 " profiles\n", history_path(h), size,
	       sp.profiles);
	if (sp.profiles) {
		print_when("oldest", sp.first, now);
		print_when("newest", sp.last, now);
	}
}

static void print_collector(struct history *h, int64_t now)
{
	struct history_collector_state cs;
	struct history_push_counts pc;
	char t[40], ago[32];

	if (history_collector_load(h, &cs) || !cs.url[0]) {
		printf("collector:     none recorded (no [collector] url, or emberd has not "
		       "pushed yet)\n");
		return;
	}
	printf("collector:     %s\n", cs.url);
	if (cs.outage_since_ns) {
		format_time(cs.outage_since_ns, t, sizeof(t));
		format_ago(cs.outage_since_ns, now, ago, sizeof(ago));
		printf("  %-13s unreachable since %s (%s)\n", "state", t, ago);
	} else {
		printf("  %-13s reachable\n", "state");
	}
	print_when("last success", cs.last_success_ns, now);
	if (cs.last_error_ns) {
		format_time(cs.last_error_ns, t, sizeof(t));
		if (cs.last_status)
			printf("  %-13s %s: HTTP %ld: %s\n", "last error", t, cs.last_status,
			       cs.last_error);
		else
			printf("  %-13s %s: %s\n", "last error", t, cs.last_error);
	} else {
		printf("  %-13s none\n", "last error");
	}
	if (history_push_counts(h, &pc))
		return;
	printf("  %-13s %" PRIu64 " pending", "queue", pc.pending);
	if (pc.pending) {
		format_ago(pc.oldest_pending_ns, now, ago, sizeof(ago));
		printf(", oldest from %s", ago);
	}
	printf("\n  %-13s sent %" PRIu64 ", rejected %" PRIu64 ", expired %" PRIu64 "\n",
	       "profiles", pc.sent, pc.rejected, pc.expired);
}

int cmd_status(const char *data_dir, int argc, char **argv)
{
	static const struct option opts[] = { {"help", no_argument, NULL, 'h'}, {0} };
	int64_t now = now_ns();
	struct history *h;
	int c;

	optind = 0;
	while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
		if (c == 'h')
			show(status_help);
		bad_option(c, argv);
	}
	no_operands(argc, argv);
	h = open_history(data_dir);
	if (!h)
		return EXIT_RUNTIME;
	print_history(h, now);
	print_collector(h, now);
	history_close(h);
	return fflush(stdout) || ferror(stdout) ? EXIT_RUNTIME : EXIT_SUCCESS;
}

