/* SPDX-License-Identifier: MIT */
/*
 * Memory growth, host-wide: owns bpf/growth.bpf.c's skeleton, one page-faults
 * perf event per online CPU (1 fault in fault_period), the mmap raw
 * tracepoint, and the double-buffered maps they fold into.
 */
#ifndef EMBER_GROWTH_DAEMON_H
#define EMBER_GROWTH_DAEMON_H

#include <stddef.h>
#include <stdint.h>

#include "ember/growth.h"
#include "deferred.h"
#include "fold.h"

/*
 * The one frame of growth in a process's first growth_min_age (counted without
 * a stack: EMBER_GROWTH_KEY_STARTUP).
 */
#define GROWTH_STARTUP_FRAME "[process start-up]"

/* How to load the growth sampler. */
struct growth_opts {
	unsigned int fault_period; /* sample 1 page fault in this many (> 0) */
	int64_t min_age_ns;	   /* a process's growth before this age is left out */
	struct fold_shared shared; /* maps of proctrack, the unwinder and the cpu sampler */
	struct deferred *defer;	   /* the cpu sampler's deferred walks, or NULL: none sent */
};

struct growth;

/* Loads. On failure a negative errno and a one-line cause in err. */
int growth_open(const struct growth_opts *o, struct growth **out, char *err, size_t errlen);
/* Attaches: sampling begins (with the cpu sampler's, once emberd is set up). As growth_open(). */
int growth_start(struct growth *g, char *err, size_t errlen);
void growth_close(struct growth *g);

/*
 * Drains the folded stacks like sampler_drain(): cb gets a number of sampled
 * faults, or (key flag EMBER_GROWTH_KEY_MAPPED) sampled mapped bytes; then
 * those of processes not loaded yet that the deferred walks have walked.
 */
int growth_drain(struct growth *g, sampler_cb cb, void *arg);
/* Switches the buffers now, as sampler_flip(). */
void growth_flip(struct growth *g);

/* Resident bytes one sampled fault stands for: fault_period pages. */
int64_t growth_fault_bytes(const struct growth *g);

/* Metrics summed over CPUs since load, indexed by enum ember_growth_metric. */
int growth_metrics(struct growth *g, uint64_t out[EMBER_GROWTH_M_NR]);

/* Its programs' run time since load, ns (bpfload_run_ns()). */
int64_t growth_run_ns(const struct growth *g);

#endif
