/* SPDX-License-Identifier: MIT */
/*
 * Sampled allocations (profile type memory): owns bpf/alloc.bpf.c, attaches
 * its USDT programs to the otel_memory probes of the processes whose
 * application asks for them, and drains alloc and inuse values per stack.
 */
#ifndef EMBER_ALLOCS_H
#define EMBER_ALLOCS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "ember/alloc.h"
#include "sampler.h"
#include "unwinder.h"

/* Processes attached at once; beyond, counted in procs_over_cap. */
#define ALLOCS_PROCS_MAX 1024
/* Files with otel_memory probes per process (the sampler, a dlopen'd copy or two). */
#define ALLOCS_FILES_MAX 8

struct allocs_opts {
	struct unwinder_fds unwind; /* the unwinder's maps, or -1s: frame pointers only */
	uint32_t live_max;	    /* live sampled pointers held at once (global cap) */
	uint32_t live_proc_max;	    /* ... by one process (per-process cap) */
};

/* What attaching did since the start, for status and the log. */
struct allocs_stats {
	uint32_t procs;		   /* processes attached now */
	uint64_t files_attached;   /* files whose probes were attached */
	uint64_t attach_failed;	   /* attach refused (process gone, bad probe): counted, skipped */
	uint64_t notes_malformed;  /* files whose .note.stapsdt is malformed: skipped */
	uint64_t procs_over_cap;   /* processes not attached: ALLOCS_PROCS_MAX reached */
	uint64_t live_stacks_gc;   /* live stacks deleted: no live pointer refers to them */
	uint64_t live_stacks_lost; /* live pointers whose stack was not found */
	uint64_t m[EMBER_ALLOC_M_NR]; /* the BPF side's metrics (enum ember_alloc_metric) */
};

/*
 * Values per folded stack: alloc_objects, alloc_space, inuse_objects, inuse_space;
 * events: the sampled allocations (or live sampled pointers) behind them.
 */
typedef int (*allocs_cb)(const struct ember_sample_key *key, const int64_t values[4],
			 uint64_t events, const struct sampler_stack *user, void *arg);

struct allocs;

int allocs_open(const struct allocs_opts *o, struct allocs **out, char *err, size_t errlen);
void allocs_close(struct allocs *a);

/* pid was classified with memory mode m: attaches (or, for off, detaches). */
void allocs_classified(struct allocs *a, pid_t pid, enum app_memory m);
/* pid mapped libraries since it was attached (ld.so after exec): attaches to new ones. */
void allocs_rescan(struct allocs *a, pid_t pid);
/* pid exited: detaches; its live pointers are dropped at the next drain. */
void allocs_exited(struct allocs *a, pid_t pid);

/*
 * Attaches to probes in files the attached processes mapped since (dlopen),
 * flips the buffers, then calls cb for every stack of the interval's
 * allocations and every stack of live pointers (inuse), and collects the live
 * stacks no pointer refers to.
 */
int allocs_drain(struct allocs *a, allocs_cb cb, void *arg);
/* Flips the buffers now; the next allocs_drain() drains the one left (fold_gen_flip()). */
void allocs_flip(struct allocs *a);

void allocs_stats(struct allocs *a, struct allocs_stats *out);

/* Its programs' run time since load, ns (bpfload_run_ns()). */
int64_t allocs_run_ns(const struct allocs *a);

#endif
