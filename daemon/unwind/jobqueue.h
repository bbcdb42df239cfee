/* SPDX-License-Identifier: MIT */
/*
 * The unwind tables waiting to be compiled, one job per file with the
 * processes that wait for it, taken smallest file first. Pure: the unwinder
 * opens the files, builds the tables and loads the waiting processes again.
 */
#ifndef EMBER_JOBQUEUE_H
#define EMBER_JOBQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "ember/unwind.h"
#include "mapfile.h"
#include "procmaps.h"

/* Tables waiting to be compiled: beyond, a process is merely scanned again later. */
#define JOBQUEUE_MAX 1024
/*
 * Processes refreshed as soon as the table they wait for is built (the rest:
 * once every job is done). Every process the procs map holds: at start-up a
 * hundred processes wait for libc's table, and one beyond the first eight
 * waited for the last job (a compiler's, seconds later), its samples walked
 * without libc's table meanwhile (measured: fx_qsort's first 2 s of samples).
 */
#define JOBQUEUE_WAITERS EMBER_UNWIND_PROCS_MAX

/*
 * A table to compile: the file of a mapping of the processes waiting for it.
 * Compiled after every pending process is loaded with the tables it has, the
 * smallest file first, so that one large binary delays no other process.
 */
struct job {
	struct proc_map m;   /* path owned */
	struct file_key key; /* from a stat() of the mapping; size 0 if unknown */
	pid_t *pids;	     /* who maps it (pids[0] opens it, or the next one alive); owned */
	size_t npids, cap;
};

/* The pending jobs: the unwinder thread's own. */
struct jobqueue {
	struct job v[JOBQUEUE_MAX];
	size_t n;
};

/*
 * Asks for mapping m's table to be compiled for pid: pid waits for the job of
 * the same file (key, unless its size is 0: unknown) or a new one. false when
 * the queue is full or on ENOMEM.
 */
bool jobqueue_add(struct jobqueue *q, pid_t pid, const struct proc_map *m,
		  const struct file_key *key);
/* Takes the pending job of the smallest file into out (the caller's to job_free()). */
bool jobqueue_take(struct jobqueue *q, struct job *out);
void job_free(struct job *j);
/* Frees every pending job. */
void jobqueue_free(struct jobqueue *q);

#endif
