// SPDX-License-Identifier: MIT
/* The table of profile types: what each one's samples mean, and whose maps hold them. */
#include "clock.h"
#include "profile_type.h"

static int64_t cpu_period(unsigned int hz)
{
	return NS_PER_SEC / hz;
}

static int cpu_drain(void *src, sampler_cb cb, void *arg)
{
	return sampler_drain(src, cb, arg);
}

const struct profile_type profile_types[PROFILE_TYPES_NR] = {
	/* on-CPU stacks sampled at hz per CPU (bpf/cpu.bpf.c), as delta profiles */
	[PROFILE_CPU] =
		{
			.name = "cpu",
			.count = {"samples", "count"},
			.weight = {"cpu", "nanoseconds"},
			.period_type = {"cpu", "nanoseconds"},
			.period = cpu_period,
			.drain = cpu_drain,
		},
};
