// SPDX-License-Identifier: MIT
/* The table of profile types: what each one's samples mean, and whose maps hold them. */
#include <string.h>
#include <unistd.h>

#include "allocs.h"
#include "clock.h"
#include "growth.h"
#include "malloccap.h"
#include "offcpu.h"
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

static int cpu_stack(const struct ember_sample_key *key, uint64_t count,
		     const struct sampler_stack *user, const struct sampler_stack *kern, void *arg)
{
	struct cpu_drain_ctx *c = arg;
	int64_t values[] = {(int64_t)count, (int64_t)count * c->period};

	return c->cb(
		&(struct profile_sample){
			.key = key, .values = values, .events = count, .user = user, .kern = kern},
		c->arg);
}

static int cpu_drain(void *src, int64_t period, profile_sample_cb cb, void *arg)
{
	struct cpu_drain_ctx c = {period, cb, arg};

	return sampler_drain(src, cpu_stack, &c);
}

static int64_t memory_period(unsigned int hz)
{
	(void)hz;
	return PROFILE_MEMORY_PERIOD;
}

/* Sampled allocations (daemon/sample/allocs.c): their values as they come, no kernel stack. */
struct memory_drain_ctx {
	profile_sample_cb cb;
	void *arg;
};

static int memory_stack(const struct ember_sample_key *key, const int64_t values[4],
			uint64_t events, const struct sampler_stack *user, void *arg)
{
	static const struct sampler_stack none;
	struct memory_drain_ctx *c = arg;

	return c->cb(&(struct profile_sample){.key = key,
					      .values = values,
					      .events = events,
					      .user = user,
					      .kern = &none},
		     c->arg);
}

static int memory_drain(void *src, int64_t period, profile_sample_cb cb, void *arg)
{
	struct memory_drain_ctx c = {cb, arg};

	(void)period;
	return allocs_drain(src, memory_stack, &c);
}

/* One page: resident bytes grow by pages, each sampled fault weighing fault_period of them. */
static int64_t growth_period(unsigned int hz)
{
	(void)hz;
	return sysconf(_SC_PAGESIZE);
}

/*
 * The growth sampler's counts as the type's three values: a sampled fault
 * count is faults and faults x fault_period pages; a mapped count is bytes.
 */
struct growth_drain_ctx {
	int64_t fault_bytes;
	profile_sample_cb cb;
	void *arg;
};

static int growth_stack(const struct ember_sample_key *key, uint64_t count,
			const struct sampler_stack *user, const struct sampler_stack *kern,
			void *arg)
{
	struct growth_drain_ctx *c = arg;
	int64_t values[3] = {(int64_t)count, (int64_t)count * c->fault_bytes, 0};
	uint64_t events = count;

	bool startup = key->flags & EMBER_GROWTH_KEY_STARTUP;

	if (key->flags & EMBER_GROWTH_KEY_MAPPED) {
		values[0] = values[1] = 0;
		values[2] = (int64_t)count;
		/* the samples it stands for: one per fault_bytes, at least one */
		events = (count + c->fault_bytes - 1) / c->fault_bytes;
	}
	return c->cb(&(struct profile_sample){.key = key,
					      .values = values,
					      .events = events,
					      .user = user,
					      .kern = kern,
					      .leaf = startup ? GROWTH_STARTUP_FRAME : NULL,
					      .startup_bytes = startup ? values[1] : 0},
		     c->arg);
}

static int growth_drain_type(void *src, int64_t period, profile_sample_cb cb, void *arg)
{
	struct growth_drain_ctx c = {growth_fault_bytes(src), cb, arg};

	(void)period;
	return growth_drain(src, growth_stack, &c);
}

/* Off-CPU time is folded in nanoseconds, already weighed: one weighs one. */
static int64_t offcpu_period(unsigned int hz)
{
	(void)hz;
	return 1;
}

/*
 * The off-CPU sampler's counts as the type's two values: a count is
 * nanoseconds or (EMBER_OFFCPU_KEY_EVENTS) intervals; the builder adds the
 * two keys of a stack and reason into one sample. The reason is the leaf.
 */
struct offcpu_drain_ctx {
	profile_sample_cb cb;
	void *arg;
};

static int offcpu_stack(const struct ember_sample_key *key, uint64_t count,
			const struct sampler_stack *user, const struct sampler_stack *kern,
			void *arg)
{
	struct offcpu_drain_ctx *c = arg;
	unsigned int reason = EMBER_OFFCPU_REASON(key->flags);
	bool events = key->flags & EMBER_OFFCPU_KEY_EVENTS;
	int64_t values[2] = {events ? 0 : (int64_t)count, events ? (int64_t)count : 0};
	struct profile_sample s = {.key = key,
				   .values = values,
				   .events = events ? count : 0,
				   .user = user,
				   .kern = kern,
				   .leaf = offcpu_reason_frame(reason)};

	if (reason == EMBER_OFFCPU_RUNQ && events)
		s.runq_waits = count;
	else if (reason == EMBER_OFFCPU_RUNQ)
		s.runq_ns = (int64_t)count;
	return c->cb(&s, c->arg);
}

