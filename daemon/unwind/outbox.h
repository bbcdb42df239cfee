/* SPDX-License-Identifier: MIT */
/*
 * What the unwinder's thread tells the event loop of processes, as messages
 * through an eventfd: the loop reads them when it serves its events and walks
 * the samples that waited, so that no walk runs on the thread and no state of
 * the walks is shared under a lock. A message may lend the loop something of
 * the sender's (a process's tables, kept from eviction until its samples are
 * walked with them), which the sender takes back once it has been read.
 */
#ifndef EMBER_OUTBOX_H
#define EMBER_OUTBOX_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ember/unwind.h"

/* What became of a process's entry in the procs map. */
enum unwinder_event {
	UNWINDER_LOADED,   /* its entry holds the table of every mapping that will get one */
	UNWINDER_BUILDING, /* its entry is written, tables of it are still being compiled */
	UNWINDER_DROPPING, /* it could not be loaded, or its entry went (exit): see entry */
	UNWINDER_EXEC,	   /* forgotten after an exec, which deleted its entry (the new program's
			      samples wait for its own) */
};

/* One message, thread to loop. */
struct outbox_msg {
	struct outbox_msg *next;
	pid_t pid;
	enum unwinder_event ev;
	/* the sender's, kept from it until the message is read (outbox_take_back()) */
	void *lent;
	/* DROPPING: its entry as it was before its delete, if it had one; else NULL */
	struct ember_unwind_proc *entry;
};

/* Called on the loop for each message, in the order posted. */
typedef void (*outbox_fn)(void *arg, const struct outbox_msg *m);

/* The queue between the two; zero-filled then outbox_init(). */
struct outbox {
	pthread_mutex_t mu;
	int efd;			 /* readable while messages wait (or after a race, none) */
	bool open;			 /* a reader listens: posts are kept */
	struct outbox_msg *head, **tail; /* posted, not read */
	struct outbox_msg *back;	 /* read (or never to be), with something lent */
};

/* 0, or -errno (no eventfd). */
int outbox_init(struct outbox *o);
/* Frees every message; their lent things too, by give_back (NULL: none). Nobody posts. */
void outbox_free(struct outbox *o, void (*give_back)(void *lent));
/*
 * A message for pid, with room for an entry when with_entry: NULL when
 * nobody listens (nothing to tell) or out of memory.
 */
struct outbox_msg *outbox_msg_new(struct outbox *o, pid_t pid, enum unwinder_event ev,
				  bool with_entry);
/*
 * Sends m (the sender's thread). Taken whatever happens: one the reader
 * stopped listening for meanwhile goes back at once (outbox_take_back()).
 */
void outbox_post(struct outbox *o, struct outbox_msg *m);
/*
 * The loop: clears the eventfd and hands every message posted to fn. Returns how many: 0 when
 * a post rang after this read had taken its message.
 */
size_t outbox_read(struct outbox *o, outbox_fn fn, void *arg);
/*
 * The sender's thread: the messages read whose lent things it takes back,
 * as a list it frees (outbox_msg_free()). NULL: none.
 */
struct outbox_msg *outbox_take_back(struct outbox *o);
void outbox_msg_free(struct outbox_msg *m);
/* Whether messages are kept for a reader; off, those waiting go back unread. */
void outbox_listen(struct outbox *o, bool on);
/* The eventfd, for the loop's epoll. */
int outbox_fd(const struct outbox *o);

#endif
