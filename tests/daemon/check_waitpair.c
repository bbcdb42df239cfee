// SPDX-License-Identifier: MIT
/* The pairing of a deferred off-CPU wait with its end (waitpair.c). */
#include <stdlib.h>

#include "suites.h"
#include "waitpair.h"

/* The waker every end below names: its process, two user frames, one kernel frame. */
#define WAKER 77
#define WAKER_U0 0x401000
#define WAKER_U1 0x402000
#define WAKER_K0 0xffffffff81000000

static unsigned freed;

static void free_sample(struct wait_sample *s)
{
	wait_end_free(&s->end);
	free(s);
	freed++;
}

static struct waitpair pairs(void)
{
	freed = 0;
	return (struct waitpair){.free_sample = free_sample};
}

/* A walked sample of tgid's wait wait_id, its end not read yet. */
static struct wait_sample *sample(uint64_t wait_id, uint32_t tgid)
{
	struct wait_sample *s = calloc(1, sizeof(*s));

	ck_assert_ptr_nonnull(s);
	s->wait_id = wait_id;
	s->tgid = tgid;
	return s;
}

/* An end as the program sends it: waited wait_ns until WAKER woke it, then runq_ns queued. */
static struct wait_end end_of(uint64_t wait_ns, uint64_t runq_ns)
{
	static struct ember_offcpu_wait_end r;
	struct wait_end e;

	r.wait_ns = wait_ns;
	r.runq_ns = runq_ns;
	r.waker_tgid = WAKER;
	r.waker_user.len = 2;
	r.waker_user.flags = EMBER_STACK_TRUNCATED;
	r.waker_user.ips[0] = WAKER_U0;
	r.waker_user.ips[1] = WAKER_U1;
	r.waker_kern.len = 1;
	r.waker_kern.ips[0] = WAKER_K0;
	ck_assert(wait_end_read(&r, &e));
	return e;
}

/* The end e, as end_of(wait_ns, runq_ns) made it, with its waker. */
static void assert_ended(const struct wait_end *e, uint64_t wait_ns, uint64_t runq_ns)
{
	ck_assert(e->ended);
	ck_assert_uint_eq(e->wait_ns, wait_ns);
	ck_assert_uint_eq(e->runq_ns, runq_ns);
	ck_assert_uint_eq(e->waker_tgid, WAKER);
	ck_assert_uint_eq(e->waker_ulen, 2);
	ck_assert_uint_eq(e->waker_klen, 1);
	ck_assert_uint_eq(e->waker_uflags, EMBER_STACK_TRUNCATED);
	ck_assert_ptr_nonnull(e->waker_ips);
	ck_assert_uint_eq(e->waker_ips[0], WAKER_U0);
	ck_assert_uint_eq(e->waker_ips[1], WAKER_U1);
	ck_assert_uint_eq(e->waker_ips[2], WAKER_K0);
	ck_assert(wait_end_has_waker(e));
}

/* A wait walked first stays open; its end makes it a sample for the drain, with its waker. */
START_TEST(test_end_after_sample)
{
	struct waitpair p = pairs();
	struct wait_sample *s = sample(5, 100);
	struct wait_end e = end_of(3000, 200);

	ck_assert_ptr_null(waitpair_walked(&p, s));
	ck_assert_uint_eq(p.nopen, 1);
	ck_assert_ptr_eq(waitpair_end(&p, 5, 100, &e), s);
	ck_assert_uint_eq(p.nopen, 0);
	assert_ended(&s->end, 3000, 200);
	ck_assert_uint_eq(p.lost, 0);
	free_sample(s);
	waitpair_clear(&p);
	ck_assert_uint_eq(freed, 1);
}
END_TEST

/* An end read first is kept; its wait, walked then, is for the drain at once, with it. */
START_TEST(test_end_before_sample)
{
	struct waitpair p = pairs();
	struct wait_sample *s = sample(5, 100);
	struct wait_end e = end_of(3000, 0);

	ck_assert_ptr_null(waitpair_end(&p, 5, 100, &e));
	ck_assert_uint_eq(p.nopen, 0);
	ck_assert_ptr_eq(waitpair_walked(&p, s), s);
	assert_ended(&s->end, 3000, 0);
	free_sample(s);
	/* taken: the next walk of that wait finds no end and stays open */
	ck_assert_ptr_null(waitpair_walked(&p, sample(5, 100)));
	ck_assert_uint_eq(p.nopen, 1);
	ck_assert_uint_eq(p.lost, 0);
	waitpair_clear(&p);
	ck_assert_uint_eq(freed, 2);
	ck_assert_uint_eq(p.nopen, 0);
}
END_TEST

