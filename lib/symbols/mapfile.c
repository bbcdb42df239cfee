// SPDX-License-Identifier: MIT
/* Opens and identifies the files other processes map (lib/symbols/mapfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "mapfile.h"

static const char deleted_suffix[] = " (deleted)";

struct file_key file_key_of(const struct stat *st)
{
	return (struct file_key){
		.dev = st->st_dev,
		.ino = st->st_ino,
		.size = (uint64_t)st->st_size,
		.mtime_sec = st->st_mtim.tv_sec,
		.mtime_nsec = st->st_mtim.tv_nsec,
	};
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int cmp_s64(int64_t a, int64_t b)
{
	return a < b ? -1 : a > b;
}

int file_key_cmp(const struct file_key *a, const struct file_key *b)
{
	int c;

	if ((c = cmp_u64(a->ino, b->ino)) || (c = cmp_u64(a->dev, b->dev)) ||
	    (c = cmp_u64(a->size, b->size)) || (c = cmp_s64(a->mtime_sec, b->mtime_sec)))
		return c;
	return cmp_s64(a->mtime_nsec, b->mtime_nsec);
}

/*
 * The file pfd (O_PATH: no device's open() ran, no FIFO blocked) reopened for
 * reading if it is a regular file: through its descriptor, so that a path
 * swapped between the check and the open cannot substitute another file.
 * Closes pfd. fd or -errno (-EINVAL: not a regular file).
 */
static int reopen_regular(int pfd, struct stat *st)
{
	char self[64];
	struct stat now;
	int fd;

	if (fstat(pfd, st) || !S_ISREG(st->st_mode)) {
		close(pfd);
		return -EINVAL;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	close(pfd);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &now) || now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
		close(fd);
		return -ESTALE;
	}
	*st = now;
	return fd;
}

int mapfile_open_regular(const char *path, struct stat *st)
{
	int pfd = open(path, O_PATH | O_CLOEXEC);

	return pfd < 0 ? -errno : reopen_regular(pfd, st);
}

int mapfile_open_regular_at(int root, const char *path, uint64_t resolve, struct stat *st)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = resolve};
	long pfd = syscall(SYS_openat2, root, path, &how, sizeof(how));

	return pfd < 0 ? -errno : reopen_regular((int)pfd, st);
}

bool mapfile_deleted(const char *path)
{
	size_t n = strlen(path), d = sizeof(deleted_suffix) - 1;

	return n >= d && !strcmp(path + n - d, deleted_suffix);
}

static void map_files_path(char *buf, size_t len, pid_t pid, const struct proc_map *m)
{
	snprintf(buf, len, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, m->start, m->end);
}

/*
 * The path of mapping m's file in pid's root: the way to it when map_files is
 * denied. -ENOENT when it has none to try (anonymous, or deleted since mapped).
 */
static int root_path(char *buf, size_t len, pid_t pid, const struct proc_map *m)
{
	if (!m->path || mapfile_deleted(m->path))
		return -ENOENT;
	if ((size_t)snprintf(buf, len, "/proc/%d/root%s", (int)pid, m->path) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* Whether st is the file mapping m maps: its inode, and its device unless m is /proc's. */
static bool is_mapped(const struct proc_map *m, const struct stat *st)
{
	if ((uint64_t)st->st_ino != m->inode)
		return false;
	/*
	 * /proc/PID/maps is read while the process lives, through its root;
	 * an exit's path is looked up in emberd's root, where another
	 * filesystem may hold the same inode number under it
	 */
	return !(m->perms & PROCMAP_AT_EXIT) ||
	       (major(st->st_dev) == m->dev_major && minor(st->st_dev) == m->dev_minor);
}

/* The file of a mapping read at its process's exit: by its path in emberd's own root. */
static int open_at_exit(const struct proc_map *m, struct stat *st)
{
	int fd;

	if (!m->path || m->path[0] != '/')
		return -ENOENT;
	fd = mapfile_open_regular(m->path, st);
	if (fd >= 0 && !is_mapped(m, st)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int mapfile_open(pid_t pid, const struct proc_map *m, struct stat *st)
{
	char path[4096 + 64];
	int fd, err;

	if (m->perms & PROCMAP_AT_EXIT)
		return open_at_exit(m, st);

	map_files_path(path, sizeof(path), pid, m);
	fd = mapfile_open_regular(path, st);
	if (fd >= 0 || (err = root_path(path, sizeof(path), pid, m)) == -ENOENT)
		return fd;
	if (err)
		return err;
	fd = mapfile_open_regular(path, st);
	if (fd >= 0 && !is_mapped(m, st)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int mapfile_key(pid_t pid, const struct proc_map *m, struct file_key *key)
{
	char path[4096 + 64];
	struct stat st;

	if (m->perms & PROCMAP_AT_EXIT) {
		if (!m->path || m->path[0] != '/')
			return -ENOENT;
		if (stat(m->path, &st))
			return -errno;
		if (!is_mapped(m, &st))
			return -ESTALE;
		if (!S_ISREG(st.st_mode))
			return -EINVAL;
		*key = file_key_of(&st);
		return 0;
	}
	map_files_path(path, sizeof(path), pid, m);
	if (stat(path, &st)) {
		/* as mapfile_open: the path in the process's root, if still the mapped inode */
		int err = -errno;

		if (root_path(path, sizeof(path), pid, m) || stat(path, &st))
			return err;
		if (!is_mapped(m, &st))
			return -ESTALE;
	}
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	*key = file_key_of(&st);
	return 0;
}
