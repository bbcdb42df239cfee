// SPDX-License-Identifier: MIT
/* The table of profile types: what each one's samples mean, and whose maps hold them. */
#include "clock.h"
#include "malloccap.h"
#include "profile_type.h"

static int64_t cpu_period(unsigned int hz)
{
	return NS_PER_SEC / hz;
}

/* A malloc capture records every call: one weighs one. */
static int64_t every_call(unsigned int hz)
{
	(void)hz;
	return 1;
}

/* The on-CPU sampler's counts as the type's two values: samples and samples x period. */
struct cpu_drain_ctx {
	int64_t period;
	profile_sample_cb cb;
	void *arg;
};

static int cpu_stack(const struct ember_cpu_key *key, uint64_t count,
		     const struct sampler_stack *user, const struct sampler_stack *kern, void *arg)
{
	struct cpu_drain_ctx *c = arg;
	int64_t values[] = {(int64_t)count, (int64_t)count * c->period};

	return c->cb(&(struct profile_sample){key, values, count, user, kern}, c->arg);
}

static int cpu_drain(void *src, int64_t period, profile_sample_cb cb, void *arg)
{
	struct cpu_drain_ctx c = {period, cb, arg};

	return sampler_drain(src, cpu_stack, &c);
}

const struct profile_type profile_types[PROFILE_TYPES_NR] = {
	/* on-CPU stacks sampled at hz per CPU (bpf/cpu.bpf.c), as delta profiles */
	[PROFILE_CPU] =
		{
			.name = "cpu",
			.values = {{"samples", "count"}, {"cpu", "nanoseconds"}},
			.n_values = 2,
			.period_type = {"cpu", "nanoseconds"},
			.period = cpu_period,
			.drain = cpu_drain,
		},
	/* every malloc/calloc/realloc of one process, by uprobes (bpf/malloc.bpf.c): the
	 * emergency capture only, never an interval's */
	[PROFILE_MALLOC] =
		{
			.name = "malloc",
			.values = {{"alloc_objects", "count"}, {"alloc_space", "bytes"}},
			.n_values = 2,
			.period_type = {"space", "bytes"},
			.period = every_call,
			.drain = malloccap_drain,
		},
};
