// SPDX-License-Identifier: MIT
/*
 * What a uprobe on malloc costs on this host now: emberctl probes its own
 * libc's malloc with a counting perf event (the uprobe PMU, no BPF) and times
 * 64-byte malloc/free pairs with and without it. A malloc capture's programs
 * walk the stack on top of that trap.
 */
#include <dlfcn.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* Pairs timed: enough for a stable mean, few enough to take milliseconds probed. */
#define PAIRS_PLAIN 200000
#define PAIRS_PROBED 2000

static void *volatile sink;

static double thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Mean CPU ns of one malloc(64)/free pair over n. */
static double pair_ns(int n)
{
	double t0 = thread_ns();

	for (int i = 0; i < n; i++) {
		sink = malloc(64);
		free(sink);
	}
	return (thread_ns() - t0) / n;
}

/* The file and file offset of addr, from /proc/self/maps. */
static int file_offset(uintptr_t addr, char *path, size_t len, uint64_t *off)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4096];
	int rc = -ENOENT;

	if (!f)
		return -errno;
	while (rc && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, foff;
		int pos = 0;

		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &lo, &hi, &foff, &pos) < 3 ||
		    addr < lo || addr >= hi || !pos || line[pos] != '/')
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(path, len, "%s", line + pos);
		*off = addr - lo + foff;
		rc = 0;
	}
	fclose(f);
	return rc;
}

/* The uprobe PMU's perf type, from sysfs. */
static int uprobe_type(void)
{
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "re");
	int t = -1;

	if (f) {
		if (fscanf(f, "%d", &t) != 1)
			t = -1;
		fclose(f);
	}
	return t;
}

int malloc_trap_cost(double *plain_ns, double *probed_ns)
{
	struct perf_event_attr attr = {.size = sizeof(attr)};
	void *fn = dlsym(RTLD_DEFAULT, "malloc");
	char path[4096];
	uint64_t off = 0;
	int fd, type = uprobe_type();

	if (!fn || type < 0 || file_offset((uintptr_t)fn, path, sizeof(path), &off))
		return -ENOTSUP;
	attr.type = (uint32_t)type;
	attr.config1 = (uint64_t)(uintptr_t)path; /* uprobe_path */
	attr.config2 = off;			  /* probe_offset */
	pair_ns(PAIRS_PROBED);			  /* warm up the allocator's caches */
	*plain_ns = pair_ns(PAIRS_PLAIN);
	fd = (int)syscall(__NR_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	*probed_ns = pair_ns(PAIRS_PROBED);
	close(fd);
	return 0;
}
