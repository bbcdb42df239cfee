/* SPDX-License-Identifier: MIT */
/*
 * Cgroup v2 ids to paths: the BPF programs see a process's cgroup as an id
 * (bpf_get_current_cgroup_id), which names the cgroup of a process gone before
 * /proc/PID/cgroup could be read. The id is the inode of the cgroup's
 * directory under the cgroup2 mount, and a file handle of it (open_by_handle_at,
 * CAP_DAC_READ_SEARCH) opens that directory while the cgroup exists.
 */
#ifndef EMBER_CGROUPID_H
#define EMBER_CGROUPID_H

#include <stddef.h>
#include <stdint.h>

/* Ids resolved at once: a host's short-lived processes run in a few cgroups. */
#define CGROUPID_CACHE 256

struct cgroup_names;

/*
 * Finds the cgroup2 mount (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a
 * hybrid host). NULL on ENOMEM; without cgroup v2 every lookup says -ENOTSUP.
 */
struct cgroup_names *cgroup_names_open(void);
void cgroup_names_close(struct cgroup_names *cn);
/* The cgroup2 mount's directory it found; NULL without cgroup v2. */
const char *cgroup_names_mount(const struct cgroup_names *cn);
/*
 * The path of cgroup id as /proc/PID/cgroup's v2 line gives it
 * ("/system.slice/nginx.service"; "/" for the root). 0, or -ENOTSUP (no
 * cgroup v2), -ESTALE (removed), -ENAMETOOLONG, or another -errno.
 */
int cgroup_names_path(struct cgroup_names *cn, uint64_t id, char *out, size_t len);

/*
 * Pure: a cgroup directory's path as readlink of its descriptor gives it (in
 * mount, the cgroup2 mount's directory) to its path under the hierarchy's
 * root. 0, -EINVAL when link is not under mount, -ENAMETOOLONG.
 */
int cgroupid_path_under(const char *link, size_t linklen, const char *mount, char *out, size_t len);

/* A struct cgroup_names's lookup, as proctable takes it (arg: the struct). */
int cgroup_names_lookup(uint64_t id, char *out, size_t len, void *arg);

#endif
