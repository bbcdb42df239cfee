// SPDX-License-Identifier: MIT
/* worker.c: wakes are seen, a sleep is not cut short by a wake, stop ends every wait. */
#include <signal.h>
#include <stdbool.h>
#include <string.h>

#include <check.h>

#include "clock.h"
#include "suites.h"
#include "worker.h"

/* Bound on every wait for the worker: far above any scheduling delay, never reached. */
#define BOUND_NS (30 * NS_PER_SEC)

/* Counts the wakes it sees, under the worker's lock, and tells the owner of each. */
struct counter {
	struct worker w;
	int rounds;  /* wakes seen */
	int blocked; /* SIGTERM was blocked on the thread */
	bool ended;
};

static void count(struct worker *w, void *arg)
{
	struct counter *c = arg;
	sigset_t set;

	pthread_sigmask(SIG_BLOCK, NULL, &set);
	worker_lock(w);
	c->blocked = sigismember(&set, SIGTERM);
	while (worker_wait(w, -1)) {
		c->rounds++;
		worker_done(w);
	}
	c->ended = true;
	worker_done(w);
	worker_unlock(w);
}

/* Waits, with the lock held, for the worker to have seen n wakes; false past BOUND_NS. */
static bool wait_rounds(struct counter *c, int n)
{
	int64_t end = mono_ns() + BOUND_NS;

	while (c->rounds < n && mono_ns() < end)
		worker_wait_done(&c->w);
	return c->rounds >= n;
}

START_TEST(wakes_and_stop)
{
	struct counter c;

	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(worker_init(&c.w), 0);
	ck_assert_int_eq(worker_start(&c.w, "ember-test", count, &c), 0);
	{
		char name[16] = "";

		/* named as asked: top -H and ps -L tell the daemon's threads apart */
		ck_assert_int_eq(pthread_getname_np(c.w.thread, name, sizeof(name)), 0);
		ck_assert_str_eq(name, "ember-test");
	}
	for (int i = 1; i <= 5; i++) {
		worker_lock(&c.w);
		worker_wake_locked(&c.w);
		ck_assert(wait_rounds(&c, i));
		worker_unlock(&c.w);
	}
	worker_wake(&c.w);
	worker_lock(&c.w);
	ck_assert(wait_rounds(&c, 6));
	ck_assert_int_eq(c.blocked, 1);
	ck_assert(!worker_stopping(&c.w));
	worker_unlock(&c.w);
	worker_stop(&c.w);
	ck_assert(c.ended);
	ck_assert_int_eq(c.rounds, 6);
	/* twice, and on a worker never set up: nothing to do */
	worker_stop(&c.w);
	memset(&c, 0, sizeof(c));
	worker_stop(&c.w);
}
END_TEST

/* A timed wait returns by itself; a wake given before the wait is not lost. */
START_TEST(wait_times_out)
{
	struct worker w;
	int64_t t0;

	memset(&w, 0, sizeof(w));
	ck_assert_int_eq(worker_init(&w), 0);
	worker_lock(&w);
	t0 = mono_ns();
	ck_assert(worker_wait(&w, 20 * NS_PER_MS));
	ck_assert_int_ge(mono_ns() - t0, 20 * NS_PER_MS);
	worker_wake_locked(&w);
	t0 = mono_ns();
	ck_assert(worker_wait(&w, BOUND_NS));
	ck_assert_int_lt(mono_ns() - t0, BOUND_NS);
	ck_assert(!w.woken);
	worker_unlock(&w);
	worker_stop(&w);
}
END_TEST

/* Sleeps 50 ms through a wake, then sleeps until stopped. */
struct sleeper {
	struct worker w;
	int64_t slept_ns;
	bool first_done, second_ok;
};

static void sleep_twice(struct worker *w, void *arg)
{
	struct sleeper *s = arg;
	int64_t t0 = mono_ns();

	worker_lock(w);
	worker_sleep(w, 50 * NS_PER_MS);
	s->slept_ns = mono_ns() - t0;
	s->first_done = true;
	worker_done(w);
	s->second_ok = worker_sleep(w, 3600 * NS_PER_SEC);
	worker_unlock(w);
}

START_TEST(sleep_not_cut_by_wake)
{
	struct sleeper s;
	int64_t end = mono_ns() + BOUND_NS, t0;

	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(worker_init(&s.w), 0);
	ck_assert_int_eq(worker_start(&s.w, NULL, sleep_twice, &s), 0);
	worker_wake(&s.w);
	worker_lock(&s.w);
	while (!s.first_done && mono_ns() < end)
		worker_wait_done(&s.w);
	ck_assert(s.first_done);
	ck_assert_int_ge(s.slept_ns, 50 * NS_PER_MS);
	worker_unlock(&s.w);
	/* the hour-long sleep ends at the stop, and says so */
	t0 = mono_ns();
	worker_stop(&s.w);
	ck_assert_int_lt(mono_ns() - t0, BOUND_NS);
	ck_assert(!s.second_ok);
}
END_TEST

Suite *worker_suite(void)
{
	Suite *s = suite_create("worker");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, wakes_and_stop);
	tcase_add_test(tc, wait_times_out);
	tcase_add_test(tc, sleep_not_cut_by_wake);
	suite_add_tcase(s, tc);
	return s;
}
