// SPDX-License-Identifier: MIT
/*
 * The host's view of the unwind rows map (hostrows.h): block indexes by table
 * id, and a direct-mapped cache of blocks, under one mutex (the unwinder adds
 * and drops tables on its thread, the deferred walks search on theirs).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "hostrows.h"
#include "uwalk.h"

#define N EMBER_ROWS_PER_BLOCK

/* A loaded table: where its rows lie, and the first pc of each of its blocks. */
struct index {
	uint32_t first, nrows;
	uint32_t *pcs; /* nblocks(nrows) of them; NULL: no table */
};

/* A cached block of the map. */
struct slot {
	uint32_t block;
	struct ember_unwind_row rows[N];
};

struct hostrows {
	pthread_mutex_t mu;
	hostrows_read_fn read;
	void *arg;
	struct index tables[EMBER_UNWIND_TABLES_MAX];
	struct slot *slots[HOSTROWS_SLOTS]; /* NULL: never used */
	bool valid[HOSTROWS_SLOTS];
	struct hostrows_stats st;
	_Atomic uint64_t drops; /* tables dropped since the start (hostrows_drops()) */
};

static uint32_t nblocks(uint32_t nrows)
{
	return (nrows + N - 1) / N;
}

struct hostrows *hostrows_new(hostrows_read_fn read, void *arg)
{
	struct hostrows *h = calloc(1, sizeof(*h));
	int rc;

	if (!h)
		return NULL;
	rc = pthread_mutex_init(&h->mu, NULL);
	if (rc) {
		free(h);
		errno = rc;
		return NULL;
	}
	h->read = read;
	h->arg = arg;
	h->st.bytes = sizeof(*h);
	return h;
}

void hostrows_free(struct hostrows *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < EMBER_UNWIND_TABLES_MAX; i++)
		free(h->tables[i].pcs);
	for (size_t i = 0; i < HOSTROWS_SLOTS; i++)
		free(h->slots[i]);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

/* Under the lock: the cached blocks of rows [first, first + nrows) are no longer valid. */
static void forget_blocks(struct hostrows *h, uint32_t first, uint32_t nrows)
{
	uint32_t lo = first / N, hi = lo + nblocks(nrows);

	for (size_t i = 0; i < HOSTROWS_SLOTS; i++)
		if (h->valid[i] && h->slots[i]->block >= lo && h->slots[i]->block < hi)
			h->valid[i] = false;
}

/* Under the lock: forgets table id, if known. */
static void drop_locked(struct hostrows *h, uint32_t id)
{
	struct index *t = &h->tables[id];

	if (!t->pcs)
		return;
	atomic_fetch_add(&h->drops, 1);
	forget_blocks(h, t->first, t->nrows);
	h->st.bytes -= nblocks(t->nrows) * sizeof(*t->pcs);
	free(t->pcs);
	*t = (struct index){0};
}

int hostrows_add(struct hostrows *h, uint32_t id, uint32_t first,
		 const struct ember_unwind_row *rows, uint32_t nrows)
{
	uint32_t nb = nblocks(nrows);
	uint32_t *pcs;

	if (id >= EMBER_UNWIND_TABLES_MAX || !nrows || first % N)
		return -EINVAL;
	pcs = malloc(nb * sizeof(*pcs));
	if (!pcs)
		return -ENOMEM;
	for (uint32_t b = 0; b < nb; b++)
		pcs[b] = rows[b * N].pc;
	pthread_mutex_lock(&h->mu);
	drop_locked(h, id);
	forget_blocks(h, first, nrows); /* written over: whatever was there before is gone */
	h->tables[id] = (struct index){first, nrows, pcs};
	h->st.bytes += nb * sizeof(*pcs);
	pthread_mutex_unlock(&h->mu);
	return 0;
}

void hostrows_drop(struct hostrows *h, uint32_t id)
{
	if (id >= EMBER_UNWIND_TABLES_MAX)
		return;
	pthread_mutex_lock(&h->mu);
	drop_locked(h, id);
	pthread_mutex_unlock(&h->mu);
}

uint64_t hostrows_drops(struct hostrows *h)
{
	return atomic_load(&h->drops);
}

/* The last of a table's blocks whose first pc is <= pc, or -1 (pc before its first row). */
static int64_t block_of(const struct index *t, uint64_t pc)
{
	uint32_t lo = 0, hi = nblocks(t->nrows);

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (t->pcs[mid] <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (int64_t)lo - 1;
}

/* Under the lock: the rows of block, cached or read (NULL when it cannot be). */
static const struct ember_unwind_row *block_rows(struct hostrows *h, uint32_t block)
{
	size_t i = block % HOSTROWS_SLOTS;
	struct slot *s = h->slots[i];

	if (s && h->valid[i] && s->block == block)
		return s->rows;
	if (!s) {
		s = malloc(sizeof(*s));
		if (!s)
			return NULL;
		h->slots[i] = s;
		h->st.bytes += sizeof(*s);
	}
	h->valid[i] = false;
	h->st.reads++;
	if (!h->read(h->arg, block, s->rows)) {
		h->st.failed++;
		return NULL;
	}
	s->block = block;
	h->valid[i] = true;
	return s->rows;
}

static bool mem_row(void *arg, uint32_t i, struct ember_unwind_row *out)
{
	*out = ((const struct ember_unwind_row *)arg)[i];
	return true;
}

bool hostrows_find(struct hostrows *h, uint32_t id, uint64_t pc, struct ember_unwind_row *out)
{
	const struct ember_unwind_row *rows;
	const struct index *t;
	uint64_t lo, hi;
	int64_t b;
	bool found = false;

	if (id >= EMBER_UNWIND_TABLES_MAX)
		return false;
	pthread_mutex_lock(&h->mu);
	h->st.finds++;
	t = &h->tables[id];
	b = t->pcs ? block_of(t, pc) : -1;
	rows = b >= 0 ? block_rows(h, t->first / N + (uint32_t)b) : NULL;
	/* within the block, the walk's own search (the last block may be partly filled) */
	if (rows) {
		uint32_t n = t->nrows - (uint32_t)b * N < N ? t->nrows - (uint32_t)b * N : N;

		found = uwalk_search(n, mem_row, (void *)rows, pc, out, &lo, &hi);
	}
	pthread_mutex_unlock(&h->mu);
	return found;
}

void hostrows_stats(struct hostrows *h, struct hostrows_stats *out)
{
	pthread_mutex_lock(&h->mu);
	*out = h->st;
	pthread_mutex_unlock(&h->mu);
}
