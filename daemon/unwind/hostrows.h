/* SPDX-License-Identifier: MIT */
/*
 * The host's view of the unwind rows the kernel holds (the unwinder's
 * unwind_rows map), for the deferred walks: per loaded table, the first pc of
 * each of its blocks (1/64 of its size in rows), and a small cache of whole
 * blocks read from the map. A search is a binary search of a table's index in
 * memory, then one block, read at most once while it stays cached: at most one
 * system call, where a search of the map itself took one per halving.
 */
#ifndef EMBER_HOSTROWS_H
#define EMBER_HOSTROWS_H

#include <stdbool.h>
#include <stdint.h>

#include <ember/unwind.h>

/*
 * Blocks kept at once (EMBER_ROWS_PER_BLOCK rows each, ~4 KiB): the hot code
 * of a host's new processes (their libc, ld.so, interpreter, main) lies in a
 * few dozen blocks; a slot is allocated the first time it is used.
 */
#define HOSTROWS_SLOTS 256

/* Reads block (an index of the rows map) into rows: false when it cannot. */
typedef bool (*hostrows_read_fn)(void *arg, uint32_t block,
				 struct ember_unwind_row rows[EMBER_ROWS_PER_BLOCK]);

/* What the searches did since the start. */
struct hostrows_stats {
	uint64_t finds;	 /* searches */
	uint64_t reads;	 /* blocks read through the callback (each a system call) */
	uint64_t failed; /* reads that failed */
	uint64_t bytes;	 /* held now: indexes and cached blocks */
};

struct hostrows;

/* NULL with errno set. read reads a block of the map; thread-safe from here on. */
struct hostrows *hostrows_new(hostrows_read_fn read, void *arg);
void hostrows_free(struct hostrows *h);

/*
 * Table id's rows (nrows of them, sorted) lie from row first (a block's first)
 * on: indexed from rows, the copy the unwinder just wrote. 0 or -ENOMEM (the
 * table is then unknown here: its searches fail).
 */
int hostrows_add(struct hostrows *h, uint32_t id, uint32_t first,
		 const struct ember_unwind_row *rows, uint32_t nrows);
/* Table id is dropped: its blocks may hold another table's rows from now on. */
void hostrows_drop(struct hostrows *h, uint32_t id);
/*
 * Tables dropped since the start (any thread, no lock): a search made while it changed may
 * have found a dropped table's rows missing, or another table's under its id.
 */
uint64_t hostrows_drops(struct hostrows *h);

/*
 * The row of table id in force at pc (the last whose pc <= pc, as
 * uwalk_search() finds it), into *out. False where none covers pc, the table
 * is unknown, or its block could not be read.
 */
bool hostrows_find(struct hostrows *h, uint32_t id, uint64_t pc, struct ember_unwind_row *out);

void hostrows_stats(struct hostrows *h, struct hostrows_stats *out);

#endif
