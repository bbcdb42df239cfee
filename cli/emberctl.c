// SPDX-License-Identifier: MIT
/*
 * emberctl: reads the local history that emberd writes, and talks to the daemon.
 * This file dispatches; each command lives in its own file (see cli.h).
 * Errors are one line on stderr; exit 0 ok, 1 runtime error, 2 usage error.
 */
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char main_help[] =
	"Usage: emberctl [--data-dir DIR] COMMAND [OPTIONS]\n"
	"\n"
	"Reads the profiles that emberd keeps in its local history: on-CPU stacks\n"
	"(--type cpu, the default), memory growth (memory_growth), sampled allocations\n"
	"(memory), off-CPU waits with their reason and waker (offcpu, offcpu_wakers,\n"
	"wall), with Python and Node.js functions named among native frames.\n"
	"\n"
	"Commands:\n"
	"  list     one line per stored profile: start, duration, type, app, samples,\n"
	"           processes; then a summary\n"
	"  export   merge the stored profiles of a window into one gzipped pprof file\n"
	"           that go tool pprof, Pyroscope or speedscope can open\n"
	"  status   emberd (running or not, samples and BPF losses of the last interval,\n"
	"           caches, own CPU, RSS and BPF map memory), the history and the\n"
	"           collector; --format prometheus for node_exporter's textfile collector\n"
	"  top      the flat view: one line per function, self and total samples\n"
	"  tree     the top-down call tree, pruned below --min-percent\n"
	"  callers  who calls a function, out to main, with the weight of each path\n"
	"  callees  what a function calls, and where its time goes\n"
	"  folded   \"frame;frame;frame count\" lines for flamegraph.pl and speedscope\n"
	"  flamegraph\n"
	"           a window as an interactive flame graph, FILE.svg or FILE.html\n"
	"           (self-contained: hover, click to zoom, search; works offline)\n"
	"  diff     what changed between two windows: the functions whose share moved\n"
	"           most, and with -o a differential flame graph (red grew, blue shrank)\n"
	"  capture  ask the running emberd to sample one process or app at up to 999 Hz\n"
	"           for a while, and write that profile (root; Ctrl-C cancels)\n"
	"Run \"emberctl COMMAND --help\" for a command's options.\n"
	"\n"
	"Options:\n"
	"  -d, --data-dir DIR  where emberd keeps history.db (relative: to the working\n"
	"                      directory); default $EMBER_DATA_DIR, else " DEFAULT_DATA_DIR "\n"
	"  -h, --help          show this help\n"
	"  -V, --version       show the version\n"
	"\n"
	"Times (--since, --until):\n"
	"  2026-11-22T03:10:00Z       RFC 3339 in UTC (fractions such as :00.250Z too)\n"
	"  2026-11-22T04:10:00+01:00  RFC 3339 with an offset from UTC\n"
	"  2026-11-22                 midnight UTC of that day\n"
	"  1795317000                 unix seconds\n"
	"  -15m, -2h, -1d, -30s, now  relative to now (units: ms, s, m, h, d)\n"
	"  \"10 min ago\", \"2 hours ago\", \"1h 30min ago\"\n"
	"                             journalctl's form (units: ms, s, sec, second(s),\n"
	"                             m, min, minute(s), h, hr, hour(s), d, day(s),\n"
	"                             w, week(s)); quote it, it has spaces\n"
	"  today, yesterday, tomorrow midnight UTC (not local time) of that day\n"
	"A window [since, until) takes every profile that overlaps it; an omitted\n"
	"bound leaves that side open.\n"
	"\n"
	"Rollups: emberd also keeps, per app, each completed hour's profiles merged\n"
	"into one (local, never pushed). The views, flamegraph, diff and export read\n"
	"it for every whole hour of the window (same numbers, much faster over long\n"
	"windows; --no-rollups reads every raw profile); list shows raw profiles only.\n"
	"\n"
	"Examples:\n"
	"  emberctl list --since -1h\n"
	"  emberctl top --since \"10 min ago\"\n"
	"  emberctl folded --since today | flamegraph.pl > cpu.svg\n"
	"  emberctl export --since 2026-11-22T03:10:00Z --until 2026-11-22T03:20:00Z -o cpu.pb.gz\n"
	"  go tool pprof -top cpu.pb.gz\n"
	"  emberctl flamegraph --since -1h --app checkout -o checkout.html\n"
	"  emberctl diff --base-since -25h --base-until -24h --since -1h -o diff.html\n"
	"\n"
	"The history is DIR/history.db, an SQLite database with one zstd-compressed\n"
	"pprof profile per row and interval. emberctl only reads it, and can do so\n"
	"while emberd writes; reading " DEFAULT_DATA_DIR " needs root.\n";

static const struct command commands[] = {
	{"list", cmd_list},	  {"export", cmd_export},
	{"status", cmd_status},	  {"top", cmd_top},
	{"tree", cmd_tree},	  {"callers", cmd_callers},
	{"callees", cmd_callees}, {"folded", cmd_folded},
	{"capture", cmd_capture}, {"flamegraph", cmd_flamegraph},
	{"diff", cmd_diff},
};

static const struct option main_options[] = {
	{"data-dir", required_argument, NULL, 'd'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{0},
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

/* "list, export, status": for usage errors. */
static const char *command_names(void)
{
	static char names[256];

	for (size_t i = 0; i < N_COMMANDS; i++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
			 i ? ", " : "", commands[i].name);
	return names;
}

/* Global options stop at the command ("+"): its options are its own. */
static const char *parse_global(int argc, char **argv)
{
	const char *data_dir = getenv("EMBER_DATA_DIR");
	int c;

	if (!data_dir || !*data_dir)
		data_dir = DEFAULT_DATA_DIR;
	while ((c = getopt_long(argc, argv, "+:d:hV", main_options, NULL)) != -1) {
		if (c == 'd')
			data_dir = optarg;
		else if (c == 'h')
			show(main_help);
		else if (c == 'V')
			show("emberctl " EMBER_VERSION "\n");
		else
			bad_option(c, argv);
	}
	if (optind >= argc)
		usage_error("no command given: %s", command_names());
	return absolute_data_dir(data_dir);
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++) {
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	}
	usage_error("unknown command \"%s\"; commands: %s", name, command_names());
}

int main(int argc, char **argv)
{
	const struct command *cmd;
	const char *data_dir;

	opterr = 0;
	/*
	 * Merging a window decodes one profile after another, each a few hundred
	 * KiB of buffers and small objects freed before the next: keep that memory
	 * instead of giving it back to the kernel and faulting it in again.
	 */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	data_dir = parse_global(argc, argv);
	cmd = find_command(argv[optind]);
	usage_cmd = cmd->name;
	return cmd->run(data_dir, argc - optind, argv + optind);
}