/* An end pairs with its wait only: the same wait id of another process, or another wait, not. */
START_TEST(test_other_wait)
{
	struct waitpair p = pairs();
	struct wait_sample *s = sample(5, 100), *t = sample(5, 101), *u = sample(6, 101);
	struct wait_end other_id = end_of(1000, 0), other_proc = end_of(2000, 0),
			e = end_of(3000, 0);

	ck_assert_ptr_null(waitpair_walked(&p, s));
	ck_assert_ptr_null(waitpair_end(&p, 6, 100, &other_id));
	ck_assert_ptr_null(waitpair_end(&p, 5, 101, &other_proc));
	ck_assert_uint_eq(p.nopen, 1);
	ck_assert(!s->end.ended);
	/* the two ends wait for their own waits */
	ck_assert_ptr_null(waitpair_walked(&p, u)); /* wait 6 of 101: neither */
	ck_assert_ptr_eq(waitpair_walked(&p, t), t);
	ck_assert_uint_eq(t->end.wait_ns, 2000);
	ck_assert_ptr_eq(waitpair_end(&p, 5, 100, &e), s);
	ck_assert_uint_eq(s->end.wait_ns, 3000);
	ck_assert_uint_eq(p.nopen, 1); /* u */
	ck_assert_uint_eq(p.lost, 0);
	free_sample(s);
	free_sample(t);
	waitpair_clear(&p);
	ck_assert_uint_eq(freed, 3);
}
END_TEST

/* Beyond WAITPAIR_EARLY_MAX ends kept, the oldest is dropped, its wait lost. */
START_TEST(test_early_bound)
{
	struct waitpair p = pairs();
	struct wait_sample *s;

	for (uint64_t id = 1; id <= WAITPAIR_EARLY_MAX + 1; id++) {
		struct wait_end e = end_of(id * 1000, 0);

		ck_assert_ptr_null(waitpair_end(&p, id, 100, &e));
	}
	ck_assert_uint_eq(p.lost, 1);
	ck_assert_ptr_null(waitpair_walked(&p, sample(1, 100))); /* its end dropped: open */
	s = sample(2, 100);
	ck_assert_ptr_eq(waitpair_walked(&p, s), s);
	ck_assert_uint_eq(s->end.wait_ns, 2000);
	free_sample(s);
	s = sample(WAITPAIR_EARLY_MAX + 1, 100);
	ck_assert_ptr_eq(waitpair_walked(&p, s), s);
	ck_assert_uint_eq(s->end.wait_ns, (WAITPAIR_EARLY_MAX + 1) * 1000);
	free_sample(s);
	ck_assert_uint_eq(p.lost, 1);
	ck_assert_uint_eq(p.nopen, 1);
	waitpair_clear(&p);
	ck_assert_uint_eq(freed, 3);
}
END_TEST

/* An end kept early stays while many more come and are taken: only a full set pushes one out. */
START_TEST(test_early_kept_while_others_come)
{
	struct waitpair p = pairs();
	struct wait_end e = end_of(7000, 0);
	struct wait_sample *s;

	ck_assert_ptr_null(waitpair_end(&p, 7, 100, &e)); /* its wait walked late (not loaded) */
	for (uint64_t id = 10; id < 10 + 4 * WAITPAIR_EARLY_MAX; id++) {
		struct wait_end o = end_of(id, 0);

		ck_assert_ptr_null(waitpair_end(&p, id, 200, &o));
		s = sample(id, 200);
		ck_assert_ptr_eq(waitpair_walked(&p, s), s);
		free_sample(s);
	}
	s = sample(7, 100);
	ck_assert_ptr_eq(waitpair_walked(&p, s), s);
	ck_assert_uint_eq(s->end.wait_ns, 7000);
	free_sample(s);
	ck_assert_uint_eq(p.lost, 0);
	waitpair_clear(&p);
}
END_TEST

/*
 * Beyond WAITPAIR_OPEN_MAX open waits, the oldest is dropped, lost once: its
 * end, when it comes, is freed, neither kept early nor counted again when the
 * ends kept early after it push it out.
 */
START_TEST(test_open_bound)
{
	struct waitpair p = pairs();
	struct wait_sample *s = NULL;
	struct wait_end e1, e2;

	for (uint64_t id = 1; id <= WAITPAIR_OPEN_MAX + 1; id++) {
		struct wait_sample *t = sample(id, 100);

		if (id == 2)
			s = t;
		ck_assert_ptr_null(waitpair_walked(&p, t));
	}
	ck_assert_uint_eq(p.nopen, WAITPAIR_OPEN_MAX);
	ck_assert_uint_eq(p.lost, 1);
	ck_assert_uint_eq(freed, 1);
	e1 = end_of(1000, 0);
	e2 = end_of(2000, 0);
	ck_assert_ptr_null(waitpair_end(&p, 1, 100, &e1));
	ck_assert_uint_eq(p.nearly, 0);
	ck_assert_ptr_eq(waitpair_end(&p, 2, 100, &e2), s);
	free_sample(s);
	ck_assert_uint_eq(p.nopen, WAITPAIR_OPEN_MAX - 1);
	/* ends of waits never walked fill the early ring: the first pushed out is lost */
	for (uint64_t id = 1; id <= WAITPAIR_EARLY_MAX + 1; id++) {
		struct wait_end e = end_of(id, 0);

		ck_assert_ptr_null(waitpair_end(&p, 100000 + id, 300, &e));
		ck_assert_uint_eq(p.lost, id <= WAITPAIR_EARLY_MAX ? 1 : 2);
	}
	waitpair_clear(&p);
	ck_assert_uint_eq(freed, WAITPAIR_OPEN_MAX + 1);
}
END_TEST

