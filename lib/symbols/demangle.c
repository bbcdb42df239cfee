// SPDX-License-Identifier: MIT
/*
 * Demangling with libiberty's cplus_demangle (the demangler of binutils and
 * gdb), and a bounded cache so that a hot name is demangled once, not per frame.
 */
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "demangle.h"

/* One name: demangled NULL records that it did not demangle. */
struct dm_entry {
	const char *name; /* mangled: points at text, or at the caller's name in a probe */
	char *demangled;
	char text[];
};

struct demangle_cache {
	void *tree; /* tsearch tree of struct dm_entry, by mangled name */
	size_t bytes, max_bytes;
	size_t n; /* names held */
};

bool demangle_is_mangled(const char *name)
{
	return name[0] == '_' && (name[1] == 'Z' || name[1] == 'R');
}

char *demangle(const char *name)
{
	int style;
	char *out;

	if (!demangle_is_mangled(name) || strnlen(name, DEMANGLE_MAX_IN + 1) > DEMANGLE_MAX_IN) {
		errno = EINVAL;
		return NULL;
	}
	/* Rust legacy names are Itanium names: DMGL_AUTO tries Rust, then C++. */
	style = name[1] == 'R' ? DMGL_RUST : DMGL_AUTO;
	/* Without DMGL_NO_RECURSE_LIMIT, libiberty bounds its recursion on hostile names. */
	out = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | style);
	if (out && strnlen(out, DEMANGLE_MAX_OUT + 1) > DEMANGLE_MAX_OUT) {
		free(out);
		out = NULL;
	}
	if (!out)
		errno = EINVAL;
	return out;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct dm_entry *)a)->name, ((const struct dm_entry *)b)->name);
}

struct demangle_cache *demangle_cache_new(size_t max_bytes)
{
	struct demangle_cache *c = calloc(1, sizeof(*c));

	if (c)
		c->max_bytes = max_bytes;
	return c;
}

static void entry_free(void *p)
{
	struct dm_entry *e = p;

	free(e->demangled);
	free(e);
}

const char *demangle_cache_get(struct demangle_cache *c, const char *name)
{
	struct dm_entry probe = {.name = name}, *e, **slot;
	size_t len;

	if (!demangle_is_mangled(name))
		return NULL;
	len = strnlen(name, DEMANGLE_MAX_IN + 1);
	if (len > DEMANGLE_MAX_IN)
		return NULL;
	slot = tfind(&probe, &c->tree, cmp_entry);
	if (slot)
		return (*slot)->demangled;
	if (c->bytes >= c->max_bytes)
		return NULL;
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return NULL;
	memcpy(e->text, name, len + 1);
	e->name = e->text;
	e->demangled = demangle(name);
	slot = tsearch(e, &c->tree, cmp_entry);
	if (!slot) {
		entry_free(e);
		return NULL;
	}
	/* Three pointers of tree node besides the entry itself. */
	c->n++;
	c->bytes += sizeof(*e) + len + 1 + 3 * sizeof(void *) +
		    (e->demangled ? strlen(e->demangled) + 1 : 0);
	return e->demangled;
}

void demangle_cache_trim(struct demangle_cache *c)
{
	if (c->bytes < c->max_bytes)
		return;
	tdestroy(c->tree, entry_free);
	c->tree = NULL;
	c->bytes = 0;
	c->n = 0;
}

void demangle_cache_set_max(struct demangle_cache *c, size_t max_bytes)
{
	c->max_bytes = max_bytes;
}

size_t demangle_cache_clear(struct demangle_cache *c)
{
	size_t freed = c->bytes;

	tdestroy(c->tree, entry_free);
	c->tree = NULL;
	c->bytes = 0;
	c->n = 0;
	return freed;
}

size_t demangle_cache_count(const struct demangle_cache *c)
{
	return c->n;
}

size_t demangle_cache_max(const struct demangle_cache *c)
{
	return c->max_bytes;
}

size_t demangle_cache_bytes(const struct demangle_cache *c)
{
	return c->bytes;
}

void demangle_cache_free(struct demangle_cache *c)
{
	if (!c)
		return;
	tdestroy(c->tree, entry_free);
	free(c);
}
