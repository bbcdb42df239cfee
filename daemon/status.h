/* SPDX-License-Identifier: MIT */
/*
 * emberd's self-monitoring and memory bound: after every drain, gathers what
 * the daemon did and costs, shrinks the caches when RSS is over memory_limit,
 * and writes <runtime_dir>/status (lib/proto/statusfile.h) for `emberctl status`.
 */
#ifndef EMBER_STATUS_H
#define EMBER_STATUS_H

#include <stdint.h>

#include "config.h"
#include "drain.h"
#include "history.h"
#include "proctable.h"
#include "proctrack.h"
#include "sampler.h"
#include "symbolizer.h"
#include "uploader.h"

/* Where the figures come from: the daemon's parts, read at every write. */
struct status_sources {
	const struct ember_config *cfg;		/* the running configuration (reloads in place) */
	struct sampler *sampler;
	struct proctrack *proc;
	struct proctable *procs;
	struct symbolizer *sym;
	struct unwinder *unw;			/* NULL: frame pointers only */
	struct history *hist;
	struct uploader *const *up;		/* NULL inside without a collector */
	const uint64_t *profiles_stored;	/* since the start */
	const uint64_t *processes_seen;		/* first sights since the start */
};

struct status;

/*
 * Sizes the symbolizer's caches from cfg->memory_limit and writes the first
 * status file into cfg->runtime_dir (created when missing). Never fails the
 * daemon: a status file that cannot be written is a warning, once. NULL on ENOMEM.
 */
struct status *status_open(const struct status_sources *src);
/* After each drain (r: its result): counts, bounds memory, writes the file. */
void status_interval(struct status *s, const struct drain_result *r);
/* Writes the file one last time with state "stopped", then frees. Accepts NULL. */
void status_close(struct status *s);

#endif