static int offcpu_drain_type(void *src, int64_t period, profile_sample_cb cb, void *arg)
{
	struct offcpu_drain_ctx c = {cb, arg};

	(void)period;
	return offcpu_drain(src, offcpu_stack, &c);
}

/*
 * The wakers of sampled waits: each sample is the wait's stacks, its reason,
 * "[woken by]" and the waker's stacks (in the waker's process).
 */
static int waker_stack(const struct ember_offcpu_waker_key *k,
		       const struct ember_offcpu_waker_val *v, const struct sampler_stack st[4],
		       void *arg)
{
	struct offcpu_drain_ctx *c = arg;
	struct ember_sample_key key = {.tgid = k->tgid, .flags = k->flags};
	int64_t values[2] = {(int64_t)v->ns, (int64_t)v->events};
	struct profile_sample s = {.key = &key,
				   .values = values,
				   .events = v->events,
				   .user = &st[0],
				   .kern = &st[1],
				   .leaf = offcpu_reason_frame(EMBER_OFFCPU_REASON(k->flags)),
				   .waker_user = &st[2],
				   .waker_kern = &st[3],
				   .waker_pid = k->waker_tgid};

	memcpy(key.comm, k->comm, sizeof(key.comm));
	return c->cb(&s, c->arg);
}

static int wakers_drain_type(void *src, int64_t period, profile_sample_cb cb, void *arg)
{
	struct offcpu_drain_ctx c = {cb, arg};

	(void)period;
	return offcpu_drain_wakers(src, waker_stack, &c);
}

/* The flips of the types whose sources double-buffer (profile_flip_fn). */
static void flip_cpu(void *src)
{
	sampler_flip(src);
}

static void flip_memory(void *src)
{
	allocs_flip(src);
}

static void flip_growth(void *src)
{
	growth_flip(src);
}

static void flip_offcpu(void *src)
{
	offcpu_flip(src);
}

static const char *comment_offcpu(void *src)
{
	return offcpu_comment(src);
}

static void keep_offcpu(void *src, void (*keep)(void *arg, pid_t pid), void *arg)
{
	offcpu_held_pids(src, keep, arg);
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
			.flip = flip_cpu,
			.source = PROFILE_SRC_SAMPLER,
			.report = PROFILE_REPORT_CLOCK,
		},
	/*
	 * sampled allocations (bpf/alloc.bpf.c) in Go's convention: the interval's
	 * allocations, and the live ones at its end
	 */
	[PROFILE_MEMORY] =
		{
			.name = "memory",
			.values = {{"alloc_objects", "count"},
				   {"alloc_space", "bytes"},
				   {"inuse_objects", "count"},
				   {"inuse_space", "bytes"}},
			.n_values = 4,
			.period_type = {"space", "bytes"},
			.default_sample = "inuse_space",
			.period = memory_period,
			.drain = memory_drain,
			.flip = flip_memory,
			.source = PROFILE_SRC_ALLOCS,
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
	/* sampled page faults on anonymous memory and mmap/brk growth (bpf/growth.bpf.c) */
	[PROFILE_MEMORY_GROWTH] =
		{
			.name = "memory_growth",
			.values = {{"faults", "count"}, {"resident", "bytes"}, {"mapped", "bytes"}},
			.n_values = 3,
			.period_type = {"space", "bytes"},
			.period = growth_period,
			.drain = growth_drain_type,
			.flip = flip_growth,
			.source = PROFILE_SRC_GROWTH,
			.report = PROFILE_REPORT_STARTUP,
		},
	/*
	 * time off the CPU by stack, sampled at sched_switch (bpf/offcpu.bpf.c), the
	 * reason as the leaf frame
	 */
	[PROFILE_OFFCPU] =
		{
			.name = "offcpu",
			.values = {{"offcpu", "nanoseconds"}, {"events", "count"}},
			.n_values = 2,
			.period_type = {"offcpu", "nanoseconds"},
			.default_sample = "offcpu",
			.period = offcpu_period,
			.drain = offcpu_drain_type,
			.flip = flip_offcpu,
			.keep = keep_offcpu,
			.comment = comment_offcpu,
			.source = PROFILE_SRC_OFFCPU,
			.report = PROFILE_REPORT_RUNQ,
		},
	/* who ended the sampled waits of offcpu: the wait, "[woken by]", the waker's stack */
	[PROFILE_OFFCPU_WAKERS] =
		{
			.name = "offcpu_wakers",
			.values = {{"offcpu", "nanoseconds"}, {"events", "count"}},
			.n_values = 2,
			.period_type = {"offcpu", "nanoseconds"},
			.default_sample = "offcpu",
			.period = offcpu_period,
			.drain = wakers_drain_type,
			.comment = comment_offcpu,
			.source = PROFILE_SRC_OFFCPU,
		},
};
