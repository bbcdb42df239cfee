/* SPDX-License-Identifier: MIT */
/*
 * The process table: which application each sampled process belongs to. A
 * process is classified on first sight and after exec, and forgotten after the
 * drain that follows its exit.
 */
#ifndef EMBER_PROCTABLE_H
#define EMBER_PROCTABLE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "apps.h"
#include "config.h"

/* One process's classification. */
struct proc_class {
	pid_t pid;
	struct app_match match; /* application, service_name, excluded */
	bool exited;		/* exit noted: dropped after the drain of its last samples */
	bool gone;		/* was already gone when classified: inferred from comm */
	bool want_comm;		/* gone, classified with no comm: again at a lookup with one */
	uint64_t cgroup_id;	/* its cgroup v2 id from its event (0: none), for when gone */
	uint64_t used_interval; /* last interval it was looked up or classified */
	uint64_t dead_flip;	/* its stamp (flips.h) when noted exited or gone */
	/* its class before its last exec (and that one's before, ...), until their samples drained */
	struct proc_class *before_exec;
	uint64_t exec_flip; /* its stamp (flips.h) at the exec that ended before_exec */
	uint64_t exec_id;   /* that exec's id (proctable_exec()) */
};

struct proctable;

/* A cgroup v2 id's path, as cgroup_names_lookup gives it: 0 or -errno. */
typedef int (*proctable_cgroup_fn)(uint64_t id, char *out, size_t len, void *arg);

/* cgroup (NULL: none) names the cgroup of a process gone before it was read. */
struct proctable *proctable_new(proctable_cgroup_fn cgroup, void *arg);
void proctable_free(struct proctable *t);
/*
 * (Re)classifies pid now from /proc (first sight, exec, reload); one already
 * gone by its comm and its cgroup v2 cgroup_id (0: unknown). NULL on ENOMEM.
 */
const struct proc_class *proctable_classify(struct proctable *t, const struct ember_config *cfg,
					    pid_t pid, const char *comm, uint64_t cgroup_id);
/* The cached classification, or a new one. NULL on ENOMEM. */
const struct proc_class *proctable_get(struct proctable *t, const struct ember_config *cfg,
				       pid_t pid, const char *comm);
void proctable_exited(struct proctable *t, pid_t pid);
/*
 * Notes that pid exec'd (exec_id: the caller's nonzero id of this exec): its
 * class so far is kept as the image's this exec ended (proctable_before_exec())
 * until the samples from before are drained (as an exit's); the new image is
 * classified as it is seen. Several execs before one drain keep a class each
 * (PROCTABLE_EXECS_MAX at most).
 */
void proctable_exec(struct proctable *t, pid_t pid, uint64_t exec_id);
#define PROCTABLE_EXECS_MAX 8
/* Whether pid has classes from before an exec kept. */
bool proctable_execd(struct proctable *t, pid_t pid);
/* pid's class before the exec exec_id (proctable_exec()), or NULL: none kept. */
const struct proc_class *proctable_before_exec(struct proctable *t, pid_t pid, uint64_t exec_id);
/* Whether pid is in the table (classified, not yet dropped). */
bool proctable_has(struct proctable *t, pid_t pid);
/*
 * The profile buffers were just flipped: a process noted exited or gone from
 * now on may have samples in the new ones, and is kept through the next drain.
 */
void proctable_flipped(struct proctable *t);
/*
 * After each drain: drops processes dead before the last flip (or, with none
 * noted this interval, before now) and those idle for 2 intervals.
 */
void proctable_end_interval(struct proctable *t);
/*
 * Classifies every known process again (new configuration); cb sees each
 * result. Classes from before an exec are dropped.
 */
void proctable_reclassify(struct proctable *t, const struct ember_config *cfg,
			  void (*cb)(const struct proc_class *pc, void *arg), void *arg);
size_t proctable_size(const struct proctable *t);
/* Processes whose service name had to be sanitized (label_value_sanitize), since the start. */
uint64_t proctable_names_sanitized(const struct proctable *t);

#endif
