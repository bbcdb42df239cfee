// SPDX-License-Identifier: MIT
/* The rows map's space among the unwind tables (rowspace.h). */
#include <stdlib.h>

#include "ember/unwind.h"
#include "rowspace.h"

static int cmp_extent(const void *a, const void *b)
{
	const struct rowspace_extent *x = *(const struct rowspace_extent *const *)a;
	const struct rowspace_extent *y = *(const struct rowspace_extent *const *)b;

	return x->first < y->first ? -1 : x->first > y->first;
}

static size_t block_align(size_t row, size_t block)
{
	return (row + block - 1) / block * block;
}

int64_t rowspace_fit(const struct rowspace_extent *const *by_id, size_t ids, size_t cap,
		     size_t block, size_t n)
{
	const struct rowspace_extent *v[EMBER_UNWIND_TABLES_MAX];
	size_t nv = 0, at = 0;

	if (!block)
		return -1;
	for (size_t i = 0; i < ids && nv < EMBER_UNWIND_TABLES_MAX; i++)
		if (by_id[i])
			v[nv++] = by_id[i];
	qsort(v, nv, sizeof(*v), cmp_extent);
	for (size_t i = 0; i < nv; i++) {
		if (v[i]->first >= at && v[i]->first - at >= n)
			return (int64_t)at;
		if (block_align((size_t)v[i]->first + v[i]->nrows, block) > at)
			at = block_align((size_t)v[i]->first + v[i]->nrows, block);
	}
	return at <= cap && cap - at >= n ? (int64_t)at : -1;
}

int64_t rowspace_free_id(const struct rowspace_extent *const *by_id, size_t ids)
{
	for (size_t i = 0; i < ids; i++)
		if (!by_id[i])
			return (int64_t)i;
	return -1;
}

int64_t rowspace_victim(const struct rowspace_extent *const *by_id, size_t ids)
{
	int64_t victim = -1;

	for (size_t i = 0; i < ids; i++) {
		const struct rowspace_extent *e = by_id[i];

		if (e && !e->refs && !e->pinned && (victim < 0 || e->used < by_id[victim]->used))
			victim = (int64_t)i;
	}
	return victim;
}
