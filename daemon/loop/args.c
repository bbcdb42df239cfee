// SPDX-License-Identifier: MIT
/* emberd's command line: its help, and the options it reads into struct args. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "config.h"
#include "file.h"
#include "timeparse.h"

#ifndef EMBER_VERSION
#define EMBER_VERSION "0.1.0"
#endif

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: emberd [OPTIONS]\n"
		"\n"
		"Profiles every process on this host with eBPF: on-CPU stacks, memory growth,\n"
		"and as configured sampled allocations and off-CPU waits (reason and waker),\n"
		"Python and Node.js functions named without flags. Every interval it writes\n"
		"one pprof profile per application and type into the local history, where\n"
		"emberctl reads it, and pushes it to a collector (Pyroscope) if one is set.\n"
		"\n"
		"Options:\n"
		"  -c, --config FILE      configuration file (default " EMBER_DEFAULT_CONFIG
		" if it\n"
		"                         exists, else built-in defaults)\n"
		"  -d, --data-dir DIR     where the history lives (default " EMBER_DEFAULT_DATA_DIR
		"; a\n"
		"                         relative DIR is below the working directory at start)\n"
		"      --runtime-dir DIR  where the control socket and the status file live (default\n"
		"                         " EMBER_DEFAULT_RUNTIME_DIR
		"); emberctl --runtime-dir DIR finds them\n"
		"      --hz N             samples per second per CPU, %d..%d (default 19)\n"
		"      --interval DUR     one profile per DUR, 1s..1h (default 10s)\n"
		"      --duration DUR     stop after DUR, storing the last partial interval\n"
		"      --check-config     validate the configuration, print 'configuration OK', exit\n"
		"  -v, --verbose          debug logging (libbpf's messages included)\n"
		"  -h, --help             this help\n"
		"  -V, --version          print the version\n"
		"\n"
		"Durations: 500ms, 10s, 2m, 1h, or a number of seconds.\n"
		"Signals: TERM and INT store the current partial interval and exit; HUP re-reads\n"
		"the configuration (applied after the next interval is stored).\n"
		"Under systemd (emberd.service, Type=notify): READY=1 once sampling, a STATUS=\n"
		"line per interval, RELOADING=1/STOPPING=1, and WATCHDOG=1 every WATCHDOG_USEC/2;\n"
		"log lines go to the journal with their priority. See emberd(8).\n"
		"Needs root, or CAP_BPF and CAP_PERFMON (+ CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH\n"
		"to read other processes' binaries, CAP_CHECKPOINT_RESTORE for deleted ones), and\n"
		"a kernel with BTF.\n"
		"\n"
		"Look at what it stored, and at emberd itself (running, losses, CPU, memory):\n"
		"  emberctl --data-dir DIR list\n"
		"  emberctl --data-dir DIR status --runtime-dir RUNDIR\n"
		"  emberctl --data-dir DIR export --type cpu --since -15m -o cpu.pb.gz\n"
		"  go tool pprof -top cpu.pb.gz\n",
		EMBER_HZ_MIN, EMBER_HZ_MAX);
}

/*
 * A relative --data-dir names a directory below the one emberd started in: made
 * absolute now, as the configuration's data_dir must be, and as later reads
 * (a reload, the rollup and upload threads) need whatever the working directory.
 */
static int resolve_data_dir(struct args *a)
{
	int ret;

	if (!a->data_dir || a->data_dir[0] == '/')
		return 0;
	ret = path_absolute(a->data_dir, a->data_dir_buf, sizeof(a->data_dir_buf));
	if (ret) {
		fprintf(stderr,
			"emberd: --data-dir: cannot make '%s' absolute from the working "
			"directory: %s\n",
			a->data_dir, strerror(-ret));
		return 2;
	}
	a->data_dir = a->data_dir_buf;
	return 0;
}

int args_parse(int argc, char **argv, struct args *a)
{
	enum { OPT_HZ = 256, OPT_INTERVAL, OPT_DURATION, OPT_CHECK, OPT_RUNTIME_DIR };
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"data-dir", required_argument, NULL, 'd'},
		{"runtime-dir", required_argument, NULL, OPT_RUNTIME_DIR},
		{"hz", required_argument, NULL, OPT_HZ},
		{"interval", required_argument, NULL, OPT_INTERVAL},
		{"duration", required_argument, NULL, OPT_DURATION},
		{"check-config", no_argument, NULL, OPT_CHECK},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{},
	};
	int c;

	while ((c = getopt_long(argc, argv, "c:d:vhV", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			a->config_path = optarg;
			break;
		case 'd':
			a->data_dir = optarg;
			break;
		case OPT_RUNTIME_DIR:
			a->runtime_dir = optarg;
			break;
		case OPT_HZ:
			a->hz = optarg;
			break;
		case OPT_INTERVAL:
			a->interval = optarg;
			break;
		case OPT_DURATION:
			if (parse_duration(optarg, &a->duration_ns) || a->duration_ns <= 0) {
				fprintf(stderr,
					"emberd: --duration: '%s' is not a duration "
					"(e.g. 30s, 5m)\n",
					optarg);
				return 2;
			}
			break;
		case OPT_CHECK:
			a->check_config = true;
			break;
		case 'v':
			a->verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("emberd %s\n", EMBER_VERSION);
			exit(0);
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "emberd: unexpected argument '%s' (see --help)\n", argv[optind]);
		return 2;
	}
	return resolve_data_dir(a);
}
