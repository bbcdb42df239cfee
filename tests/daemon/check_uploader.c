// SPDX-License-Identifier: MIT
/*
 * The uploader's state machine against a fake transport: what it does on 2xx,
 * 4xx, 5xx, 429, timeouts, which backoff it asks for, the queue's order, the
 * expiry of old profiles, and a stop in the middle of a backoff.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "clock.h"
#include "config.h"
#include "history.h"
#include "suites.h"
#include "uploader.h"
#include "uploader_fixture.h"

#define MAX_REPLIES 16
#define MAX_CALLS 64
/* CURLE_OPERATION_TIMEDOUT, without including curl here */
#define CURL_TIMEDOUT 28

/* A scripted collector: replies in order, then 200 for everything. */
struct fake {
	pthread_mutex_t lock;
	struct {
		long status;
		int curl_code;
		const char *body;
	} replies[MAX_REPLIES];
	size_t n_replies, calls;
	size_t body_len[MAX_CALLS]; /* of each request, to tell profiles apart */
	char url[256];
	unsigned int backoffs[MAX_CALLS]; /* the retry numbers asked for */
	size_t n_backoffs;
	int64_t backoff; /* what the fake's backoff returns */
};

static struct fake fake;
static struct upfx fx;

static int fake_send(void *ctx, const char *url, const uint8_t *body, size_t len,
		     struct push_reply *r)
{
	struct fake *f = ctx;

	(void)body;
	pthread_mutex_lock(&f->lock);
	snprintf(f->url, sizeof(f->url), "%s", url);
	if (f->calls < MAX_CALLS)
		f->body_len[f->calls] = len;
	if (f->calls < f->n_replies) {
		r->status = f->replies[f->calls].status;
		r->curl_code = f->replies[f->calls].curl_code;
		r->curl_error = r->curl_code ? "Operation timed out" : "";
		r->body = f->replies[f->calls].body;
		r->body_len = r->body ? strlen(r->body) : 0;
	} else {
		r->status = 200;
	}
	f->calls++;
	pthread_mutex_unlock(&f->lock);
	return 0;
}

static int64_t fake_backoff(void *ctx, unsigned int retry)
{
	struct fake *f = ctx;
	int64_t d;

	pthread_mutex_lock(&f->lock);
	if (f->n_backoffs < MAX_CALLS)
		f->backoffs[f->n_backoffs++] = retry;
	d = f->backoff;
	pthread_mutex_unlock(&f->lock);
	return d;
}

static const struct uploader_transport transport = {
	.send = fake_send,
	.backoff_ns = fake_backoff,
	.ctx = &fake,
};

static void reply(long status, int curl_code, const char *body)
{
	fake.replies[fake.n_replies].status = status;
	fake.replies[fake.n_replies].curl_code = curl_code;
	fake.replies[fake.n_replies].body = body;
	fake.n_replies++;
}

static void setup(void)
{
	memset(&fake, 0, sizeof(fake));
	pthread_mutex_init(&fake.lock, NULL);
	fake.backoff = NS_PER_MS;
	upfx_setup(&fx, "check_uploader");
}

static void teardown(void)
{
	upfx_teardown(&fx);
}

/* Stores a one-sample cpu profile of app that started at start_ns, with samples in it. */
static void store(const char *app, int64_t start_ns, int64_t samples)
{
	upfx_store(&fx, app, "env=test", start_ns, samples, NULL);
}

static struct uploader *start(void)
{
	return upfx_start(&fx, &transport);
}

/* The stats once done(st) holds; fails past UPFX_BOUND_NS. */
static struct uploader_stats wait_for(struct uploader *u,
				      bool (*done)(const struct uploader_stats *))
{
	int64_t end = mono_ns() + UPFX_BOUND_NS;
	struct uploader_stats st;

	for (;;) {
		uploader_stats(u, &st);
		if (done(&st))
			return st;
		ck_assert_msg(mono_ns() < end,
			      "uploader stuck: sent %llu rejected %llu retries %llu",
			      (unsigned long long)st.sent, (unsigned long long)st.rejected,
			      (unsigned long long)st.retries);
		usleep(1000);
	}
}

/* Starts the uploader, waits until done(its stats), stops it: the stats then. */
static struct uploader_stats run(bool (*done)(const struct uploader_stats *))
{
	struct uploader *u = start();
	struct uploader_stats st = wait_for(u, done);

	uploader_stop(u);
	return st;
}

static struct history_push_counts counts(void)
{
	return upfx_counts(&fx);
}

/* What a test expects of the counters and of the fake's requests. */
static void expect(const struct uploader_stats *st, uint64_t sent, uint64_t rejected,
		   uint64_t retries, size_t calls)
{
	ck_assert_uint_eq(st->sent, sent);
	ck_assert_uint_eq(st->rejected, rejected);
	ck_assert_uint_eq(st->retries, retries);
	ck_assert_uint_eq(fake.calls, calls);
	ck_assert_uint_eq(fake.n_backoffs, retries);
}

static bool sent_3(const struct uploader_stats *st)
{
	return st->sent >= 3;
}
static bool sent_1(const struct uploader_stats *st)
{
	return st->sent >= 1;
}
static bool sent_2(const struct uploader_stats *st)
{
	return st->sent >= 2;
}
static bool rejected_1(const struct uploader_stats *st)
{
	return st->rejected >= 1;
}
static bool expired_1(const struct uploader_stats *st)
{
	return st->expired >= 1;
}
static bool retried_1(const struct uploader_stats *st)
{
	return st->retries >= 1;
}

