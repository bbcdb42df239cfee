/* SPDX-License-Identifier: MIT */
/*
 * The owners of emberd's BPF programs and maps, one per profile source
 * (profile_type.h), each described once: when the configuration wants it, how
 * it opens, starts and closes, whether emberd goes on without it, and the
 * metrics the interval's report reads. daemon/loop/main.c opens them in the
 * sources' order and closes them in the reverse.
 */
#ifndef EMBER_OWNERS_H
#define EMBER_OWNERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "deferred.h"
#include "profile_type.h"
#include "unwinder.h"

/* Metrics an owner has at most (its ABI's enum; owners.c checks each). */
#define OWNER_METRICS_MAX 48

/* What every owner is opened with; the CPU sampler's open fills in what the others share. */
struct owner_env {
	const struct ember_config *cfg;
	struct unwinder *unw;	    /* walks samples of processes not loaded yet; NULL: none */
	int events_fd, known_fd;    /* proctrack's process events and known processes */
	struct unwinder_fds unwind; /* the unwinder's maps, or -1s: frame pointers only */
	int drop_fd;		    /* set by the CPU sampler's open: its drop_tgids */
	struct deferred *defer;	    /* set by the CPU sampler's open: its deferred walks */
};

/* One owner of BPF programs and maps: the source of the profile types that name it. */
struct owner {
	bool fatal;	     /* emberd stops when it cannot load or start */
	const char *without; /* what the log says goes missing */
	bool (*wanted)(const struct ember_config *c); /* NULL: always opened */
	/* Loads (its programs not attached yet). 0, or a negative errno and a cause in err. */
	int (*open)(struct owner_env *env, void **out, char *err, size_t errlen);
	int (*start)(void *o, char *err, size_t errlen); /* attaches; NULL: its open does */
	void (*close)(void *o);				 /* accepts NULL */
	/* its BPF metric totals since load (n_metrics of them); NULL: none. 0 or -errno */
	int (*metrics)(void *o, uint64_t *out);
	size_t n_metrics;
	unsigned int counters; /* the counter rows its metrics add to: 1 << enum counter_src */
	int64_t (*run_ns)(const void *o); /* its programs' run time since load, ns */
};

/* Every owner, indexed by enum profile_source (PROFILE_SRC_NONE's is empty). */
extern const struct owner owners[PROFILE_SRC_NR];

/* The CPU sampler, always open while emberd samples. */
static inline struct sampler *owner_sampler(void *const *owner)
{
	return owner[PROFILE_SRC_SAMPLER];
}

/* Sampled allocations; NULL when no [app] asks for them. */
static inline struct allocs *owner_allocs(void *const *owner)
{
	return owner[PROFILE_SRC_ALLOCS];
}

/* Off-CPU time; NULL when off or unavailable. */
static inline struct offcpu *owner_offcpu(void *const *owner)
{
	return owner[PROFILE_SRC_OFFCPU];
}

#endif
