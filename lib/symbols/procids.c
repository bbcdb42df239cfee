// SPDX-License-Identifier: MIT
/*
 * Who a process is, from /proc/PID/status: what the perf-map reader checks a
 * map's owner against, and the user the symbol cache charges a binary to.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "procids.h"

/* Lines of /proc/PID/status looked at for Uid and NStgid (they are near the top). */
#define STATUS_LINES 64

static void parse_nspid(const char *s, long *out)
{
	const char *last = NULL;

	for (const char *p = s; *p; p++)
		if ((*p >= '0' && *p <= '9') && (p == s || p[-1] == '\t' || p[-1] == ' '))
			last = p;
	if (last)
		*out = strtol(last, NULL, 10);
}

int procids_read(pid_t pid, struct proc_ids *ids)
{
	char path[64], *line = NULL;
	bool have_uid = false, have_tgid = false;
	size_t cap = 0;
	unsigned long r, e;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	ids->nspid = pid;
	for (i = 0; i < STATUS_LINES && getline(&line, &cap, f) > 0; i++) {
		if (sscanf(line, "Uid: %lu %lu", &r, &e) == 2) {
			ids->ruid = (uid_t)r;
			ids->euid = (uid_t)e;
			have_uid = true;
		} else if (!strncmp(line, "NStgid:", 7)) {
			/* The innermost namespace's pid is the last one: the JIT's getpid(). */
			parse_nspid(line + 7, &ids->nspid);
			have_tgid = true;
		} else if (!have_tgid && !strncmp(line, "NSpid:", 6)) {
			parse_nspid(line + 6, &ids->nspid);
		}
	}
	free(line);
	fclose(f);
	return have_uid ? 0 : -ENODATA;
}
