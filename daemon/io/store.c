// SPDX-License-Identifier: MIT
/*
 * Storing profiles: retries after moving a damaged history aside or pruning
 * to make room, the backlog for what still fails, and the failure's state
 * for the log, the status file and sd_notify (see store.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backlog.h"
#include "clock.h"
#include "log.h"
#include "retention.h"
#include "store.h"
#include "util.h"

/*
 * How often a second, fresh connection checks the file: the writer's own page
 * cache hides a page damaged on disk until a store needs it. A test sets it
 * shorter (seconds); the check itself is bounded (HISTORY_CHECK_BUDGET_NS).
 */
#define CHECK_PERIOD_NS (3600LL * NS_PER_SEC)
#define TEST_CHECK_ENV "EMBER_TEST_HISTORY_CHECK_SECONDS"

/*
 * A put appends its pages to the WAL: its blob and about this much more (the
 * table's and the indexes' pages), until a checkpoint.
 */
#define PUT_COST (32 * 1024)

struct store {
	struct history *h;
	int64_t check_period_ns, last_check_ns; /* CLOCK_MONOTONIC */
	const struct ember_config *cfg;
	struct backlog backlog;
	/*
	 * The interval's profiles, held (copies) until its end, when one
	 * transaction writes them all (store_end_interval): the pages every put
	 * changes (the table's last leaf, its five indexes) go to the WAL once
	 * an interval, not once a profile. No cap: what the interval drained.
	 */
	struct backlog held;
	uint64_t stored, failed;
	int64_t failing_since_ns, last_error_ns;
	int last_err;
	char last_error[256];
	bool made_room;		       /* this interval tried to make room once already */
	uint64_t room;		       /* free on the file system, less what stores took since */
	bool room_said;		       /* "nothing may go" was logged in this failure */
	uint64_t pruned, pruned_bytes; /* deleted to make room, since the start */
	/* this interval's failures, for its one log line */
	uint64_t interval_failed, dropped_before;
	uint64_t damaged;
	char damaged_moved_to[512];
};

struct store *store_open(struct history *h, const struct ember_config *cfg)
{
	struct store *s = calloc(1, sizeof(*s));
	struct history_recovery r;

	if (!s)
		return NULL;
	s->h = h;
	s->cfg = cfg;
	backlog_init(&s->backlog, cfg->store_backlog);
	backlog_init(&s->held, UINT64_MAX);
	s->check_period_ns = CHECK_PERIOD_NS;
	if (getenv(TEST_CHECK_ENV) && atoi(getenv(TEST_CHECK_ENV)) > 0)
		s->check_period_ns = atoi(getenv(TEST_CHECK_ENV)) * NS_PER_SEC;
	s->last_check_ns = mono_ns();
	history_recovery_info(h, &r); /* the open's check may have moved a damaged file */
	s->damaged = r.moved;
	snprintf(s->damaged_moved_to, sizeof(s->damaged_moved_to), "%s", r.moved_to);
	return s;
}

/* The file is damaged (why): it goes aside, a fresh one takes its place. */
static void recover(struct store *s, const char *why)
{
	struct history_recovery r;
	int ret;

	ret = history_recover(s->h, why);
	history_recovery_info(s->h, &r);
	if (ret) {
		log_err("%s is damaged and cannot be moved aside: %s", history_path(s->h),
			strerror(-ret));
		return;
	}
	if (!r.moved)
		return; /* another handle of emberd moved it already */
	s->damaged++;
	snprintf(s->damaged_moved_to, sizeof(s->damaged_moved_to), "%s", r.moved_to);
	log_err("%s is damaged (%s): moved to %s/ with its -wal and -shm; "
		"%" PRIu64 " profiles that still read were copied into a fresh history, "
		"%" PRIu64 " could not be read%s",
		history_path(s->h), r.why, r.moved_to, r.salvaged, r.unreadable,
		r.salvage_cut ?
			" (copying ran out of time: emberctl --data-dir reads the rest there)" :
			"");
}

/* A store failed for room: what may go goes, counted; said once when nothing may. */
static int make_room(struct store *s, size_t len)
{
	struct room_made r;
	char room[32];
	int ret = retention_make_room(s->h, s->cfg, len + PUT_COST, &r);

	s->pruned += r.profiles;
	s->pruned_bytes += r.bytes;
	if (ret != -ENOSPC || s->room_said)
		return ret;
	s->room_said = true;
	format_bytes(retention_headroom(s->cfg), room, sizeof(room));
	if (s->cfg->collector.url[0])
		log_warnx("nothing may be deleted to make room in %s (stores leave %s free on its "
			  "file system): its %" PRIu64 " profiles not yet pushed to the collector "
			  "are kept (they may go once sent, or expired past [collector] max_age)",
			  history_path(s->h), room, r.pending);
	else
		log_warnx("nothing may be deleted to make room in %s (stores leave %s free on its "
			  "file system): no profile is past retention, and none within it is "
			  "deleted for room",
			  history_path(s->h), room);
	return ret;
}