/* An end with both times 0 (too short) drops its wait, whichever came first. */
START_TEST(test_drop)
{
	struct waitpair p = pairs();
	struct wait_end after = end_of(0, 0), before = end_of(0, 0);

	ck_assert(wait_end_drops(&after));
	ck_assert_ptr_null(waitpair_walked(&p, sample(5, 100)));
	ck_assert_ptr_null(waitpair_end(&p, 5, 100, &after));
	ck_assert_uint_eq(freed, 1);
	ck_assert_uint_eq(p.nopen, 0);
	ck_assert_ptr_null(waitpair_end(&p, 6, 100, &before));
	ck_assert_ptr_null(waitpair_walked(&p, sample(6, 100)));
	ck_assert_uint_eq(freed, 2);
	ck_assert_uint_eq(p.nopen, 0);
	ck_assert_uint_eq(p.lost, 0); /* dropped by the program's choice: not lost */
	waitpair_clear(&p);
}
END_TEST

/* A sample that is no wait is for the drain at once, whatever ends are kept. */
START_TEST(test_not_a_wait)
{
	struct waitpair p = pairs();
	struct wait_sample *s = sample(0, 100);

	ck_assert_ptr_eq(waitpair_walked(&p, s), s);
	ck_assert(!s->end.ended);
	ck_assert_uint_eq(p.nopen, 0);
	free_sample(s);
}
END_TEST

/* A process that exited: its open waits will not end (lost), the others' still do. */
START_TEST(test_exited)
{
	struct waitpair p = pairs();
	struct wait_sample *s = sample(2, 200);
	struct wait_end e1 = end_of(1000, 0), e2 = end_of(2000, 0);

	ck_assert_ptr_null(waitpair_walked(&p, sample(1, 100)));
	ck_assert_ptr_null(waitpair_walked(&p, s));
	ck_assert_ptr_null(waitpair_walked(&p, sample(3, 100)));
	waitpair_exited(&p, 100);
	ck_assert_uint_eq(p.nopen, 1);
	ck_assert_uint_eq(p.lost, 2);
	ck_assert_uint_eq(freed, 2);
	ck_assert_ptr_null(waitpair_end(&p, 1, 100, &e1));
	ck_assert_ptr_eq(waitpair_end(&p, 2, 200, &e2), s);
	free_sample(s);
	/* the end of a wait lost at the exit: not kept early, not lost again */
	ck_assert_uint_eq(p.nearly, 0);
	ck_assert_uint_eq(p.lost, 2);
	waitpair_clear(&p);
}
END_TEST

/*
 * The waker from the record: none without stacks, or with stacks longer than
 * the program writes (the end kept, its waker left out); a wait that ended at
 * once in the run queue (wait_ns 0) is not its waker's.
 */
START_TEST(test_waker)
{
	static struct ember_offcpu_wait_end r = {
		.wait_ns = 500, .runq_ns = 20, .waker_tgid = WAKER};
	struct wait_end e;

	ck_assert(wait_end_read(&r, &e));
	ck_assert(e.ended && e.wait_ns == 500 && e.runq_ns == 20);
	ck_assert_ptr_null(e.waker_ips);
	ck_assert_uint_eq(e.waker_tgid, 0);
	ck_assert(!wait_end_has_waker(&e));
	r.waker_kern.len = EMBER_MAX_STACK_DEPTH + 1;
	ck_assert(!wait_end_read(&r, &e));
	ck_assert(e.ended && e.wait_ns == 500);
	ck_assert_ptr_null(e.waker_ips);
	e = end_of(0, 300);
	ck_assert_ptr_nonnull(e.waker_ips);
	ck_assert(!wait_end_drops(&e));
	ck_assert(!wait_end_has_waker(&e));
	wait_end_free(&e);
	ck_assert_ptr_null(e.waker_ips);
}
END_TEST

Suite *waitpair_suite(void)
{
	Suite *s = suite_create("waitpair");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_end_after_sample);
	tcase_add_test(tc, test_end_before_sample);
	tcase_add_test(tc, test_other_wait);
	tcase_add_test(tc, test_early_bound);
	tcase_add_test(tc, test_early_kept_while_others_come);
	tcase_add_test(tc, test_open_bound);
	tcase_add_test(tc, test_drop);
	tcase_add_test(tc, test_not_a_wait);
	tcase_add_test(tc, test_exited);
	tcase_add_test(tc, test_waker);
	suite_add_tcase(s, tc);
	return s;
}
