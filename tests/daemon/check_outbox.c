// SPDX-License-Identifier: MIT
/* The unwinder's messages to the loop (outbox.c), across two threads. */
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>

#include "outbox.h"
#include "suites.h"

/* Whether the eventfd is readable now. */
static bool readable(const struct outbox *o)
{
	struct pollfd p = {.fd = outbox_fd(o), .events = POLLIN};

	return poll(&p, 1, 0) == 1;
}

/* Blocks until the eventfd is readable (the other thread posted). */
static void wait_readable(const struct outbox *o)
{
	struct pollfd p = {.fd = outbox_fd(o), .events = POLLIN};

	ck_assert_int_eq(poll(&p, 1, 10000), 1);
}

/* What the loop's reader saw. */
struct seen {
	pid_t pids[16];
	enum unwinder_event evs[16];
	bool entry[16];
	uint32_t nmaps[16];
	size_t n;
};

static void record(void *arg, const struct outbox_msg *m)
{
	struct seen *s = arg;

	ck_assert_uint_lt(s->n, 16);
	s->pids[s->n] = m->pid;
	s->evs[s->n] = m->ev;
	s->entry[s->n] = m->entry != NULL;
	s->nmaps[s->n] = m->entry ? m->entry->nmaps : 0;
	s->n++;
}

/* A message, lending lent (NULL: nothing), with an entry of nmaps when entry. */
static void post(struct outbox *o, pid_t pid, enum unwinder_event ev, int *lent, bool entry,
		 uint32_t nmaps)
{
	struct outbox_msg *m = outbox_msg_new(o, pid, ev, entry);

	ck_assert_ptr_nonnull(m);
	ck_assert(entry == (m->entry != NULL));
	if (entry)
		m->entry->nmaps = nmaps;
	m->lent = lent;
	outbox_post(o, m);
}

/* Nobody listens: nothing to tell, and a message posted anyway goes straight back. */
START_TEST(test_not_listening)
{
	struct outbox o = {0};
	int lent = 0;
	struct outbox_msg *m, *back;

	ck_assert_int_eq(outbox_init(&o), 0);
	ck_assert_ptr_null(outbox_msg_new(&o, 1, UNWINDER_LOADED, false));
	outbox_listen(&o, true);
	m = outbox_msg_new(&o, 2, UNWINDER_DROPPING, true);
	ck_assert_ptr_nonnull(m);
	m->lent = &lent;
	outbox_listen(&o, false); /* the reader went between the message and its post */
	outbox_post(&o, m);
	ck_assert(!readable(&o));
	back = outbox_take_back(&o);
	ck_assert_ptr_eq(back, m);
	ck_assert_ptr_eq(back->lent, &lent);
	ck_assert_ptr_null(back->entry); /* never to be read: the copy is freed */
	ck_assert_ptr_null(back->next);
	outbox_msg_free(back);
	outbox_free(&o, NULL);
}
END_TEST

struct sender {
	struct outbox *o;
	int lent[3];
};

static void *send_three(void *arg)
{
	struct sender *s = arg;

	post(s->o, 10, UNWINDER_BUILDING, NULL, false, 0);
	post(s->o, 10, UNWINDER_LOADED, NULL, false, 0);
	post(s->o, 11, UNWINDER_DROPPING, &s->lent[0], true, 7);
	return NULL;
}

/*
 * Posted on another thread, read on this one in order, with the entry a
 * dropped process had; the eventfd is readable until then, not after; the
 * lent table comes back to the sender only once read.
 */
