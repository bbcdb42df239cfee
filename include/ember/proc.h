/* SPDX-License-Identifier: MIT */
/*
 * ABI between bpf/proc.bpf.c, bpf/cpu.bpf.c and daemon/sample/proctrack.c: the process
 * events that let the daemon capture a process's mappings while it lives.
 */
#ifndef EMBER_PROC_H
#define EMBER_PROC_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Size of the events ring buffer: ~8k events of 24 bytes (+8 header). */
#define EMBER_PROC_RINGBUF_BYTES (256 * 1024)
/* Processes remembered as seen; an evicted one is merely reported again. */
#define EMBER_PROC_KNOWN_MAX 32768

enum ember_proc_event_type {
	EMBER_PROC_NEW = 1,	  /* first sample of a process not seen before */
	EMBER_PROC_EXEC = 2,	  /* the process exec'd: its mappings changed */
	EMBER_PROC_EXIT = 3,	  /* the process (its leader thread) exited */
	EMBER_PROC_NEW_YOUNG = 4, /* NEW of a process younger than EMBER_PROC_YOUNG_NS: no wakeup */
	EMBER_PROC_WAKE = 5, /* one reported young was sampled older: wakes the daemon, no more */
	/*
	 * A first sample taken while the process was exiting (a short-lived one
	 * sampled in its exit): sent without a wakeup and not remembered (a pid
	 * reused later must be reported), for the daemon to name it by its cgroup.
	 */
	EMBER_PROC_EXITING = 6,
	/*
	 * The walk met a frame outside every mapping the unwinder gave the
	 * process (a library loaded since it read them): read its mappings again.
	 * Sent once per entry of the unwind_stale map, with a wakeup.
	 */
	EMBER_PROC_STALE = 7,
	/*
	 * The executable mappings of a process the daemon did not mark done
	 * (EMBER_PROC_KNOWN_DONE: reported young, or gone before it was read),
	 * read by the kernel at its exit, before its memory goes: a struct
	 * ember_proc_maps_event, sent just before its EXIT event.
	 */
	EMBER_PROC_MAPS = 8,
	/*
	 * A user stack holding runtime frames (include/ember/runtime.h), the
	 * first time a process was sampled in it this generation of the buffers:
	 * a struct ember_proc_rt_event, for the daemon to name those frames from
	 * the process's memory while it lives (a short-lived one is gone by the
	 * drain). Sent with a wakeup at most every 50 ms per CPU, never when the ring is filling.
	 */
	EMBER_PROC_RT_FRAMES = 9,
};

/*
 * A process first sampled this young (since its fork) is reported without
 * waking the daemon: most are short-lived commands (ld.so, a shell's fork)
 * gone before it could read them, and a wakeup and a /proc read for each cost
 * more than their few samples stand for. It is read at the next wakeup, or at
 * once when sampled again older (EMBER_PROC_WAKE).
 */
#define EMBER_PROC_YOUNG_NS (20ULL * 1000 * 1000)

/*
 * Values of the known map: reported (the daemon woken for it), reported young,
 * or done: the daemon needs nothing of it at its exit (it read its mappings
 * and gave them to the unwinder, or it is excluded). The exit of one not done
 * sends its mappings (EMBER_PROC_MAPS): the daemon may never have read them.
 */
#define EMBER_PROC_KNOWN_WOKEN 1
#define EMBER_PROC_KNOWN_YOUNG 2
#define EMBER_PROC_KNOWN_DONE 3

/* Which sampler's first sample an EMBER_PROC_NEW event reports (for the log). */
enum ember_proc_source {
	EMBER_PROC_SRC_OTHER = 0, /* exec and exit events */
	EMBER_PROC_SRC_CPU,	  /* an on-CPU sample */
	EMBER_PROC_SRC_GROWTH,	  /* a page fault or an anonymous mmap */
	EMBER_PROC_SRC_OFFCPU,	  /* a switch-out or a wakeup */
	EMBER_PROC_SRC_MALLOC,	  /* a captured malloc call */
};

/* An exec event's source: the daemon knew the process, and was woken for it at once. */
#define EMBER_PROC_EXEC_KNOWN 1

