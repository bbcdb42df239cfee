/* SPDX-License-Identifier: MIT */
/*
 * emberd's status file (<runtime_dir>/status): what the daemon is doing, written
 * after every interval, read by `emberctl status`. "key value" lines; pure
 * formatter and parser (bytes in, struct out, unknown keys ignored).
 */
#ifndef EMBER_STATUSFILE_H
#define EMBER_STATUSFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The first line names the format; a reader refuses another major version. */
#define STATUSFILE_MAGIC "ember-status"
#define STATUSFILE_VERSION 1
/* Bounds on a file another process wrote: its size and its longest line. */
#define STATUSFILE_MAX_BYTES (64u << 10)
#define STATUSFILE_MAX_LINE 1024
/* BPF maps listed one by one; BPF_OBJ_NAME_LEN bounds their names. */
#define STATUSFILE_MAX_MAPS 32
#define STATUSFILE_MAP_NAME 16
/* Applications whose run-queue latency is listed (the first drained), and their names' room. */
#define STATUSFILE_MAX_RUNQ 32
#define STATUSFILE_APP_NAME 128

/* Why the BPF side lost a sample, a stack or an event (include/ember/{cpu,proc}.h). */
enum status_drop {
	STATUS_DROP_USER_STACK = 0,	  /* user stack unreadable: sample kept without it */
	STATUS_DROP_KERNEL_STACK,	  /* kernel stack unreadable: sample kept without it */
	STATUS_DROP_STACK_MAP_FULL,	  /* stacks map full: sample kept, stack lost */
	STATUS_DROP_COUNTS_MAP_FULL,	  /* counts map full: the sample was lost */
	STATUS_DROP_PROC_EVENT_LOST,	  /* exec/exit event lost: ring buffer full */
	STATUS_DROP_FIRST_SAMPLE_RETRIED, /* first-sample event lost, sent again later */
	STATUS_DROP_NR,
};

/* Samples left out on purpose: not losses. */
enum status_skip {
	STATUS_SKIP_IDLE = 0, /* the idle task (include_idle = no) */
	STATUS_SKIP_FILTERED, /* filtered in BPF (excluded or unmatched process) */
	STATUS_SKIP_EXCLUDED, /* dropped in user space: an excluded application */
	STATUS_SKIP_NR,
};

/* The bounded caches of emberd. */
enum status_cache {
	STATUS_CACHE_BINARIES = 0,  /* parsed ELF symbol tables, by file identity */
	STATUS_CACHE_PERF_MAPS,	    /* parsed /tmp/perf-PID.map files */
	STATUS_CACHE_NAMES,	    /* demangled names */
	STATUS_CACHE_PROCESSES,	    /* process classifications (the process table) */
	STATUS_CACHE_UNWIND_TABLES, /* .eh_frame tables in the kernel (bytes: rows) */
	STATUS_CACHE_UNWIND_PROCS,  /* processes whose mappings the stack walk sees */
	STATUS_CACHE_PROCESS_MAPS,  /* the symbolizer's processes' mappings (bytes, no cap) */
	STATUS_CACHE_NR,
};

