/* SPDX-License-Identifier: MIT */
/*
 * Storing the interval's profiles, and what emberd does when it cannot: a
 * damaged history is moved aside for a fresh one, a full one is pruned to
 * make room, and what still fails is kept in the backlog (memory, bounded by
 * [daemon] store_backlog) until storing works again; the failures are logged
 * once when they start and end, and counted for the status file.
 */
#ifndef EMBER_STORE_H
#define EMBER_STORE_H

#include <stdint.h>

#include "config.h"
#include "history.h"
#include "statusfile.h"

struct store;

struct store *store_open(struct history *h, const struct ember_config *cfg);
/*
 * Writes what the backlog holds, oldest first, while storing works; called
 * before an interval's stores, so that profiles land in their order.
 */
void store_flush(struct store *s);
/*
 * One of the interval's profiles (copied): held for store_end_interval(),
 * 0; while storing fails, tried now: 0 stored, 1 kept in the backlog (or
 * dropped from it, counted), -errno refused input.
 */
int store_put(struct store *s, const struct history_meta *m, const uint8_t *pprof, size_t len);
/*
 * After an interval's store_put()s: writes what they held in one
 * transaction (one by one where that fails: the failures kept in the
 * backlog), and logs what this interval could not store. -EIO when some
 * profile was not stored.
 */
int store_end_interval(struct store *s);
/* A prune or another reader said the file is damaged: moved aside as a store would. */
void store_damaged(struct store *s, const char *why);
/*
 * Once an hour, a quick check (bounded) on a fresh connection: a damaged
 * page the writer has cached is found before a store trips on it.
 */
void store_check(struct store *s);
/* Profiles written since the start (store_end_interval(), store_flush()). */
uint64_t store_stored(const struct store *s);
void store_status(const struct store *s, struct status_store *out);
/* A last flush, then logs what could not be stored (a stop), and frees. Accepts NULL. */
void store_close(struct store *s);

#endif
