// SPDX-License-Identifier: MIT
/* An index from hashes to entries held elsewhere; see hashtab.h. */
#include <errno.h>
#include <stdlib.h>

#include "hashtab.h"

size_t hashtab_find(const struct hashtab *t, uint32_t h, hashtab_match_fn match, const void *ctx,
		    const void *key)
{
	size_t i;

	if (!t->slots)
		return 0;
	for (i = h & t->mask; t->slots[i].idx; i = (i + 1) & t->mask) {
		if (t->slots[i].hash == h && match(ctx, t->slots[i].idx - 1, key))
			return t->slots[i].idx;
	}
	return 0;
}

static void put(struct hashtab_slot *slots, size_t mask, uint32_t h, uint32_t idx)
{
	size_t i = h & mask;

	while (slots[i].idx)
		i = (i + 1) & mask;
	slots[i] = (struct hashtab_slot){.hash = h, .idx = idx};
}

int hashtab_add(struct hashtab *t, uint32_t h, size_t idx)
{
	size_t cap = t->slots ? t->mask + 1 : 0, i;
	struct hashtab_slot *slots;

	if (idx >= HASHTAB_MAX_ENTRIES)
		return -E2BIG;
	if ((t->n + 1) * 4 > cap * 3) {
		cap = cap ? cap * 2 : 64;
		slots = calloc(cap, sizeof(*slots));
		if (!slots)
			return -ENOMEM;
		for (i = 0; t->slots && i <= t->mask; i++) {
			if (t->slots[i].idx)
				put(slots, cap - 1, t->slots[i].hash, t->slots[i].idx);
		}
		free(t->slots);
		t->slots = slots;
		t->mask = cap - 1;
	}
	put(t->slots, t->mask, h, (uint32_t)idx + 1);
	t->n++;
	return 0;
}

void hashtab_free(struct hashtab *t)
{
	free(t->slots);
	*t = (struct hashtab){0};
}

uint64_t hash_mix(uint64_t h, uint64_t v)
{
	h = (h ^ v) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

uint32_t hash_fold(uint64_t h)
{
	return (uint32_t)(h ^ (h >> 32));
}

uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
	return h;
}
