/* SPDX-License-Identifier: MIT */
/*
 * The on-CPU sampler: owns bpf/cpu.bpf.c's skeleton, one cpu-clock perf event
 * per online CPU, and the double-buffered maps it drains.
 */
#ifndef EMBER_SAMPLER_H
#define EMBER_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember/sample.h"
#include "deferred.h"
#include "fold.h"
#include "unwinder.h"

/* How to load the sampler: rate, map sizing, filters, and the maps it shares. */
struct sampler_opts {
	unsigned int hz;     /* samples per second per CPU */
	int64_t interval_ns; /* used to size the maps */
	bool include_idle;
	uint32_t target_tgid;	    /* 0: every process */
	bool allow_list;	    /* only the processes sampler_allow() lets in */
	int events_fd, known_fd;    /* proctrack's shared maps, or -1 for private ones */
	struct unwinder_fds unwind; /* the unwinder's maps, or -1s: frame pointers only */
	/* walks the samples of processes not loaded yet (daemon/sample/deferred.c); NULL: frame pointers */
	struct unwinder *unw;
};

struct sampler;

/* Loads and sizes the BPF program. On failure returns a negative errno and a
 * one-line cause in err (what is missing: privileges, BTF). */
int sampler_open(const struct sampler_opts *o, struct sampler **out, char *err, size_t errlen);
/*
 * Attaches the program to one cpu-clock perf event per online CPU: sampling
 * begins (apart from sampler_open(), so that emberd's own set-up is not
 * sampled). A negative errno and a one-line cause in err.
 */
int sampler_start(struct sampler *s, char *err, size_t errlen);
void sampler_close(struct sampler *s);
unsigned int sampler_ncpus(const struct sampler *s);
/*
 * Whether the maps, sized at load for one interval, hold the samples of
 * interval_ns at hz as well as maps sized for it would: what a reload of
 * `interval` asks before it takes effect.
 */
bool sampler_fits(const struct sampler *s, unsigned int hz, int64_t interval_ns);
/* Map sizes chosen (daemon/sample/mapsize.h): counts entries, stack parts. */
void sampler_sizes(const struct sampler *s, uint32_t *counts, uint32_t *stack_parts);

/*
 * Switches the programs to the other buffer, waits for programs still writing
 * to the old one, then calls cb for every folded stack of the old buffer and
 * empties it (counts and stacks), so that nothing is lost or counted twice.
 */
int sampler_drain(struct sampler *s, sampler_cb cb, void *arg);
/* Readable when deferred samples (daemon/sample/deferred.c) wait to be read; -1 without any. */
int sampler_epoll_fd(const struct sampler *s);
/* Reads the deferred samples (before process events: an exit must not overtake them). */
int sampler_consume(struct sampler *s);
/*
 * tgid exited: its deferred samples are walked now, with its tables if they
 * are still loaded, so that they join the drain its application is kept for;
 * or, loading (the unwinder loads it from its exit's mappings), once it is.
 */
void sampler_exited(struct sampler *s, uint32_t tgid, bool loading);
/*
 * tgid exec'd at ktime_ns (CLOCK_MONOTONIC): its deferred samples of the old
 * program (taken before) are walked with frame pointers, now or when read;
 * the new program's wait for its tables.
 */
void sampler_exec(struct sampler *s, uint32_t tgid, uint64_t ktime_ns);
/* Walks every deferred sample now, loaded or not (before the last drain). */
void sampler_flush(struct sampler *s);
/* The deferred walks' figures; false when this sampler defers none. */
bool sampler_deferred_stats(struct sampler *s, struct deferred_stats *out);
/* Its deferred walks (whose ring other objects send to), or NULL: none. */
struct deferred *sampler_deferred(struct sampler *s);
/* Switches the buffers now; the next sampler_drain() drains the one left (fold_gen_flip()). */
void sampler_flip(struct sampler *s);

/* The drop_tgids map, which the other folding objects share (fold_shared.drop_fd). */
int sampler_drop_fd(const struct sampler *s);

/* Stops (drop) or resumes sampling process tgid in the kernel. 0 or -errno
 * (-E2BIG when EMBER_SAMPLE_DROP_MAX processes are already dropped). */
int sampler_drop(struct sampler *s, uint32_t tgid, bool drop);

/* Lets tgid in (allow) or out of an allow-list sampler. 0 or -errno (-E2BIG
 * when EMBER_SAMPLE_ALLOW_MAX processes are already in). */
int sampler_allow(struct sampler *s, uint32_t tgid, bool allow);

/* Metrics summed over CPUs since load, indexed by enum ember_sample_metric. */
int sampler_metrics(struct sampler *s, uint64_t out[EMBER_SAMPLE_M_NR]);

/* Its programs' run time since load, ns (bpfload_run_ns()). */
int64_t sampler_run_ns(const struct sampler *s);

#endif
