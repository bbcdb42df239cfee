// SPDX-License-Identifier: MIT
/*
 * The drain: for every folded stack of one profile type's maps, find its
 * process's application, name its frames with the symbolizer and add it to
 * that application's pprof builder with its pid and comm.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drain.h"
#include "runtime.h"
#include "utf8.h"

#define KERNEL_FILE "[kernel.kallsyms]"

struct drain_ctx {
	struct pprof_builder *b; /* the current stack's application's builder */
	struct drain_profile *p; /* and its profile */
	struct symbolizer *sym;
	struct pprof_meta meta;
	drain_classify_fn classify;
	void *arg;
	struct drain_result *out;
	struct drain_profile *last; /* consecutive stacks often share an application */
};

/*
 * The location of a runtime frame whose code inlined others where it runs:
 * one line per function, innermost first (pprof's order), the frame's own
 * (func, at line: the call's) last.
 */
static uint64_t inlined_location(struct drain_ctx *c, const struct sym_frame *f, uint64_t func,
				 int64_t line)
{
	uint64_t funcs[RT_INLINED_MAX + 1];
	int64_t lines[RT_INLINED_MAX + 1];
	size_t n = 0;

	for (uint32_t i = 0; i < f->n_inlined && i < RT_INLINED_MAX; i++) {
		const struct rt_fn *in = &f->inlined[i];
		const char *file = in->file[0] ? in->file : NULL;

		funcs[n] = pprof_function_at(c->b, in->function, NULL, file,
					     in->start_line ? in->start_line : in->line);
		lines[n] = in->line;
		if (funcs[n])
			n++;
	}
	funcs[n] = func;
	lines[n++] = line;
	return pprof_location_lines(c->b, 0, f->address, funcs, lines, n);
}

static uint64_t frame_location(struct drain_ctx *c, uint32_t pid, uint64_t addr, bool kernel)
{
	struct sym_frame f;
	uint64_t mapping = 0, func = 0;
	int64_t line;

	symbolizer_frame(c->sym, pid, addr, kernel, &f);
	if (f.file && !kernel && f.address >= f.map_start && f.address < f.map_limit) {
		/*
		 * A user mapping is rebased to its file offset (start = offset): every pprof
		 * reader still finds the file offset as address - start + offset, and the
		 * address itself is then file-relative, which is what Pyroscope's symbolizer
		 * looks up in the ELF file (an ELF address for PIEs and libraries, whose text
		 * has vaddr == offset); the same library in several processes (ASLR) becomes
		 * one mapping with one set of locations.
		 */
		f.address = f.address - f.map_start + f.map_offset;
		f.map_limit = f.map_limit - f.map_start + f.map_offset;
		f.map_start = f.map_offset;
	}
	if (f.file) {
		/*
		 * Unnamed frames keep their address with the mapping's start, offset and
		 * build-id: their file offset (address - start + offset) is what a later
		 * symbolizer looks up. has_functions says the symbolizer named this mapping;
		 * the builder sends it only if every location of the mapping got a name, as
		 * Pyroscope drops the addresses (and so the unnamed frames) of such mappings.
		 */
		struct pprof_mapping_desc m = {
			.start = f.map_start,
			.limit = f.map_limit,
			.offset = f.map_offset,
			.file = f.file,
			.build_id = f.build_id,
			.has_functions = true,
		};
		mapping = pprof_mapping(c->b, &m);
	}
	/* JIT frames know their source file and the line their function starts at. */
	line = f.line;
	if (f.function)
		func = pprof_function_at(c->b, f.function, f.system_name, f.source_file,
					 f.start_line ? f.start_line : line);
	if (func && f.n_inlined)
		return inlined_location(c, &f, func, line);
	if (!f.function && !f.file) {
		/*
		 * No mapping to look the address up in later: name the frame by its
		 * address now, or Pyroscope (whose flame graph only shows Lines, and whose
		 * symbolizer refuses locations without a mapping) shows nothing for it.
		 */
		char name[24];

		snprintf(name, sizeof(name), "0x%" PRIx64, f.address);
		func = pprof_function(c->b, name, name, "");
		line = 0;
	}
	return pprof_location_lines(c->b, mapping, f.address, &func, &line, func ? 1 : 0);
}

static size_t frame_slot(const struct drain_profile *p, uint32_t pid, uint64_t addr, bool kernel)
{
	uint64_t h = (addr ^ ((uint64_t)pid << 32 | kernel)) * 0x9e3779b97f4a7c15ULL;
	size_t i = (h >> 17) & (p->frames_cap - 1);

	while (p->frames[i].addr && (p->frames[i].addr != addr || p->frames[i].pid != pid ||
				     p->frames[i].kernel != kernel))
		i = (i + 1) & (p->frames_cap - 1);
	return i;
}

