// SPDX-License-Identifier: MIT
/* emberd's rollup builder: one missing rollup per stored interval, on its own thread. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "history.h"
#include "log.h"
#include "rollup.h"
#include "rollups.h"
#include "util.h"

/* A rollup built this many periods or more before the newest complete one means a catch-up. */
#define CATCH_UP_PERIODS 2
/* The test-only override of the rollup period, in seconds. */
#define TEST_PERIOD_ENV "EMBER_TEST_ROLLUP_SECONDS"

/* The builder thread and what the sampling thread tells it; mu guards the fields below it. */
struct rollups {
	pthread_t thread;
	struct history *h; /* the thread's own writer connection */
	atomic_bool cancel; /* set by rollups_stop(): abandon a build */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int64_t before_ns; /* hours ending by then are complete */
	uint64_t wakes; /* intervals signalled; the thread builds one per wake */
	bool stop;
	/* the thread's own */
	struct rollup_cursor cursor; /* where history_rollup_next() goes on */
	bool catching_up; /* logged "catching up", not yet "caught up" */
	uint64_t built; /* during the catch-up */
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

/* Builds at most one rollup. */
static void build_one(struct rollups *r, int64_t before_ns)
{
	struct rollup_result res;
	int ret;

	ret = history_rollup_next(r->h, before_ns, &r->cursor, &r->cancel, &res);
	if (!ret) {
		report(r, &res, before_ns);
		rollup_result_free(&res);
		return;
	}
	if (ret == -ENOENT && r->catching_up) {
		log_info("rollups: caught up (%" PRIu64 " built)", r->built);
		r->catching_up = false;
	} else if (ret != -ENOENT && ret != -ECANCELED) {
		log_warnx("cannot build a rollup in %s: %s", history_path(r->h), strerror(-ret));
	}
}

static void *run(void *arg)
{
	struct rollups *r = arg;
	uint64_t done = 0;
	int64_t before;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		while (!r->stop && r->wakes == done)
			pthread_cond_wait(&r->cv, &r->mu);
		if (r->stop)
			break;
		done = r->wakes;
		before = r->before_ns;
		pthread_mutex_unlock(&r->mu);
		build_one(r, before);
		pthread_mutex_lock(&r->mu);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* The thread takes no signal: emberd's main loop reads them from a signalfd. */
static int start_thread(struct rollups *r)
{
	return thread_start_blocked(&r->thread, run, r);
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
	if (!ret) {
		pthread_mutex_init(&r->mu, NULL);
		pthread_cond_init(&r->cv, NULL);
		ret = start_thread(r);
		if (ret) {
			pthread_cond_destroy(&r->cv);
			pthread_mutex_destroy(&r->mu);
		}
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
	pthread_mutex_lock(&r->mu);
	r->before_ns = now_ns - interval_ns;
	r->wakes++;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

void rollups_stop(struct rollups *r)
{
	if (!r)
		return;
	atomic_store(&r->cancel, true);
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->thread, NULL);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	history_close(r->h);
	free(r);
}
