// SPDX-License-Identifier: MIT
/* Messages from the unwinder's thread to the event loop (outbox.h). */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "outbox.h"
#include "worker.h"

int outbox_init(struct outbox *o)
{
	int rc = pthread_mutex_init(&o->mu, NULL);

	if (rc)
		return -rc;
	o->efd = loop_bell_new();
	if (o->efd < 0) {
		rc = o->efd;
		pthread_mutex_destroy(&o->mu);
		return rc;
	}
	o->tail = &o->head;
	return 0;
}

void outbox_msg_free(struct outbox_msg *m)
{
	while (m) {
		struct outbox_msg *next = m->next;

		free(m->entry);
		free(m);
		m = next;
	}
}

static void give_all(struct outbox_msg *m, void (*give_back)(void *lent))
{
	for (struct outbox_msg *i = m; i && give_back; i = i->next)
		if (i->lent)
			give_back(i->lent);
	outbox_msg_free(m);
}

void outbox_free(struct outbox *o, void (*give_back)(void *lent))
{
	give_all(o->head, give_back);
	give_all(o->back, give_back);
	o->head = o->back = NULL;
	o->tail = &o->head;
	if (o->efd >= 0)
		close(o->efd);
	o->efd = -1;
	pthread_mutex_destroy(&o->mu);
}

struct outbox_msg *outbox_msg_new(struct outbox *o, pid_t pid, enum unwinder_event ev,
				  bool with_entry)
{
	struct outbox_msg *m;
	bool open;

	pthread_mutex_lock(&o->mu);
	open = o->open;
	pthread_mutex_unlock(&o->mu);
	if (!open)
		return NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->pid = pid;
	m->ev = ev;
	if (with_entry && !(m->entry = malloc(sizeof(*m->entry)))) {
		free(m);
		return NULL;
	}
	return m;
}

/* Under the lock: m joins those going back when it lends something, else is freed. */
static void back_locked(struct outbox *o, struct outbox_msg *m)
{
	free(m->entry); /* read, or never to be */
	m->entry = NULL;
	if (m->lent) {
		m->next = o->back;
		o->back = m;
	} else {
		m->next = NULL;
		outbox_msg_free(m);
	}
}

/* Under the lock: back_locked() for each message of list. */
static void back_all_locked(struct outbox *o, struct outbox_msg *list)
{
	for (struct outbox_msg *next; list; list = next) {
		next = list->next;
		back_locked(o, list);
	}
}

void outbox_post(struct outbox *o, struct outbox_msg *m)
{
	bool first;

	m->next = NULL;
	pthread_mutex_lock(&o->mu);
	if (!o->open) {
		back_locked(o, m);
		pthread_mutex_unlock(&o->mu);
		return;
	}
	first = !o->head;
	*o->tail = m;
	o->tail = &m->next;
	pthread_mutex_unlock(&o->mu);
	/* once per batch: the reader takes every message waiting */
	if (first)
		(void)loop_bell_ring(o->efd); /* cannot overflow at one ring per batch read */
}

size_t outbox_read(struct outbox *o, outbox_fn fn, void *arg)
{
	struct outbox_msg *list;
	size_t count = 0;

	/* cleared first: a post after the list is taken finds it empty and writes again */
	if (loop_bell_clear(o->efd))
		return 0;
	pthread_mutex_lock(&o->mu);
	list = o->head;
	o->head = NULL;
	o->tail = &o->head;
	pthread_mutex_unlock(&o->mu);
	for (struct outbox_msg *m = list; m; m = m->next, count++)
		fn(arg, m);
	pthread_mutex_lock(&o->mu);
	back_all_locked(o, list);
	pthread_mutex_unlock(&o->mu);
	return count;
}

struct outbox_msg *outbox_take_back(struct outbox *o)
{
	struct outbox_msg *back;

	pthread_mutex_lock(&o->mu);
	back = o->back;
	o->back = NULL;
	pthread_mutex_unlock(&o->mu);
	return back;
}

void outbox_listen(struct outbox *o, bool on)
{
	pthread_mutex_lock(&o->mu);
	o->open = on;
	if (!on) {
		back_all_locked(o, o->head);
		o->head = NULL;
		o->tail = &o->head;
	}
	pthread_mutex_unlock(&o->mu);
	if (!on)
		(void)loop_bell_clear(o->efd);
}

int outbox_fd(const struct outbox *o)
{
	return o->efd;
}
