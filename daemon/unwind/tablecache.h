/* SPDX-License-Identifier: MIT */
/*
 * The unwind tables the unwinder knows: by file identity (one table per
 * binary, shared by every process that maps it) and by id in the tables map,
 * with negative entries for binaries that have none, forgotten past a cap.
 * Pure: the unwinder builds, loads and evicts; this finds and remembers.
 */
#ifndef EMBER_TABLECACHE_H
#define EMBER_TABLECACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember/runtime.h"
#include "ember/unwind.h"
#include "mapfile.h"
#include "rowspace.h"
#include "unwtab.h"

/* Binaries remembered as having no table, so that they are not tried again and again. */
#define TABLECACHE_NEGATIVE_MAX 16384

/* An id no loaded table has: a negative entry's, or the vDSO's before it is built. */
#define NO_ID UINT32_MAX

/* One binary's table, or a negative entry (id == NO_ID) saying why it has none. */
struct table {
	struct file_key key;
	bool vdso;		    /* the vDSO's table: not in the tree, never evicted */
	uint32_t id;		    /* index in the tables map, or NO_ID */
	struct rowspace_extent ext; /* its rows in the rows map, its uses (rowspace.h) */
	uint64_t base;		    /* ELF vaddr of row pc 0 */
	struct unwtab_seg segs[UNWTAB_MAX_SEGS];
	size_t nsegs;
	enum unwtab_err err;	 /* why there is no table */
	struct ember_rt_proc rt; /* the runtime the binary holds (ELF vaddrs), if any */
};

/* The unwinder thread's tables: nobody else touches them. */
struct tablecache {
	void *tree;				      /* tsearch tree of the loaded tables by key */
	void *negative;				      /* tsearch tree of the negative entries */
	struct table *by_id[EMBER_UNWIND_TABLES_MAX]; /* the loaded ones, the vDSO's too */
	size_t negatives; /* negative entries in their tree since it last forgot them */
};

/* The table (loaded, or negative) of the file key names, or NULL. */
struct table *tablecache_find(struct tablecache *c, const struct file_key *key);
/*
 * Remembers t by its key; a negative entry after forgetting every other one
 * if there are TABLECACHE_NEGATIVE_MAX of them. A loaded t must have been
 * placed (tablecache_place()). false on ENOMEM: the caller evicts or frees t.
 */
bool tablecache_insert(struct tablecache *c, struct table *t);
/* Names loaded t by its id (t->id), for eviction and the vDSO's, which is in no tree. */
void tablecache_place(struct tablecache *c, struct table *t);
/* Forgets loaded t, by key and by id; the caller frees it. */
void tablecache_remove(struct tablecache *c, struct table *t);
/* Frees every table but the vDSO's (the caller's). */
void tablecache_free(struct tablecache *c);

#endif
