/* SPDX-License-Identifier: MIT */
/*
 * ABI between bpf/growth.bpf.c and daemon/sample/growth.c: the memory-growth
 * sampler's key flag and metrics. Its maps are those of bpf/fold.bpf.h
 * (struct ember_sample_key, struct ember_stack). Fixed-width fields only.
 */
#ifndef EMBER_GROWTH_H
#define EMBER_GROWTH_H

#include "ember/sample.h"

/*
 * Flag of ember_sample_key in the growth object: the count is bytes of anonymous
 * mmap growth (sampled by bytes); without it, a number of sampled page faults.
 */
#define EMBER_GROWTH_KEY_MAPPED 0x100
/*
 * Flag of ember_sample_key in the growth object: growth of a process younger than
 * growth_min_age, counted without a stack (under its process, for the
 * daemon's "[process start-up]" frame), so that the totals stay whole.
 */
#define EMBER_GROWTH_KEY_STARTUP 0x200

/*
 * Index of the growth object's per-CPU metrics array: the first
 * EMBER_SAMPLE_M_NR mean what they mean for the cpu object (bpf/fold.bpf.h
 * counts them), then the growth sampler's own.
 */
enum ember_growth_metric {
	EMBER_GROWTH_M_KTHREAD = EMBER_SAMPLE_M_NR, /* faults of kernel threads left out */
	EMBER_GROWTH_M_FILE,	    /* faults on file-backed mappings left out (not growth) */
	EMBER_GROWTH_M_VMA_UNKNOWN, /* faults whose mapping could not be looked up: kept */
	EMBER_GROWTH_M_MAP_CALLS,   /* anonymous mmaps seen */
	EMBER_GROWTH_M_MAP_SAMPLED, /* of which sampled (folded with their stack) */
	EMBER_GROWTH_M_YOUNG,	 /* faults and mmaps of processes younger than min_age left out */
	EMBER_GROWTH_M_BY_RANGE, /* faults classified by the mm's own ranges, no mapping looked up */
	EMBER_GROWTH_M_YOUNG_UNCLASSIFIED, /* of YOUNG's faults, those not classified (1 in 4 is) */
	EMBER_GROWTH_M_NR,
};

_Static_assert(EMBER_GROWTH_KEY_MAPPED > EMBER_KEY_KSTACK_LOST, "growth flag clear of cpu's");

#endif /* EMBER_GROWTH_H */
