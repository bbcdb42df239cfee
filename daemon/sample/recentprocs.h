/* SPDX-License-Identifier: MIT */
/*
 * The exits and execs the deferred walks read lately, and what they decide
 * about a stack copy that arrives after them (the two ring buffers are read one
 * after the other): a copy of a process whose exit was read is walked at once,
 * with what is known (no table will come); a copy taken before an exec read is
 * of the old program, whose entry is gone. Pure: two rings, no lock (the
 * caller's).
 */
#ifndef EMBER_RECENTPROCS_H
#define EMBER_RECENTPROCS_H

#include <stdbool.h>
#include <stdint.h>

/* Exits and execs remembered: the last this many of each. */
#define RECENT_PROCS_MAX 256

struct recent_procs {
	uint32_t exited[RECENT_PROCS_MAX]; /* a ring of pids */
	uint64_t nexited;		   /* exits noted since the start (64 bits: never wraps) */
	struct {
		uint32_t pid;
		uint64_t ktime_ns; /* bpf_ktime_get_ns() of the exec */
	} execs[RECENT_PROCS_MAX]; /* a ring */
	uint64_t nexecs;	   /* execs noted since the start (64 bits: never wraps) */
};

void recent_exit(struct recent_procs *r, uint32_t pid);
void recent_exec(struct recent_procs *r, uint32_t pid, uint64_t ktime_ns);
/* Whether pid's exit is among the last noted. */
bool recent_exited(const struct recent_procs *r, uint32_t pid);
/* Whether pid exec'd after ktime_ns (a sample's): the sample is of the program before. */
bool recent_execd_after(const struct recent_procs *r, uint32_t pid, uint64_t ktime_ns);

#endif
