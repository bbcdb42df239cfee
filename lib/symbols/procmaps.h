/* SPDX-License-Identifier: MIT */
/* /proc/PID/maps: a pure parser, a bounded reader and address lookup. */
#ifndef EMBER_PROCMAPS_H
#define EMBER_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Bounds on what one process may make us hold. */
#define PROCMAPS_MAX_ENTRIES 65536
#define PROCMAPS_MAX_BYTES (16u << 20)

enum {
	PROCMAP_R = 1,
	PROCMAP_W = 2,
	PROCMAP_X = 4,
	PROCMAP_SHARED = 8,
	/*
	 * Read by the kernel at the process's exit (procmaps_parse_exit): its
	 * file is looked up by path in emberd's own root, accepted only if it
	 * is the mapped inode on the mapped device.
	 */
	PROCMAP_AT_EXIT = 16,
};

struct proc_map {
	uint64_t start, end; /* [start, end) in the process's address space */
	uint64_t offset;     /* file offset of start */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint32_t perms; /* PROCMAP_* bits */
	char *path;	/* NULL for anonymous mappings; "[vdso]" etc. kept as is */
};

struct proc_maps {
	struct proc_map *v; /* sorted by start */
	size_t n;
	size_t bad_lines; /* malformed lines skipped */
};

/* Pure: parses text into out (which must be zeroed). 0 or -ENOMEM / -E2BIG. */
int procmaps_parse(const char *text, size_t len, struct proc_maps *out);
/*
 * Pure: an EMBER_PROC_MAPS record of size bytes (include/ember/proc.h: the
 * executable mappings the kernel read at a process's exit) into out (which
 * must be zeroed), each executable and PROCMAP_AT_EXIT. A mapping that is
 * empty, out of order or overlaps the one before is left out and one whose
 * path is not whole loses it (both counted in bad_lines). 0, -EINVAL (not
 * such a record) or -ENOMEM.
 */
int procmaps_parse_exit(const void *rec, size_t size, struct proc_maps *out);
/* Reads /proc/PID/maps (bounded by PROCMAPS_MAX_BYTES) and parses it. */
int procmaps_read(pid_t pid, struct proc_maps *out);
/*
 * Only the executable mappings of PID (the only ones a stack frame can be in),
 * through the PROCMAP_QUERY ioctl (Linux 6.11): no text is formatted for the
 * other mappings. -ENOTTY (or -EINVAL) on older kernels: use procmaps_read.
 */
int procmaps_read_exec(pid_t pid, struct proc_maps *out);
/* Pure: a copy of m (one block, as procmaps_parse makes it) into out. 0 or -ENOMEM. */
int procmaps_dup(const struct proc_maps *m, struct proc_maps *out);
/* Pure: the heap bytes m holds (its mappings and their paths). */
size_t procmaps_memory(const struct proc_maps *m);
/* The mapping that contains addr, or NULL. */
const struct proc_map *procmaps_find(const struct proc_maps *m, uint64_t addr);
void procmaps_free(struct proc_maps *m);

#endif
