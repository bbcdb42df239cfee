/* SPDX-License-Identifier: MIT */
/* Turns one drained interval of folded stacks into one pprof CPU profile per application. */
#ifndef EMBER_DRAIN_H
#define EMBER_DRAIN_H

#include <stdint.h>

#include "config.h"
#include "pprof.h"
#include "proctable.h"
#include "sampler.h"
#include "symbolizer.h"

struct drain_stats {
	uint64_t samples;	/* samples drained */
	uint64_t stacks;	/* distinct folded stacks (map entries) */
	uint32_t processes;	/* distinct processes */
	uint64_t lost_stacks;	/* samples whose user or kernel stack was lost */
};

/* A frame already turned into a location of one builder. */
struct drain_frame {
	uint64_t addr;			/* adjusted address; 0 marks a free slot */
	uint32_t pid;			/* 0 for kernel frames: the same in every process */
	uint32_t kernel;
	uint64_t location;		/* id in the profile's builder */
};

/* One application's CPU profile of the interval. */
struct drain_profile {
	char service[CONFIG_NAME_MAX];	/* service_name */
	int app;			/* index of its [app], or -1 when inferred */
	struct pprof_builder *b;
	struct drain_stats st;
	uint32_t *pids;			/* every tgid seen, to count processes */
	size_t npids, cap;
	struct drain_frame *frames;	/* open-addressing cache: frames repeat across stacks */
	size_t nframes, frames_cap;
};

struct drain_result {
	struct drain_profile *v;	/* one per application sampled */
	size_t n, cap;
	struct drain_stats total;	/* over all profiles */
	uint64_t excluded;		/* samples of excluded processes, dropped */
};

/* How the drain learns a process's application (NULL: out of memory). */
typedef const struct proc_class *(*drain_classify_fn)(uint32_t pid, const char *comm, void *arg);

/*
 * Drains the sampler into one builder per application, each a CPU profile of
 * [start_ns, end_ns) (samples/count, cpu/nanoseconds; labels pid and comm).
 */
int drain_cpu_profiles(struct sampler *s, struct symbolizer *sym, unsigned int hz,
		       int64_t start_ns, int64_t end_ns, drain_classify_fn classify, void *arg,
		       struct drain_result *out);
/*
 * The same, adding to the profiles already in out (zeroed before the first
 * call): an on-demand capture drains several times into one profile. The
 * symbolizer's interval is left to the main drain to end.
 */
int drain_cpu_more(struct sampler *s, struct symbolizer *sym, unsigned int hz, int64_t start_ns,
		   int64_t end_ns, drain_classify_fn classify, void *arg, struct drain_result *out);
void drain_result_free(struct drain_result *r);

#endif
