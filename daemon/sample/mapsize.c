// SPDX-License-Identifier: MIT
/*
 * Sizes of the cpu sampler's preallocated BPF maps (daemon/sample/sampler.c): how
 * many samples an interval can hold, and the bounds on kernel memory.
 */
#include "mapsize.h"
#include "clock.h"

uint32_t map_roundup_pow2(uint64_t v, uint32_t lo, uint32_t hi)
{
	uint64_t p = 1;

	while (p < v && p < hi)
		p <<= 1;
	return p < lo ? lo : p > hi ? hi : p;
}

/* v rounded up to a multiple of MAPSIZE_PARTS_STEP, within the parts bounds. */
static uint32_t parts_within(uint64_t v)
{
	v = (v + MAPSIZE_PARTS_STEP - 1) / MAPSIZE_PARTS_STEP * MAPSIZE_PARTS_STEP;
	return v < MAPSIZE_PARTS_MIN ? MAPSIZE_PARTS_MIN :
	       v > MAPSIZE_PARTS_MAX ? MAPSIZE_PARTS_MAX :
				       (uint32_t)v;
}

void map_sizes_for(unsigned int ncpus, unsigned int hz, int64_t interval_ns, struct map_sizes *out)
{
	uint64_t secs = interval_ns > 0 ? (uint64_t)interval_ns / NS_PER_SEC + 1 : 1;
	uint64_t per_interval = (uint64_t)hz * ncpus;

	/* bounds no rate or interval reaches, far past the caps: nothing below overflows */
	per_interval = per_interval > INT32_MAX ? INT32_MAX : per_interval;
	secs = secs > INT32_MAX ? INT32_MAX : secs;
	per_interval *= secs;
	out->counts = map_roundup_pow2(per_interval + per_interval / 4, MAPSIZE_COUNTS_MIN,
				       MAPSIZE_COUNTS_MAX);
	/* hash-map keys may share nothing: up to one user and one kernel stack per sample */
	out->stack_parts = parts_within(2 * per_interval);
}
