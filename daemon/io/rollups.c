// SPDX-License-Identifier: MIT
/* emberd's rollup builder: one missing rollup per stored interval, on its own thread. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "history.h"
#include "log.h"
#include "rollup.h"
#include "rollups.h"
#include "worker.h"

/* A rollup built this many periods or more before the newest complete one means a catch-up. */
#define CATCH_UP_PERIODS 2
/*
 * The builder's page cache: it reads each raw profile once an hour, and a
 * probe of the index per interval; at the default 512 KiB, the probes' pages
 * filled it within ten minutes of the first build and stayed.
 */
#define ROLLUP_CACHE_KIB 64
/* The test-only override of the rollup period, in seconds. */
#define TEST_PERIOD_ENV "EMBER_TEST_ROLLUP_SECONDS"

/* The builder thread and what the sampling thread tells it, under the worker's lock. */
struct rollups {
	struct worker worker; /* its stop also abandons a build */
	struct history *h;    /* the thread's own writer connection */
	int64_t before_ns;    /* hours ending by then are complete; a wake builds one */
	int64_t period;	      /* of the rollups, fixed at the start */
	/*
	 * The before_ns of the last wake that found nothing to build, or -1: until
	 * a later one crosses into another period, a wake would find nothing
	 * either, and an idle daemon's wakeups are most of its cost.
	 */
	int64_t idle_before;
	/* the thread's own */
	struct rollup_cursor cursor; /* where history_rollup_next() goes on */
	bool catching_up;	     /* logged "catching up", not yet "caught up" */
	bool holding;		     /* built since the last history_release_memory() */
	uint64_t built;		     /* during the catch-up */
};

/* Says once when a catch-up of old hours starts and once when it ends. */
static void report(struct rollups *r, const struct rollup_result *res, int64_t before_ns)
{
	int64_t period = history_rollup_period(r->h);
	char when[40];

	format_time(res->period_start, when, sizeof(when));
	if (!r->catching_up && res->period_start + CATCH_UP_PERIODS * period < before_ns) {
		log_info("rollups: catching up from %s, one hour of one app per interval", when);
		r->catching_up = true;
		r->built = 0;
	}
	log_debug("rollup of %s app \"%s\" at %s: %" PRIu32 " profiles, %" PRIu64 " samples%s%s",
		  res->series.type, res->series.app, when, res->profiles, res->samples,
		  res->skipped ? " (some corrupt ones skipped)" : "",
		  res->stored ? "" : ": none merged, not stored");
	r->built += res->stored;
}

/* Builds at most one rollup. 0, or -ENOENT when nothing was left to build (or an error). */
static int build_one(struct rollups *r, int64_t before_ns)
{
	struct rollup_result res;
	int ret;

	ret = history_rollup_next(r->h, before_ns, &r->cursor, &r->worker.stop, &res);
	if (!ret) {
		report(r, &res, before_ns);
		rollup_result_free(&res);
		r->holding = true;
		return 0;
	}
	/*
	 * Nothing left to build until the next hour: the compression context
	 * (a MiB and more, sized by the hour's merged profile) and the pages
	 * the build read are not kept until then.
	 */
	if (ret == -ENOENT && r->holding) {
		history_release_memory(r->h);
		r->holding = false;
	}
	if (ret == -ENOENT && r->catching_up) {
		log_info("rollups: caught up (%" PRIu64 " built)", r->built);
		r->catching_up = false;
	} else if (ret != -ENOENT && ret != -ECANCELED) {
		log_warnx("cannot build a rollup in %s: %s", history_path(r->h), strerror(-ret));
	}
	return ret;
}

/* One build per wake; wakes that come during a build make one more. */
static void run(struct worker *w, void *arg)
{
	struct rollups *r = arg;
	int64_t before;
	int ret;

	worker_lock(w);
	while (worker_wait(w, -1)) {
		before = r->before_ns;
		worker_unlock(w);
		ret = build_one(r, before);
		worker_lock(w);
		/* an error is no reason to stop trying: only "nothing left" waits for a period */
		r->idle_before = ret == -ENOENT ? before : -1;
	}
	worker_unlock(w);
}

/* The period: the default, or the test's; recorded in the history either way. */
static int set_period(struct history *h)
{
	const char *env = getenv(TEST_PERIOD_ENV);
	int64_t period = HISTORY_ROLLUP_PERIOD_NS;
	char *end;
	long v;

	if (env && *env) {
		errno = 0;
		v = strtol(env, &end, 10);
		if (errno || *end || v < 1 || v > HISTORY_ROLLUP_PERIOD_NS / NS_PER_SEC) {
			log_warnx("%s=%s: not a number of seconds from 1 to 3600; ignored",
				  TEST_PERIOD_ENV, env);
		} else {
			period = v * NS_PER_SEC;
			log_warnx("%s: rollups of %ld s (test only)", TEST_PERIOD_ENV, v);
		}
	}
	return history_set_rollup_period(h, period);
}

struct rollups *rollups_start(const char *data_dir)
{
	struct rollups *r = calloc(1, sizeof(*r));
	const char *err = NULL;
	int ret;

	if (!r) {
		log_warnx("rollups: out of memory; the views will read raw profiles");
		return NULL;
	}
	r->h = history_open(data_dir, false, &err);
	ret = r->h ? set_period(r->h) : -errno;
	if (!ret)
		ret = history_set_cache_kib(r->h, ROLLUP_CACHE_KIB);
	r->period = r->h ? history_rollup_period(r->h) : 0;
	r->idle_before = -1;
	if (!ret)
		ret = worker_init(&r->worker);
	if (!ret) {
		ret = worker_start(&r->worker, "ember-rollups", run, r);
		if (ret)
			worker_stop(&r->worker);
	}
	if (ret) {
		log_warnx("rollups: cannot start (%s); the views will read raw profiles",
			  err ? err : strerror(-ret));
		history_close(r->h);
		free(r);
		return NULL;
	}
	return r;
}

void rollups_interval(struct rollups *r, int64_t now_ns, int64_t interval_ns)
{
	if (!r)
		return;
	worker_lock(&r->worker);
	r->before_ns = now_ns - interval_ns;
	if (r->idle_before < 0 || r->period <= 0 || r->before_ns < 0 ||
	    r->before_ns / r->period > r->idle_before / r->period)
		worker_wake_locked(&r->worker);
	worker_unlock(&r->worker);
}

void rollups_stop(struct rollups *r)
{
	if (!r)
		return;
	worker_stop(&r->worker);
	history_close(r->h);
	free(r);
}
