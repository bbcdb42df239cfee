// SPDX-License-Identifier: MIT
/* libember_alloc.so: wraps the malloc family, forwards every call to the next allocator
 * unchanged, and while a profiler is attached reports a sample of the allocations, and the
 * frees of those, through the otel_memory USDT probes. */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc_internal.h"
#include "ember_alloc.h"

/* The probe semaphores: the kernel adds one to each while a uprobe is attached to the
 * probe (libbpf passes the address from .note.stapsdt), so 0 means nobody listens and
 * allocations are not even counted down. Exported so that a test can find them by name;
 * malloc reads its own through a hidden alias (no GOT load). EMBER_ALLOC_FORCE_SAMPLING=1
 * adds one at start-up, for tests and benchmarks without a profiler. */
#define EXPORT __attribute__((visibility("default")))

__extension__ EXPORT unsigned short otel_memory_alloc_semaphore
	__attribute__((section(".probes"), used));
__extension__ EXPORT unsigned short otel_memory_free_semaphore
	__attribute__((section(".probes"), used));
extern __typeof(otel_memory_alloc_semaphore) alloc_semaphore
	__attribute__((alias("otel_memory_alloc_semaphore"), visibility("hidden")));

/* The contract of OpenTelemetry's memory-profiling design (design-docs/00003): provider
 * otel_memory, alloc(ptr, size, weight) on a sampled allocation, free(ptr) on the free of a
 * sampled pointer. Arguments are pinned to the first argument registers, where readers that
 * skip the note's argument specs (that design's first version) expect them. */
#define _SDT_HAS_SEMAPHORES 1
#define STAP_SDT_ARG_CONSTRAINT r
#include <sys/sdt.h>

/*
 * The probe site is a 5-byte nop on x86-64 rather than sdt.h's 1-byte one: a kernel
 * with optimized uprobes (Linux 6.18) turns a uprobe on a nop5 into a call to its
 * trampoline and a system call after the first hit, instead of a trap (int3) on
 * every hit. An older kernel traps on it as on any probe. The call pushes below the
 * stack pointer: the probes sit in fire_alloc and fire_free, leaf functions that keep
 * nothing there (no red zone in use). sdt.h expands _SDT_NOP where a probe is
 * written, so the definition below is the one used.
 */
#if defined(__x86_64__)
#undef _SDT_NOP
/* clang-format off */
#define _SDT_NOP .4byte 0x00441f0f; .byte 0x00 /* nopl 0x0(%rax,%rax,1), no commas */
/* clang-format on */
#endif

static struct {
	uint64_t alloc_probes;
	uint64_t free_probes;
	uint64_t weight_bytes;
} counters;

static bool sampling_on(void)
{
	return __atomic_load_n(&alloc_semaphore, __ATOMIC_RELAXED) != 0;
}

__attribute__((noinline)) static void fire_alloc(void *ptr, size_t size, uint64_t weight)
{
	__atomic_fetch_add(&counters.alloc_probes, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&counters.weight_bytes, weight, __ATOMIC_RELAXED);
#if defined(__x86_64__)
	register uintptr_t a0 __asm__("rdi") = (uintptr_t)ptr;
	register uint64_t a1 __asm__("rsi") = size;
	register uint64_t a2 __asm__("rdx") = weight;
#elif defined(__aarch64__)
	register uintptr_t a0 __asm__("x0") = (uintptr_t)ptr;
	register uint64_t a1 __asm__("x1") = size;
	register uint64_t a2 __asm__("x2") = weight;
#else
	uintptr_t a0 = (uintptr_t)ptr;
	uint64_t a1 = size, a2 = weight;
#endif
	STAP_PROBE3(otel_memory, alloc, a0, a1, a2);
}

__attribute__((noinline)) static void fire_free(void *ptr)
{
	__atomic_fetch_add(&counters.free_probes, 1, __ATOMIC_RELAXED);
#if defined(__x86_64__)
	register uintptr_t a0 __asm__("rdi") = (uintptr_t)ptr;
#elif defined(__aarch64__)
	register uintptr_t a0 __asm__("x0") = (uintptr_t)ptr;
#else
	uintptr_t a0 = (uintptr_t)ptr;
#endif
	STAP_PROBE1(otel_memory, free, a0);
}

/* A successful allocation of size bytes at p, while a profiler listens. A sample whose
 * pointer cannot be remembered is not reported: its free would go unseen and the profiler
 * would show a leak that is not one (it is counted as overflow instead). */
static void record(void *p, size_t size)
{
	if (liveset_insert((uintptr_t)p))
		fire_alloc(p, size, sampler_weight(size));
}

