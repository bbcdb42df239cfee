/* SPDX-License-Identifier: MIT */
/*
 * A file another process maps: opened safely (regular files only, the mapped
 * inode itself) and identified (device, inode, size, mtime) so that caches of
 * what is read from it are shared by every process that maps it.
 */
#ifndef EMBER_MAPFILE_H
#define EMBER_MAPFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "procmaps.h"

/* A file's identity: the same binary in every process, a new one once rewritten. */
struct file_key {
	uint64_t dev, ino, size;
	int64_t mtime_sec, mtime_nsec;
};

struct file_key file_key_of(const struct stat *st);
int file_key_cmp(const struct file_key *a, const struct file_key *b);

/* Opens path if it is a regular file (devices are not opened at all): fd or -errno. */
int mapfile_open_regular(const char *path, struct stat *st);
/*
 * The same for path under root as openat2 resolves it with resolve
 * (RESOLVE_IN_ROOT, RESOLVE_NO_SYMLINKS, ...): -ELOOP or -EXDEV where resolve
 * refuses the path, -EINVAL when it is no regular file.
 */
int mapfile_open_regular_at(int root, const char *path, uint64_t resolve, struct stat *st);

/*
 * The file of mapping m of pid: through map_files (root only), else its path
 * in the process's root, accepted only when it is still the mapped inode; one
 * read at the process's exit (PROCMAP_AT_EXIT) by its path in emberd's own
 * root, if that is the mapped inode on the mapped device. fd (and its stat in
 * st) or -errno.
 */
int mapfile_open(pid_t pid, const struct proc_map *m, struct stat *st);

/*
 * The identity of mapping m's file by one stat() through map_files (root:
 * CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE), else of its path in the process's
 * root if it is still the mapped inode (in emberd's root for PROCMAP_AT_EXIT,
 * as mapfile_open), without opening it. 0 or -errno.
 */
int mapfile_key(pid_t pid, const struct proc_map *m, struct file_key *key);

/* Whether a mapping's path says its file was deleted. */
bool mapfile_deleted(const char *path);

#endif
