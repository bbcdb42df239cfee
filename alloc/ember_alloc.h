/* SPDX-License-Identifier: MIT */
/* What libember_alloc.so exports besides the allocator it wraps: its counters, for its
 * tests and for a program that links it to show them. A program preloading the library
 * needs none of this. */
#ifndef EMBER_ALLOC_H
#define EMBER_ALLOC_H

#include <stdbool.h>
#include <stdint.h>

/* Counters since start-up, process-wide; a forked child starts from its parent's. */
struct ember_alloc_stats {
	uint64_t alloc_probes;	  /* otel_memory:alloc probe sites reached (samples reported) */
	uint64_t free_probes;	  /* otel_memory:free probe sites reached (sampled frees) */
	uint64_t weight_bytes;	  /* sum of the weights of the samples reported */
	uint64_t live;		  /* sampled pointers remembered, not freed yet */
	uint64_t overflow;	  /* samples dropped, unreported, as the live set had no room */
	uint64_t bootstrap_bytes; /* served from the start-up arena (while dlsym resolves) */
	uint64_t sample_mean;	  /* the mean sampling interval in use, bytes */
};

void ember_alloc_read_stats(struct ember_alloc_stats *st);

/* True when p is a live sampled pointer: its free will fire otel_memory:free. */
bool ember_alloc_is_live(const void *p);

#endif
