/* SPDX-License-Identifier: MIT */
/*
 * Off-CPU time, host-wide: owns bpf/offcpu.bpf.c's skeleton, its sched_switch
 * and sched_waking tracepoints, and the double-buffered maps they fold into.
 */
#ifndef EMBER_OFFCPU_DAEMON_H
#define EMBER_OFFCPU_DAEMON_H

#include <stddef.h>
#include <stdint.h>

#include "deferred.h"
#include "ember/offcpu.h"
#include "fold.h"

/*
 * A thread's first switch-out this long after its last sampled one is always
 * sampled: threads that leave the CPU less often than this (the long waits)
 * are all seen, and no thread costs more than one forced stack walk a second.
 */
#define OFFCPU_FORCED_MS 1000
/*
 * Switch-outs each CPU walks a second with weight 1 before sampling 1 in
 * offcpu_sample_period: most hosts switch less and are profiled exactly; a
 * switch storm costs at most this many walks a CPU (measured: docs/offcpu.md).
 */
#define OFFCPU_CPU_WALKS 200
/*
 * Switch-outs each CPU samples a second 1 in its period, about, at most: a
 * storm faster than OFFCPU_CPU_WALKS + this many times offcpu_sample_period
 * raises the CPU's period (up to EMBER_OFFCPU_PERIOD_MAX), so that its walks
 * stay bounded however fast it switches (measured: docs/offcpu.md).
 */
#define OFFCPU_CPU_SAMPLED 200

/* How to load the off-CPU sampler. */
struct offcpu_opts {
	unsigned int sample_period; /* sample 1 switch-out in this many (> 0) */
	uint64_t min_block_ns;	    /* sampled intervals shorter than this are left out */
	unsigned int parked;	    /* stacks of threads away kept (0: the default) */
	struct fold_shared shared;  /* maps of proctrack, the unwinder and the cpu sampler */
	struct deferred *defer;	    /* the cpu sampler's deferred walks, or NULL: frame pointers */
};

struct offcpu;

/* Loads. On failure a negative errno and a one-line cause in err. */
int offcpu_open(const struct offcpu_opts *o, struct offcpu **out, char *err, size_t errlen);
/* Attaches: sampling begins (with the cpu sampler's, once emberd is set up). As offcpu_open(). */
int offcpu_start(struct offcpu *oc, char *err, size_t errlen);
void offcpu_close(struct offcpu *oc);

/*
 * Drains the folded stacks like sampler_drain(): cb gets nanoseconds off the
 * CPU, or (key flag EMBER_OFFCPU_KEY_EVENTS) intervals, both already weighed;
 * the reason is EMBER_OFFCPU_REASON(key->flags).
 */
int offcpu_drain(struct offcpu *oc, sampler_cb cb, void *arg);
/* Switches the buffers now, as sampler_flip(). */
void offcpu_flip(struct offcpu *oc);
/*
 * Calls keep for each process with a thread away whose stacks the last drain
 * held: its frames are named when it returns, maybe many intervals later.
 */
void offcpu_held_pids(struct offcpu *oc, void (*keep)(void *arg, pid_t pid), void *arg);

/*
 * One (wait, waker) entry: the wait's stacks (st[0] user, st[1] kernel) and
 * its waker's (st[2] user, st[3] kernel), each empty when there is none.
 */
typedef int (*offcpu_waker_cb)(const struct ember_offcpu_waker_key *k,
			       const struct ember_offcpu_waker_val *v,
			       const struct sampler_stack st[4], void *arg);

/*
 * Drains the wakers of the buffer offcpu_drain() just left: call it right
 * after, in the same interval. Their stacks are read from the parked map.
 */
int offcpu_drain_wakers(struct offcpu *oc, offcpu_waker_cb cb, void *arg);

/* Metrics summed over CPUs since load, indexed by enum ember_offcpu_metric. */
int offcpu_metrics(struct offcpu *oc, uint64_t out[EMBER_OFFCPU_M_NR]);

/*
 * The duty cycle cpu_budget sets (daemon/interval/selfcost.c): new waits are sampled
 * during 1/2^shift of the time (0: always; at most EMBER_OFFCPU_DUTY_SHIFT_MAX)
 * in a window at a random offset drawn again at every drain, and weigh 2^shift
 * times more, so that totals stay unbiased. No system call.
 */
void offcpu_set_duty(struct offcpu *oc, unsigned int shift);
/* The duty cycle's shift now. */
unsigned int offcpu_duty(const struct offcpu *oc);
/*
 * The duty cycle of the interval the last flip ended, in words, for its
 * profiles' comment; NULL when whole.
 */
const char *offcpu_comment(const struct offcpu *oc);
/* Its programs' run time since load, ns (bpfload_run_ns()). */
int64_t offcpu_run_ns(const struct offcpu *oc);

/* The pseudo-frame naming a reason, at the leaf of its stacks ("[off-CPU: I/O]"). */
const char *offcpu_reason_frame(unsigned int reason);

#endif
