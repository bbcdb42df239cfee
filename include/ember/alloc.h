/* SPDX-License-Identifier: MIT */
/*
 * ABI between bpf/alloc.bpf.c and daemon/sample/allocs.c: the sampled allocations
 * reported by otel_memory USDT probes, folded per stack, and the live ones.
 */
#ifndef EMBER_ALLOC_H
#define EMBER_ALLOC_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "ember/sample.h"

/* Cookie of an alloc probe's attachment: the process also keeps its live pointers. */
#define EMBER_ALLOC_COOKIE_INUSE 0x1

/* Value of the alloc counts maps (key: struct ember_sample_key, kern_stack 0). */
struct ember_alloc_count {
	__u64 objects; /* objects the interval's samples stand for (weight / size each) */
	__u64 space;   /* bytes they stand for (the sum of weights) */
	__u64 samples; /* sampled allocations (probe hits) */
};

/* Key of the live map: one sampled pointer of one process. */
struct ember_alloc_ptr {
	__u32 tgid; /* process id */
	__u32 pad;  /* zero */
	__u64 ptr;  /* the address malloc returned */
};

/* Value of the live map: what the free of that pointer takes back. */
struct ember_alloc_live {
	__u64 user_stack;	   /* hash of its stack in live_stacks, or 0 (lost) */
	__u64 objects;		   /* as in ember_alloc_count */
	__u64 space;		   /* as in ember_alloc_count */
	char comm[EMBER_COMM_LEN]; /* allocating thread's name */
};
_Static_assert(sizeof(struct ember_alloc_live) == 40, "ember_alloc_live is ABI");

/* Index of the per-CPU metrics array (summed over CPUs by the daemon). */
enum ember_alloc_metric {
	EMBER_ALLOC_M_ALLOCS = 0,    /* alloc probe hits */
	EMBER_ALLOC_M_FREES,	     /* free probe hits */
	EMBER_ALLOC_M_COUNTED,	     /* allocs added to a counts map */
	EMBER_ALLOC_M_COUNTS_FULL,   /* counts map full: the alloc was dropped */
	EMBER_ALLOC_M_STACKS_FULL,   /* a stacks map full: alloc kept, stack lost */
	EMBER_ALLOC_M_LIVE_ADDED,    /* live pointers recorded */
	EMBER_ALLOC_M_LIVE_FULL,     /* live map full (global cap): pointer not recorded */
	EMBER_ALLOC_M_LIVE_PROC_CAP, /* process at its per-process cap: pointer not recorded */
	EMBER_ALLOC_M_LIVE_FREED,    /* frees that found their pointer */
	EMBER_ALLOC_M_FREE_UNKNOWN,  /* frees of a pointer not recorded (not a loss) */
	/* allocs of a process whose tables are not (all) loaded yet: frame pointers there */
	EMBER_ALLOC_M_NO_TABLES,
	EMBER_ALLOC_M_NR,
};

#endif /* EMBER_ALLOC_H */
