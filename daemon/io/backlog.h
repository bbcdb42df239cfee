/* SPDX-License-Identifier: MIT */
/*
 * The store backlog: profiles the history could not take (a full disk, a
 * failing file), kept in memory up to a cap in bytes and written, oldest
 * first, when storing works again. Past the cap the oldest go, counted. Pure:
 * no I/O, no logging (unit-tested).
 */
#ifndef EMBER_BACKLOG_H
#define EMBER_BACKLOG_H

#include <stddef.h>
#include <stdint.h>

#include "history.h"

struct backlog_entry {
	struct backlog_entry *next;
	struct history_meta meta; /* its strings point into the entry */
	uint8_t *pprof;
	size_t len;
	uint64_t bytes; /* what it costs against the cap */
};

struct backlog {
	struct backlog_entry *head, *tail; /* oldest first */
	uint64_t n, bytes, cap;
	uint64_t dropped, dropped_bytes; /* the oldest, gone to make room, since the start */
};

void backlog_init(struct backlog *b, uint64_t cap);
/* A new cap (a reload): the oldest go until the rest fits. */
void backlog_set_cap(struct backlog *b, uint64_t cap);
/*
 * Keeps a copy of a profile, dropping the oldest (counted) until it fits.
 * -E2BIG when it alone is over the cap (counted as dropped), -ENOMEM.
 */
int backlog_push(struct backlog *b, const struct history_meta *m, const uint8_t *pprof, size_t len);
/* The oldest profile, or NULL. */
const struct backlog_entry *backlog_peek(const struct backlog *b);
/* Forgets the oldest one (stored now). */
void backlog_pop(struct backlog *b);
void backlog_free(struct backlog *b);

#endif
