// SPDX-License-Identifier: MIT
/*
 * Joins the parts of a drained stacks map back into stacks: an open-addressing
 * index by (hash, part), and the join of a stack's parts in order.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "stackparts.h"

_Static_assert(offsetof(struct ember_stack, ips) == sizeof(uint64_t), "len and flags: word 0");

int stack_parts_reserve(struct stack_parts *d, size_t want)
{
	struct ember_stack_key *k;
	struct ember_stack_part *p;

	if (want <= d->cap)
		return 0;
	k = realloc(d->keys, want * sizeof(*k));
	if (!k)
		return -ENOMEM;
	d->keys = k;
	p = realloc(d->parts, want * sizeof(*p));
	if (!p)
		return -ENOMEM;
	d->parts = p;
	d->cap = want;
	return 0;
}

/* The slot of (hash, part): where it is, or the free slot where it would go. */
static size_t index_slot(const struct stack_parts *d, uint64_t hash, uint32_t part)
{
	/* the hash is already mixed (bpf/stack.bpf.h); a part moves it to another line */
	size_t i = ((hash >> 7) + part * 0x9e3779b9u) & (d->index_cap - 1);

	while (d->index[i]) {
		const struct ember_stack_key *k = &d->keys[d->index[i] - 1];

		if (k->hash == hash && k->part == part)
			break;
		i = (i + 1) & (d->index_cap - 1);
	}
	return i;
}

int stack_parts_index(struct stack_parts *d)
{
	free(d->index);
	for (d->index_cap = 64; d->index_cap < 2 * d->n; d->index_cap <<= 1)
		;
	d->index = calloc(d->index_cap, sizeof(*d->index));
	if (!d->index)
		return -ENOMEM;
	for (size_t i = 0; i < d->n; i++)
		d->index[index_slot(d, d->keys[i].hash, d->keys[i].part)] = i + 1;
	return 0;
}

void stack_parts_free(struct stack_parts *d)
{
	free(d->keys);
	free(d->parts);
	free(d->index);
	memset(d, 0, sizeof(*d));
}

static const struct ember_stack_part *part_of(const struct stack_parts *d, uint64_t hash,
					      uint32_t part)
{
	uint32_t i;

	if (!d->index)
		return NULL;
	i = d->index[index_slot(d, hash, part)];
	return i ? &d->parts[i - 1] : NULL;
}

/* Joins the n parts of hash, part 0 being p0, into join's words. False if one is missing. */
static bool join_parts(const struct stack_parts *d, uint64_t hash,
		       const struct ember_stack_part *p0, uint32_t n, struct ember_stack *join)
{
	char *w = (char *)join;

	for (uint32_t i = 0; i < n; i++) {
		const struct ember_stack_part *p = i ? part_of(d, hash, i) : p0;
		size_t words = EMBER_STACK_WORDS - (size_t)i * EMBER_STACK_PART_WORDS;

		if (!p)
			return false;
		if (words > EMBER_STACK_PART_WORDS)
			words = EMBER_STACK_PART_WORDS;
		memcpy(w + (size_t)i * sizeof(p->w), p->w, words * sizeof(p->w[0]));
	}
	return true;
}

void stack_parts_find(const struct stack_parts *d, uint64_t hash, bool lost,
		      struct ember_stack *join, struct sampler_stack *out)
{
	const struct ember_stack_part *p0;
	struct {
		uint32_t len, flags;
	} head; /* word 0 of struct ember_stack */
	uint32_t len;

	out->ips = NULL;
	out->n = 0;
	out->lost = lost;
	sampler_stack_flags(out, 0);
	if (!hash)
		return;
	p0 = part_of(d, hash, 0);
	if (!p0) {
		out->lost = true;
		return;
	}
	memcpy(&head, p0->w, sizeof(p0->w[0]));
	len = head.len < EMBER_MAX_STACK_DEPTH ? head.len : EMBER_MAX_STACK_DEPTH;
	if (EMBER_STACK_PARTS(len) == 1) {
		out->ips = (const uint64_t *)&p0->w[1];
	} else if (join_parts(d, hash, p0, EMBER_STACK_PARTS(len), join)) {
		out->ips = (const uint64_t *)join->ips;
	} else {
		/* part 0 is stored last: only a 64-bit hash collision gets here */
		out->lost = true;
		return;
	}
	out->n = len;
	sampler_stack_flags(out, head.flags);
}
