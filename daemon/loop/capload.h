/* SPDX-License-Identifier: MIT */
/*
 * A capture's load off the event loop: capture_load() (the kernel's verifier,
 * a malloc capture's unwind tables) runs on a thread of its own, which hands
 * the finished load back as one message, its pointer, through a pipe the loop
 * watches. Nothing is shared under a lock: until its message is read, the load
 * is the thread's alone.
 */
#ifndef EMBER_CAPLOAD_H
#define EMBER_CAPLOAD_H

#include <pthread.h>
#include <stddef.h>

#include "capture.h"

/* One capture being loaded; the thread's until capload_read() returns it. */
struct capload {
	struct capture *cap; /* prepared (capture_prepare()); loaded once read back */
	int rc;		     /* capture_load()'s */
	char err[512];	     /* its cause when rc is not 0 */
	size_t owner;	     /* who asked: the owner's token (control.c: its client) */
	pthread_t thread;
	int wfd; /* the pipe's end its message goes to */
};

/* The pipe the loads come back through: fds[0] to watch (non-blocking), fds[1] theirs. 0 or -errno. */
int capload_pipe(int fds[2]);
/* Starts loading cap on a thread, whose message goes to wfd. 0 or -errno (cap untouched then). */
int capload_start(struct capture *cap, size_t owner, int wfd, struct capload **out);
/* The next finished load from rfd, its thread joined; NULL when none is ready. */
struct capload *capload_read(int rfd);
/* The same, waiting for one. */
struct capload *capload_wait(int rfd);
/* Frees a load read back (its capture too, unless taken: set cap to NULL). Accepts NULL. */
void capload_free(struct capload *l);

#endif
