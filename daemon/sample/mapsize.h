/* SPDX-License-Identifier: MIT */
/*
 * Sizes of the cpu sampler's preallocated BPF maps from the rate, the interval
 * and the number of CPUs, within a bound on kernel memory. Pure arithmetic.
 */
#ifndef EMBER_MAPSIZE_H
#define EMBER_MAPSIZE_H

#include <stdint.h>

/*
 * Bounds, in entries of one buffer (there are two of each). A counts entry
 * takes ~100 bytes of kernel memory, a stack part ~340 (a stack of up to 31
 * frames is one part, a deepest one 9; include/ember/sample.h): at most ~7 MiB
 * of counts and ~32 MiB of stacks per buffer, ~78 MiB for both buffers,
 * whatever the rate, interval and CPUs.
 */
#define MAPSIZE_COUNTS_MIN 1024
#define MAPSIZE_COUNTS_MAX 65536
#define MAPSIZE_PARTS_MIN 2048
#define MAPSIZE_PARTS_MAX 98304
/* Stack parts are sized in steps of this many. */
#define MAPSIZE_PARTS_STEP 1024

struct map_sizes {
	uint32_t counts;      /* entries of a counts map */
	uint32_t stack_parts; /* entries of a stacks map (parts) */
};

/*
 * The sizes for hz and interval_ns on ncpus CPUs: room for every sample of an
 * interval (and one second more, a late drain), each with two stacks of one
 * part, within the bounds above.
 */
void map_sizes_for(unsigned int ncpus, unsigned int hz, int64_t interval_ns, struct map_sizes *out);

/* The power of two at or above v, within lo..hi: a map size. */
uint32_t map_roundup_pow2(uint64_t v, uint32_t lo, uint32_t hi);

#endif
