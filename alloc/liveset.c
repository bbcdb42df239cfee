// SPDX-License-Identifier: MIT
/* The set of live sampled pointers, so that free fires otel_memory:free only for them.
 * Lock-free, fixed size, no allocation: a table of buckets of one cache line each. */
#include "alloc_internal.h"

/* The table and its filter (their shape: alloc_internal.h, where free reads the filter). */
struct liveset_bucket liveset[LIVESET_BUCKETS];
uint8_t livefilter[1u << LIVEFILTER_BITS] __attribute__((aligned(64)));

/* Non-zero when a free must look further than its fast path: the live entries, plus one
 * for good once the start-up arena has handed out a block. Read by every free; the
 * library has no global written on a fast path, so this line stays shared read-only. */
long free_watch __attribute__((aligned(64)));
/* Live entries (the statistics; free_watch is what free reads), on a line of its own. */
long liveset_count __attribute__((aligned(64)));
static uint64_t liveset_overflows;

/* Remember p. A pointer already there (one freed behind our back, then handed out again)
 * is not added twice. Returns false, counted, when p's bucket is full. */
bool liveset_insert(uintptr_t p)
{
	struct liveset_bucket *b = liveset_bucket_of(p);
	unsigned int i;

	for (i = 0; i < LIVESET_WAYS; i++)
		if (__atomic_load_n(&b->slot[i], __ATOMIC_RELAXED) == p)
			return true;
	for (i = 0; i < LIVESET_WAYS; i++) {
		uintptr_t empty = 0;

		if (__atomic_compare_exchange_n(&b->slot[i], &empty, p, false, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED)) {
			/* before malloc returns p: whoever frees p was handed it after this */
			__atomic_fetch_add(livefilter_of(p), 1, __ATOMIC_RELAXED);
			__atomic_fetch_add(&free_watch, 1, __ATOMIC_RELAXED);
			__atomic_fetch_add(&liveset_count, 1, __ATOMIC_RELAXED);
			return true;
		}
	}
	__atomic_fetch_add(&liveset_overflows, 1, __ATOMIC_RELAXED);
	return false;
}

/* Forget p; true if it was there. Only the thread freeing p removes it, and p was
 * inserted before its allocation returned, so the program's own ordering of the malloc
 * before the free orders our insert before this removal. */
bool liveset_remove(uintptr_t p)
{
	struct liveset_bucket *b = liveset_bucket_of(p);
	unsigned int i;

	for (i = 0; i < LIVESET_WAYS; i++) {
		uintptr_t want = p;

		if (__atomic_load_n(&b->slot[i], __ATOMIC_RELAXED) != p)
			continue;
		if (__atomic_compare_exchange_n(&b->slot[i], &want, 0, false, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED)) {
			__atomic_fetch_sub(&liveset_count, 1, __ATOMIC_RELAXED);
			__atomic_fetch_sub(livefilter_of(p), 1, __ATOMIC_RELAXED);
			__atomic_fetch_sub(&free_watch, 1, __ATOMIC_RELAXED);
			return true;
		}
	}
	return false;
}

uint64_t liveset_overflow(void)
{
	return __atomic_load_n(&liveset_overflows, __ATOMIC_RELAXED);
}
