/* SPDX-License-Identifier: MIT */
/*
 * cpu_budget's decision, pure: from what emberd cost in an interval (its
 * threads' CPU and its BPF programs' run time) and the budget, the settings it
 * runs with next. Lowered one step an interval while over; restored one step
 * after BUDGET_CALM intervals in a row under half of it (hysteresis).
 */
#ifndef EMBER_BUDGET_H
#define EMBER_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Intervals in a row under half the budget before a step is restored: a step
 * at most doubles what it scales, so the cost after it stays under budget.
 */
#define BUDGET_CALM 3
/*
 * The off-CPU programs' run time at least 1/BUDGET_OFFCPU_SHARE of the cost
 * for its duty cycle to be lowered: lowering what costs little frees nothing
 * (their share is a floor: emberd's threads also fold, name and store off-CPU
 * stacks, counted as the threads').
 */
#define BUDGET_OFFCPU_SHARE 8

/* What the budget holds emberd to. */
struct budget_config {
	int64_t budget_ns_per_s; /* CPU a second of wall-clock time (10 ms: 1%); 0: no budget */
	bool offcpu;		 /* off-CPU time runs: its duty cycle can be lowered */
	unsigned int offcpu_shift_max; /* the lowest duty cycle, 1/2^max */
};

/* One interval's cost, as measured (daemon/interval/selfcost.c). */
struct budget_cost {
	int64_t wall_ns;       /* the interval's length */
	int64_t self_ns;       /* emberd's threads' CPU in it */
	int64_t bpf_ns;	       /* its BPF programs' run time in it (all of them) */
	int64_t offcpu_bpf_ns; /* of it, the off-CPU programs' */
	bool bpf_known;	       /* the kernel counted run time (else bpf_ns is 0) */
};

/* The settings the budget lowered, in the order it lowers them, and its memory. */
struct budget_state {
	unsigned int offcpu_shift; /* off-CPU samples new waits 1/2^shift of the time */
	unsigned int calm;	   /* intervals in a row under half the budget */
};

/* What a decision did. */
enum budget_change {
	BUDGET_KEPT,	 /* within budget, or not calm long enough to restore */
	BUDGET_LOWERED,	 /* over: one step lowered */
	BUDGET_RESTORED, /* well under for BUDGET_CALM intervals: one step restored */
	BUDGET_AT_FLOOR, /* over, and nothing left that it may lower */
};

/* The cost's share of one CPU, in parts per million (0 for an empty interval). */
uint64_t budget_cost_ppm(const struct budget_cost *m);
/* The budget's, likewise. */
uint64_t budget_ppm(const struct budget_config *c);
/* Decides the next settings into s from the interval's cost m. */
enum budget_change budget_decide(const struct budget_config *c, const struct budget_cost *m,
				 struct budget_state *s);

#endif
