/* SPDX-License-Identifier: MIT */
/*
 * ABI between bpf/offcpu.bpf.c and daemon/offcpu.c: the off-CPU sampler's key
 * flags (why a thread waited, and what a count is) and metrics. Its maps are
 * those of bpf/fold.bpf.h (struct ember_cpu_key, struct ember_stack).
 */
#ifndef EMBER_OFFCPU_H
#define EMBER_OFFCPU_H

#include "ember/cpu.h"

/* Why a thread was off the CPU: bits 8-11 of ember_cpu_key.flags. */
enum ember_offcpu_reason {
	EMBER_OFFCPU_UNKNOWN = 0, /* stopped, traced, or a state not listed here */
	EMBER_OFFCPU_IO = 1,	  /* uninterruptible (D): disk I/O, page-in, kernel locks */
	EMBER_OFFCPU_LOCK = 2,	  /* interruptible in futex(): a user-space lock or condition */
	EMBER_OFFCPU_SLEEP = 3,	  /* interruptible in nanosleep()/clock_nanosleep() */
	EMBER_OFFCPU_POLL = 4,	  /* interruptible in poll/select/epoll_wait */
	EMBER_OFFCPU_WAIT = 5,	  /* interruptible elsewhere: a pipe, socket or child */
	EMBER_OFFCPU_RUNQ = 6,	  /* runnable, not running: preempted, or woken and queued */
	EMBER_OFFCPU_REASONS_NR,
};

#define EMBER_OFFCPU_KEY_REASON_SHIFT 8
#define EMBER_OFFCPU_KEY_REASON_MASK (0xfu << EMBER_OFFCPU_KEY_REASON_SHIFT)
/* Flag of ember_cpu_key: the count is off-CPU intervals (weighed); without it, nanoseconds. */
#define EMBER_OFFCPU_KEY_EVENTS 0x1000

/* The reason in a key's flags. */
#define EMBER_OFFCPU_REASON(flags) \
	(((flags) & EMBER_OFFCPU_KEY_REASON_MASK) >> EMBER_OFFCPU_KEY_REASON_SHIFT)

_Static_assert(EMBER_OFFCPU_REASONS_NR <= 16, "the reason fits its 4 bits");
_Static_assert((EMBER_OFFCPU_KEY_REASON_MASK & (EMBER_KEY_USTACK_LOST | EMBER_KEY_KSTACK_LOST)) ==
		       0,
	       "offcpu flags clear of cpu's");

/* Most switch-outs one sampled switch-out stands for (offcpu_sample_period). */
#define EMBER_OFFCPU_PERIOD_MAX 65536
/* Most stacks parked between a thread's switch-out and its return (daemon-sized LRU). */
#define EMBER_OFFCPU_PARKED_MAX 65536

/*
 * Index of the offcpu object's per-CPU metrics array: the first
 * EMBER_CPU_M_NR mean what they mean for the cpu object (the stack walk and
 * the folding count them), then the off-CPU sampler's own.
 */
enum ember_offcpu_metric {
	EMBER_OFFCPU_M_SWITCHES = EMBER_CPU_M_NR, /* switch-outs of user threads seen */
	EMBER_OFFCPU_M_SAMPLED,	     /* of which sampled by chance (weight: the period) */
	EMBER_OFFCPU_M_FORCED,	     /* of which sampled with weight 1 (budget, or a while) */
	EMBER_OFFCPU_M_KTHREAD,	     /* switch-outs of kernel threads left out (not a loss) */
	EMBER_OFFCPU_M_SHORT,	     /* sampled intervals under min_block_ns left out */
	EMBER_OFFCPU_M_NO_STORAGE,   /* no per-thread storage: interval lost */
	EMBER_OFFCPU_M_PARKED_LOST,  /* a parked stack evicted before its thread returned */
	EMBER_OFFCPU_M_WAKEUPS,	     /* wakeups of sampled intervals seen (run-queue split) */
	EMBER_OFFCPU_M_NR,
};

#endif /* EMBER_OFFCPU_H */
