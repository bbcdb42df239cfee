// SPDX-License-Identifier: MIT
/* emberctl export: a window of the history merged into one gzipped pprof file. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char export_help[] =
	"Usage: emberctl export [--type cpu] [--since T] [--until T] [--pid N] -o FILE\n"
	"\n"
	"Merges every stored profile that overlaps the window into one profile (same\n"
	"stacks summed) and writes it gzipped in pprof format. Reports on stderr how\n"
	"many profiles and samples were merged, and which stored profiles were skipped\n"
	"because they are corrupt.\n"
	"\n"
	"  -t, --type TYPE    which kind of profile to export: cpu (default), or another\n"
	"                     type the history holds (\"emberctl list\" shows them);\n"
	"                     the file keeps every sample type the profiles record\n"
	"  -s, --since T      first time of the window (default: the oldest profile)\n"
	"  -u, --until T      end of the window, excluded (default: open)\n"
	"  -p, --pid N        keep only the samples of process N\n"
	"  -a, --app NAME     only this application's profiles (default: all)\n"
	"  -l, --label K=V    only profiles carrying this label (repeatable)\n" NO_ROLLUPS_HELP
	"  -o, --output FILE  where to write; written to FILE.tmp then renamed, so a\n"
	"                     reader never sees half a file; \"-\" writes to stdout\n"
	"  -h, --help         show this help\n"
	"Times: see \"emberctl --help\". Example:\n"
	"  emberctl export --since -10m --pid 4242 -o cpu.pb.gz && go tool pprof -top cpu.pb.gz\n";

struct export_opts {
	struct selection sel;
	const char *output;
};

static const struct option export_options[] = {
	{"since", required_argument, NULL, 's'},
	{"until", required_argument, NULL, 'u'},
	{"type", required_argument, NULL, 't'},
	{"app", required_argument, NULL, 'a'},
	{"pid", required_argument, NULL, 'p'},
	{"output", required_argument, NULL, 'o'},
	{"label", required_argument, NULL, 'l'},
	{"help", no_argument, NULL, 'h'},
	NO_ROLLUPS_OPTION,
	{0},
};

static void parse_export(int argc, char **argv, struct export_opts *o)
{
	int64_t now = real_ns();
	int c;

	*o = (struct export_opts){0};
	selection_init(&o->sel, "cpu");
	optind = 0;
	while ((c = getopt_long(argc, argv, "+:s:u:t:a:l:p:o:h", export_options, NULL)) != -1) {
		if (c == 'h')
			show(export_help);
		else if (c == 'o')
			o->output = optarg;
		else if (!selection_option(&o->sel, c, optarg, now))
			bad_option(c, argv);
	}
	no_operands(argc, argv);
	if (!o->output)
		usage_error("-o FILE is required (\"-o -\" writes to stdout)");
	check_window(&o->sel);
}

int cmd_export(const char *data_dir, int argc, char **argv)
{
	struct merge_state s = {0};
	struct export_opts o;
	struct history *h;
	char window[128], pid[32] = "";
	int64_t samples = 0;
	int ret, status = EXIT_RUNTIME;

	parse_export(argc, argv, &o);
	h = open_history(data_dir);
	if (!h)
		return EXIT_RUNTIME;
	if (check_type(h, &o.sel) || merge_selection(h, &o.sel, &s))
		goto out;
	if (s.b)
		samples = pprof_value_total(s.b, samples_index(s.b));
	if (!samples) {
		status = explain_nothing(&o.sel, &s);
		goto out;
	}
	ret = write_profile(s.b, o.output);
	if (ret) {
		note("cannot write %s: %s", o.output,
		     ret == -ENOTTY ? "refusing to write a gzipped profile to a terminal" :
				      strerror(-ret));
		goto out;
	}
	format_window(&o.sel, window, sizeof(window));
	if (o.sel.filter.by_pid)
		snprintf(pid, sizeof(pid), " of pid %" PRId64, o.sel.filter.pid);
	note("merged %" PRIu64 " %s profile%s %s: %" PRId64 " samples%s, written to %s", s.merged,
	     o.sel.type, s.merged == 1 ? "" : "s", window, samples, pid,
	     strcmp(o.output, "-") ? o.output : "stdout");
	status = EXIT_SUCCESS;
out:
	merge_state_free(&s);
	close_history(h);
	return status;
}
