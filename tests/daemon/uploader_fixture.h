/* SPDX-License-Identifier: MIT */
/*
 * What the uploader's unit suites share: a temporary history with a collector
 * configured, one-sample cpu profiles stored into it, its push counts, and the
 * uploader started on a fake transport.
 */
#ifndef EMBER_TEST_UPLOADER_FIXTURE_H
#define EMBER_TEST_UPLOADER_FIXTURE_H

#include <stdint.h>

#include "config.h"
#include "history.h"
#include "uploader.h"

/* Bound on every wait for the uploader's thread: never reached unless it is stuck. */
#define UPFX_BOUND_NS (30 * NS_PER_SEC)

/* A test's history directory and configuration. */
struct upfx {
	char dir[64];
	struct ember_config cfg;
};

/* A fresh directory under /tmp named after name, and the defaults with a collector URL. */
void upfx_setup(struct upfx *x, const char *name);
/* Frees the configuration and removes the directory. */
void upfx_teardown(struct upfx *x);
/*
 * Stores a cpu profile of app with labels, 10 s from start_ns, holding one
 * stack of samples samples; its id into *id when id is not NULL.
 */
void upfx_store(const struct upfx *x, const char *app, const char *labels, int64_t start_ns,
		int64_t samples, int64_t *id);
/* The history's push counts (pending, sent, rejected, expired). */
struct history_push_counts upfx_counts(const struct upfx *x);
/* The uploader on x's history, pushing through t. */
struct uploader *upfx_start(const struct upfx *x, const struct uploader_transport *t);

#endif /* EMBER_TEST_UPLOADER_FIXTURE_H */
