// SPDX-License-Identifier: MIT
/* A capture's load on a thread of its own, handed back through a pipe (capload.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "capload.h"
#include "util.h"

/*
 * Tests only: how long each load waits first, standing for a slow verifier
 * (EMBER_TEST_CAPTURE_LOAD_MS), so that a test can see the loop go on meanwhile.
 */
static void test_delay(void)
{
	const char *ms = getenv("EMBER_TEST_CAPTURE_LOAD_MS");
	long n = ms ? strtol(ms, NULL, 10) : 0;

	if (n > 0 && n <= 60000)
		nanosleep(&(struct timespec){n / 1000, n % 1000 * 1000000}, NULL);
}

static void *load_main(void *arg)
{
	struct capload *l = arg;
	ssize_t n;

	test_delay();
	l->rc = capture_load(l->cap, l->err, sizeof(l->err));
	/* a pointer is written whole (PIPE_BUF); the reader owns l from here */
	do
		n = write(l->wfd, &l, sizeof(l));
	while (n < 0 && errno == EINTR);
	return NULL;
}

int capload_pipe(int fds[2])
{
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	if (fcntl(fds[0], F_SETFL, O_NONBLOCK)) {
		int rc = -errno;

		close(fds[0]);
		close(fds[1]);
		return rc;
	}
	return 0;
}

int capload_start(struct capture *cap, size_t owner, int wfd, struct capload **out)
{
	struct capload *l = calloc(1, sizeof(*l));
	int rc;

	if (!l)
		return -ENOMEM;
	l->cap = cap;
	l->owner = owner;
	l->wfd = wfd;
	rc = thread_start_blocked(&l->thread, load_main, l);
	if (rc) {
		free(l);
		return rc;
	}
	*out = l;
	return 0;
}

struct capload *capload_read(int rfd)
{
	struct capload *l;
	ssize_t n;

	do
		n = read(rfd, &l, sizeof(l));
	while (n < 0 && errno == EINTR);
	if (n != sizeof(l))
		return NULL;
	pthread_join(l->thread, NULL);
	return l;
}

struct capload *capload_wait(int rfd)
{
	struct pollfd p = {.fd = rfd, .events = POLLIN};
	struct capload *l;

	while (!(l = capload_read(rfd)))
		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			return NULL;
	return l;
}

void capload_free(struct capload *l)
{
	if (!l)
		return;
	capture_free(l->cap);
	free(l);
}
