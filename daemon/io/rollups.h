/* SPDX-License-Identifier: MIT */
/*
 * Rollups for emberd: a thread that, after each stored interval, builds at
 * most one missing rollup (one series' hour, lib/store/rollup.h) of the hours that
 * have completed, on its own connection, so that the sampling loop never
 * waits for it; at start it catches up on the retained history the same way.
 */
#ifndef EMBER_ROLLUPS_H
#define EMBER_ROLLUPS_H

#include <stdint.h>

struct rollups;

/*
 * Starts the builder on data_dir's history. Test only: EMBER_TEST_ROLLUP_SECONDS
 * (1 to 3600) sets a shorter period, recorded in the history (whose rollups of
 * another period are dropped). NULL after a logged warning: emberd runs
 * without rollups (the views read the raw profiles).
 */
struct rollups *rollups_start(const char *data_dir);
/*
 * An interval was stored and the next one started at now_ns: the hours that
 * ended by now_ns - interval_ns are complete; wakes the builder for one.
 */
void rollups_interval(struct rollups *r, int64_t now_ns, int64_t interval_ns);
/* Stops (a build in progress is abandoned between two rows) and frees; NULL is fine. */
void rollups_stop(struct rollups *r);

#endif
