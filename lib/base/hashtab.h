/* SPDX-License-Identifier: MIT */
/*
 * An index from hashes to entries held elsewhere (open addressing, linear
 * probing, at most 3/4 full): the owner keeps its entries in an array and says
 * whether entry idx matches a key. Shared by pprof, stackset and calltree.
 */
#ifndef EMBER_HASHTAB_H
#define EMBER_HASHTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Entries a table may index. */
#define HASHTAB_MAX_ENTRIES (UINT32_MAX / 2)

/* One slot: the entry's hash and its index + 1 (0 marks an empty slot). */
struct hashtab_slot {
	uint32_t hash;
	uint32_t idx;
};

/* A table; zero-initialized is empty. */
struct hashtab {
	struct hashtab_slot *slots;
	size_t mask; /* capacity - 1, a power of two */
	size_t n;
};

typedef bool (*hashtab_match_fn)(const void *ctx, size_t idx, const void *key);

/* Index + 1 of the entry matching key, or 0. */
size_t hashtab_find(const struct hashtab *t, uint32_t h, hashtab_match_fn match, const void *ctx,
		    const void *key);
/* Indexes entry idx under hash h. 0, -ENOMEM, or -E2BIG past HASHTAB_MAX_ENTRIES. */
int hashtab_add(struct hashtab *t, uint32_t h, size_t idx);
void hashtab_free(struct hashtab *t);

/* Hashing: mix a 64-bit value in, fold to 32 bits, FNV-1a of a string. */
uint64_t hash_mix(uint64_t h, uint64_t v);
uint32_t hash_fold(uint64_t h);
uint64_t hash_str(const char *s);

#endif
