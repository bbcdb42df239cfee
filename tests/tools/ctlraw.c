// SPDX-License-Identifier: MIT
/*
 * ctlraw SOCKET: sends stdin's bytes, as they are, to emberd's control socket,
 * then prints each reply frame on a line and how long until emberd closed the
 * connection. Lets tests speak hostile or silent clients' part.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "ctlproto.h"

/* Gives up on a daemon that neither answers nor closes. */
#define TIMEOUT_MS 20000

static void print_frames(uint8_t *buf, size_t *len)
{
	struct ctl_msg m;
	char err[256];
	size_t need;
	long flen;

	while ((flen = ctl_frame_len(buf, *len, CTL_MAX_REPLY, &need)) > 0) {
		if (ctl_decode(buf, (size_t)flen, &m, err, sizeof(err)))
			printf("MALFORMED %s\n", err);
		else if (m.type == CTL_ERROR)
			printf("ERROR %d %s\n", (int)m.code, m.text);
		else
			printf("TYPE %d\n", (int)m.type);
		memmove(buf, buf + flen, *len - (size_t)flen);
		*len -= (size_t)flen;
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	static uint8_t in[1 << 16], buf[1 << 16];
	size_t n, len = 0;
	double t0;
	int fd;

	if (argc != 2 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "usage: ctlraw SOCKET < BYTES\n");
		return 2;
	}
	strcpy(sa.sun_path, argv[1]);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		printf("CONNECT %s\n", strerror(errno));
		return 1;
	}
	t0 = (mono_ns() / 1e9);
	n = fread(in, 1, sizeof(in), stdin);
	if (n && send(fd, in, n, MSG_NOSIGNAL) < 0)
		printf("SEND %s\n", strerror(errno));
	for (;;) {
		struct pollfd pf = {fd, POLLIN, 0};
		ssize_t r;

		if (poll(&pf, 1, TIMEOUT_MS) <= 0) {
			printf("TIMEOUT\n");
			return 1;
		}
		r = recv(fd, buf + len, sizeof(buf) - len, 0);
		if (r <= 0)
			break;
		len += (size_t)r;
		print_frames(buf, &len);
	}
	printf("CLOSED %.1f\n", (mono_ns() / 1e9) - t0);
	return 0;
}