/* Doubles the frame cache (kept at most half full); false on ENOMEM. */
static bool frames_grow(struct drain_profile *p)
{
	struct drain_frame *old = p->frames;
	size_t old_cap = p->frames_cap;

	p->frames_cap = old_cap ? 2 * old_cap : 1024;
	p->frames = calloc(p->frames_cap, sizeof(*p->frames));
	if (!p->frames) {
		p->frames = old;
		p->frames_cap = old_cap;
		return false;
	}
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].addr)
			p->frames[frame_slot(p, old[i].pid, old[i].addr, old[i].kernel)] = old[i];
	free(old);
	return true;
}

/*
 * The location of a frame: named once per profile and interval, then found
 * again in the cache (most frames recur across the interval's stacks).
 */
static uint64_t cached_location(struct drain_ctx *c, uint32_t pid, uint64_t addr, bool kernel)
{
	struct drain_profile *p = c->p;
	uint64_t loc;
	size_t i;

	if (kernel)
		pid = 0;
	if (!addr) /* 0 marks free slots: never cached */
		return frame_location(c, pid, addr, kernel);
	if (2 * (p->nframes + 1) > p->frames_cap && !frames_grow(p))
		return frame_location(c, pid, addr, kernel);
	i = frame_slot(p, pid, addr, kernel);
	if (p->frames[i].addr)
		return p->frames[i].location;
	loc = frame_location(c, pid, addr, kernel);
	if (loc) {
		p->frames[i] = (struct drain_frame){addr, pid, kernel, loc};
		p->nframes++;
	}
	return loc;
}

/* A pseudo-frame standing for a stack the kernel could not give us. */
static uint64_t named_location(struct drain_ctx *c, const char *name)
{
	uint64_t func = pprof_function(c->b, name, name, "");

	return func ? pprof_location(c->b, 0, 0, &func, 1) : 0;
}

/*
 * Whether the user frame below the kernel stack kern is exact: the kernel was
 * entered by an exception (a page fault) or an interrupt, whose saved address
 * is the instruction that faulted or is to run next, not by a system call,
 * whose is the one after the syscall (a return address). Known by the
 * outermost kernel frame's name (x86-64's entry points); unknown: a return
 * address, as everywhere else.
 */
static bool user_leaf_exact(struct drain_ctx *c, const struct sampler_stack *kern)
{
	struct sym_frame f;

	if (!kern || kern->lost || !kern->n)
		return false;
	symbolizer_frame(c->sym, 0, kern->ips[kern->n - 1] - 1, true, &f);
	return f.function &&
	       (!strncmp(f.function, "asm_exc_", 8) || !strncmp(f.function, "asm_sysvec_", 11) ||
		!strcmp(f.function, "asm_common_interrupt"));
}

/*
 * Appends a stack's locations. Every address but the sample's very first is a
 * return address: step back into the call instruction before naming it. But
 * for leaf_exact, the stack's own first address (the user frame an exception
 * or an interrupt saved: a page fault on a function's first byte is that
 * function's, not the one before it).
 */
static size_t add_stack(struct drain_ctx *c, uint32_t pid, const struct sampler_stack *st,
			bool kernel, bool leaf_exact, uint64_t *locs, size_t n, bool *lost)
{
	if (st->lost) {
		*lost = true;
		locs[n++] = named_location(c, kernel ? "[lost kernel stack]" : "[lost user stack]");
		return n;
	}
	for (size_t i = 0; i < st->n; i++) {
		bool ret = n > 0 && !(i == 0 && leaf_exact) && !EMBER_RT_IS_WORD(st->ips[i]);
		uint64_t addr = st->ips[i] - (ret ? 1 : 0);

		locs[n++] = cached_location(c, pid, addr, kernel);
	}
	/* the callers the walk could not reach: the stack must not look complete */
	if (st->truncated)
		locs[n++] = named_location(c, "[truncated]");
	/* nor one walked without its tables, whose frame-pointer steps may have skipped some */
	if (st->no_tables)
		locs[n++] = named_location(c, DRAIN_NO_TABLES_FRAME);
	if (st->exited)
		locs[n++] = named_location(c, DRAIN_EXITED_FRAME);
	return n;
}

static int remember_pid(struct drain_profile *p, uint32_t pid)
{
	if (p->npids == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;
		uint32_t *v = realloc(p->pids, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->pids = v;
		p->cap = cap;
	}
	p->pids[p->npids++] = pid;
	return 0;
}

/* The profile of the application named service, created on first use. */
static struct drain_profile *profile_for(struct drain_ctx *c, const struct proc_class *pc)
{
	struct drain_result *r = c->out;
	struct drain_profile *p;

	if (c->last && !strcmp(c->last->service, pc->match.service))
		return c->last;
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->v[i].service, pc->match.service))
			return c->last = &r->v[i];
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 16;

		p = realloc(r->v, cap * sizeof(*p));
		if (!p)
			return NULL;
		r->v = p;
		r->cap = cap;
		c->last = NULL;
	}
	p = &r->v[r->n];
	memset(p, 0, sizeof(*p));
	p->b = pprof_builder_new(&c->meta);
	if (!p->b)
		return NULL;
	snprintf(p->service, sizeof(p->service), "%s", pc->match.service);
	p->app = pc->match.app;
	r->n++;
	return c->last = p;
}

