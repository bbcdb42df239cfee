/* SPDX-License-Identifier: MIT */
/*
 * Process metadata: what ember needs to know about one process to decide which
 * application it belongs to (comm, exe, cmdline, cgroup, systemd unit, container).
 */
#ifndef EMBER_PROCINFO_H
#define EMBER_PROCINFO_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Bytes of a 64-hex container id, without its NUL. */
#define PROCINFO_CONTAINER_ID_LEN 64
/* /proc/PID/cgroup and /proc/PID/environ are read at most this far. */
#define PROCINFO_CGROUP_MAX_BYTES (128u << 10)
#define PROCINFO_ENVIRON_MAX_BYTES (4u << 20)

/* The fields of struct proc_info that procinfo_fill reads, each from one file. */
enum procinfo_field {
	PROCINFO_COMM = 1,
	PROCINFO_CMDLINE = 2,
	PROCINFO_EXE = 4,
	PROCINFO_CGROUP = 8, /* cgroup, and the unit and container read from it */
	PROCINFO_ALL = 15,
};

struct proc_info {
	pid_t pid;
	unsigned int have;     /* PROCINFO_* fields read so far (procinfo_fill) */
	char comm[16 + 1];     /* /proc/PID/comm, without its newline */
	char exe[PATH_MAX];    /* /proc/PID/exe, " (deleted)" stripped; "" if unreadable */
	char cmdline[4096];    /* /proc/PID/cmdline, NULs turned into spaces, truncated */
	char cgroup[PATH_MAX]; /* see procinfo_parse_cgroup; "" when unknown */
	char unit[256];	       /* systemd unit from the cgroup path; "" when none */
	char container_id[PROCINFO_CONTAINER_ID_LEN + 1]; /* 64 lowercase hex; "" when none */
	char container_runtime[16]; /* "docker", "containerd", "cri-o", "podman" or "" */
};

/*
 * Reads the metadata of pid with bounded reads; a field whose file is missing
 * or unreadable (exe of a kernel thread, or of another user's process without
 * privileges) is left empty. 0, -EINVAL for pid <= 0, -ENOMEM, or -ENOENT /
 * -ESRCH when the process is gone (also when it exits during the read).
 */
int procinfo_read(pid_t pid, struct proc_info *out);

/*
 * The same in steps, reading only what is asked: procinfo_open clears out and
 * opens /proc/PID (the fd pins the process: once it exits, every read through
 * the fd fails, even if its pid is reused); procinfo_fill reads the fields of
 * mask not yet in out->have. Each returns as procinfo_read does (procinfo_open:
 * the directory fd, which the caller closes).
 */
int procinfo_open(pid_t pid, struct proc_info *out);
int procinfo_fill(int dirfd, unsigned int mask, struct proc_info *out);

/*
 * Reads the value of environment variable name of pid into out (the
 * environment the process started with: /proc/PID/environ, which needs root or
 * the same uid). Opt-in: call it only for variables the configuration names.
 * 0; -ENOENT when unset; -ERANGE when the value does not fit in outlen;
 * -EINVAL for a bad name; otherwise the error opening or reading the file
 * (-EACCES without permission, -ENOENT / -ESRCH when the process is gone).
 */
int procinfo_env(pid_t pid, const char *name, char *out, size_t outlen);

/*
 * Pure: /proc/PID/cgroup text to the process's cgroup path: the cgroup v2 line
 * ("0::/path") unless its path is "/", else the v1 "name=systemd" hierarchy's
 * path, else "/" when either said so. A trailing " (deleted)" is stripped;
 * malformed lines are skipped. 0; -ENOENT (out "") when no line gives a path;
 * -ENAMETOOLONG (out "") when the path does not fit; -EINVAL for outlen 0.
 */
int procinfo_parse_cgroup(const char *text, size_t len, char *out, size_t outlen);

/*
 * Pure: the systemd unit a cgroup path belongs to, following systemd's layout:
 * leading slices are skipped and the next component is the unit, so processes
 * in a unit's delegated sub-cgroups belong to that unit. Below a user manager
 * (user@UID.service), the user unit it runs is returned instead, except the
 * manager's own init.scope. False (out "") for "/", slice-only paths and paths
 * not laid out by systemd ("/docker/ID").
 */
bool procinfo_unit_from_cgroup(const char *path, char *out, size_t outlen);

/*
 * Pure: the container id (64 lowercase hex characters) and runtime a cgroup
 * path names, the innermost one when nested. Runtime is "docker", "containerd",
 * "cri-o", "podman", or "" for a bare id under an unknown parent. The runtime
 * monitors (crio-conmon-ID, libpod-conmon-ID) are not the container: false.
 * idlen must be at least PROCINFO_CONTAINER_ID_LEN + 1; runtime may be NULL.
 */
bool procinfo_container_from_cgroup(const char *path, char *id, size_t idlen, char *runtime,
				    size_t rtlen);

/*
 * Pure: the value of name in an environ block (NUL-separated NAME=value
 * entries; the last may lack its NUL). The first entry wins, as in getenv.
 * 0, -ENOENT, -ERANGE (value longer than outlen - 1) or -EINVAL.
 */
int procinfo_parse_environ(const char *buf, size_t len, const char *name, char *out, size_t outlen);

/*
 * Pure: whether /proc/PID/stat text says the process is on its way out: a
 * zombie or dead (state Z or X), or exiting (PF_EXITING in its flags). Its
 * executable and command line then read empty, as a kernel thread's do.
 * Malformed text: false.
 */
bool procinfo_parse_stat_exiting(const char *text, size_t len);

/* What /proc/PID/stat says of a process that emberd's start-up looks at. */
struct proc_stat {
	char state;	      /* R, S, D, Z, ... */
	unsigned long flags;  /* PF_* */
	uint64_t cpu_ticks;   /* utime + stime, in clock ticks */
	uint64_t start_ticks; /* starttime: clock ticks after boot (tells a reused pid) */
};

/*
 * Pure: the fields of struct proc_stat from /proc/PID/stat text. 0, or
 * -EINVAL when the text is cut or malformed.
 */
int procinfo_parse_stat(const char *text, size_t len, struct proc_stat *out);

/*
 * Whether the process whose /proc directory is dirfd is on its way out (or
 * gone): procinfo_parse_stat_exiting() of its stat file.
 */
bool procinfo_exiting(int dirfd);

/* The host name, read once (gethostname) for the "hostname" label; never NULL. */
const char *procinfo_hostname(void);

#endif