static void on_alloc(void *p, size_t size)
{
	if (sampler_take(size))
		record(p, size);
}

/* p is about to be freed (or moved by realloc) and is a live sample: forget it and say so,
 * before the allocator can hand the block to another thread that may sample it again.
 * Done whether or not a profiler still listens, so that the set never keeps dead entries
 * a later attach would trip over. */
static __attribute__((noinline, cold)) void on_free(void *p)
{
	if (liveset_remove((uintptr_t)p))
		fire_free(p);
}

#define ACCOUNT(p, size)                            \
	do {                                        \
		if (unlikely(sampling_on()) && (p)) \
			on_alloc((p), (size));      \
	} while (0)

/* The filter first: while samples are live, every free asks it (a byte, no call). */
#define FORGET(p)                                                 \
	do {                                                      \
		if (unlikely(liveset_maybe_live()) && (p) &&      \
		    unlikely(livefilter_maybe((uintptr_t)(p))) && \
		    liveset_contains((uintptr_t)(p)))             \
			on_free(p);                               \
	} while (0)

/* malloc when the countdown has run out: the allocation, then whether it is the sample. */
static __attribute__((noinline)) void *malloc_due(size_t size)
{
	void *p;

	if (!boot_ready())
		return boot_alloc(size, 16);
	p = real.malloc(size);
	if (p && sampler_slow(&sampler_tls, size))
		record(p, size);
	return p;
}

/* The fast paths of malloc and free are one load and one branch before a tail call into
 * the allocator (a 64-byte pair costs ~6 ns: every instruction shows); while a profiler
 * listens, malloc counts down before the call, so it stays a tail call unless it is due.
 * Until the allocator is found, real.malloc and real.free are boot_malloc and boot_free
 * (boot.c). */
EXPORT void *malloc(size_t size)
{
	void *(*next)(size_t) = __atomic_load_n(&real.malloc, __ATOMIC_RELAXED);

	if (likely(!sampling_on()) || likely(!sampler_due(size)))
		return next(size);
	return malloc_due(size);
}

static __attribute__((noinline)) void free_slow(void *p)
{
	FORGET(p);
	if (unlikely(in_boot_arena(p)))
		return;
	if (!boot_ready())
		return; /* inside dlsym, a pointer we never gave out: leaked, not crashed */
	real.free(p);
}

/*
 * While nothing is watched (no live sample, the start-up arena unused), one load and
 * a branch before the tail call; else the filter's byte for p and the arena's bounds,
 * still inline: a free of an unsampled pointer stays a tail call.
 */
EXPORT void free(void *p)
{
	void (*next)(void *) = __atomic_load_n(&real.free, __ATOMIC_RELAXED);

	if (likely(__atomic_load_n(&free_watch, __ATOMIC_RELAXED) == 0) ||
	    likely(!livefilter_maybe((uintptr_t)p) && !in_boot_arena(p))) {
		next(p);
		return;
	}
	free_slow(p);
}

EXPORT void *calloc(size_t n, size_t size)
{
	size_t bytes;
	void *p;

	if (!boot_ready()) {
		if (__builtin_mul_overflow(n, size, &bytes))
			return NULL;
		return boot_alloc(bytes, 16);
	}
	p = real.calloc(n, size);
	ACCOUNT(p, n * size); /* p != NULL: the product did not overflow */
	return p;
}

/* realloc in the arena: copy into a real block, leave the arena block (never freed). */
static void *boot_realloc(void *old, size_t size)
{
	size_t old_size = boot_block_size(old);
	void *p;

	if (size == 0)
		return NULL;
	p = malloc(size);
	if (p)
		memcpy(p, old, old_size < size ? old_size : size);
	return p;
}

/* realloc of a sampled pointer reports the free of the old pointer first, then the new
 * block gets a sample decision of its own for its whole new size, as any allocation does
 * (moved or grown in place alike). If the allocator then fails, the old block is still the
 * caller's but no longer tracked: the profiler was told it was freed, and its real free
 * will not say it twice. */
EXPORT void *realloc(void *old, size_t size)
{
	void *p;

	if (unlikely(in_boot_arena(old)))
		return boot_realloc(old, size);
	if (!boot_ready())
		return old ? NULL : boot_alloc(size, 16);
	FORGET(old);
	p = real.realloc(old, size);
	ACCOUNT(p, size);
	return p;
}

/* What glibc's reallocarray is: an overflow check, then realloc (through the PLT, so a
 * forwarded call would come back to realloc above and be counted twice). */
EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM; /* old stays valid and tracked */
		return NULL;
	}
	return realloc(old, bytes);
}

EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	int err;

	if (!boot_ready()) {
		if (align % sizeof(void *) || (align & (align - 1)))
			return EINVAL;
		*out = boot_alloc(size, align);
		return *out ? 0 : ENOMEM;
	}
	if (!real.posix_memalign)
		return ENOMEM;
	err = real.posix_memalign(out, align, size);
	if (err == 0)
		ACCOUNT(*out, size);
	return err;
}

EXPORT void *aligned_alloc(size_t align, size_t size)
{
	void *p;

	if (!boot_ready())
		return boot_alloc(size, align);
	if (!real.aligned_alloc) {
		errno = ENOMEM;
		return NULL;
	}
	p = real.aligned_alloc(align, size);
	ACCOUNT(p, size);
	return p;
}

EXPORT void *memalign(size_t align, size_t size)
{
	void *p;

	if (!boot_ready())
		return boot_alloc(size, align);
	if (!real.memalign) {
		errno = ENOMEM;
		return NULL;
	}
	p = real.memalign(align, size);
	ACCOUNT(p, size);
	return p;
}

EXPORT void *valloc(size_t size)
{
	void *p;

	if (!boot_ready())
		return boot_alloc(size, 4096);
	if (!real.valloc) {
		errno = ENOMEM;
		return NULL;
	}
	p = real.valloc(size);
	ACCOUNT(p, size);
	return p;
}

/* The requested size is what is accounted, not the page-rounded one pvalloc gives. */
EXPORT void *pvalloc(size_t size)
{
	void *p;

	if (!boot_ready())
		return boot_alloc(size, 4096);
	if (!real.pvalloc) {
		errno = ENOMEM;
		return NULL;
	}
	p = real.pvalloc(size);
	ACCOUNT(p, size);
	return p;
}

EXPORT void ember_alloc_read_stats(struct ember_alloc_stats *st)
{
	long live = __atomic_load_n(&liveset_count, __ATOMIC_RELAXED);

	st->alloc_probes = __atomic_load_n(&counters.alloc_probes, __ATOMIC_RELAXED);
	st->free_probes = __atomic_load_n(&counters.free_probes, __ATOMIC_RELAXED);
	st->weight_bytes = __atomic_load_n(&counters.weight_bytes, __ATOMIC_RELAXED);
	st->live = live > 0 ? (uint64_t)live : 0;
	st->overflow = liveset_overflow();
	st->bootstrap_bytes = boot_bytes();
	st->sample_mean = sampler_mean();
}

EXPORT bool ember_alloc_is_live(const void *p)
{
	return p && liveset_contains((uintptr_t)p);
}

static void say(const char *msg)
{
	ssize_t r = write(STDERR_FILENO, msg, strlen(msg));

	(void)r;
}

/* In the child of a fork, only the forking thread exists: it draws from a new seed, and
 * if another thread was finding the allocator it never will here, so the next call
 * starts over rather than wait for it. */
static void atfork_child(void)
{
	int resolving = 1;

	sampler_forget_seed();
	__atomic_compare_exchange_n(&boot_state, &resolving, 0, false, __ATOMIC_RELAXED,
				    __ATOMIC_RELAXED);
}

/* Runs after libc is initialised (environ is set), usually long after the first malloc.
 * A bad EMBER_ALLOC_SAMPLE_BYTES is said once on stderr (the value is not echoed: it is
 * not ours to print) and the default is kept: a silently ignored setting is worse. */
_Static_assert(SAMPLE_MEAN_DEFAULT == 524288 && SAMPLE_MEAN_MAX == 1073741824,
	       "the figures in ember_alloc_start's message");

__attribute__((constructor)) static void ember_alloc_start(void)
{
	const char *s = getenv("EMBER_ALLOC_SAMPLE_BYTES");
	const char *force = getenv("EMBER_ALLOC_FORCE_SAMPLING");
	uint64_t mean;

	(void)boot_ready();
	if (s) {
		if (sampler_parse_mean(s, &mean) == 0)
			sampler_set_mean(mean);
		else
			say("libember_alloc: EMBER_ALLOC_SAMPLE_BYTES is not a whole number of "
			    "bytes in [1, 1073741824]; sampling every 524288 bytes on average\n");
	}
	if (force && strcmp(force, "1") == 0) {
		__atomic_fetch_add(&otel_memory_alloc_semaphore, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&otel_memory_free_semaphore, 1, __ATOMIC_RELAXED);
	}
	pthread_atfork(NULL, NULL, atfork_child);
}
