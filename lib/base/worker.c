// SPDX-License-Identifier: MIT
/*
 * Worker threads: the start, wake, wait and stop that the uploader, the rollup
 * builder, the unwinder and the symbol loader share.
 */
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "clock.h"
#include "util.h"
#include "worker.h"

int worker_init(struct worker *w)
{
	pthread_condattr_t attr;
	int ret;

	ret = pthread_mutex_init(&w->lock, NULL);
	if (ret)
		return -ret;
	pthread_condattr_init(&attr);
	/* a wall-clock step must not stretch or cut a backoff */
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	ret = pthread_cond_init(&w->wake, &attr);
	if (!ret) {
		ret = pthread_cond_init(&w->done, &attr);
		if (ret)
			pthread_cond_destroy(&w->wake);
	}
	pthread_condattr_destroy(&attr);
	if (ret) {
		pthread_mutex_destroy(&w->lock);
		return -ret;
	}
	atomic_init(&w->stop, false);
	w->woken = false;
	w->inited = true;
	return 0;
}

static void *run(void *arg)
{
	struct worker *w = arg;

	w->fn(w, w->arg);
	return NULL;
}

int worker_start(struct worker *w, const char *name, worker_fn fn, void *arg)
{
	int ret;

	w->fn = fn;
	w->arg = arg;
	ret = thread_start_blocked(&w->thread, run, w);
	w->started = !ret;
	/* top -H, ps -L and /proc/PID/task/TID/comm tell the threads apart; a failure is no harm */
	if (!ret && name)
		pthread_setname_np(w->thread, name);
	return ret;
}

void worker_stop(struct worker *w)
{
	if (!w->inited)
		return;
	if (w->started) {
		pthread_mutex_lock(&w->lock);
		atomic_store(&w->stop, true);
		pthread_cond_broadcast(&w->wake);
		pthread_mutex_unlock(&w->lock);
		pthread_join(w->thread, NULL);
		w->started = false;
	}
	pthread_cond_destroy(&w->done);
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
	w->inited = false;
}

void worker_lock(struct worker *w)
{
	pthread_mutex_lock(&w->lock);
}

void worker_unlock(struct worker *w)
{
	pthread_mutex_unlock(&w->lock);
}

void worker_wake_locked(struct worker *w)
{
	w->woken = true;
	pthread_cond_signal(&w->wake);
}

void worker_wake(struct worker *w)
{
	pthread_mutex_lock(&w->lock);
	worker_wake_locked(w);
	pthread_mutex_unlock(&w->lock);
}

bool worker_stopping(struct worker *w)
{
	return atomic_load(&w->stop);
}

bool worker_wait(struct worker *w, int64_t timeout_ns)
{
	struct timespec until = ns_to_timespec(mono_ns() + (timeout_ns > 0 ? timeout_ns : 0));

	while (!worker_stopping(w) && !w->woken) {
		if (timeout_ns < 0)
			pthread_cond_wait(&w->wake, &w->lock);
		else if (pthread_cond_timedwait(&w->wake, &w->lock, &until) == ETIMEDOUT)
			break;
	}
	w->woken = false;
	return !worker_stopping(w);
}

bool worker_sleep(struct worker *w, int64_t ns)
{
	struct timespec until = ns_to_timespec(mono_ns() + (ns > 0 ? ns : 0));

	while (!worker_stopping(w) &&
	       pthread_cond_timedwait(&w->wake, &w->lock, &until) != ETIMEDOUT)
		;
	return !worker_stopping(w);
}

void worker_done(struct worker *w)
{
	pthread_cond_broadcast(&w->done);
}

void worker_wait_done(struct worker *w)
{
	pthread_cond_wait(&w->done, &w->lock);
}

bool worker_wait_done_until(struct worker *w, int64_t until_ns)
{
	struct timespec until = ns_to_timespec(until_ns);

	return pthread_cond_timedwait(&w->done, &w->lock, &until) != ETIMEDOUT;
}

int loop_bell_new(void)
{
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int loop_bell_ring(int fd)
{
	uint64_t one = 1;

	return write(fd, &one, sizeof(one)) == sizeof(one) ? 0 : -errno;
}

int loop_bell_clear(int fd)
{
	uint64_t n;

	return read(fd, &n, sizeof(n)) >= 0 || errno == EAGAIN ? 0 : -errno;
}
