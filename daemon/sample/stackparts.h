/* SPDX-License-Identifier: MIT */
/*
 * The stacks of one drained buffer as read from a parted stacks map
 * (include/ember/sample.h): indexed by hash and part, joined back into stacks.
 * Pure: the reads themselves are daemon/sample/fold.c's.
 */
#ifndef EMBER_STACKPARTS_H
#define EMBER_STACKPARTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember/sample.h"

/* One stack as drained: ips leaf first; n == 0 when there is none or it was lost. */
struct sampler_stack {
	const uint64_t *ips;
	size_t n;
	bool lost;	/* the stack existed but could not be read or kept */
	bool truncated; /* deeper than EMBER_MAX_STACK_DEPTH: callers missing */
	bool no_tables; /* walked without its process's unwind tables: callers may be missing */
	bool exited;	/* its process's memory was gone: the interrupted instruction alone */
};

/* The EMBER_STACK_* flags of a stack into out's. */
static inline void sampler_stack_flags(struct sampler_stack *out, uint32_t flags)
{
	out->truncated = flags & EMBER_STACK_TRUNCATED;
	out->no_tables = flags & EMBER_STACK_NO_TABLES;
	out->exited = flags & EMBER_STACK_EXITED;
}

/* Parts read in one pass (keys[i] names parts[i]), with an index by key. */
struct stack_parts {
	struct ember_stack_key *keys;
	struct ember_stack_part *parts;
	size_t n, cap;
	uint32_t *index; /* open addressing: 1 + position in parts, 0 = free */
	size_t index_cap;
};

/* Room for want parts in keys and parts (n is kept). 0 or -ENOMEM. */
int stack_parts_reserve(struct stack_parts *d, size_t want);
/* Indexes parts[0..n) by key. 0 or -ENOMEM. */
int stack_parts_index(struct stack_parts *d);
/* Frees what d holds and empties it. */
void stack_parts_free(struct stack_parts *d);

/*
 * The stack of hash into out: hash 0 yields an empty stack (lost as given),
 * one missing or with a part missing a lost one. A stack of one part points
 * into d; a longer one is joined into join, which must outlive out's use.
 */
void stack_parts_find(const struct stack_parts *d, uint64_t hash, bool lost,
		      struct ember_stack *join, struct sampler_stack *out);

#endif