/*
 * Whether a put of len bytes would take the file system under the headroom:
 * the free bytes are measured at the interval's start, and again only when
 * what the stores took since may have brought them under it.
 */
static bool room_low(struct store *s, size_t len)
{
	uint64_t cost = len + PUT_COST, need = retention_keep_free(s->cfg) + cost;

	if (s->room < need)
		s->room = retention_free_bytes(s->cfg);
	if (s->room < need)
		return true;
	s->room -= cost;
	return false;
}

/*
 * One put, after recovering a damaged file or making room once per interval.
 * Under the headroom, a store is a failure for room without trying: the rest
 * is kept for the uploader's marks (a sent profile may go) and the prune.
 */
static int put(struct store *s, const struct history_meta *m, const uint8_t *pprof, size_t len)
{
	int rc = room_low(s, len) ? -ENOSPC : history_put(s->h, m, pprof, len, NULL);

	if (rc == -EBADMSG) {
		recover(s, "a store failed: database disk image is malformed");
		rc = history_put(s->h, m, pprof, len, NULL);
	}
	if ((rc == -ENOSPC || rc == -EIO) && !s->made_room) {
		s->made_room = true;
		s->room = 0; /* measured again */
		if (!make_room(s, len))
			rc = room_low(s, len) ? -ENOSPC : history_put(s->h, m, pprof, len, NULL);
	}
	return rc;
}

static void note_failure(struct store *s, int rc)
{
	s->failed++;
	s->interval_failed++;
	s->last_error_ns = real_ns();
	if (!s->failing_since_ns) {
		s->failing_since_ns = s->last_error_ns;
		log_err("cannot store profiles in %s: %s; kept in memory (store_backlog %" PRIu64
			" bytes) until storing works again",
			history_path(s->h), strerror(-rc), s->backlog.cap);
	} else if (rc != s->last_err) {
		log_err("cannot store profiles in %s: %s now", history_path(s->h), strerror(-rc));
	}
	s->last_err = rc;
	snprintf(s->last_error, sizeof(s->last_error), "%s: %s", history_path(s->h), strerror(-rc));
}

static void note_success(struct store *s)
{
	char ago[32];

	s->stored++;
	if (!s->failing_since_ns)
		return;
	format_duration(real_ns() - s->failing_since_ns, ago, sizeof(ago));
	log_info("storing in %s works again after %s of failures; %" PRIu64
		 " profiles kept in memory are being written",
		 history_path(s->h), ago, s->backlog.n);
	s->failing_since_ns = 0;
	s->last_err = 0;
	s->room_said = false;
}

void store_flush(struct store *s)
{
	const struct backlog_entry *e;
	uint64_t n = 0;
	int rc;

	s->made_room = false;
	s->room = 0; /* measured at the first store */
	s->interval_failed = 0;
	s->dropped_before = s->backlog.dropped;
	backlog_set_cap(&s->backlog, s->cfg->store_backlog); /* a reload may change it */
	while ((e = backlog_peek(&s->backlog))) {
		rc = put(s, &e->meta, e->pprof, e->len);
		if (rc == -EINVAL || rc == -EFBIG) {
			backlog_pop(&s->backlog); /* never storable: said when it came */
			continue;
		}
		if (rc) {
			note_failure(s, rc);
			break;
		}
		note_success(s);
		backlog_pop(&s->backlog);
		n++;
	}
	if (n)
		log_info("stored %" PRIu64 " profiles kept in memory while storing failed; %" PRIu64
			 " left",
			 n, s->backlog.n);
}

/* One profile stored now: 0, 1 (kept in the backlog, or dropped from it, counted) or -errno. */
static int put_one(struct store *s, const struct history_meta *m, const uint8_t *pprof, size_t len)
{
	int rc = put(s, m, pprof, len);

	if (!rc) {
		note_success(s);
		return 0;
	}
	if (rc == -EINVAL || rc == -EFBIG) {
		log_warnx("cannot store the %s profile of %s: %s", m->type, m->app, strerror(-rc));
		return rc;
	}
	note_failure(s, rc);
	backlog_push(&s->backlog, m, pprof, len); /* a drop is counted there */
	return 1;
}

int store_put(struct store *s, const struct history_meta *m, const uint8_t *pprof, size_t len)
{
	/* while storing works, held for the interval's one transaction; else as it fails */
	if (!s->failing_since_ns && !backlog_push(&s->held, m, pprof, len))
		return 0;
	return put_one(s, m, pprof, len);
}