/* How the user stack walk went (include/ember/sample.h's EMBER_SAMPLE_M_FRAMES_* and _END_*). */
enum status_unwind {
	STATUS_UNWIND_FRAMES_TABLE = 0, /* frames unwound by an .eh_frame table */
	STATUS_UNWIND_FRAMES_FP,	/* frames unwound by frame pointer: no table there */
	STATUS_UNWIND_FRAMES_BAD_RULE,	/* by frame pointer: a rule the walk cannot use */
	STATUS_UNWIND_NO_TABLES,	/* samples of processes not loaded yet */
	STATUS_UNWIND_DEFERRED,		/* of them, walked by emberd from a copy of their stack */
	STATUS_UNWIND_DEFER_FULL, /* of them, walked by frame pointers: the copies' ring was full */
	STATUS_UNWIND_END_OUTERMOST, /* stacks complete: the outermost frame reached */
	STATUS_UNWIND_END_SIGNAL,    /* cut: a signal frame whose saved registers were unreadable */
	STATUS_UNWIND_END_NO_TABLE,  /* cut: frame pointers failed where no table exists */
	STATUS_UNWIND_END_BAD_RULE,  /* cut: frame pointers failed after an unusable rule */
	STATUS_UNWIND_END_UNREADABLE, /* cut: a rule read memory that could not be read */
	STATUS_UNWIND_END_DEPTH,      /* cut at the depth limit, marked [truncated] */
	STATUS_UNWIND_END_EXITED,     /* the leaf alone: the process exiting, its memory released */
	STATUS_UNWIND_EXIT_STACKS,    /* exiting, its memory released: the stack read at its exit */
	STATUS_UNWIND_TABLES_BUILT,   /* tables compiled */
	STATUS_UNWIND_TABLES_FAILED,  /* binaries without a usable table (no or bad CFI) */
	STATUS_UNWIND_RT_PY_FRAMES,   /* CPython frames read in place of the eval loop's */
	STATUS_UNWIND_RT_V8_FRAMES,   /* JavaScript frames read in place of V8's native ones */
	STATUS_UNWIND_RT_UNSUPPORTED, /* frames of a runtime version without a layout */
	STATUS_UNWIND_RT_NO_THREAD,   /* stacks whose thread's runtime state was not found */
	STATUS_UNWIND_RT_BAD_FRAME,   /* stacks whose runtime frames ended at a bad frame */
	STATUS_UNWIND_NR,
};

/*
 * Off-CPU time's sampler (include/ember/offcpu.h's EMBER_OFFCPU_M_*, and the
 * folding's counts of its object): what it sampled and folded, then what it
 * lost (statusfile_offcpu_loss()).
 */
enum status_offcpu {
	STATUS_OFFCPU_SWITCHES = 0,   /* switch-outs of user threads, estimated (weights' sum) */
	STATUS_OFFCPU_SAMPLED,	      /* switch-outs sampled by chance (weight: the period) */
	STATUS_OFFCPU_RAISED,	      /* of them, at a period a storm raised */
	STATUS_OFFCPU_FORCED,	      /* switch-outs walked with weight 1 (budget, or a while) */
	STATUS_OFFCPU_FOLDED,	      /* intervals folded into the counts */
	STATUS_OFFCPU_SHORT,	      /* intervals under offcpu_min_block left out */
	STATUS_OFFCPU_WAKEUPS,	      /* wakeups of sampled intervals seen (run-queue split) */
	STATUS_OFFCPU_HELD,	      /* stacks of threads away at a drain, held for their return */
	STATUS_OFFCPU_HELD_MAP_FULL,  /* held map full: that stack left to the parked LRU */
	STATUS_OFFCPU_PARKED_EVICTED, /* lost: a parked stack evicted before its thread returned */
	STATUS_OFFCPU_NO_STORAGE,     /* lost: no per-thread storage for the interval */
	STATUS_OFFCPU_COUNTS_MAP_FULL, /* lost: the interval, its counts map full */
	STATUS_OFFCPU_STACK_MAP_FULL,  /* lost: a stack, its stacks map full */
	STATUS_OFFCPU_WAKERS_MAP_FULL, /* lost: a waker, its wakers map full */
	STATUS_OFFCPU_NR,
};

/* An interval's figure and its sum since the start. */
struct status_count {
	uint64_t interval, total;
};

/* One cache: entries, bytes held (heap), its cap (0: bounded by entries only), and
 * how often it was full when something new had to go in (not cached then). */
struct status_cache_use {
	uint64_t entries, bytes, cap;
	uint64_t full;
};

/* One BPF map: its name, capacity and the memory charged for it. */
struct status_map {
	char name[STATUSFILE_MAP_NAME];
	uint64_t max_entries, bytes;
};

/*
 * One application's memory growth in its processes' first growth_min_age, in
 * the last interval: counted without stacks ("[process start-up]").
 */
struct status_startup {
	char app[STATUSFILE_APP_NAME]; /* one word: spaces and controls written as '_' */
	uint64_t bytes;		       /* resident bytes (sampled faults), not mappings */
};

/* One application's run-queue delay in the last interval (off-CPU profiling on). */
struct status_runq {
	char app[STATUSFILE_APP_NAME]; /* one word: spaces and controls written as '_' */
	uint64_t ns;		       /* time its threads waited for a CPU, once runnable */
	uint64_t waits;		       /* the waits it is made of (mean latency: ns / waits) */
};

