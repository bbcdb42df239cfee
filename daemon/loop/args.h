/* SPDX-License-Identifier: MIT */
/* emberd's command line: what it asks for, on top of the configuration file. */
#ifndef EMBER_ARGS_H
#define EMBER_ARGS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

/* What the command line asked for, on top of the configuration file. */
struct args {
	const char *config_path;	      /* NULL: the default file if it exists */
	const char *data_dir, *hz, *interval; /* data_dir: absolute (data_dir_buf) */
	char data_dir_buf[PATH_MAX];	      /* a relative --data-dir, resolved at start */
	const char *runtime_dir; /* --runtime-dir: the control socket and the status file */
	int64_t duration_ns;	 /* 0: run until signalled */
	bool verbose, check_config;
};

/* Reads argv into a; --help and --version print and exit. 0, or 2 (said) on a bad argument. */
int args_parse(int argc, char **argv, struct args *a);

#endif
