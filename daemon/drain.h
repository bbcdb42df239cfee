/* SPDX-License-Identifier: MIT */
/* Turns one drained interval of folded stacks into one pprof CPU profile. */
#ifndef EMBER_DRAIN_H
#define EMBER_DRAIN_H

#include <stdint.h>

#include "pprof.h"
#include "sampler.h"
#include "symbolizer.h"

struct drain_stats {
	uint64_t samples;	/* samples drained */
	uint64_t stacks;	/* distinct folded stacks (map entries) */
	uint32_t processes;	/* distinct processes */
	uint64_t lost_stacks;	/* samples whose user or kernel stack was lost */
};

/*
 * Drains the sampler into a new builder holding a CPU profile of
 * [start_ns, end_ns) (samples/count, cpu/nanoseconds; labels pid and comm).
 */
int drain_cpu_profile(struct sampler *s, struct symbolizer *sym, unsigned int hz,
		      int64_t start_ns, int64_t end_ns, struct pprof_builder **out,
		      struct drain_stats *st);

#endif
