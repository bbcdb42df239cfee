/* SPDX-License-Identifier: MIT */
/*
 * Building rollups: the raw profiles of one series and one period merged into
 * one pprof (lib/pprof.h's pprof_merge, so samples keep their pid and comm
 * labels) and stored as a local rollup row (lib/history.h).
 */
#ifndef EMBER_ROLLUP_H
#define EMBER_ROLLUP_H

#include <stdbool.h>
#include <stdint.h>

#include "history.h"

/* What one build did. */
struct rollup_result {
	struct history_series series;	/* owned; rollup_result_free() */
	int64_t period_start;
	uint32_t profiles;		/* raw rows merged */
	uint32_t skipped;		/* raw rows that did not decode or merge */
	uint64_t samples;		/* the rollup's sample count */
	bool stored;			/* false: no raw row of it could be merged */
};

void rollup_result_free(struct rollup_result *r);

/*
 * Merges the raw rows of series s that started in [period_start, + period)
 * and stores their rollup. 0 (r->stored false when none could be merged),
 * -EEXIST when the rollup exists, or a negative errno.
 */
int history_rollup_hour(struct history *h, const struct history_series *s, int64_t period_start,
			struct rollup_result *r);

/*
 * Builds the oldest missing rollup of a whole period that ends at or before
 * before_ns, starting the search at *cursor (0 at first: the whole history),
 * which it moves on so that the next search skips the periods done. 0 with r
 * filled (the caller frees it), -ENOENT when none is missing, or a negative
 * errno. One call merges one series' period: the caller bounds its work by
 * how often it calls.
 */
int history_rollup_next(struct history *h, int64_t before_ns, int64_t *cursor,
			struct rollup_result *r);

#endif
