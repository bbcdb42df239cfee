/* SPDX-License-Identifier: MIT */
/* History retention: emberd's side of history_prune(), run after each stored interval. */
#ifndef EMBER_RETENTION_H
#define EMBER_RETENTION_H

#include "config.h"
#include "history.h"

/*
 * Logs what opening the history did once to an older file (the VACUUM of
 * schema v3), and a damaged file it moved aside.
 */
void retention_opened(struct history *h);

/*
 * Deletes what is past cfg's retention or max_size; profiles waiting to be
 * pushed are kept while a collector is configured. Logs what went, once per
 * prune that deleted something, and warns once when only unsent profiles
 * keep the history over max_size.
 */
/* 0, or the prune's error (-EBADMSG: the file is damaged). */
int retention_prune(struct history *h, const struct ember_config *cfg);

/*
 * A store failed for room: deletes the oldest profiles that may go (sent,
 * rejected or expired ones while a collector is configured; any otherwise)
 * until about twice need is free inside the file. 0 when it deleted some,
 * -ENOSPC when nothing could go, or the prune's error.
 */
int retention_make_room(struct history *h, const struct ember_config *cfg, uint64_t need);

#endif
