/* SPDX-License-Identifier: MIT */
/*
 * ABI between bpf/offcpu.bpf.c and daemon/sample/offcpu.c: the off-CPU sampler's key
 * flags (why a thread waited, and what a count is) and metrics. Its maps are
 * those of bpf/fold.bpf.h (struct ember_sample_key, struct ember_stack).
 */
#ifndef EMBER_OFFCPU_H
#define EMBER_OFFCPU_H

#include "ember/sample.h"

/* Why a thread was off the CPU: bits 8-11 of ember_sample_key.flags. */
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

/*
 * Value of the parked map (stacks of threads away from the CPU, by hash): a
 * whole stack, padded to whole parts so that the BPF side can copy it part by
 * part into the parted stacks maps (include/ember/sample.h) without reading past
 * the value.
 */
struct ember_offcpu_parked {
	struct ember_stack st;
	__u64 pad[EMBER_STACK_PARTS_MAX * EMBER_STACK_PART_WORDS - EMBER_STACK_WORDS];
};

#define EMBER_OFFCPU_KEY_REASON_SHIFT 8
#define EMBER_OFFCPU_KEY_REASON_MASK (0xfu << EMBER_OFFCPU_KEY_REASON_SHIFT)
/* Flag of ember_sample_key: the count is off-CPU intervals (weighed); without it, nanoseconds. */
#define EMBER_OFFCPU_KEY_EVENTS 0x1000

/* The reason in a key's flags. */
#define EMBER_OFFCPU_REASON(flags) \
	(((flags)&EMBER_OFFCPU_KEY_REASON_MASK) >> EMBER_OFFCPU_KEY_REASON_SHIFT)

_Static_assert(EMBER_OFFCPU_REASONS_NR <= 16, "the reason fits its 4 bits");
_Static_assert((EMBER_OFFCPU_KEY_REASON_MASK & (EMBER_KEY_USTACK_LOST | EMBER_KEY_KSTACK_LOST)) ==
		       0,
	       "offcpu flags clear of cpu's");

/* Most switch-outs one sampled switch-out stands for (offcpu_sample_period, or raised). */
#define EMBER_OFFCPU_PERIOD_MAX 65536

/*
 * The off-CPU duty cycle that cpu_budget lowers (daemon/interval/budget.c): new waits
 * are sampled during 1/2^shift of each cycle of this many jiffies (a power of
 * 2), in a window at an offset the daemon draws at random every interval, and
 * weigh 2^shift times more. At most EMBER_OFFCPU_DUTY_SHIFT_MAX (1/16).
 */
#define EMBER_OFFCPU_DUTY_CYCLE 256
#define EMBER_OFFCPU_DUTY_SHIFT_MAX 4

/*
 * The duty cycle in the program's global data (.bss), written by the daemon
 * through the mapped object at any time (no system call) and read once per
 * switch-out: shift 0 samples all the time.
 */
struct ember_offcpu_duty {
	__u32 shift;  /* sampling during 1/2^shift of each cycle; weights times 2^shift */
	__u32 offset; /* the window's start in the cycle, in jiffies (< EMBER_OFFCPU_DUTY_CYCLE) */
};
_Static_assert(sizeof(struct ember_offcpu_duty) == 8, "ember_offcpu_duty is ABI");

/*
 * Key of the wakers maps: one kind of sampled wait, and the thread that ended
 * it. Every stack is a hash in the same buffer's stacks map (copied there when
 * the wait is folded), else in the parked or held maps.
 */
struct ember_offcpu_waker_key {
	__u32 tgid;		   /* the waiting thread's process */
	__u32 waker_tgid;	   /* the waker's process; 0: the idle task or a kernel thread */
	__u64 user_stack;	   /* the wait's user stack, or 0 */
	__u64 kern_stack;	   /* the wait's kernel stack, or 0 */
	__u64 waker_user;	   /* the waker's user stack at sched_waking, or 0 */
	__u64 waker_kern;	   /* the waker's kernel stack from try_to_wake_up, or 0 */
	__u32 flags;		   /* the wait's reason and lost flags, as in ember_sample_key */
	__u32 pad;		   /* explicit padding, always 0 */
	char comm[EMBER_COMM_LEN]; /* the waiting thread's name */
};
_Static_assert(sizeof(struct ember_offcpu_waker_key) == 64, "ember_offcpu_waker_key is ABI");

/* Value of the wakers maps: what the waits a waker ended add up to, weighed. */
struct ember_offcpu_waker_val {
	__u64 ns;     /* time waited (until the wakeup) */
	__u64 events; /* waits */
};
_Static_assert(sizeof(struct ember_offcpu_waker_val) == 16, "ember_offcpu_waker_val is ABI");

/*
 * A sampled wait of a process whose tables are not loaded yet leaves the CPU
 * as a record of the deferred ring (struct ember_deferred_sample: its wait_id,
 * the reason in flags, its weight in n, its kernel stack cut at __schedule);
 * its thread's return sends this record, also through the deferred ring, with
 * the stacks of the thread that woke it, and the daemon folds the two once it
 * has walked the copy (daemon/sample/deferred.c).
 */
struct ember_offcpu_wait_end {
	__u64 wait_id; /* the wait's ember_deferred_sample.wait_id */
	__u64 wait_ns; /* away until the wakeup (all of it: no wakeup seen, or RUNQ) */
	__u64 runq_ns; /* then queued for a CPU; both 0: the wait is dropped (too short) */
	__u32 tgid;
	__u32 waker_tgid; /* the waker's process; 0: the idle task, a kernel thread, none */
	struct ember_stack waker_user; /* the waker's user stack at sched_waking (len 0: none) */
	struct ember_stack waker_kern; /* its kernel stack from try_to_wake_up (len 0: none) */
};
_Static_assert(sizeof(struct ember_offcpu_wait_end) == 32 + 2 * sizeof(struct ember_stack),
	       "ember_offcpu_wait_end is ABI");

/*
 * Index of the offcpu object's per-CPU metrics array: the first
 * EMBER_SAMPLE_M_NR mean what they mean for the cpu object (the stack walk and
 * the folding count them), then the off-CPU sampler's own.
 */
enum ember_offcpu_metric {
	/* switch-outs of user threads, estimated: the sum of the sampled ones' weights */
	EMBER_OFFCPU_M_SWITCHES = EMBER_SAMPLE_M_NR,
	EMBER_OFFCPU_M_SAMPLED,	    /* switch-outs sampled by chance (weight: the period) */
	EMBER_OFFCPU_M_FORCED,	    /* switch-outs sampled with weight 1 (budget, or a while) */
	EMBER_OFFCPU_M_SHORT,	    /* sampled intervals under min_block_ns left out */
	EMBER_OFFCPU_M_NO_STORAGE,  /* no per-thread storage: interval lost */
	EMBER_OFFCPU_M_PARKED_LOST, /* a parked stack evicted before its thread returned */
	EMBER_OFFCPU_M_WAKEUPS,	    /* wakeups of sampled intervals seen (run-queue split) */
	EMBER_OFFCPU_M_WAKERS_FULL, /* wakers map full: that waker was not counted */
	EMBER_OFFCPU_M_HELD,	    /* stacks of threads away at a drain, held for their return */
	EMBER_OFFCPU_M_HELD_FULL,   /* held map full: that stack left to the parked LRU */
	EMBER_OFFCPU_M_RAISED,	    /* of the sampled, those at a period a storm raised */
	EMBER_OFFCPU_M_NR,
};

#endif /* EMBER_OFFCPU_H */
