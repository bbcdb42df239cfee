/* SPDX-License-Identifier: MIT */
/*
 * ABI between bpf/cpu.bpf.c and daemon/sampler.c: map keys, values and the
 * metrics enum of the on-CPU sampler. Fixed-width fields only.
 */
#ifndef EMBER_CPU_H
#define EMBER_CPU_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Deepest stack kept per sample; the kernel's PERF_MAX_STACK_DEPTH default. */
#define EMBER_MAX_STACK_DEPTH 127
/* TASK_COMM_LEN of the kernel. */
#define EMBER_COMM_LEN 16
/* Number of buffers the sampler alternates between (double buffering). */
#define EMBER_CPU_NBUF 2

/*
 * Key of the counts maps: one folded stack of one process. A stack id of
 * EMBER_STACK_NONE means there is no such stack (kernel thread: no user stack;
 * sample taken in user mode: no kernel stack); any other negative id is the
 * -errno of bpf_get_stackid() and means the stack was lost (counted in metrics).
 */
#define EMBER_STACK_NONE (-1)
struct ember_cpu_key {
	__u32 tgid;		  /* process id (thread group) */
	__s32 user_stack_id;	  /* id in the stacks map of the same buffer, or < 0 */
	__s32 kern_stack_id;	  /* id in the stacks map of the same buffer, or < 0 */
	__u32 pad;		  /* explicit padding, always 0 */
	char comm[EMBER_COMM_LEN]; /* thread name at sampling time */
};
_Static_assert(sizeof(struct ember_cpu_key) == 32, "ember_cpu_key is ABI");

/*
 * Index of the per-CPU metrics array. Every early return of the BPF program
 * increments one; the daemon sums them over CPUs and reports deltas.
 */
enum ember_cpu_metric {
	EMBER_CPU_M_SAMPLES = 0,	/* samples that reached the program */
	EMBER_CPU_M_COUNTED,		/* samples added to a counts map */
	EMBER_CPU_M_IDLE_SKIPPED,	/* idle task samples left out (not a loss) */
	EMBER_CPU_M_FILTERED,		/* samples of processes not selected (not a loss) */
	EMBER_CPU_M_USTACK_COLLISION,	/* user stack hash collided: sample kept, stack lost */
	EMBER_CPU_M_KSTACK_COLLISION,	/* kernel stack hash collided: sample kept, stack lost */
	EMBER_CPU_M_USTACK_FAILED,	/* user stack unreadable or map full: sample kept, stack lost */
	EMBER_CPU_M_KSTACK_FAILED,	/* kernel stack unreadable or map full: sample kept, stack lost */
	EMBER_CPU_M_COUNTS_FULL,	/* counts map full: the whole sample was dropped */
	EMBER_CPU_M_NR,
};

#endif /* EMBER_CPU_H */
