// SPDX-License-Identifier: MIT
/*
 * Whole-file writes: a temporary file in the same directory, renamed over the old one.
 * And the one path helper the command lines share.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int path_absolute(const char *path, char *out, size_t len)
{
	char buf[PATH_MAX];
	const char *dir = "";
	int n;

	if (!*path)
		return -EINVAL;
	if (path[0] != '/') {
		if (realpath(path, buf))
			return snprintf(out, len, "%s", buf) >= (int)len ? -ENAMETOOLONG : 0;
		if (errno != ENOENT)
			return -errno;
		/* not there yet (emberd creates its data directory): below the working one */
		if (!getcwd(buf, sizeof(buf)))
			return -errno;
		if (strcmp(buf, "/"))
			dir = buf;
		while (path[0] == '.' && path[1] == '/') {
			for (path++; *path == '/'; path++)
				;
		}
	}
	n = snprintf(out, len, "%s%s%s", dir, path[0] == '/' ? "" : "/", path);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
