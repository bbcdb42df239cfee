/* SPDX-License-Identifier: MIT */
/* History retention: emberd's side of history_prune(), run after each stored interval. */
#ifndef EMBER_RETENTION_H
#define EMBER_RETENTION_H

#include <stdbool.h>
#include <stdint.h>

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
 * Room on the data directory's file system: stores leave the headroom free
 * (half the reserve: 64 to 512 KiB), so that a full disk still lets the
 * uploader mark profiles sent (which may then go) and a prune run.
 */
uint64_t retention_headroom(const struct ember_config *cfg);
/*
 * What stores leave free: the headroom, and the reserve's size while it is
 * given back (a store never takes the room the reserve needs).
 */
uint64_t retention_keep_free(const struct ember_config *cfg);
/* Bytes free on the data directory's file system; UINT64_MAX when unknown. */
uint64_t retention_free_bytes(const struct ember_config *cfg);

/* What making room did. */
struct room_made {
	uint64_t profiles, bytes; /* deleted */
	uint64_t pending;	  /* nothing could go: unsent profiles within retention */
};

/*
 * A store of need bytes would take the file system under the headroom:
 * checkpoints the WAL into the file, and if that is not enough, gives the
 * reserve back and deletes the oldest profiles that may go (with a
 * collector: sent, rejected or expired ones; without: those past retention),
 * about half the reserve's worth, handing the pages back to the file system.
 * 0 when there is room again (out: what was deleted, logged), -ENOSPC when
 * nothing may go (out->pending: the unsent profiles kept), or the prune's
 * error.
 */
int retention_make_room(struct history *h, const struct ember_config *cfg, uint64_t need,
			struct room_made *out);

#endif
