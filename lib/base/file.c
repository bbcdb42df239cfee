// SPDX-License-Identifier: MIT
/* Whole-file writes: a temporary file in the same directory, renamed over the old one. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "file.h"

int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int file_write_atomic(const char *path, const void *buf, size_t len, unsigned int flags)
{
	char *tmp;
	int fd, ret;

	if (asprintf(&tmp, "%s.tmp", path) < 0)
		return -ENOMEM;
	/*
	 * A fresh file, never one planted there (a link to another file): one left
	 * over (a crash between open and rename) or planted is removed first.
	 */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0 && errno == EEXIST) {
		unlink(tmp);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	}
	if (fd < 0) {
		ret = -errno;
		goto out_free;
	}
	ret = write_all(fd, buf, len);
	if (!ret && (flags & WRITE_SYNC) && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path) < 0)
		ret = -errno;
	if (ret)
		unlink(tmp);
out_free:
	free(tmp);
	return ret;
}
