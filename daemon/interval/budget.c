// SPDX-License-Identifier: MIT
/*
 * cpu_budget's decision (budget.h): pure, so that the unit suite checks
 * the order, the steps and the hysteresis against made-up costs.
 */
#include "budget.h"

#define PPM 1000000ULL
#define NS_PER_S 1000000000LL

uint64_t budget_cost_ppm(const struct budget_cost *m)
{
	int64_t cost = m->self_ns + m->bpf_ns;

	if (m->wall_ns <= 0 || cost <= 0)
		return 0;
	/* in long double: ns x 1e6 overflows 64 bits past 5 hours */
	return (uint64_t)((long double)cost * PPM / m->wall_ns);
}

uint64_t budget_ppm(const struct budget_config *c)
{
	return c->budget_ns_per_s > 0 ? (uint64_t)c->budget_ns_per_s * PPM / NS_PER_S : 0;
}

/* Whether lowering off-CPU's duty cycle frees something worth it. */
static bool offcpu_lowerable(const struct budget_config *c, const struct budget_cost *m,
			     const struct budget_state *s)
{
	if (!c->offcpu || s->offcpu_shift >= c->offcpu_shift_max)
		return false;
	/* without run-time stats the programs' share is unknown: lower it anyway */
	if (!m->bpf_known)
		return true;
	return m->offcpu_bpf_ns * BUDGET_OFFCPU_SHARE >= m->self_ns + m->bpf_ns;
}

enum budget_change budget_decide(const struct budget_config *c, const struct budget_cost *m,
				 struct budget_state *s)
{
	uint64_t cost = budget_cost_ppm(m), budget = budget_ppm(c);

	if (!budget || !c->offcpu) {
		/* no budget (or a reload took it away), or nothing to lower: everything whole */
		bool was = s->offcpu_shift != 0;

		s->offcpu_shift = 0;
		s->calm = 0;
		if (was)
			return BUDGET_RESTORED;
		return budget && cost > budget ? BUDGET_AT_FLOOR : BUDGET_KEPT;
	}
	if (s->offcpu_shift > c->offcpu_shift_max)
		s->offcpu_shift = c->offcpu_shift_max;
	if (m->wall_ns <= 0)
		return BUDGET_KEPT;
	if (cost > budget) {
		s->calm = 0;
		if (!offcpu_lowerable(c, m, s))
			return BUDGET_AT_FLOOR;
		s->offcpu_shift++;
		return BUDGET_LOWERED;
	}
	if (cost * 2 >= budget || !s->offcpu_shift) {
		s->calm = 0;
		return BUDGET_KEPT;
	}
	if (++s->calm < BUDGET_CALM)
		return BUDGET_KEPT;
	s->calm = 0;
	s->offcpu_shift--;
	return BUDGET_RESTORED;
}
