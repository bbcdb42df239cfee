/* SPDX-License-Identifier: MIT */
/* C++ and Rust (legacy and v0) symbol names made readable with libiberty. */
#ifndef EMBER_DEMANGLE_H
#define EMBER_DEMANGLE_H

#include <stdbool.h>
#include <stddef.h>

/* Longest mangled name handed to the demangler, and longest result kept. */
#define DEMANGLE_MAX_IN 4096
#define DEMANGLE_MAX_OUT 8192

/* True when name looks mangled (Itanium C++ / Rust legacy "_Z", Rust v0 "_R"). */
bool demangle_is_mangled(const char *name);
/*
 * The readable form of name as a malloc'd string; NULL with errno EINVAL when
 * name is not mangled, does not demangle or is out of bounds, ENOMEM.
 */
char *demangle(const char *name);

/*
 * Demangled names remembered by mangled name, so that a hot frame is
 * demangled once. Results stay valid until demangle_cache_trim().
 */
struct demangle_cache;

/* NULL with errno set. max_bytes bounds what the cache holds between trims. */
struct demangle_cache *demangle_cache_new(size_t max_bytes);
void demangle_cache_free(struct demangle_cache *c);
/* The demangled name, or NULL when name is not mangled (or the cache is full). */
const char *demangle_cache_get(struct demangle_cache *c, const char *name);
/* Forgets everything once over the bound: call only when no result is held. */
void demangle_cache_trim(struct demangle_cache *c);
size_t demangle_cache_bytes(const struct demangle_cache *c);
size_t demangle_cache_max(const struct demangle_cache *c);
size_t demangle_cache_count(const struct demangle_cache *c);
void demangle_cache_set_max(struct demangle_cache *c, size_t max_bytes);
/* Forgets everything now (call only when no result is held); the bytes freed. */
size_t demangle_cache_clear(struct demangle_cache *c);

#endif
