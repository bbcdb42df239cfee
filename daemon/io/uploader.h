/* SPDX-License-Identifier: MIT */
/*
 * The uploader: a thread of its own, with its own history connection and one
 * keep-alive libcurl handle, pushing stored profiles to the collector.
 */
#ifndef EMBER_UPLOADER_H
#define EMBER_UPLOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "push.h"

struct uploader;

/* What `emberctl status` shows through the control socket. */
struct uploader_stats {
	uint64_t sent, rejected, expired, retries; /* since start */
	int64_t last_success_ns;		   /* CLOCK_REALTIME; 0: none yet */
	long last_status;			   /* HTTP status of the last failure */
	char last_error[256];
	bool outage; /* retrying since outage_since_ns */
	int64_t outage_since_ns;
	uint64_t pending;			 /* in the history, at the last push */
	uint64_t labels_dropped;		 /* labels not sent (logged once each) */
	uint64_t samples_merged;		 /* merged once sample labels went */
	uint64_t profiles_folded, stacks_folded; /* fitted to the size limits */
	int64_t oldest_pending_ns;		 /* its start; 0 when none */
	uint64_t unmarked; /* verdicts the history could not take yet (a full disk) */
};

/*
 * Verdicts (sent, rejected, expired) the history cannot take (a full disk)
 * are kept in memory, at most this many, and their profiles are not pushed
 * again; with that many kept, pushing pauses until they are written.
 */
#define UPLOADER_UNMARKED_MAX 256

/*
 * Starts the thread; a negative errno and a one-line cause in err when the
 * configuration cannot work (an unreadable secret file, no collector url).
 * Call it after the signals the daemon handles are blocked, or before any:
 * the thread blocks all signals itself.
 */
int uploader_start(const struct collector_config *cc, const char *data_dir, struct uploader **out,
		   char *err, size_t errlen);

/* How pushes go out: libcurl unless a test supplies its own (check_uploader's fake collector). */
struct uploader_transport {
	/* One exchange: fills r (status or curl_code, body); -EINTR when the daemon stopped it. */
	int (*send)(void *ctx, const char *url, const uint8_t *body, size_t len,
		    struct push_reply *r);
	/* The wait before retry n (1, 2, ...); NULL: push_backoff_ns() with jitter. */
	int64_t (*backoff_ns)(void *ctx, unsigned int retry);
	void *ctx;
};

/* uploader_start() with t's transport; NULL: libcurl's. */
int uploader_start_with(const struct collector_config *cc, const char *data_dir,
			const struct uploader_transport *t, struct uploader **out, char *err,
			size_t errlen);
/* A profile was stored: push soon (never cuts a backoff short). */
void uploader_wake(struct uploader *u);
/* Stops and joins; an in-flight request is aborted and its profile stays pending. */
void uploader_stop(struct uploader *u);
void uploader_stats(struct uploader *u, struct uploader_stats *st);

#endif
