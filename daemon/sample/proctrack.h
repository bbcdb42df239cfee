/* SPDX-License-Identifier: MIT */
/*
 * Process tracking: owns bpf/proc.bpf.c (exec and exit raw tracepoints) and the
 * events ring buffer, which cpu.bpf.c shares to report first samples.
 */
#ifndef EMBER_PROCTRACK_H
#define EMBER_PROCTRACK_H

#include <stdbool.h>
#include <stdint.h>

#include "ember/proc.h"

/*
 * One event of size bytes: an EMBER_PROC_EXEC event is the e of a struct
 * ember_proc_exec_event, its comm terminated; an EMBER_PROC_MAPS one the e of
 * a struct ember_proc_maps_event, as long as the record (not yet validated).
 */
typedef void (*proctrack_cb)(const struct ember_proc_event *e, size_t size, void *arg);

struct proctrack;

/*
 * Loads and attaches, with the unwinder's maps of loaded processes and of exec
 * times (their fds, or -1 without an unwinder): an exec deletes the old
 * program's entry, and writes its time. A negative errno and a one-line cause
 * in err on failure.
 */
int proctrack_open(proctrack_cb cb, void *arg, int unwind_procs_fd, int unwind_execs_fd,
		   struct proctrack **out, char *err, size_t errlen);
/*
 * Whether every exec wakes the daemon (an application's allocations are
 * attached at exec); else only those of processes it knows (the default).
 */
void proctrack_wake_on_every_exec(struct proctrack *p, bool all);
/* Reads the events that woke the loop (its epoll fd), counted for proctrack_wakeups(). */
int proctrack_wakeup(struct proctrack *p);
/* The loop's wakeups so far, and of them those that read only execs of unknown processes. */
void proctrack_wakeups(const struct proctrack *p, uint64_t *wakeups, uint64_t *exec_only);
void proctrack_close(struct proctrack *p);
/* fds of the shared maps, for the cpu sampler to reuse before its load. */
int proctrack_events_fd(const struct proctrack *p);
int proctrack_known_fd(const struct proctrack *p);
/* Becomes readable when events are pending; then call proctrack_wakeup(). */
int proctrack_epoll_fd(const struct proctrack *p);
/* Hands every pending event to the callback; the number handled or -errno. */
int proctrack_consume(struct proctrack *p);
/*
 * Marks pid as reported, as its first sample would: the kernel then sends its
 * exit, and no first-sample event. 0 or -errno.
 */
int proctrack_mark_known(struct proctrack *p, uint32_t pid);
/*
 * Marks pid, reported, as needing nothing more at its exit (its mappings read
 * and loaded, or excluded): its exit then sends none. 0 or -errno (-ENOENT:
 * not reported, or gone).
 */
int proctrack_mark_done(struct proctrack *p, uint32_t pid);
/* Metrics summed over CPUs since load, indexed by enum ember_proc_metric. */
int proctrack_metrics(struct proctrack *p, uint64_t out[EMBER_PROC_M_NR]);

/* Its programs' run time since load, ns (bpfload_run_ns()). */
int64_t proctrack_run_ns(const struct proctrack *p);

#endif
