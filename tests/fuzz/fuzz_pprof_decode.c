// SPDX-License-Identifier: MIT
/* libFuzzer: pprof_decode on arbitrary bytes; what it accepts must merge into a
 * builder and encode to a profile that decodes again. pprof_decode_arena (the
 * views' path, into a reused arena) must agree with it, and what it accepts
 * must fold into stacks with the same total. Merged as a push merges it (labels
 * out, unnamed frames named), every location has a Line and the total stays. */
#include <stdbool.h>
#include <stdlib.h>

#include "pprof.h"
#include "stackset.h"

/* One arena for every input, as emberctl reuses one across profiles. */
static struct pprof_arena *arena;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A builder with p's sample types, so that the merge is accepted. */
static struct pprof_builder *builder_like(const pprof_profile *p)
{
	struct pprof_meta meta = {.n_sample_types = p->n_sample_type};
	size_t i;

	for (i = 0; i < p->n_sample_type; i++) {
		meta.sample_types[i].type = p->string_table[p->sample_type[i]->type];
		meta.sample_types[i].unit = p->string_table[p->sample_type[i]->unit];
	}
	return pprof_builder_new(&meta);
}

static void reencode(const pprof_profile *p)
{
	const struct pprof_filter f = {.by_pid = true, .pid = 1};
	struct pprof_builder *b = builder_like(p);
	pprof_profile *again;
	uint8_t *buf;
	size_t len;
	char err[256];

	if (!b)
		return;
	if (!pprof_merge(b, p, NULL) && !pprof_merge(b, p, &f) && !pprof_encode(b, &buf, &len)) {
		/* Our own output must always be valid and keep every sample. */
		if (pprof_decode(buf, len, &again, err, sizeof(err)))
			abort();
		if (again->n_sample != pprof_sample_count(b))
			abort();
		pprof_profile_free(again);
		free(buf);
	}
	pprof_builder_free(b);
}

static int64_t folded_total(const pprof_profile *p)
{
	struct stackset *s = stackset_new();
	int64_t total;

	if (!s)
		abort();
	total = stackset_add_profile(s, p, NULL, "samples", 0) ? -1 : stackset_total(s, 0);
	stackset_free(s);
	return total;
}

/* Whether no sum of p's values can overflow: the builder saturates, stacksets do not. */
static bool small_values(const pprof_profile *p)
{
	for (size_t i = 0; i < p->n_sample; i++)
		for (size_t t = 0; t < p->sample[i]->n_value; t++)
			if (p->sample[i]->value[t] > (1LL << 40) ||
			    p->sample[i]->value[t] < -(1LL << 40))
				return false;
	return p->n_sample < (1u << 20);
}

/* What pushfit sends: every location with a Line, the same folded total. */
static void push_merge(const pprof_profile *p)
{
	const struct pprof_filter f = {.drop_labels = true, .name_unnamed = true};
	struct pprof_builder *b = builder_like(p);
	pprof_profile *again;
	uint8_t *buf;
	size_t len;

	if (!b)
		return;
	if (!pprof_merge(b, p, &f) && !pprof_encode(b, &buf, &len)) {
		if (pprof_decode(buf, len, &again, NULL, 0))
			abort();
		for (size_t i = 0; i < again->n_location; i++)
			if (!again->location[i]->n_line)
				abort();
		if (small_values(p) && folded_total(again) != folded_total(p))
			abort();
		pprof_profile_free(again);
		free(buf);
	}
	pprof_builder_free(b);
}

/* The arena path accepts exactly what pprof_decode accepts, and folds it. */
static void arena_path(const uint8_t *data, size_t size, const pprof_profile *slow)
{
	struct pprof_reader *r;
	struct stackset *a, *b;
	pprof_profile *p;
	int ra, rb;

	if (!arena)
		arena = pprof_arena_new();
	if (!arena)
		abort();
	if (pprof_decode_arena(arena, data, size, &p, &r, NULL, 0) != 0) {
		if (slow)
			abort();
		return;
	}
	if (!slow || p->n_sample != slow->n_sample)
		abort();
	a = stackset_new();
	b = stackset_new();
	if (!a || !b)
		abort();
	ra = stackset_add_read(a, p, r, NULL, "samples", 0);
	rb = stackset_add_profile(b, slow, NULL, "samples", 0);
	if (ra != rb || stackset_total(a, 0) != stackset_total(b, 0) ||
	    stackset_len(a) != stackset_len(b))
		abort();
	stackset_free(a);
	stackset_free(b);
	pprof_reader_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pprof_profile *p;
	char err[256];

	if (pprof_decode(data, size, &p, err, sizeof(err))) {
		arena_path(data, size, NULL);
		return 0;
	}
	arena_path(data, size, p);
	reencode(p);
	push_merge(p);
	pprof_profile_free(p);
	return 0;
}
