/* SPDX-License-Identifier: MIT */
/* Who a process is, from /proc/PID/status: its users and its pid in its own namespace. */
#ifndef EMBER_PROCIDS_H
#define EMBER_PROCIDS_H

#include <sys/types.h>

/* Who the process is: its real and effective uid, and its pid in its own namespace. */
struct proc_ids {
	uid_t ruid, euid;
	long nspid;
};

/* Reads pid's ids. 0, -ENODATA (no Uid line), or the open's -errno. */
int procids_read(pid_t pid, struct proc_ids *ids);

#endif