/* 2xx: each profile once, oldest first, to the push path; the queue ends empty. */
START_TEST(sends_in_order)
{
	int64_t t = real_ns() - 60 * NS_PER_SEC;
	struct uploader_stats st;

	store("a", t, 1);
	store("b", t + 10 * NS_PER_SEC, 100);
	store("c", t + 20 * NS_PER_SEC, 10000);
	st = run(sent_3);
	expect(&st, 3, 0, 0, 3);
	ck_assert(!st.outage);
	ck_assert_int_gt(st.last_success_ns, t);
	ck_assert_str_eq(fake.url, "http://collector.invalid:4040/push.v1.PusherService/Push");
	ck_assert_uint_eq(counts().sent, 3);
	ck_assert_uint_eq(counts().pending, 0);
}
END_TEST

/* 5xx, 429 and a timeout are retried with backoffs 1, 2, 3, then the profile goes. */
START_TEST(retries_with_backoff)
{
	struct uploader_stats st;

	reply(503, 0, "unavailable");
	reply(429, 0, NULL);
	reply(0, CURL_TIMEDOUT, NULL);
	store("a", real_ns() - 60 * NS_PER_SEC, 5);
	st = run(sent_1);
	expect(&st, 1, 0, 3, 4);
	for (unsigned int i = 0; i < 3; i++)
		ck_assert_uint_eq(fake.backoffs[i], i + 1);
	/* reachable again: the outage is over */
	ck_assert(!st.outage);
	ck_assert_int_eq(st.outage_since_ns, 0);
	ck_assert_uint_eq(counts().sent, 1);
}
END_TEST

/* 4xx (and 501) are rejected for good, with the collector's message, and the queue goes on. */
START_TEST(rejects_4xx)
{
	struct uploader_stats st;
	int64_t t = real_ns() - 60 * NS_PER_SEC;

	reply(400, 0, "{\"code\":\"invalid_argument\",\"message\":\"bad labels\"}");
	reply(501, 0, NULL);
	store("a", t, 1);
	store("b", t + 10 * NS_PER_SEC, 1);
	store("c", t + 20 * NS_PER_SEC, 1);
	st = run(sent_1);
	expect(&st, 1, 2, 0, 3);
	ck_assert_int_eq(st.last_status, 501);
	ck_assert_uint_eq(counts().rejected, 2);
	ck_assert_uint_eq(counts().sent, 1);
}
END_TEST

/* A rejection's message reaches the stats. */
START_TEST(reject_message)
{
	struct uploader_stats st;

	reply(400, 0, "{\"code\":\"invalid_argument\",\"message\":\"bad labels\"}");
	store("a", real_ns() - 60 * NS_PER_SEC, 1);
	st = run(rejected_1);
	expect(&st, 0, 1, 0, 1);
	ck_assert_int_eq(st.last_status, 400);
	ck_assert_ptr_nonnull(strstr(st.last_error, "bad labels"));
	ck_assert_uint_eq(counts().pending, 0);
}
END_TEST

/* Older than max_age: expired without a request. */
START_TEST(expires_old)
{
	struct uploader_stats st;
	struct uploader *u;
	int64_t now = real_ns();

	fx.cfg.collector.max_age_ns = 3600 * NS_PER_SEC;
	store("old", now - 2 * 3600 * NS_PER_SEC, 1);
	store("new", now - 60 * NS_PER_SEC, 1);
	u = start();
	st = wait_for(u, sent_1);
	st = wait_for(u, expired_1);
	uploader_stop(u);
	ck_assert_uint_eq(st.expired, 1);
	expect(&st, 1, 0, 0, 1);
	ck_assert_uint_eq(counts().expired, 1);
}
END_TEST

/* A stop in an hour-long backoff returns at once, and the profile stays pending. */
START_TEST(stop_during_backoff)
{
	struct uploader_stats st;
	struct uploader *u;
	int64_t t0;

	fake.backoff = 3600 * NS_PER_SEC;
	reply(503, 0, NULL);
	store("a", real_ns() - 60 * NS_PER_SEC, 1);
	u = start();
	st = wait_for(u, retried_1);
	ck_assert(st.outage);
	ck_assert_int_gt(st.outage_since_ns, 0);
	ck_assert_int_eq(st.last_status, 503);
	/* a wake does not cut the backoff short: still one call */
	uploader_wake(u);
	t0 = mono_ns();
	uploader_stop(u);
	ck_assert_int_lt(mono_ns() - t0, UPFX_BOUND_NS);
	ck_assert_uint_eq(fake.calls, 1);
	ck_assert_uint_eq(counts().pending, 1);
}
END_TEST

/* A profile stored while the uploader idles goes out on uploader_wake(). */
START_TEST(wake_sends_new)
{
	struct uploader_stats st;
	struct uploader *u;

	store("a", real_ns() - 60 * NS_PER_SEC, 1);
	u = start();
	wait_for(u, sent_1);
	store("b", real_ns() - 30 * NS_PER_SEC, 1);
	uploader_wake(u);
	st = wait_for(u, sent_2);
	uploader_stop(u);
	expect(&st, 2, 0, 0, 2);
}
END_TEST

Suite *uploader_suite(void)
{
	Suite *s = suite_create("uploader");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, sends_in_order);
	tcase_add_test(tc, retries_with_backoff);
	tcase_add_test(tc, rejects_4xx);
	tcase_add_test(tc, reject_message);
	tcase_add_test(tc, expires_old);
	tcase_add_test(tc, stop_during_backoff);
	tcase_add_test(tc, wake_sends_new);
	suite_add_tcase(s, tc);
	return s;
}
