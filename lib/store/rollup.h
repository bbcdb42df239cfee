/* SPDX-License-Identifier: MIT */
/*
 * Building rollups: the raw profiles of one series and one period merged into
 * one pprof (lib/profile/pprof.h's pprof_merge, so samples keep their pid and comm
 * labels) and stored as a local rollup row (lib/store/history.h). The row starts at
 * the period's start; the pprof's time_nanos and duration_nanos are the span
 * of the raw rows merged (their first start, their last end).
 */
#ifndef EMBER_ROLLUP_H
#define EMBER_ROLLUP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "history.h"

/* What one build did. */
struct rollup_result {
	struct history_series series; /* owned; rollup_result_free() */
	int64_t period_start;
	uint32_t profiles; /* raw rows merged */
	uint32_t skipped;  /* raw rows that did not decode or merge */
	uint64_t samples;  /* the rollup's sample count */
	bool stored;	   /* false: no raw row of it could be merged */
};

void rollup_result_free(struct rollup_result *r);

/*
 * Merges the raw rows of series s that started in [period_start, + period)
 * and stores their rollup. 0 (r->stored false when none could be merged),
 * -EEXIST when the rollup exists, -ECANCELED as soon as *cancel (may be NULL)
 * is set, or a negative errno.
 */
int history_rollup_hour(struct history *h, const struct history_series *s, int64_t period_start,
			const atomic_bool *cancel, struct rollup_result *r);

/*
 * Where history_rollup_next() goes on: every period before from is done, and
 * the first skip missing rollups of period from cannot be built (none of their
 * rows merges). Zero at first: the whole history.
 */
struct rollup_cursor {
	int64_t from;
	uint32_t skip;
};

/*
 * Builds the oldest missing rollup of a whole period that ends at or before
 * before_ns, from the cursor c, which it moves on. 0 with r filled (the
 * caller frees it; r->stored false when none of its rows merged: it stays
 * missing, and c skips it), -ENOENT when none is missing, or a negative errno.
 * One call merges one series' period: the caller bounds its work by how often
 * it calls.
 */
int history_rollup_next(struct history *h, int64_t before_ns, struct rollup_cursor *c,
			const atomic_bool *cancel, struct rollup_result *r);

#endif
