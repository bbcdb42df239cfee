/* SPDX-License-Identifier: MIT */
/*
 * The configuration: loaded at start-up from the file and the command line,
 * and again on SIGHUP, applied after the next interval is stored; what cannot
 * change without a restart is refused and said so.
 */
#ifndef EMBER_RELOAD_H
#define EMBER_RELOAD_H

#include <stdbool.h>

#include "daemon.h"

/* The file (explicit, default if present, or none), then the command line. 0 or 1 (said). */
int reload_load(const struct args *a, struct ember_config *cfg, bool to_log);
/* SIGHUP: a valid file is kept for apply_reload(); a bad one changes nothing. */
void request_reload(struct daemon *d);
/* After the drain: applies the pending configuration, keeping what needs a restart. */
void apply_reload(struct daemon *d);
/* Starts pushing to the configured collector, if any. 0 or -errno (logged). */
int reload_start_uploader(struct daemon *d);

#endif
