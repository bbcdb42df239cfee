/* SPDX-License-Identifier: MIT */
/*
 * A worker thread and its hand-off: one mutex, a condition variable that wakes
 * the worker and one that tells its owner of progress, a wake flag and a stop.
 */
#ifndef EMBER_WORKER_H
#define EMBER_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct worker;

/* The thread's body: returns when worker_wait() or worker_sleep() says stop. */
typedef void (*worker_fn)(struct worker *w, void *arg);

/*
 * Zeroed, then worker_init(). The owner may keep its own shared fields under
 * lock; the rest is the helper's.
 */
struct worker {
	pthread_mutex_t lock; /* guards woken and the owner's shared fields */
	pthread_cond_t wake;  /* owner -> worker: work came, or stop (CLOCK_MONOTONIC) */
	pthread_cond_t done;  /* worker -> owner: progress (idle, a file loaded) */
	atomic_bool stop;     /* read without the lock, to abandon long work */
	bool woken;	      /* a worker_wake() not yet seen by worker_wait() */
	bool inited, started;
	pthread_t thread;
	worker_fn fn;
	void *arg;
};

/* Sets up the lock and the condition variables. 0 or a negative errno. */
int worker_init(struct worker *w);

/*
 * Starts fn(w, arg) on a thread that takes no signal (see thread_start_blocked),
 * named name (at most 15 bytes, as the kernel keeps). 0 or -errno.
 */
int worker_start(struct worker *w, const char *name, worker_fn fn, void *arg);

/* Tells the thread to stop, waits for it, and releases what worker_init() set up. */
void worker_stop(struct worker *w);

void worker_lock(struct worker *w);
void worker_unlock(struct worker *w);

/* Wakes the worker's worker_wait(); the _locked form with the lock held. */
void worker_wake(struct worker *w);
void worker_wake_locked(struct worker *w);

/*
 * With the lock held, in the worker: waits for a wake since the last wait, the
 * stop, or timeout_ns (< 0: no timeout). Consumes the wake. false on stop.
 */
bool worker_wait(struct worker *w, int64_t timeout_ns);

/* With the lock held, in the worker: waits ns, which a wake does not cut short. false on stop. */
bool worker_sleep(struct worker *w, int64_t ns);

/* Whether worker_stop() was called; without the lock too. */
bool worker_stopping(struct worker *w);

/* With the lock held: the worker tells its owner of progress; the owner waits for it. */
void worker_done(struct worker *w);
void worker_wait_done(struct worker *w);
/* The same until until_ns (mono_ns()); false when that time came first. */
bool worker_wait_done_until(struct worker *w, int64_t until_ns);

/*
 * A thread's bell for the event loop: an eventfd (non-blocking, close-on-exec) that the
 * thread rings and the loop watches, then clears before it takes what the thread left.
 * loop_bell_new() returns the fd or -errno; ring and clear return 0 or -errno (clear: 0
 * when it was not rung).
 */
int loop_bell_new(void);
int loop_bell_ring(int fd);
int loop_bell_clear(int fd);

#endif
