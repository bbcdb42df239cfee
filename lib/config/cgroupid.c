// SPDX-License-Identifier: MIT
/* Cgroup v2 ids to paths, through file handles of the cgroup2 mount (see cgroupid.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cgroupid.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
/* The file handle type of kernfs (cgroupfs): its 8 bytes are the node's id. */
#define FILEID_KERNFS 0xfe
/* What d_path() appends to a directory removed while open. */
#define DELETED_SUFFIX " (deleted)"

/* One resolved id: its path, or the error it gave (a removed cgroup stays removed). */
struct cg_entry {
	uint64_t id; /* 0: empty slot (no cgroup has id 0) */
	int err;
	char *path;
};

struct cgroup_names {
	int mount_fd; /* the cgroup2 mount's root directory; -1: none */
	char mount[32];
	struct cg_entry cache[CGROUPID_CACHE]; /* direct-mapped by id */
};

/* Where systemd mounts cgroup v2: alone (unified), or beside v1 (hybrid). */
static const char *const mounts[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};

struct cgroup_names *cgroup_names_open(void)
{
	struct cgroup_names *cn = calloc(1, sizeof(*cn));
	struct statfs sf;

	if (!cn)
		return NULL;
	cn->mount_fd = -1;
	for (size_t i = 0; i < sizeof(mounts) / sizeof(mounts[0]) && cn->mount_fd < 0; i++) {
		if (statfs(mounts[i], &sf) || sf.f_type != CGROUP2_SUPER_MAGIC)
			continue;
		cn->mount_fd = open(mounts[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		snprintf(cn->mount, sizeof(cn->mount), "%s", mounts[i]);
	}
	return cn;
}

void cgroup_names_close(struct cgroup_names *cn)
{
	if (!cn)
		return;
	if (cn->mount_fd >= 0)
		close(cn->mount_fd);
	for (size_t i = 0; i < CGROUPID_CACHE; i++)
		free(cn->cache[i].path);
	free(cn);
}

const char *cgroup_names_mount(const struct cgroup_names *cn)
{
	return cn->mount_fd >= 0 ? cn->mount : NULL;
}

int cgroupid_path_under(const char *link, size_t linklen, const char *mount, char *out, size_t len)
{
	size_t m = strlen(mount), sfx = strlen(DELETED_SUFFIX), n;

	if (memchr(link, '\0', linklen) || linklen < m || memcmp(link, mount, m))
		return -EINVAL;
	if (linklen >= m + sfx && !memcmp(link + linklen - sfx, DELETED_SUFFIX, sfx))
		linklen -= sfx;
	if (linklen > m && link[m] != '/')
		return -EINVAL; /* "/sys/fs/cgroupx": another directory */
	n = linklen > m ? linklen - m : 0;
	if (!len || (n ? n : 1) >= len)
		return -ENAMETOOLONG;
	if (n)
		memcpy(out, link + m, n);
	else
		out[n++] = '/';
	out[n] = '\0';
	return 0;
}

/* Opens cgroup id's directory by its file handle and reads back its path. */
static int resolve(const struct cgroup_names *cn, uint64_t id, char *out, size_t len)
{
	struct {
		struct file_handle fh;
		uint64_t id;
	} h = {.fh = {.handle_bytes = sizeof(uint64_t), .handle_type = FILEID_KERNFS}};
	char proc[32], link[PATH_MAX];
	ssize_t n;
	int fd, err;

	memcpy(h.fh.f_handle, &id, sizeof(id));
	fd = open_by_handle_at(cn->mount_fd, &h.fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, link, sizeof(link));
	err = n < 0 ? -errno : n >= (ssize_t)sizeof(link) ? -ENAMETOOLONG : 0;
	close(fd);
	return err ? err : cgroupid_path_under(link, (size_t)n, cn->mount, out, len);
}

/* Resolves id into its cache slot. A removed cgroup is remembered so; other errors are not. */
static int fill(struct cgroup_names *cn, struct cg_entry *e, uint64_t id)
{
	char path[PATH_MAX];
	int err = resolve(cn, id, path, sizeof(path));

	free(e->path);
	*e = (struct cg_entry){0};
	if (err == -ESTALE || err == -ENOENT)
		*e = (struct cg_entry){.id = id, .err = -ESTALE};
	else if (!err && (e->path = strdup(path)))
		e->id = id;
	else if (!err)
		err = -ENOMEM;
	return err == -ENOENT ? -ESTALE : err;
}

int cgroup_names_path(struct cgroup_names *cn, uint64_t id, char *out, size_t len)
{
	struct cg_entry *e = &cn->cache[id % CGROUPID_CACHE];
	int err;

	if (cn->mount_fd < 0 || !id)
		return -ENOTSUP;
	if (e->id != id && (err = fill(cn, e, id)))
		return err;
	if (e->err)
		return e->err;
	if (strlen(e->path) >= len)
		return -ENAMETOOLONG;
	memcpy(out, e->path, strlen(e->path) + 1);
	return 0;
}

int cgroup_names_lookup(uint64_t id, char *out, size_t len, void *arg)
{
	return cgroup_names_path(arg, id, out, len);
}
