/* SPDX-License-Identifier: MIT */
/*
 * The interval: the one owner of what emberd does every `interval`. Drains
 * each active profile type, stores one profile per application and type in
 * the history (which queues its push), then reads every counter once into
 * the interval report, from which the log line, the memory bound, sd_notify
 * and the status file are written.
 */
#ifndef EMBER_INTERVAL_H
#define EMBER_INTERVAL_H

#include <stdint.h>

#include "drain.h"
#include "profile_type.h"
#include "report.h"

struct rollups;

/* What the interval needs of the running daemon, whose main owns every part. */
struct interval_deps {
	struct report_sources src;  /* what the report reads; cfg, hist and sym are used too */
	struct rollups *rollups;    /* NULL when the builder could not start */
	drain_classify_fn classify; /* a process's application, for the drains */
	void *classify_arg;
};

struct interval;

/*
 * Starts the first interval now: sizes the caches (memory bound) and writes
 * the first status file. NULL on ENOMEM.
 */
struct interval *interval_open(const struct interval_deps *deps);
/* Drains type from now on, from the maps src owns (type->drain's src). 0 or -ENOSPC. */
int interval_add_type(struct interval *iv, const struct profile_type *type, void *src);
/*
 * Ends the interval and starts the next: drains every type, stores the
 * profiles, prunes, reports. 0, or -EIO when a profile could not be encoded or was
 * refused; one the history could not take is kept in the backlog (store.h): 0.
 */
int interval_run(struct interval *iv);
/* Profiles stored since the start. */
uint64_t interval_profiles_stored(const struct interval *iv);
/* Writes the status file one last time with state "stopped", then frees. Accepts NULL. */
void interval_close(struct interval *iv);

#endif
