/* SPDX-License-Identifier: MIT */
/*
 * What emberd does when a process appears, execs or exits: capture its
 * mappings (again once ld.so is done), classify it into an application, tell
 * the kernel filter, and forget it after its exit.
 */
#ifndef EMBER_PROCEVENTS_H
#define EMBER_PROCEVENTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ember/proc.h"
#include "proctable.h"

#define RECAPTURE_MAX 4096
#define RECENT_EXEC_SLOTS 8192
#define AT_EXIT_SLOTS 1024

struct daemon;

struct proc_snap;

/*
 * Processes to come back to, in arrival order, each taken when due (after 20
 * or 250 ms): to capture again once ld.so is done (and then to hand to the
 * unwinder), or to hand to the unwinder once they lived a little (most
 * short-lived processes are gone by then and cost it nothing).
 */
struct recapture {
	struct {
		pid_t pid; /* 0: cancelled (the process exited or exec'd) */
		int round; /* 0: to the unwinder; 1: first recapture, 2: second; 3: gone at 1 */
		int64_t due_ns;		/* CLOCK_MONOTONIC */
		struct proc_snap *snap; /* its last capture: for the unwinder (round 0), or
					   what a recapture need not stat again */
	} q[RECAPTURE_MAX];
	size_t head, n;
	/* the due the timer is armed for (INT64_MAX: disarmed; 0: not known) */
	int64_t armed_ns;
	uint64_t dropped; /* queue full: captured once only */
	struct {
		pid_t pid;
		int64_t ns;	   /* CLOCK_MONOTONIC when its exec was reported */
	} exec[RECENT_EXEC_SLOTS]; /* by pid modulo the size; a collision forgets one */
	/*
	 * Processes gone that the unwinder loads (from the mappings their exit
	 * sent, or their read, the recapture finding them gone), until their
	 * exit is read (by pid modulo the size; a collision forgets one, whose
	 * samples are then walked at its exit with what is loaded).
	 */
	pid_t loading[AT_EXIT_SLOTS];
	/*
	 * Processes gone when read whose samples wait for their exit, which
	 * sends their mappings first (the same way): an exec instead walks them.
	 */
	pid_t unread[AT_EXIT_SLOTS];
};

/* Drops what is queued (at exit). */
void procevents_close(struct daemon *d);
/* proctrack's callback (arg: the daemon): one exec, exit, first sight or exit's mappings. */
void procevents_on_event(const struct ember_proc_event *e, size_t size, void *arg);
/*
 * After an interval's drains: a live process whose samples waited for unwind
 * tables nobody asked for (its first sample's report missed) is read now, as
 * at a first sample, and said so in the log.
 */
void procevents_late(struct daemon *d);
/* The recapture timer fired: captures again every process whose delay has passed. */
int procevents_recapture_due(struct daemon *d);
/* The drain's classifier (arg: the daemon): a sampled process's application. */
const struct proc_class *procevents_classify(uint32_t pid, const char *comm, uint64_t user_leaf,
					     void *arg);
/* Tells the kernel filter and the control socket of a process's class (arg: the daemon). */
void procevents_apply_class(const struct proc_class *pc, void *arg);

#endif
