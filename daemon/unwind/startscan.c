// SPDX-License-Identifier: MIT
/*
 * Processes that ran while emberd set up (startscan.h): two reads of every
 * /proc/PID/stat, one before the BPF objects are loaded and one after, which
 * takes long enough (0.3 to 3 s, most of it the kernel's verifier) to tell
 * the busy processes from the idle ones.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ember/unwind.h"
#include "procinfo.h"
#include "startscan.h"

#define PF_KTHREAD 0x00200000 /* include/linux/sched.h: no user stack to walk */
#define PF_EXITING 0x00000004
/* Processes read at most: beyond the unwinder's procs map, the rest wait for their samples. */
#define SCAN_MAX EMBER_UNWIND_PROCS_MAX

struct scanned {
	pid_t pid;
	char state;
	uint64_t start_ticks, cpu_ticks;
};

struct startscan {
	struct scanned *v; /* by pid */
	size_t n;
};

static int cmp_scanned(const void *a, const void *b)
{
	pid_t x = ((const struct scanned *)a)->pid, y = ((const struct scanned *)b)->pid;

	return x < y ? -1 : x > y;
}

/* pid's stat into out; false for a kernel thread, one exiting, or one gone. */
static bool read_stat(pid_t pid, struct scanned *out)
{
	char path[32], buf[1024];
	struct proc_stat st;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0 || procinfo_parse_stat(buf, (size_t)n, &st))
		return false;
	if ((st.flags & (PF_KTHREAD | PF_EXITING)) || st.state == 'Z' || st.state == 'X')
		return false;
	*out = (struct scanned){pid, st.state, st.start_ticks, st.cpu_ticks};
	return true;
}

/* Reads every process's stat into s, sorted by pid. 0 or -errno. */
static int scan(struct startscan *s)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	size_t cap = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)) && s->n < SCAN_MAX) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		if (s->n == cap) {
			struct scanned *v = realloc(s->v, (cap ? 2 * cap : 256) * sizeof(*v));

			if (!v) {
				closedir(d);
				return -ENOMEM;
			}
			s->v = v;
			cap = cap ? 2 * cap : 256;
		}
		if (read_stat((pid_t)pid, &s->v[s->n]))
			s->n++;
	}
	closedir(d);
	qsort(s->v, s->n, sizeof(*s->v), cmp_scanned);
	return 0;
}

struct startscan *startscan_begin(void)
{
	struct startscan *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return NULL;
	rc = scan(s);
	if (rc) {
		startscan_free(s);
		errno = -rc;
		return NULL;
	}
	return s;
}

/* Whether now's process ran since the first read (before: its entry there, or NULL). */
static bool ran(const struct scanned *now, const struct scanned *before)
{
	if (now->state == 'R')
		return true;
	if (!before || before->start_ticks != now->start_ticks) /* started since */
		return now->cpu_ticks > 0;
	return now->cpu_ticks > before->cpu_ticks;
}

size_t startscan_load(const struct startscan *s, struct unwinder *u)
{
	struct startscan now = {0};
	pid_t self = getpid();
	size_t loaded = 0;

	if (scan(&now)) {
		free(now.v);
		return 0;
	}
	for (size_t i = 0; i < now.n; i++) {
		const struct scanned *p = &now.v[i];
		const struct scanned *before = bsearch(p, s->v, s->n, sizeof(*s->v), cmp_scanned);

		if (p->pid == self || !ran(p, before))
			continue;
		unwinder_add(u, p->pid);
		loaded++;
	}
	free(now.v);
	return loaded;
}

void startscan_free(struct startscan *s)
{
	if (!s)
		return;
	free(s->v);
	free(s);
}
