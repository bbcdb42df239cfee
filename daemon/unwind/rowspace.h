/* SPDX-License-Identifier: MIT */
/*
 * The rows map's space, as the unwinder shares it out among binaries' tables:
 * where a new table's rows go (first fit among the loaded tables, each from a
 * block's start, so that no two share a block), which id it takes, and which
 * table makes room when none is left (the least recently used one that no
 * process uses). Pure: it reads the tables' extents; the unwinder evicts.
 */
#ifndef EMBER_ROWSPACE_H
#define EMBER_ROWSPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One loaded table, as the row space sees it. */
struct rowspace_extent {
	uint32_t first, nrows; /* its rows in the rows map: [first, first + nrows) */
	uint64_t used;	       /* tick of its last use: the least recent goes first */
	uint32_t refs;	       /* processes whose mappings use it: not evicted while any */
	bool pinned;	       /* never evicted (the vDSO's) */
};

/*
 * The first row, a multiple of block, from which n rows fit below cap among
 * the extents of by_id[0..ids) (NULL: a free id), or -1.
 */
int64_t rowspace_fit(const struct rowspace_extent *const *by_id, size_t ids, size_t cap,
		     size_t block, size_t n);
/* The lowest free id, or -1. */
int64_t rowspace_free_id(const struct rowspace_extent *const *by_id, size_t ids);
/* The id of the table to evict for room: unused, not pinned, least recently used; or -1. */
int64_t rowspace_victim(const struct rowspace_extent *const *by_id, size_t ids);

#endif
