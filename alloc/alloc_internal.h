/* SPDX-License-Identifier: MIT */
/* libember_alloc.so's parts as its wrappers see them: the per-thread sampler and the set
 * of live sampled pointers. Everything here is hidden: only the allocator's names, the
 * two probe semaphores and ember_alloc.h leave the library. */
#ifndef EMBER_ALLOC_INTERNAL_H
#define EMBER_ALLOC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HIDDEN __attribute__((visibility("hidden")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* --- boot.c: the allocator we wrap, found on the first call ---------------------------- */

struct real_allocator {
	void *(*malloc)(size_t size);
	void (*free)(void *p);
	void *(*calloc)(size_t n, size_t size);
	void *(*realloc)(void *p, size_t size);
	int (*posix_memalign)(void **p, size_t align, size_t size);
	void *(*aligned_alloc)(size_t align, size_t size);
	void *(*memalign)(size_t align, size_t size);
	void *(*valloc)(size_t size);
	void *(*pvalloc)(size_t size);
};

HIDDEN extern struct real_allocator real;
HIDDEN extern int boot_state;
void *boot_malloc(size_t size);
void boot_free(void *p);
HIDDEN extern char boot_arena[64 * 1024];

bool boot_slow(void);
void *boot_alloc(size_t size, size_t align);
size_t boot_block_size(const void *p);
size_t boot_bytes(void);

/* True when real can be called; false on the thread inside dlsym (use the arena). */
static inline bool boot_ready(void)
{
	return likely(__atomic_load_n(&boot_state, __ATOMIC_ACQUIRE) == 2) || boot_slow();
}

static inline bool in_boot_arena(const void *p)
{
	return (uintptr_t)p - (uintptr_t)boot_arena < sizeof(boot_arena);
}

/* --- sampler.c: when to sample, and what a sample stands for ---------------------------- */

/* The mean sampling interval, bytes: the default and the bounds EMBER_ALLOC_SAMPLE_BYTES
 * may set (1 byte samples nearly everything; past 1 GiB a busy process is never seen). */
#define SAMPLE_MEAN_DEFAULT (512u * 1024)
#define SAMPLE_MEAN_MAX (1024u * 1024 * 1024)

/* One thread's sampling state. Zero (as every new thread's TLS starts) means "not seeded
 * yet": the first allocation the thread accounts seeds it. Initial-exec TLS: no
 * __tls_get_addr, which may itself call malloc. */
struct sampler_thread {
	int64_t countdown; /* bytes left before the next sample; <= 0: this one is sampled */
	uint64_t rng;	   /* xorshift64* state, never 0 once seeded */
	uint32_t seeded;
};

HIDDEN extern __thread struct sampler_thread sampler_tls __attribute__((tls_model("initial-exec")));

int sampler_parse_mean(const char *s, uint64_t *mean);
void sampler_set_mean(uint64_t mean);
uint64_t sampler_mean(void);
bool sampler_slow(struct sampler_thread *t, size_t size);
uint64_t sampler_weight(size_t size);
void sampler_forget_seed(void);

/* Counts size bytes down; true when the countdown has reached zero (or the thread is new),
 * when sampler_slow must decide. A subtraction and a branch on a per-thread word. */
static inline bool sampler_due(size_t size)
{
	struct sampler_thread *t = &sampler_tls;

	if (unlikely(size > (size_t)INT64_MAX / 2))
		size = (size_t)INT64_MAX / 2;
	t->countdown -= (int64_t)size;
	return unlikely(t->countdown <= 0);
}

/* True when an allocation of size bytes is to be sampled. */
static inline bool sampler_take(size_t size)
{
	return sampler_due(size) && sampler_slow(&sampler_tls, size);
}

/* --- liveset.c: the sampled pointers not freed yet -------------------------------------- */

/* 8192 buckets of 8 slots: 65536 pointers, 512 KiB of .bss that costs no memory until
 * touched. A pointer lives only in the bucket its hash names (no probing into the next
 * one), so a look-up reads one cache line and a removal may clear its slot to empty with
 * no tombstone. At the default interval (512 KiB) a 1 GiB live heap holds ~2048 sampled
 * pointers, 1 in 4 buckets; a bucket is full (9 or more) with a probability under 1e-9.
 * A pointer whose bucket is full is not sampled and is counted (liveset_overflow). */
#define LIVESET_BUCKETS 8192u
#define LIVESET_WAYS 8u

struct liveset_bucket {
	uintptr_t slot[LIVESET_WAYS]; /* 0: empty */
} __attribute__((aligned(64)));

HIDDEN extern struct liveset_bucket liveset[LIVESET_BUCKETS];
HIDDEN extern long liveset_count;
HIDDEN extern long free_watch;

bool liveset_insert(uintptr_t p);
bool liveset_remove(uintptr_t p);
uint64_t liveset_overflow(void);

static inline struct liveset_bucket *liveset_bucket_of(uintptr_t p)
{
	/* Fibonacci hashing of the pointer less its alignment bits (malloc's are 16 apart). */
	uint64_t h = (uint64_t)(p >> 4) * 0x9e3779b97f4a7c15ull;

	return &liveset[h >> (64 - 13)];
}

_Static_assert(LIVESET_BUCKETS == 1u << 13, "liveset_bucket_of takes the top 13 bits");

/* An exact look-up: one cache line, no call. */
static inline bool liveset_contains(uintptr_t p)
{
	struct liveset_bucket *b = liveset_bucket_of(p);
	bool found = false;
	unsigned int i;

	/* No early exit: 8 independent compares of one line, no loop-carried branch. */
#pragma GCC unroll 8
	for (i = 0; i < LIVESET_WAYS; i++)
		found |= __atomic_load_n(&b->slot[i], __ATOMIC_RELAXED) == p;
	return found;
}

/* False when no sampled pointer is live: then no free needs a look-up. */
static inline bool liveset_maybe_live(void)
{
	return __atomic_load_n(&liveset_count, __ATOMIC_RELAXED) != 0;
}

/*
 * What every free asks while samples are live: a counting filter in front of the
 * set, one byte per value of the top 16 bits of the pointer's hash (the bucket's 13
 * and 3 more), counting the live pointers with that value. Zero: p is not live,
 * for certain. A bucket holds 8 pointers, so no count passes 8. 64 KiB of .bss; with
 * the ~2000 pointers of a 1 GiB heap at the default interval, 3% of frees look
 * further (and find nothing), the others pay a multiply and a byte load.
 */
#define LIVEFILTER_BITS 16

HIDDEN extern uint8_t livefilter[1u << LIVEFILTER_BITS];

static inline uint8_t *livefilter_of(uintptr_t p)
{
	uint64_t h = (uint64_t)(p >> 4) * 0x9e3779b97f4a7c15ull;

	return &livefilter[h >> (64 - LIVEFILTER_BITS)];
}

_Static_assert(LIVEFILTER_BITS >= 13, "a filter value must name one bucket of the set");

static inline bool livefilter_maybe(uintptr_t p)
{
	return __atomic_load_n(livefilter_of(p), __ATOMIC_RELAXED) != 0;
}

#endif
