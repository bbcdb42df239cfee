/* SPDX-License-Identifier: MIT */
/*
 * The running daemon: its parts, set up by main() and shared by the loop's
 * handlers (procevents.c, reload.c and main.c's own).
 */
#ifndef EMBER_DAEMON_H
#define EMBER_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include "args.h"
#include "capture.h"
#include "config.h"
#include "owners.h"
#include "procevents.h"

struct daemon;

/* One event source of the loop: its fd, and the handler its readiness calls. */
struct event_source {
	int fd;
	int (*handle)(struct daemon *d); /* 0: go on, 1: stop the loop, -errno: fail */
};

/* The loop's event sources, one handler each. */
enum event_id {
	EV_SIGNAL,    /* signalfd: TERM and INT stop, HUP reloads */
	EV_TICK,      /* timerfd: the end of an interval */
	EV_END,	      /* timerfd: the end of --duration */
	EV_RECAPTURE, /* timerfd: processes to capture again (procevents.c) */
	EV_NAMING,    /* timerfd: the end of a held interval's wait for the symbol loader */
	EV_PROC,      /* proctrack's ring buffer: exec and exit events */
	EV_DEFER,     /* the sampler's ring of samples to walk here (daemon/sample/deferred.c) */
	EV_UNWOUND,   /* the unwinder's eventfd: processes loaded or dropped (unwind/outbox.h) */
	EV_CONTROL,   /* the control socket */
	EV_LOADER,    /* the symbol loader's eventfd: every binary queued is parsed */
	EV_WATCHDOG,  /* timerfd: WATCHDOG=1 (only under a systemd watchdog) */
	EV_NR,
};

/* The running daemon: every part, owned here and torn down in order by main.c. */
struct daemon {
	struct ember_config cfg;
	struct history *hist;
	/* each profile source's owner (owners.h) by enum profile_source; NULL: not open */
	void *owner[PROFILE_SRC_NR];
	struct proctrack *proc;
	struct proctable *procs;
	struct cgroup_names *cgroups; /* names the cgroup of a process gone before it was read */
	struct symbolizer *sym;
	struct ksymbpf *ksym;	 /* names kernel frames; NULL: /proc/kallsyms instead */
	struct unwinder *unw;	 /* .eh_frame tables; NULL: frame pointers only */
	bool unw_busy_at_stop;	 /* a table still building when the stop gave up waiting */
	struct uploader *up;	 /* NULL without a [collector] url */
	struct rollups *rollups; /* NULL when the builder could not start */
	struct control *ctl;	 /* the control socket: on-demand captures */
	struct capture_env cenv; /* what captures share with the main sampler */
	struct interval *iv;	 /* drains, stores and reports every interval */
	const struct args *args;
	struct ember_config next_cfg; /* a reloaded configuration, applied after the drain */
	bool reload_pending;
	bool interval_held;    /* the interval is due, held while the loader parses (on_tick) */
	int64_t held_since_ns; /* CLOCK_MONOTONIC: when it was held */
	int epfd;
	struct event_source ev[EV_NR]; /* fd -1: not open */
	struct recapture recap;
	uint64_t processes_seen;    /* first sights since the start */
	uint64_t processes_unread;  /* of them, gone before their mappings were read */
	uint64_t processes_at_exit; /* of those, named from the mappings their exit sent */
	uint64_t processes_late;    /* read because their samples waited (procevents_late()) */
	uint64_t execs_noted;	    /* exec events read: the last one's id */
};

#endif
