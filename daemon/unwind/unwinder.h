/* SPDX-License-Identifier: MIT */
/*
 * The unwinder: compiles the .eh_frame tables of the binaries that profiled
 * processes map (lib/symbols/unwtab.c) on a thread of its own, keeps them within a
 * memory cap in the BPF maps the stack walk reads (bpf/unwind.bpf.h), and
 * tells the walk which table covers each executable mapping of each process.
 */
#ifndef EMBER_UNWINDER_H
#define EMBER_UNWINDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "outbox.h"
#include "unwtab.h"

/* Default bytes of table rows the kernel may hold (the cap: taken as tables load). */
#define UNWINDER_DEFAULT_CAP (64ull << 20)

/* The maps every sampling BPF object reuses (bpf_map__reuse_fd), by fd. */
struct unwinder_fds {
	int rows, tables, procs, stale;
	int execs;   /* tgid -> CLOCK_MONOTONIC of its last exec (bpf/proc.bpf.c writes it) */
	int rt_exes; /* executable file -> its CPython runtime (struct ember_rt_exe) */
};

/* What the unwinder holds and did since it started, for status and the log. */
struct unwinder_stats {
	uint64_t cap_bytes;	      /* bytes of rows the kernel map may hold */
	uint64_t used_bytes;	      /* of which tables use */
	uint32_t tables;	      /* tables loaded */
	uint32_t procs;		      /* processes whose mappings the walk sees */
	uint64_t built;		      /* tables compiled */
	uint64_t build_ns;	      /* CPU time spent compiling them */
	uint64_t failed[UNWTAB_E_NR]; /* binaries that got no table, by reason */
	uint64_t open_failed;	      /* mapped files that could not be opened */
	uint64_t evicted;	      /* tables dropped to make room (least recently used) */
	uint64_t cap_full;	      /* tables not loaded: the cap is full of tables in use */
	uint64_t procs_full;	      /* processes not loaded: the procs map is full */
	uint64_t maps_over;	      /* mappings beyond EMBER_UNWIND_MAPS_MAX (frame pointers) */
	uint64_t queue_full;	      /* requests dropped: the queue was full */
	uint64_t rescans; /* processes read again after a frame outside their mappings */
	/* the deferred walks' searches (unwinder_find_rule()) */
	uint64_t host_finds, host_reads; /* searches, and blocks they read from the map */
	uint64_t host_bytes;		 /* what their indexes and cached blocks hold */
};

struct unwinder;
struct proc_snap;

/*
 * Creates the maps (cap_bytes of rows, 0 for the default), builds the vDSO's
 * table and starts the thread. NULL with errno set and a cause in err.
 */
struct unwinder *unwinder_open(uint64_t cap_bytes, char *err, size_t errlen);
void unwinder_close(struct unwinder *u);
void unwinder_fds(const struct unwinder *u, struct unwinder_fds *out);
struct ember_rt_proc;
/*
 * The runtime the walk reads in pid (its entry in the procs map): true with
 * *out filled when it has one (symbolizer_runtime_fn; arg: the unwinder).
 */
bool unwinder_runtime(void *arg, pid_t pid, struct ember_rt_proc *out);

/* Loads (or reloads: after an exec) the tables of pid's mappings, asynchronously. */
void unwinder_add(struct unwinder *u, pid_t pid);
/* The same from a read of the process's mappings just made (a reference is taken). */
void unwinder_add_snap(struct unwinder *u, struct proc_snap *snap);
/*
 * A first read of pid's mappings (snap): its executable's runtime is told to
 * the kernel at once, for the samples taken before its tables are built; once
 * per executable (while it is remembered: a direct-mapped cache of 256 slots).
 */
void unwinder_hint(struct unwinder *u, const struct proc_snap *snap);
/* Whether pid was added (and not forgotten since); false once too many were to tell. */
bool unwinder_asked(struct unwinder *u, pid_t pid);
/* Forgets pid (it exited), asynchronously; nothing to do for a pid never added. */
void unwinder_exited(struct unwinder *u, pid_t pid);
/*
 * pid exec'd: forgotten (the exec deleted its entry in the kernel); the new
 * program's samples wait for its tables, which its first sample's read
 * (EMBER_PROC_NEW), or its exit's mappings, load.
 */
void unwinder_exec(struct unwinder *u, pid_t pid);
/*
 * The walk marked a process stale (EMBER_PROC_STALE): a frame outside every
 * mapping it was given. Its mappings are read again, at most every second or
 * less often while reads find nothing new.
 */
void unwinder_stale(struct unwinder *u);
/*
 * unwinder_stale() if the stale map holds a process: for marks no event
 * reported (objects without the process-event ring), from the interval.
 */
void unwinder_check_stale(struct unwinder *u);
/*
 * Whether the loop listens to what becomes of processes (outbox.h): on, a
 * process dropped keeps its tables until the loop has read of it.
 */
void unwinder_listen(struct unwinder *u, bool on);
/* Readable while events wait for unwinder_read_events(). */
int unwinder_events_fd(const struct unwinder *u);
/* The loop: hands fn each event since the last call, in order. Returns how many. */
size_t unwinder_read_events(struct unwinder *u, outbox_fn fn, void *arg);

/*
 * The row of table in force at pc, for the host's walks (any thread): from
 * the table's index in memory and one block of the rows map, read once while
 * it stays cached. False where none covers pc.
 */
bool unwinder_find_rule(struct unwinder *u, uint32_t table, uint64_t pc,
			struct ember_unwind_row *out);
/*
 * Tables dropped since the start (any thread): a walk that saw it change between its
 * entry's lookup and its end may have read rows of a table its entry no longer names.
 */
uint64_t unwinder_tables_dropped(struct unwinder *u);

/* Blocks until every request made so far has been handled (tests, capture start). */
void unwinder_settle(struct unwinder *u);
/*
 * The same until until_ns (mono_ns()) at the latest: true when settled. A
 * large binary's table takes seconds to build, more on a loaded host.
 */
bool unwinder_settle_until(struct unwinder *u, int64_t until_ns);
/* Whether every request made so far has been handled (unwinder_settle() would not block). */
bool unwinder_idle(struct unwinder *u);

void unwinder_stats(struct unwinder *u, struct unwinder_stats *out);

#endif