/* The collector as the uploader last saw it. */
struct status_collector {
	bool configured;
	char url[512]; /* credentials removed */
	bool outage;
	int64_t outage_since_ns, last_success_ns; /* CLOCK_REALTIME; 0: none */
	long last_status; /* HTTP status of the last failure; 0: transport */
	char last_error[256];
	uint64_t pending, sent, rejected, expired, retries;
	/* What fitting pushed profiles to the collector's rules left out, each counted. */
	uint64_t labels_dropped;  /* labels not sent: invalid, or over the 30 */
	uint64_t samples_merged;  /* samples that differed only by sample labels */
	uint64_t profiles_folded; /* profiles over max_samples/max_profile_bytes */
	uint64_t stacks_folded;	  /* stacks folded into [truncated] */
	uint64_t unmarked;	  /* verdicts kept in memory: the history takes no writes */
};

/* The memory bound: the limit, the usage, and what shrinking did. */
struct status_memory {
	uint64_t limit;		/* [daemon] memory_limit */
	uint64_t rss, rss_peak; /* from /proc/self/status */
	uint64_t bpf_map_bytes; /* charged to the cgroup, not in RSS */
	bool over;		/* RSS over the limit at the last check */
	uint64_t shrink_events; /* times RSS went over and caches were shrunk */
	uint64_t shrink_runs;	/* intervals in which caches were shrunk */
	int64_t last_shrink_ns; /* CLOCK_REALTIME; 0: never */
	uint64_t last_freed;	/* cache bytes freed by the last shrink */
	uint64_t freed_total;
	uint64_t sqlite;    /* SQLite's memory: page caches, statements (sqlite3_memory_used) */
	uint64_t heap_used; /* malloc'd and not freed (mallinfo2), SQLite's included */
};

/* Storing profiles in the history: failures, the backlog kept in memory, a damaged file. */
struct status_store {
	bool failing;		  /* the last store failed */
	int64_t failing_since_ns; /* CLOCK_REALTIME; 0: not failing */
	uint64_t failed;	  /* store attempts that failed, since the start */
	int64_t last_error_ns;	  /* 0: never */
	char last_error[256];
	uint64_t backlog, backlog_bytes, backlog_cap; /* profiles kept in memory to store */
	uint64_t dropped;			      /* the oldest, gone past the cap */
	uint64_t pruned, pruned_bytes; /* profiles that may go, deleted to make room for a store */
	uint64_t damaged;	       /* damaged history files moved aside */
	char damaged_moved_to[256];    /* the last one's directory */
};

/* Sampled allocations (memory = alloc|inuse), since the start: what was attached and lost. */
struct status_allocs {
	uint64_t procs;		  /* processes attached now */
	uint64_t files;		  /* files whose otel_memory probes were attached */
	uint64_t live_map_full;	  /* live pointers not recorded: live_allocs reached */
	uint64_t live_proc_cap;	  /* ... the process at live_allocs_per_process */
	uint64_t counts_map_full; /* sampled allocations dropped: the counts map full */
	uint64_t stack_map_full;  /* sampled allocations kept without their stack */
	uint64_t not_attached;	  /* processes or files not attached: gone, refused, caps */
	uint64_t notes_malformed; /* files whose .note.stapsdt is malformed: skipped */
};

/*
 * cpu_budget at work ([daemon] cpu_budget, daemon/interval/selfcost.c): the budget,
 * what the last interval cost, and what was lowered to keep to it.
 */
struct status_budget {
	int64_t ns_per_s;	    /* the budget: CPU a second of wall-clock time; 0: none */
	int64_t wall_ns;	    /* the last interval's length */
	int64_t self_ns;	    /* emberd's threads' CPU in it */
	int64_t bpf_ns;		    /* its BPF programs' run time in it */
	int64_t offcpu_bpf_ns;	    /* of that, the off-CPU programs' */
	bool bpf_measured;	    /* the kernel counted run time (else bpf_ns is 0) */
	uint32_t offcpu_duty_shift; /* off-CPU samples new waits 1/2^shift of the time */
	uint64_t lowered, restored; /* steps since the start */
	bool over; /* over budget at the last interval with nothing left to lower */
};

