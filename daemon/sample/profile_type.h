/* SPDX-License-Identifier: MIT */
/*
 * The profile types emberd writes, each described once: its name, what its
 * sample values mean in pprof, the maps its drain reads, when the interval
 * drains it and what its report takes. A new type is its BPF program, its ABI
 * header, its owner (daemon/sample/) with its entry in owners.c, and one
 * entry in profile_types.c.
 */
#ifndef EMBER_PROFILE_TYPE_H
#define EMBER_PROFILE_TYPE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pprof.h"
#include "sampler.h"

/* Mean bytes between two sampled allocations of libember_alloc.so (its default). */
#define PROFILE_MEMORY_PERIOD 524288

/* Sample values a profile type has at most (memory's alloc and inuse pairs). */
#define PROFILE_VALUES_MAX 4

/* One folded stack of a profile type, as its source drains it. */
struct profile_sample {
	const struct ember_sample_key *key; /* process, thread name, lost-stack flags */
	const int64_t *values;		    /* the type's n_values, each in its unit */
	uint64_t events; /* samples or events it stands for (the report's count) */
	const struct sampler_stack *user, *kern;
	const char *leaf;      /* a pseudo-frame below the stack (why it waited), or NULL */
	int64_t runq_ns;       /* of values, run-queue delay: the status' latency per app */
	uint64_t runq_waits;   /* and the waits it stands for */
	int64_t startup_bytes; /* memory growth: of values, resident bytes of a start-up */
	/* the thread that ended the wait, above it past a "[woken by]" frame; NULL: none */
	const struct sampler_stack *waker_user, *waker_kern;
	uint32_t waker_pid; /* whose addresses waker_user's are */
};

typedef int (*profile_sample_cb)(const struct profile_sample *s, void *arg);

/*
 * Reads every folded stack of a source's maps once (cb for each) and empties
 * what is per interval; period is what one sampled event weighs (type->period).
 */
typedef int (*profile_drain_fn)(void *src, int64_t period, profile_sample_cb cb, void *arg);

/*
 * Turns a source's programs to its other buffer now, so that the next drain
 * reads the one left after one grace period shared by every type (fold_gen_flip()).
 */
typedef void (*profile_flip_fn)(void *src);

/*
 * Calls keep for each process whose frames a later drain of the source will
 * name (threads away with stacks held across this drain), so that the
 * symbolizer keeps their mappings however long they stay idle.
 */
typedef void (*profile_keep_fn)(void *src, void (*keep)(void *arg, pid_t pid), void *arg);

/*
 * Whose maps a type drains: the owners emberd opens (owners.h), in the order
 * it opens them: the CPU sampler first, whose maps the others share.
 */
enum profile_source {
	PROFILE_SRC_NONE = 0, /* no interval's: on-demand captures only (emberctl capture) */
	PROFILE_SRC_SAMPLER,  /* struct sampler: the on-CPU sampler, always open */
	PROFILE_SRC_GROWTH,   /* struct growth: when growth_fault_period is not 0 */
	PROFILE_SRC_OFFCPU,   /* struct offcpu: when offcpu is on */
	PROFILE_SRC_ALLOCS,   /* struct allocs: when an [app] sets memory */
	PROFILE_SRC_NR,
};

/* What the interval's report takes from a type's drains (struct profile_type's report). */
enum profile_report {
	/* its samples, stacks, processes and applications are the report's: the sampling clock's */
	PROFILE_REPORT_CLOCK = 1 << 0,
	PROFILE_REPORT_RUNQ = 1 << 1,	 /* each application's run-queue delay (runq lines) */
	PROFILE_REPORT_STARTUP = 1 << 2, /* each application's growth in its start-ups */
};

/* One profile type, shared by the interval, the drain and on-demand captures. */
struct profile_type {
	const char *name; /* the history's type and emberctl's --type */
	struct pprof_value_type values[PROFILE_VALUES_MAX]; /* the pprof's sample types */
	size_t n_values;
	struct pprof_value_type period_type;
	const char *default_sample;	    /* the views' value without --sample; NULL: the last */
	int64_t (*period)(unsigned int hz); /* what one sampled event weighs */
	profile_drain_fn drain;		    /* its maps, given the object that owns them */
	profile_flip_fn flip; /* NULL: its drain flips (or reads what another drain flipped) */
	profile_keep_fn keep; /* NULL: no frames named after the interval they were taken in */
	/* one line for the drained profiles' comment (how they were sampled), or NULL */
	const char *(*comment)(void *src);
	enum profile_source source; /* whose maps: the interval drains it when that is open */
	unsigned int report;	    /* enum profile_report: what the report takes from it */
};

/*
 * Every type emberd knows, indexed by enum profile_type_id (profile_types.c),
 * in the order the interval drains them: memory first, its buffers flipped
 * right after the interval's exits are read, so that no allocation of a
 * process that exited lands in the next interval, where the process table no
 * longer knows it; offcpu_wakers right after offcpu, whose drain flips the
 * buffers the wakers' follow.
 */
enum profile_type_id {
	PROFILE_MEMORY,
	PROFILE_CPU,
	PROFILE_MEMORY_GROWTH,
	PROFILE_OFFCPU,
	PROFILE_OFFCPU_WAKERS,
	PROFILE_MALLOC,
	PROFILE_TYPES_NR,
};
extern const struct profile_type profile_types[PROFILE_TYPES_NR];

#endif