/* One event of the events ring buffer. */
struct ember_proc_event {
	__u16 type;	/* enum ember_proc_event_type */
	__u16 source;	/* NEW: enum ember_proc_source; EXEC: EMBER_PROC_EXEC_KNOWN or 0 */
	__u32 tgid;	/* process id */
	__u64 ktime_ns; /* bpf_ktime_get_ns() when it happened */
	/*
	 * bpf_get_current_cgroup_id(): the process's cgroup v2 (its inode under
	 * the cgroup2 mount), which names a process gone before it was read by
	 * its systemd unit or container; the root's id where cgroup v2 is unused.
	 */
	__u64 cgroup_id;
};
_Static_assert(sizeof(struct ember_proc_event) == 24, "ember_proc_event is ABI");

/*
 * An exec event as proc.bpf.c sends it: the event, then the new program's comm
 * (what [app] match.comm sees), so that the daemon can tell a process an
 * application with memory = alloc|inuse may match without reading /proc.
 */
struct ember_proc_exec_event {
	struct ember_proc_event e;
	char comm[16];
};
_Static_assert(sizeof(struct ember_proc_exec_event) == 40, "ember_proc_exec_event is ABI");

/* Bounds of an EMBER_PROC_MAPS record. */
#define EMBER_PROC_MAPS_MAX 64	 /* executable mappings it holds (cmake: 50); beyond: cut */
#define EMBER_PROC_PATH_MAX 256	 /* bytes of a path, its NUL included; longer: no path */
#define EMBER_PROC_PATH_DEPTH 16 /* names of a path; deeper: no path */
#define EMBER_PROC_VMAS_MAX 4096 /* mappings looked at (most of a process's are not code) */

/* An ember_proc_map whose path could not be read whole: too deep, too long, or unreadable. */
#define EMBER_PROC_MAP_NO_PATH 1
/* An ember_proc_maps_event that left mappings out (more than it holds or looks at). */
#define EMBER_PROC_MAPS_CUT 1

/* One executable mapping as the kernel saw it at the process's exit. */
struct ember_proc_map {
	__u64 start, end; /* [start, end) in the process's address space */
	__u64 offset;	  /* file offset of start */
	__u64 ino;	  /* its file's inode; 0: no file (the vDSO) */
	__u32 dev;	  /* its file's device as the kernel encodes it: major << 20 | minor */
	__u32 flags;	  /* EMBER_PROC_MAP_* */
	/*
	 * The file's path from the root of the process's mount namespace (what
	 * /proc/PID/maps shows), NUL-terminated; "[vdso]" for the vDSO.
	 */
	char path[EMBER_PROC_PATH_MAX];
};
_Static_assert(sizeof(struct ember_proc_map) == 296, "ember_proc_map is ABI");

/*
 * An EMBER_PROC_MAPS event: the event, then n mappings sorted by start (the
 * record ends after the n-th: its size is offsetof(m) + n * sizeof(m[0])).
 */
struct ember_proc_maps_event {
	struct ember_proc_event e;
	__u32 n;     /* mappings in m, 1 to EMBER_PROC_MAPS_MAX */
	__u32 flags; /* EMBER_PROC_MAPS_CUT */
	struct ember_proc_map m[EMBER_PROC_MAPS_MAX];
};
_Static_assert(sizeof(struct ember_proc_maps_event) == 32 + EMBER_PROC_MAPS_MAX * 296,
	       "ember_proc_maps_event is ABI");

/* Index of proc.bpf.c's per-CPU metrics array. */
/* Words of a stack a struct ember_proc_rt_event carries at most (EMBER_MAX_STACK_DEPTH). */
#define EMBER_PROC_RT_WORDS 256

/* EMBER_PROC_RT_FRAMES: a user stack's words, leaf first (n of them; the record ends there). */
struct ember_proc_rt_event {
	struct ember_proc_event e;
	__u32 n;    /* words in words, 1 to EMBER_PROC_RT_WORDS */
	__u32 zero; /* 0 */
	__u64 words[EMBER_PROC_RT_WORDS];
};
_Static_assert(sizeof(struct ember_proc_rt_event) == 32 + 8 * EMBER_PROC_RT_WORDS,
	       "ember_proc_rt_event is ABI");

enum ember_proc_metric {
	EMBER_PROC_M_EXEC = 0,	       /* exec events seen */
	EMBER_PROC_M_EXIT,	       /* process exits seen */
	EMBER_PROC_M_RINGBUF_FULL,     /* events dropped: ring buffer full (lost) */
	EMBER_PROC_M_EXIT_MAPS,	       /* EMBER_PROC_MAPS records sent */
	EMBER_PROC_M_EXIT_MAPS_LOCKED, /* exits whose mappings could not be read: their lock taken */
	EMBER_PROC_M_NR,
};

#endif /* EMBER_PROC_H */
