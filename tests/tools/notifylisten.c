// SPDX-License-Identifier: MIT
/*
 * notifylisten: stands in for systemd's notify socket in tests. Binds an
 * AF_UNIX datagram socket at PATH and prints each message received as one
 * line, "MONOTONIC_SECONDS FIELD|FIELD|...", until SIGTERM or SIGINT.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

int main(int argc, char **argv)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char buf[4096];
	int fd;

	if (argc != 2 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "usage: notifylisten PATH (shorter than %zu bytes)\n",
			sizeof(sa.sun_path));
		return 2;
	}
	strcpy(sa.sun_path, argv[1]);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	unlink(argv[1]);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "notifylisten: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	for (;;) {
		int64_t now;
		ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "notifylisten: recv: %s\n", strerror(errno));
			return 1;
		}
		now = mono_ns();
		buf[n] = '\0';
		/* one line per message: the fields are newline-separated */
		for (char *p = buf; *p; p++)
			if (*p == '\n')
				*p = '|';
		printf("%lld.%03lld %s\n", (long long)(now / NS_PER_SEC),
		       (long long)(now % NS_PER_SEC / NS_PER_MS), buf);
		fflush(stdout);
	}
}
