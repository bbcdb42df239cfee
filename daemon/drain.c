// SPDX-License-Identifier: MIT
/*
 * The drain: for every folded stack of the interval, name its frames with the
 * symbolizer and add it to a pprof builder with its pid and comm.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "drain.h"

#define KERNEL_FILE "[kernel.kallsyms]"

struct drain_ctx {
	struct pprof_builder *b;
	struct symbolizer *sym;
	int64_t period;
	struct drain_stats *st;
	uint32_t *pids;		/* every tgid seen, to count processes */
	size_t npids, cap;
};

static uint64_t frame_location(struct drain_ctx *c, uint32_t pid, uint64_t addr, bool kernel)
{
	struct sym_frame f;
	uint64_t mapping = 0, func = 0;

	symbolizer_frame(c->sym, pid, addr, kernel, &f);
	if (f.file) {
		struct pprof_mapping_desc m = {
			.start = f.map_start, .limit = f.map_limit, .offset = f.map_offset,
			.file = f.file, .build_id = f.build_id, .has_functions = true,
		};
		mapping = pprof_mapping(c->b, &m);
	}
	if (f.function)
		func = pprof_function(c->b, f.function, f.system_name, "");
	return pprof_location(c->b, mapping, f.address, &func, func ? 1 : 0);
}

/* A pseudo-frame standing for a stack the kernel could not give us. */
static uint64_t named_location(struct drain_ctx *c, const char *name)
{
	uint64_t func = pprof_function(c->b, name, name, "");

	return func ? pprof_location(c->b, 0, 0, &func, 1) : 0;
}

/*
 * Appends a stack's locations. Every address but the sample's very first is a
 * return address: step back into the call instruction before naming it.
 */
static size_t add_stack(struct drain_ctx *c, uint32_t pid, const struct sampler_stack *st,
			bool kernel, uint64_t *locs, size_t n, bool *lost)
{
	if (st->lost) {
		*lost = true;
		locs[n++] = named_location(c, kernel ? "[lost kernel stack]" : "[lost user stack]");
		return n;
	}
	for (size_t i = 0; i < st->n; i++) {
		uint64_t addr = st->ips[i] - (n > 0 ? 1 : 0);

		locs[n++] = frame_location(c, pid, addr, kernel);
	}
	return n;
}

static int remember_pid(struct drain_ctx *c, uint32_t pid)
{
	if (c->npids == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 256;
		uint32_t *p = realloc(c->pids, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		c->pids = p;
		c->cap = cap;
	}
	c->pids[c->npids++] = pid;
	return 0;
}

static int on_stack(const struct ember_cpu_key *key, uint64_t count,
		    const struct sampler_stack *user, const struct sampler_stack *kern, void *arg)
{
	struct drain_ctx *c = arg;
	uint64_t locs[2 * EMBER_MAX_STACK_DEPTH + 2];
	char comm[EMBER_COMM_LEN + 1];
	bool lost = false;
	size_t n = 0;

	memcpy(comm, key->comm, EMBER_COMM_LEN);
	comm[EMBER_COMM_LEN] = '\0';
	n = add_stack(c, key->tgid, kern, true, locs, n, &lost);
	n = add_stack(c, key->tgid, user, false, locs, n, &lost);
	if (n == 0)
		locs[n++] = named_location(c, "[no stack]");
	for (size_t i = 0; i < n; i++)
		if (!locs[i])
			return -ENOMEM;

	struct pprof_label labels[] = {
		{ .key = "pid", .num = key->tgid },
		{ .key = "comm", .str = comm },
	};
	int64_t values[] = { (int64_t)count, (int64_t)count * c->period };

	c->st->samples += count;
	c->st->stacks++;
	if (lost)
		c->st->lost_stacks += count;
	if (remember_pid(c, key->tgid))
		return -ENOMEM;
	return pprof_add_sample(c->b, locs, n, values, labels, 2);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static uint32_t count_distinct(uint32_t *v, size_t n)
{
	uint32_t d = 0;

	qsort(v, n, sizeof(*v), cmp_u32);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || v[i] != v[i - 1])
			d++;
	return d;
}

int drain_cpu_profile(struct sampler *s, struct symbolizer *sym, unsigned int hz,
		      int64_t start_ns, int64_t end_ns, struct pprof_builder **out,
		      struct drain_stats *st)
{
	struct pprof_meta meta = {
		.sample_types = { { "samples", "count" }, { "cpu", "nanoseconds" } },
		.n_sample_types = 2,
		.period_type = { "cpu", "nanoseconds" },
		.period = 1000000000LL / hz,
		.time_nanos = start_ns,
		.duration_nanos = end_ns - start_ns,
	};
	struct drain_ctx c = { .sym = sym, .period = meta.period, .st = st };
	int rc;

	memset(st, 0, sizeof(*st));
	c.b = pprof_builder_new(&meta);
	if (!c.b)
		return -errno;
	rc = sampler_drain(s, on_stack, &c);
	st->processes = count_distinct(c.pids, c.npids);
	free(c.pids);
	symbolizer_end_interval(sym);
	if (rc) {
		pprof_builder_free(c.b);
		return rc;
	}
	*out = c.b;
	return 0;
}
