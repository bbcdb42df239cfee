// SPDX-License-Identifier: MIT
/* The log rate limiter on an injected clock, and log lines as stderr receives them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "log.h"
#include "suites.h"

#define SEC 1000000000LL

/* What the limiter's flush reported. */
struct summaries {
	size_t n;
	int level[8];
	uint32_t repeats[8];
	char last[8][64];
};

static void collect(int level, const char *last, uint32_t repeats, void *arg)
{
	struct summaries *s = arg;

	if (s->n < 8) {
		s->level[s->n] = level;
		s->repeats[s->n] = repeats;
		snprintf(s->last[s->n], sizeof(s->last[0]), "%s", last);
	}
	s->n++;
}

static struct log_limiter lim; /* 64 KiB: not on the stack */

START_TEST(burst_then_summary)
{
	struct summaries sum = {};
	uint64_t k = log_limit_key("drain failed: %s", "drain failed: x");
	char text[32];
	int allowed = 0;

	log_limiter_init(&lim, 60 * SEC, 3);
	for (int i = 0; i < 10; i++) {
		snprintf(text, sizeof(text), "drain failed: %d", i);
		allowed += log_limiter_allow(&lim, k, LOG_LVL_WARN, text, 1 * SEC + i * SEC);
	}
	ck_assert_int_eq(allowed, 3);
	/* the window (from t=1s) has not ended at t=60.9s: nothing yet */
	ck_assert_uint_eq(log_limiter_flush(&lim, 60 * SEC + SEC - 1, false, collect, &sum), 0);
	ck_assert_uint_eq(log_limiter_flush(&lim, 61 * SEC, false, collect, &sum), 1);
	ck_assert_uint_eq(sum.repeats[0], 7);
	ck_assert_int_eq(sum.level[0], LOG_LVL_WARN);
	ck_assert_str_eq(sum.last[0], "drain failed: 9");
	/* reported once only */
	ck_assert_uint_eq(log_limiter_flush(&lim, 200 * SEC, true, collect, &sum), 0);
	/* a new window allows a new burst */
	for (int i = 0; i < 5; i++)
		allowed += log_limiter_allow(&lim, k, LOG_LVL_WARN, "again", 62 * SEC);
	ck_assert_int_eq(allowed, 6);
	ck_assert_uint_eq(log_limiter_flush(&lim, 63 * SEC, true, collect, &sum), 1);
	ck_assert_uint_eq(sum.repeats[1], 2);
}
END_TEST

START_TEST(keys_apart)
{
	uint64_t a = log_limit_key("interval: %lu samples", "interval: 1 samples");
	uint64_t b = log_limit_key("interval: %lu samples", "interval: 2 samples");
	uint64_t c = log_limit_key("cannot store %s: %s", "cannot store x: y");

	/* same format, other numbers: one message */
	ck_assert_uint_eq(a, b);
	ck_assert_uint_ne(a, c);
	ck_assert_uint_ne(a, 0);
	/* a format with nothing of its own is told apart by its text */
	ck_assert_uint_ne(log_limit_key("%s", "ember.conf:3: hz"),
			  log_limit_key("%s", "ember.conf:4: x"));
	ck_assert_uint_eq(log_limit_key("%s", "same"), log_limit_key("%-8s", "same"));
	ck_assert_uint_ne(log_limit_key("%s: %s", "a: b"), log_limit_key("%s: %s", "a: c"));

	/* two keys have their own bursts */
	log_limiter_init(&lim, 10 * SEC, 1);
	ck_assert(log_limiter_allow(&lim, a, LOG_LVL_INFO, "x", 0));
	ck_assert(log_limiter_allow(&lim, c, LOG_LVL_INFO, "y", 0));
	ck_assert(!log_limiter_allow(&lim, a, LOG_LVL_INFO, "x", 1));
	ck_assert(!log_limiter_allow(&lim, c, LOG_LVL_INFO, "y", 1));
}
END_TEST

START_TEST(slots_full_pass_through)
{
	struct summaries sum = {};
	int allowed = 0;

	log_limiter_init(&lim, 10 * SEC, 1);
	/* every slot holds a suppressed message */
	for (uint64_t k = 1; k <= LOG_LIMIT_SLOTS; k++) {
		ck_assert(log_limiter_allow(&lim, k, LOG_LVL_INFO, "m", 0));
		ck_assert(!log_limiter_allow(&lim, k, LOG_LVL_INFO, "m", 0));
	}
	/* one more key is not tracked: never suppressed, no summary lost */
	for (int i = 0; i < 5; i++)
		allowed += log_limiter_allow(&lim, 1000, LOG_LVL_INFO, "new", 1);
	ck_assert_int_eq(allowed, 5);
	ck_assert_uint_eq(log_limiter_flush(&lim, 10 * SEC, false, collect, &sum), LOG_LIMIT_SLOTS);
	/* now the slots are free to reuse: the new key is limited */
	ck_assert(log_limiter_allow(&lim, 1000, LOG_LVL_INFO, "new", 11 * SEC));
	ck_assert(!log_limiter_allow(&lim, 1000, LOG_LVL_INFO, "new", 11 * SEC));
}
END_TEST

/* Runs fn with stderr sent to a file; returns what was written (static buffer). */
static const char *capture_stderr(void (*fn)(void))
{
	static char out[16384];
	FILE *f = tmpfile();
	int saved = dup(STDERR_FILENO);
	size_t n;

	ck_assert_ptr_nonnull(f);
	fflush(stderr);
	dup2(fileno(f), STDERR_FILENO);
	fn();
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	fclose(f);
	return out;
}

static size_t count_lines(const char *s, const char *needle)
{
	size_t n = 0;

	for (const char *p = s; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static void spam(void)
{
	for (int i = 0; i < LOG_LIMIT_BURST + 5; i++)
		log_warnx("map full on cpu %d", i);
	log_flush(true);
	errno = ENOENT;
	log_warn("cannot open %s", "x");
	for (int i = 0; i < 3; i++)
		log_debug("debug %d", i);
}

START_TEST(stderr_lines_limited)
{
	const char *out;

	/* a JOURNAL_STREAM naming another stream than stderr means plain stderr */
	setenv("JOURNAL_STREAM", "1:1", 1);
	log_init("emberd", LOG_LVL_DEBUG);
	out = capture_stderr(spam);
	/* the burst, then one summary naming the last suppressed line */
	ck_assert_uint_eq(count_lines(out, "emberd: warning: map full on cpu "),
			  LOG_LIMIT_BURST + 1);
	ck_assert_ptr_nonnull(
		strstr(out, "emberd: warning: map full on cpu 14 (repeated 5 times)\n"));
	ck_assert_ptr_nonnull(
		strstr(out, "emberd: warning: cannot open x: No such file or directory\n"));
	/* debug lines are not limited and carry their tag */
	ck_assert_uint_eq(count_lines(out, "emberd: debug: debug "), 3);
	ck_assert_ptr_null(strstr(out, "<4>"));
	unsetenv("JOURNAL_STREAM");
}
END_TEST

Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, burst_then_summary);
	tcase_add_test(tc, keys_apart);
	tcase_add_test(tc, slots_full_pass_through);
	tcase_add_test(tc, stderr_lines_limited);
	suite_add_tcase(s, tc);
	return s;
}
