// SPDX-License-Identifier: MIT
/*
 * emberd's status file: the interval report written to <runtime_dir>/status
 * after every interval, atomically (a temporary file renamed).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "file.h"
#include "log.h"
#include "status.h"

/* Where the file goes, and whether the last write failed. */
struct status {
	char path[PATH_MAX + 16];
	bool write_failed; /* warned once; warned again after a success */
};

/* Creates the runtime directory and its missing parents (0755, like RuntimeDirectory=). */
static int make_dirs(const char *dir)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", dir);
	for (char *c = p + 1; *c; c++) {
		if (*c != '/')
			continue;
		*c = '\0';
		if (mkdir(p, 0755) && errno != EEXIST)
			return -errno;
		*c = '/';
	}
	return mkdir(p, 0755) && errno != EEXIST ? -errno : 0;
}

/* Writes the file atomically: readers see the old one or the new one, whole. */
static int write_file(struct status *s, const struct ember_status *st)
{
	static char buf[STATUSFILE_MAX_BYTES];
	int n = statusfile_format(st, buf, sizeof(buf));

	if (n < 0)
		return n;
	/* no fsync: the runtime directory is a tmpfs, and a reader wants it current, not durable */
	return file_write_atomic(s->path, buf, (size_t)n, 0);
}

void status_write(struct status *s, const struct ember_status *st)
{
	int rc;

	if (!s)
		return;
	rc = write_file(s, st);
	if (rc && !s->write_failed)
		log_warnx("cannot write the status file %s: %s (emberctl status will say emberd "
			  "is not running)",
			  s->path, strerror(-rc));
	s->write_failed = rc != 0;
}

struct status *status_open(const char *runtime_dir)
{
	struct status *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return NULL;
	snprintf(s->path, sizeof(s->path), "%s/status", runtime_dir);
	rc = make_dirs(runtime_dir);
	if (rc) {
		log_warnx("cannot create the runtime directory %s: %s", runtime_dir, strerror(-rc));
		s->write_failed = true;
	}
	return s;
}

void status_close(struct status *s)
{
	free(s);
}
