/* SPDX-License-Identifier: MIT */
/* The owners' table (owners.h): each owner's options from the configuration, once. */
#include <inttypes.h>

#include "allocs.h"
#include "counters.h"
#include "growth.h"
#include "log.h"
#include "offcpu.h"
#include "owners.h"
#include "sampler.h"

_Static_assert(EMBER_SAMPLE_M_NR <= OWNER_METRICS_MAX, "sampler metrics");
_Static_assert(EMBER_GROWTH_M_NR <= OWNER_METRICS_MAX, "growth metrics");
_Static_assert(EMBER_OFFCPU_M_NR <= OWNER_METRICS_MAX, "offcpu metrics");

/* The CPU sampler's maps that growth and off-CPU time share (process events, drops, unwinding). */
static struct fold_shared shared(const struct owner_env *env)
{
	return (struct fold_shared){.events_fd = env->events_fd,
				    .known_fd = env->known_fd,
				    .drop_fd = env->drop_fd,
				    .unwind = env->unwind};
}

/* --- the CPU sampler --------------------------------------------------------------------- */

static int sampler_owner_open(struct owner_env *env, void **out, char *err, size_t errlen)
{
	struct sampler_opts so = {.hz = env->cfg->hz,
				  .interval_ns = env->cfg->interval_ns,
				  .include_idle = env->cfg->include_idle,
				  .events_fd = env->events_fd,
				  .known_fd = env->known_fd,
				  .unwind = env->unwind,
				  .unw = env->unw};
	struct sampler *s;
	int rc = sampler_open(&so, &s, err, errlen);

	if (rc)
		return rc;
	env->drop_fd = sampler_drop_fd(s);
	env->defer = sampler_deferred(s);
	*out = s;
	return 0;
}

static int sampler_owner_start(void *o, char *err, size_t errlen)
{
	return sampler_start(o, err, errlen);
}

static void sampler_owner_close(void *o)
{
	sampler_close(o);
}

static int sampler_owner_metrics(void *o, uint64_t *out)
{
	return sampler_metrics(o, out);
}

static int64_t sampler_owner_run_ns(const void *o)
{
	return sampler_run_ns(o);
}

/* --- memory growth ------------------------------------------------------------------------ */

static bool growth_wanted(const struct ember_config *c)
{
	return c->growth_fault_period != 0;
}

static int growth_owner_open(struct owner_env *env, void **out, char *err, size_t errlen)
{
	struct growth_opts go = {.fault_period = env->cfg->growth_fault_period,
				 .min_age_ns = env->cfg->growth_min_age_ns,
				 .shared = shared(env),
				 .defer = env->defer};

	return growth_open(&go, (struct growth **)out, err, errlen);
}

static int growth_owner_start(void *o, char *err, size_t errlen)
{
	return growth_start(o, err, errlen);
}

static void growth_owner_close(void *o)
{
	growth_close(o);
}

static int growth_owner_metrics(void *o, uint64_t *out)
{
	return growth_metrics(o, out);
}

static int64_t growth_owner_run_ns(const void *o)
{
	return growth_run_ns(o);
}

/* --- off-CPU time ------------------------------------------------------------------------- */

static bool offcpu_wanted(const struct ember_config *c)
{
	return c->offcpu;
}

static int offcpu_owner_open(struct owner_env *env, void **out, char *err, size_t errlen)
{
	struct offcpu_opts oo = {.sample_period = env->cfg->offcpu_sample_period,
				 .min_block_ns = env->cfg->offcpu_min_block_ns,
				 .parked = env->cfg->offcpu_parked,
				 .shared = shared(env),
				 .defer = env->defer};
	int rc = offcpu_open(&oo, (struct offcpu **)out, err, errlen);

	if (!rc)
		log_info("off-CPU time: 1 switch-out in %u sampled past each CPU's first %d a "
			 "second (a storm raises it: about %d sampled a second a CPU), waits under "
			 "%" PRId64 " us left out, %u stacks of threads away kept",
			 oo.sample_period, OFFCPU_CPU_WALKS, OFFCPU_CPU_SAMPLED,
			 oo.min_block_ns / 1000, oo.parked);
	return rc;
}

static int offcpu_owner_start(void *o, char *err, size_t errlen)
{
	return offcpu_start(o, err, errlen);
}

static void offcpu_owner_close(void *o)
{
	offcpu_close(o);
}

static int offcpu_owner_metrics(void *o, uint64_t *out)
{
	return offcpu_metrics(o, out);
}

static int64_t offcpu_owner_run_ns(const void *o)
{
	return offcpu_run_ns(o);
}

/* --- sampled allocations ------------------------------------------------------------------- */

/* Whether any [app] asks for sampled allocations (restart to turn on). */
static bool allocs_wanted(const struct ember_config *c)
{
	for (size_t i = 0; i < c->n_apps; i++)
		if (c->apps[i].memory != APP_MEMORY_OFF)
			return true;
	return false;
}

static int allocs_owner_open(struct owner_env *env, void **out, char *err, size_t errlen)
{
	struct allocs_opts ao = {.unwind = env->unwind,
				 .live_max = env->cfg->live_allocs,
				 .live_proc_max = env->cfg->live_allocs_per_process};

	return allocs_open(&ao, (struct allocs **)out, err, errlen);
}

static void allocs_owner_close(void *o)
{
	allocs_close(o);
}

static int64_t allocs_owner_run_ns(const void *o)
{
	return allocs_run_ns(o);
}

/* --- the table ----------------------------------------------------------------------------- */

const struct owner owners[PROFILE_SRC_NR] = {
	[PROFILE_SRC_SAMPLER] =
		{
			.fatal = true,
			.without = "without its CPU sampler emberd stops",
			.open = sampler_owner_open,
			.start = sampler_owner_start,
			.close = sampler_owner_close,
			.metrics = sampler_owner_metrics,
			.n_metrics = EMBER_SAMPLE_M_NR,
			.counters = 1u << COUNTER_SRC_CPU | 1u << COUNTER_SRC_SAMPLING,
			.run_ns = sampler_owner_run_ns,
		},
	[PROFILE_SRC_GROWTH] =
		{
			.without = "no memory_growth profiles",
			.wanted = growth_wanted,
			.open = growth_owner_open,
			.start = growth_owner_start,
			.close = growth_owner_close,
			.metrics = growth_owner_metrics,
			.n_metrics = EMBER_GROWTH_M_NR,
			.counters = 1u << COUNTER_SRC_SAMPLING,
			.run_ns = growth_owner_run_ns,
		},
	[PROFILE_SRC_OFFCPU] =
		{
			.without = "no offcpu profiles",
			.wanted = offcpu_wanted,
			.open = offcpu_owner_open,
			.start = offcpu_owner_start,
			.close = offcpu_owner_close,
			.metrics = offcpu_owner_metrics,
			.n_metrics = EMBER_OFFCPU_M_NR,
			.counters = 1u << COUNTER_SRC_OFFCPU,
			.run_ns = offcpu_owner_run_ns,
		},
	[PROFILE_SRC_ALLOCS] =
		{
			.fatal = true,
			.without =
				"an [app] asks for sampled allocations: emberd stops without them",
			.wanted = allocs_wanted,
			.open = allocs_owner_open,
			.close = allocs_owner_close,
			.run_ns = allocs_owner_run_ns,
		},
};
