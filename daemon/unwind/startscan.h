/* SPDX-License-Identifier: MIT */
/*
 * Processes already running when emberd starts: those that ran while it set
 * up are handed to the unwinder before the samplers start, so that their first
 * samples are walked with their tables instead of waiting for them in the
 * deferred walks, whose budget a whole host's first second overflows.
 */
#ifndef EMBER_STARTSCAN_H
#define EMBER_STARTSCAN_H

#include <stddef.h>

#include "unwinder.h"

struct startscan;

/* The CPU time of every process now, from /proc. NULL with errno set. */
struct startscan *startscan_begin(void);
/*
 * Adds to u every user process but emberd that ran since startscan_begin()
 * (its CPU time grew, or it started since and has some) or runs now; how many.
 * Idle ones are left to their first sample: their tables could fill the cap.
 */
size_t startscan_load(const struct startscan *s, struct unwinder *u);
void startscan_free(struct startscan *s);

#endif
