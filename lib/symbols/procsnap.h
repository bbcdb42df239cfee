/* SPDX-License-Identifier: MIT */
/*
 * One read of a process's executable mappings and of the identity of each
 * one's file, made once when the process is first sampled and shared by the
 * symbolizer and the unwinder, which would otherwise read and stat them each.
 */
#ifndef EMBER_PROCSNAP_H
#define EMBER_PROCSNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "mapfile.h"
#include "procmaps.h"

/*
 * Immutable once read, hence safe to share between threads; freed with its
 * last reference.
 */
struct proc_snap {
	pid_t pid;
	int64_t read_ns; /* CLOCK_MONOTONIC before the read (an exit's: its time); 0: unknown */
	struct proc_maps maps; /* executable mappings (every mapping before Linux 6.11) */
	struct file_key *keys; /* per mapping: its file's identity when key_err[i] is 0 */
	int *key_err; /* per mapping: 0, -ENODATA (not a file's code), or the stat's error */
	int refs;     /* atomic */
};

/*
 * Whether the unwinder and the symbolizer look for mapping m's file: code
 * mapped from a path (not [vdso], anonymous or JIT memory).
 */
bool procsnap_wants_file(const struct proc_map *m);
/*
 * The mappings frames can be in: the executable ones alone through
 * PROCMAP_QUERY (Linux 6.11; ~3x cheaper than formatting and parsing every
 * line of /proc/PID/maps), else every mapping from the text. 0 or -errno.
 */
int procsnap_read_maps(pid_t pid, struct proc_maps *maps);
/*
 * Reads pid's mappings (procsnap_read_maps) and stats the file of each that
 * procsnap_wants_file, but for those prev (an earlier read of pid, or NULL)
 * already identified and that did not change. 0 and one reference in *out, or
 * -errno (-ESRCH: the process maps nothing: exiting, a zombie or a kernel thread).
 */
int procsnap_read(pid_t pid, const struct proc_snap *prev, struct proc_snap **out);
/*
 * The snapshot of a process gone before it could be read, from the mappings
 * the kernel read at its exit (an EMBER_PROC_MAPS record of size bytes:
 * procmaps_parse_exit), its files identified in emberd's own root. 0 and one
 * reference in *out, or -errno (-EINVAL: no mapping whole in the record).
 */
int procsnap_read_exit(const void *rec, size_t size, struct proc_snap **out);
/* Whether s was read at its process's exit (procsnap_read_exit): /proc has no more of it. */
bool procsnap_at_exit(const struct proc_snap *s);
/* Pure: copies into s the keys of prev's mappings that s has unchanged; how many. */
size_t procsnap_carry(struct proc_snap *s, const struct proc_snap *prev);
/* Pure: a snapshot of maps, which it takes over (keys all -ENODATA). NULL on ENOMEM. */
struct proc_snap *procsnap_wrap(pid_t pid, struct proc_maps *maps);
struct proc_snap *procsnap_ref(struct proc_snap *s);
void procsnap_unref(struct proc_snap *s);
/* The identity of mapping i's file: 0 with *key set, or why it has none. */
int procsnap_key(const struct proc_snap *s, size_t i, const struct file_key **key);

#endif
