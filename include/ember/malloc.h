/* SPDX-License-Identifier: MIT */
/*
 * ABI between bpf/malloc.bpf.c and daemon/sample/malloccap.c: the emergency capture
 * that probes every malloc/calloc/realloc of one process. Fixed-width fields only.
 */
#ifndef EMBER_MALLOC_H
#define EMBER_MALLOC_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/*
 * Counts maps are keyed by struct ember_sample_key (include/ember/sample.h) with
 * kern_stack always 0: an allocation is made in user space.
 */

/* Value of the counts map: what the allocations of one folded stack asked for. */
struct ember_malloc_value {
	__u64 count; /* calls */
	__u64 bytes; /* bytes asked for (a calloc's n x size, a realloc's new size) */
};
_Static_assert(sizeof(struct ember_malloc_value) == 16, "ember_malloc_value is ABI");

/*
 * Index of the per-CPU metrics array. Every early return of the BPF programs
 * increments one; the daemon sums them over CPUs.
 */
enum ember_malloc_metric {
	EMBER_MALLOC_M_CALLS = 0,	/* probed calls that reached a program */
	EMBER_MALLOC_M_COUNTED,		/* calls added to the counts map */
	EMBER_MALLOC_M_FILTERED,	/* calls of another process (not a loss) */
	EMBER_MALLOC_M_STACKS_FULL,	/* stacks map full: call kept, stack lost */
	EMBER_MALLOC_M_COUNTS_FULL,	/* counts map full: the call was dropped (a loss) */
	EMBER_MALLOC_M_PROC_EVENT_LOST, /* first-call event lost (ring buffer full); retried */
	EMBER_MALLOC_M_NO_TABLES,	/* calls walked by frame pointers: tables not loaded yet */
	EMBER_MALLOC_M_NR,
};

#endif /* EMBER_MALLOC_H */