/* The whole file. Strings are always terminated. */
/* Hostile or broken input refused or cut short, since the start. */
struct status_refused {
	uint64_t perfmap_symlink, perfmap_owner, perfmap_size, perfmap_type;
	uint64_t perfmap_over_share;  /* maps cut at their process's or user's share */
	uint64_t binaries_too_big;    /* symbol tables over a file's share of the cache */
	uint64_t binaries_over_share; /* binaries over what their process's or user's share left */
	uint64_t frames_wait_cut;     /* frames left unnamed: their binary was still being parsed */
	uint64_t names_unread;	      /* frames left unnamed: their binary changed since loading */
	uint64_t names_sanitized;     /* service names that were no valid label value */
};

struct ember_status {
	unsigned int format; /* STATUSFILE_VERSION */
	char version[32];    /* emberd's */
	char state[16];	     /* "running", "store-failing" or "stopped" */
	int64_t pid;
	int64_t start_ns, updated_ns; /* CLOCK_REALTIME */
	uint32_t hz;
	int64_t interval_ns;
	uint64_t intervals; /* drained since the start */
	uint64_t
		intervals_late; /* of them, longer than 1.5 x interval: a stopped or starved loop */
	int64_t late_last_ns;	/* the last late one's length; 0: none */
	int64_t late_last_end_ns;   /* and when it ended, CLOCK_REALTIME */
	uint64_t processes_tracked; /* in the process table now */
	uint64_t processes_seen;    /* first seen since the start */
	uint64_t processes_unread;  /* of them, gone before emberd read their mappings */
	uint64_t processes_at_exit; /* of those, named from the mappings their exit sent */
	uint64_t processes_late;    /* read when their samples had waited 2 s: a report missed */
	/* process-event wakeups of the loop; of them, those reading only unknown processes' execs */
	uint64_t proc_wakeups, proc_exec_only_wakeups;
	struct status_count samples, stacks, processes, profiles;
	uint64_t apps;			 /* applications of the last interval */
	struct status_count bpf_samples; /* samples that reached the BPF program */
	struct status_count drops[STATUS_DROP_NR];
	struct status_count skips[STATUS_SKIP_NR];
	struct status_count unwind[STATUS_UNWIND_NR];
	struct status_count offcpu[STATUS_OFFCPU_NR]; /* all 0 while off-CPU time is off */
	struct status_cache_use caches[STATUS_CACHE_NR];
	uint64_t history_bytes; /* history.db + its WAL */
	struct status_collector collector;
	struct status_store store;
	int64_t cpu_user_ns, cpu_system_ns; /* emberd's own, since the start */
	struct status_memory mem;
	struct status_allocs allocs;
	struct status_refused refused;
	struct status_budget budget;
	struct status_map maps[STATUSFILE_MAX_MAPS];
	size_t n_maps;
	struct status_runq runq[STATUSFILE_MAX_RUNQ];
	size_t n_runq;
	struct status_startup startup[STATUSFILE_MAX_RUNQ]; /* growth: per application */
	size_t n_startup;
};

/* What parsing found wrong: the first message ("line N: ...") and how many. */
struct statusfile_errors {
	char first[160];
	size_t n;
};

/* Names used in the file and in Prometheus labels. */
const char *statusfile_drop_name(enum status_drop d);
const char *statusfile_skip_name(enum status_skip s);
const char *statusfile_cache_name(enum status_cache c);
const char *statusfile_unwind_name(enum status_unwind u);
const char *statusfile_offcpu_name(enum status_offcpu o);
/* Whether an off-CPU count is a loss (an interval, a stack or a waker not counted). */
bool statusfile_offcpu_loss(enum status_offcpu o);

/*
 * Writes st as text into buf (always terminated). The length, or -ENOSPC when
 * buf is too small. Control characters in strings become '?'.
 */
int statusfile_format(const struct ember_status *st, char *buf, size_t len);
/*
 * Parses text[0..len) into st (zeroed first). 0 when the header is right, even
 * if some lines were bad (each counted in errs); -EINVAL when it is not a
 * status file, -EPROTONOSUPPORT for another version, -EFBIG past the size cap.
 */
int statusfile_parse(const char *text, size_t len, struct ember_status *st,
		     struct statusfile_errors *errs);

#endif
