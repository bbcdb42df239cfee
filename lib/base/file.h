/* SPDX-License-Identifier: MIT */
/* Whole-file writes that readers never see half done, and paths made absolute. */
#ifndef EMBER_FILE_H
#define EMBER_FILE_H

#include <stddef.h>

/* What file_write_atomic() does besides write and rename. */
enum {
	/* fsync the data before the rename: the file survives a crash whole (a file on disk
	 * that is written once; a file on tmpfs rewritten every interval need not) */
	WRITE_SYNC = 1 << 0,
};

/*
 * Writes buf to path: to "path.tmp" first (created afresh, so never a link
 * planted there), then renamed over path, so that a reader sees the old file or
 * the new one, whole. The temporary file is removed on failure. flags: WRITE_*.
 * 0 or a negative errno.
 */
int file_write_atomic(const char *path, const void *buf, size_t len, unsigned int flags);

/* Writes all of buf to fd, across short writes and EINTR. 0 or a negative errno. */
int write_all(int fd, const void *buf, size_t len);

/*
 * Makes path absolute into out (len bytes), as the daemon and the CLI do with
 * a --data-dir once at start: an absolute path is copied as it is; a relative
 * one that exists is resolved by realpath(3), one that does not (yet) is put
 * after the working directory, leading "./" left out. 0, -EINVAL for an empty
 * path, -ENAMETOOLONG, or the negative errno of realpath or getcwd (-ENOENT:
 * the working directory was removed).
 */
int path_absolute(const char *path, char *out, size_t len);

#endif