START_TEST(test_in_order_across_threads)
{
	struct outbox o = {0};
	struct sender snd = {.o = &o};
	struct seen seen = {0};
	struct outbox_msg *back;
	pthread_t t;

	ck_assert_int_eq(outbox_init(&o), 0);
	outbox_listen(&o, true);
	ck_assert_int_eq(pthread_create(&t, NULL, send_three, &snd), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	wait_readable(&o);
	ck_assert_ptr_null(outbox_take_back(&o)); /* not read yet: still lent */
	ck_assert_uint_eq(outbox_read(&o, record, &seen), 3);
	ck_assert(!readable(&o));
	ck_assert_uint_eq(seen.n, 3);
	ck_assert_int_eq(seen.pids[0], 10);
	ck_assert_int_eq(seen.evs[0], UNWINDER_BUILDING);
	ck_assert_int_eq(seen.evs[1], UNWINDER_LOADED);
	ck_assert(!seen.entry[1]);
	ck_assert_int_eq(seen.pids[2], 11);
	ck_assert_int_eq(seen.evs[2], UNWINDER_DROPPING);
	ck_assert(seen.entry[2]);
	ck_assert_uint_eq(seen.nmaps[2], 7);
	back = outbox_take_back(&o);
	ck_assert_ptr_nonnull(back);
	ck_assert_ptr_eq(back->lent, &snd.lent[0]);
	ck_assert_ptr_null(back->next); /* those that lent nothing are gone */
	outbox_msg_free(back);
	ck_assert_uint_eq(outbox_read(&o, record, &seen), 0);
	outbox_free(&o, NULL);
}
END_TEST

static void *send_one(void *arg)
{
	struct sender *s = arg;

	post(s->o, 20, UNWINDER_LOADED, NULL, false, 0);
	return NULL;
}

/* A post after the loop took the list wakes it again: none is left unread with the fd quiet. */
START_TEST(test_post_after_read_wakes)
{
	struct outbox o = {0};
	struct sender snd = {.o = &o};
	struct seen seen = {0};
	pthread_t t;

	ck_assert_int_eq(outbox_init(&o), 0);
	outbox_listen(&o, true);
	for (int i = 0; i < 200; i++) {
		ck_assert_int_eq(pthread_create(&t, NULL, send_one, &snd), 0);
		/*
		 * The read races the post: either it takes the message, or the fd stays readable
		 * (and may be rung after the message was taken: a wake that finds nothing).
		 */
		size_t taken = outbox_read(&o, record, &seen);

		ck_assert_int_eq(pthread_join(t, NULL), 0);
		if (readable(&o))
			taken += outbox_read(&o, record, &seen);
		ck_assert_uint_eq(taken, 1);
		seen.n = 0;
		ck_assert(!readable(&o));
		ck_assert_uint_eq(outbox_read(&o, record, &seen), 0);
	}
	outbox_free(&o, NULL);
}
END_TEST

static int given_back;

static void count_back(void *lent)
{
	(void)lent;
	given_back++;
}

/* The reader stops listening: what waited goes back unread; the end gives back the rest. */
START_TEST(test_stop_listening)
{
	struct outbox o = {0};
	struct seen seen = {0};
	int lent[2];
	struct outbox_msg *back;

	ck_assert_int_eq(outbox_init(&o), 0);
	outbox_listen(&o, true);
	post(&o, 30, UNWINDER_DROPPING, &lent[0], true, 1);
	post(&o, 31, UNWINDER_EXEC, NULL, false, 0);
	ck_assert(readable(&o));
	outbox_listen(&o, false);
	ck_assert(!readable(&o));
	ck_assert_uint_eq(outbox_read(&o, record, &seen), 0);
	back = outbox_take_back(&o);
	ck_assert_ptr_nonnull(back);
	ck_assert_ptr_eq(back->lent, &lent[0]);
	ck_assert_ptr_null(back->next);
	outbox_msg_free(back);
	/* closed with lent things both waiting and read: each given back once */
	outbox_listen(&o, true);
	post(&o, 32, UNWINDER_DROPPING, &lent[0], true, 1);
	ck_assert_uint_eq(outbox_read(&o, record, &seen), 1);
	post(&o, 33, UNWINDER_DROPPING, &lent[1], true, 1);
	given_back = 0;
	outbox_free(&o, count_back);
	ck_assert_int_eq(given_back, 2);
}
END_TEST

Suite *outbox_suite(void)
{
	Suite *s = suite_create("outbox");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_not_listening);
	tcase_add_test(tc, test_in_order_across_threads);
	tcase_add_test(tc, test_post_after_read_wakes);
	tcase_add_test(tc, test_stop_listening);
	suite_add_tcase(s, tc);
	return s;
}