static int on_stack(const struct profile_sample *s, void *arg)
{
	const struct ember_sample_key *key = s->key;
	struct drain_ctx *c = arg;
	uint64_t locs[4 * EMBER_MAX_STACK_DEPTH + 8]; /* a wait's stacks and its waker's */
	/* room for each byte to become a U+FFFD */
	char comm[EMBER_COMM_LEN * 3 + 1];
	const struct proc_class *pc;
	struct drain_profile *p;
	bool lost = false;
	size_t n = 0;

	/* the kernel cuts a thread name at 15 bytes, inside a character if it must */
	utf8_sanitize(key->comm, strnlen(key->comm, EMBER_COMM_LEN), comm, sizeof(comm),
		      UTF8_CUT_TAIL);
	pc = c->classify(key->tgid, comm, s->user->n && !s->user->lost ? s->user->ips[0] : 0,
			 c->arg);
	if (!pc)
		return -ENOMEM;
	if (pc->match.excluded) {
		c->out->excluded += s->events; /* counted before the BPF filter knew it */
		return 0;
	}
	p = profile_for(c, pc);
	if (!p)
		return -ENOMEM;
	c->b = p->b;
	c->p = p;
	if (s->waker_user || s->waker_kern) {
		n = add_stack(c, 0, s->waker_kern, true, false, locs, n, &lost);
		n = add_stack(c, s->waker_pid, s->waker_user, false,
			      user_leaf_exact(c, s->waker_kern), locs, n, &lost);
		locs[n++] = named_location(c, "[woken by]");
	}
	if (s->leaf)
		locs[n++] = named_location(c, s->leaf);
	n = add_stack(c, key->tgid, s->kern, true, false, locs, n, &lost);
	n = add_stack(c, key->tgid, s->user, false, user_leaf_exact(c, s->kern), locs, n, &lost);
	if (key->flags & EMBER_KEY_EXECVE) /* no user stack of either program: the exec's own */
		locs[n++] = named_location(c, DRAIN_EXECVE_FRAME);
	if (n == 0)
		locs[n++] = named_location(c, "[no stack]");
	for (size_t i = 0; i < n; i++)
		if (!locs[i])
			return -ENOMEM;

	struct pprof_label labels[] = {
		{.key = "pid", .num = key->tgid},
		{.key = "comm", .str = comm},
	};

	p->st.samples += s->events;
	p->st.stacks++;
	p->st.runq_ns += s->runq_ns;
	p->st.runq_waits += s->runq_waits;
	p->st.startup_bytes += s->startup_bytes;
	if (lost)
		p->st.lost_stacks += s->events;
	if (remember_pid(p, key->tgid))
		return -ENOMEM;
	return pprof_add_sample(c->b, locs, n, s->values, labels, 2);
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

void drain_result_free(struct drain_result *r)
{
	for (size_t i = 0; i < r->n; i++) {
		pprof_builder_free(r->v[i].b);
		free(r->v[i].pids);
		free(r->v[i].frames);
	}
	free(r->v);
	memset(r, 0, sizeof(*r));
}

/* Adds what q's source holds to out's profiles and recounts out's totals. */
int drain_more(const struct drain_request *q, struct drain_result *out)
{
	const struct profile_type *t = q->type;
	struct drain_ctx c = {
		.sym = q->sym,
		.meta =
			{
				.n_sample_types = t->n_values,
				.period_type = t->period_type,
				.default_sample_type = t->default_sample,
				.period = t->period(q->hz),
				.time_nanos = q->start_ns,
				.duration_nanos = q->end_ns - q->start_ns,
				.comment = q->comment,
			},
		.classify = q->classify,
		.arg = q->arg,
		.out = out,
	};
	int rc;

	if (t->n_values > PPROF_MAX_SAMPLE_TYPES || t->n_values > PROFILE_VALUES_MAX)
		return -E2BIG;
	memcpy(c.meta.sample_types, t->values, t->n_values * sizeof(t->values[0]));
	out->type = t;
	rc = t->drain(q->src, c.meta.period, on_stack, &c);
	memset(&out->total, 0, sizeof(out->total));
	for (size_t i = 0; i < out->n; i++) {
		struct drain_profile *p = &out->v[i];

		p->st.processes = count_distinct(p->pids, p->npids);
		out->total.samples += p->st.samples;
		out->total.stacks += p->st.stacks;
		out->total.lost_stacks += p->st.lost_stacks;
		out->total.processes += p->st.processes;
	}
	return rc;
}

int drain_profiles(const struct drain_request *q, struct drain_result *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	rc = drain_more(q, out);
	if (rc)
		drain_result_free(out);
	return rc;
}