/*
 * The held profiles in one transaction, if the file system has room for
 * them all: true when they are stored.
 */
static bool put_held_at_once(struct store *s)
{
	struct history_put *v = calloc(s->held.n, sizeof(*v));
	size_t n = 0;
	int rc;

	if (!v)
		return false;
	for (const struct backlog_entry *e = s->held.head; e; e = e->next) {
		if (room_low(s, e->len)) {
			free(v);
			s->room = 0; /* measured again by the puts one by one */
			return false;
		}
		v[n++] = (struct history_put){.meta = e->meta, .pprof = e->pprof, .len = e->len};
	}
	rc = history_put_all(s->h, v, n);
	free(v);
	if (rc) {
		log_debug("storing the interval's %zu profiles at once failed (%s): one by one", n,
			  strerror(-rc));
		s->room = 0;
		return false;
	}
	for (size_t i = 0; i < n; i++)
		note_success(s);
	return true;
}

/*
 * Writes the held profiles: at once, or where that fails one by one as
 * store_put() would have (a damaged file moved aside, room made, the
 * failures kept in the backlog). -EIO when some were not stored.
 */
static int put_held(struct store *s)
{
	const struct backlog_entry *e;
	int ret = 0;

	if (s->held.n && put_held_at_once(s)) {
		backlog_free(&s->held); /* empties it: its cap stays */
		return 0;
	}
	while ((e = backlog_peek(&s->held))) {
		if (put_one(s, &e->meta, e->pprof, e->len))
			ret = -EIO;
		backlog_pop(&s->held);
	}
	return ret;
}

int store_end_interval(struct store *s)
{
	char kept[32], cap[32];
	int ret = put_held(s);
	uint64_t dropped = s->backlog.dropped - s->dropped_before;

	if (!s->interval_failed && !dropped)
		return ret;
	format_bytes(s->backlog.bytes, kept, sizeof(kept));
	format_bytes(s->backlog.cap, cap, sizeof(cap));
	/* one line per interval, no application in it: the rate limiter's summary stays true */
	log_warnx("%" PRIu64 " stores failed this interval (%s); %" PRIu64
		  " profiles kept in memory (%s of store_backlog %s), %" PRIu64
		  " oldest dropped this interval, %" PRIu64 " since the start",
		  s->interval_failed, s->last_error, s->backlog.n, kept, cap, dropped,
		  s->backlog.dropped);
	return ret;
}

void store_damaged(struct store *s, const char *why)
{
	recover(s, why);
}

void store_check(struct store *s)
{
	struct history *ro;
	char why[128] = "";
	bool complete;
	int ret;

	if (mono_ns() - s->last_check_ns < s->check_period_ns)
		return;
	s->last_check_ns = mono_ns();
	ro = history_open(s->cfg->data_dir, true, NULL);
	ret = ro ? history_check(ro, HISTORY_CHECK_BUDGET_NS, &complete, why, sizeof(why)) :
		   (errno == EBADMSG ? -EBADMSG : 0);
	history_close(ro);
	if (ret == -EBADMSG)
		recover(s, why[0] ? why : "the periodic check cannot read it");
}

uint64_t store_stored(const struct store *s)
{
	return s->stored;
}

void store_status(const struct store *s, struct status_store *out)
{
	memset(out, 0, sizeof(*out));
	out->failing = s->failing_since_ns != 0;
	out->failing_since_ns = s->failing_since_ns;
	out->failed = s->failed;
	out->last_error_ns = s->last_error_ns;
	snprintf(out->last_error, sizeof(out->last_error), "%.255s", s->last_error);
	out->backlog = s->backlog.n;
	out->backlog_bytes = s->backlog.bytes;
	out->backlog_cap = s->backlog.cap;
	out->dropped = s->backlog.dropped;
	out->pruned = s->pruned;
	out->pruned_bytes = s->pruned_bytes;
	out->damaged = s->damaged;
	snprintf(out->damaged_moved_to, sizeof(out->damaged_moved_to), "%.255s",
		 s->damaged_moved_to);
}

void store_close(struct store *s)
{
	char kept[32];

	if (!s)
		return;
	if (s->backlog.n)
		store_flush(s);
	put_held(s); /* none: every interval's end writes them */
	format_bytes(s->backlog.bytes, kept, sizeof(kept));
	if (s->backlog.n)
		log_err("stopping with %" PRIu64
			" profiles (%s) that could not be stored in %s (%s): "
			"they are lost",
			s->backlog.n, kept, history_path(s->h), s->last_error);
	if (s->backlog.dropped)
		log_warnx("%" PRIu64 " profiles were dropped from the store backlog (store_backlog "
			  "full) since the start",
			  s->backlog.dropped);
	backlog_free(&s->backlog);
	backlog_free(&s->held);
	free(s);
}
