// SPDX-License-Identifier: MIT
/* Finding the allocator we wrap (dlsym(RTLD_NEXT)) on the first call, whenever that comes:
 * often before our constructor, from another library's or ld.so's own allocations. dlsym
 * may itself allocate; those calls are served from a small static arena. */
#include <dlfcn.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc_internal.h"

struct real_allocator real = {.malloc = boot_malloc, .free = boot_free};

/* 0: not resolved, 1: one thread resolving, 2: real is complete (release/acquire). */
int boot_state;
/* Set on the thread inside dlsym: its allocations go to the arena. */
static __thread int boot_resolving __attribute__((tls_model("initial-exec")));

/* dlsym's allocations are a few small buffers (dlerror state); 64 KiB is plenty, and
 * untouched .bss costs nothing. Never freed: a free or realloc recognises its pointers.
 * Each block is preceded by its size, for realloc. */
#define BOOT_ARENA_SIZE (64u * 1024)
#define BOOT_MAX_ALIGN 4096u

char boot_arena[BOOT_ARENA_SIZE] __attribute__((aligned(BOOT_MAX_ALIGN)));
static size_t boot_used;

_Static_assert(sizeof(boot_arena) == BOOT_ARENA_SIZE, "in_boot_arena's bound");

static void boot_die(const char *msg)
{
	ssize_t r = write(STDERR_FILENO, msg, strlen(msg));

	(void)r;
	abort();
}

/* A block of size bytes aligned to align (a power of two), or NULL when the arena is out
 * of room. Bump allocation with a CAS: only the resolving thread gets here in practice. */
void *boot_alloc(size_t size, size_t align)
{
	size_t used, start, end;

	if (align < 16)
		align = 16;
	if (align > BOOT_MAX_ALIGN || (align & (align - 1)) || size > BOOT_ARENA_SIZE)
		return NULL;
	used = __atomic_load_n(&boot_used, __ATOMIC_RELAXED);
	do {
		start = (used + sizeof(size_t) + align - 1) & ~(align - 1);
		end = start + size;
		if (end > BOOT_ARENA_SIZE)
			return NULL;
	} while (!__atomic_compare_exchange_n(&boot_used, &used, end, false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	if (used == 0) /* the first block: every free now checks for arena pointers */
		__atomic_fetch_add(&free_watch, 1, __ATOMIC_RELAXED);
	memcpy(boot_arena + start - sizeof(size_t), &size, sizeof(size));
	return boot_arena + start; /* .bss, never reused: already zero, as calloc wants */
}

size_t boot_block_size(const void *p)
{
	size_t size;

	memcpy(&size, (const char *)p - sizeof(size_t), sizeof(size));
	return size;
}

size_t boot_bytes(void)
{
	return __atomic_load_n(&boot_used, __ATOMIC_RELAXED);
}

/* Resolved into a copy, then published with malloc and free last: their fast paths test
 * only their own pointer, and find the rest of real complete behind it. */
static void boot_resolve(void)
{
	struct real_allocator r;

	boot_resolving = 1;
	r.malloc = dlsym(RTLD_NEXT, "malloc");
	r.free = dlsym(RTLD_NEXT, "free");
	r.calloc = dlsym(RTLD_NEXT, "calloc");
	r.realloc = dlsym(RTLD_NEXT, "realloc");
	/* glibc has had all of these since 2.16; a missing one fails with ENOMEM. */
	r.posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
	r.aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
	r.memalign = dlsym(RTLD_NEXT, "memalign");
	r.valloc = dlsym(RTLD_NEXT, "valloc");
	r.pvalloc = dlsym(RTLD_NEXT, "pvalloc");
	boot_resolving = 0;
	if (!r.malloc || !r.free || !r.calloc || !r.realloc)
		boot_die("libember_alloc: no malloc, free, calloc or realloc after this library "
			 "(dlsym RTLD_NEXT); it must be preloaded into a dynamically linked "
			 "program\n");
	real.calloc = r.calloc;
	real.realloc = r.realloc;
	real.posix_memalign = r.posix_memalign;
	real.aligned_alloc = r.aligned_alloc;
	real.memalign = r.memalign;
	real.valloc = r.valloc;
	real.pvalloc = r.pvalloc;
	__atomic_store_n(&real.free, r.free, __ATOMIC_RELEASE);
	__atomic_store_n(&real.malloc, r.malloc, __ATOMIC_RELEASE);
}

/* real.malloc and real.free until the allocator is found: the first call finds it. */
void *boot_malloc(size_t size)
{
	if (!boot_ready())
		return boot_alloc(size, 16);
	return real.malloc(size);
}

void boot_free(void *p)
{
	if (in_boot_arena(p) || !boot_ready())
		return;
	real.free(p);
}

/* Makes real usable and returns true; false only on the thread that is inside dlsym,
 * whose allocations must then come from the arena. Other threads wait for it. */
bool boot_slow(void)
{
	int expect = 0;

	if (boot_resolving)
		return false;
	if (__atomic_compare_exchange_n(&boot_state, &expect, 1, false, __ATOMIC_ACQUIRE,
					__ATOMIC_ACQUIRE)) {
		boot_resolve();
		__atomic_store_n(&boot_state, 2, __ATOMIC_RELEASE);
		return true;
	}
	while (__atomic_load_n(&boot_state, __ATOMIC_ACQUIRE) != 2)
		sched_yield();
	return true;
}
