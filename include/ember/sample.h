/* SPDX-License-Identifier: MIT */
/*
 * ABI of a sample, shared by every sampling program (bpf/cpu.bpf.c,
 * growth.bpf.c, offcpu.bpf.c, alloc.bpf.c, malloc.bpf.c through
 * bpf/fold.bpf.h) and the daemon (daemon/sample/fold.c, sampler.c, deferred.c):
 * the folded key, stacks and their parts, the deferred ring's record and the
 * walk's metrics. Fixed-width fields only.
 */
#ifndef EMBER_SAMPLE_H
#define EMBER_SAMPLE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "ember/runtime.h"

/*
 * Deepest stack kept per sample: the user walk (bpf/unwind.bpf.h) goes this
 * deep, then marks the stack EMBER_STACK_TRUNCATED; kernel stacks stop at the
 * kernel's perf_event_max_stack (127 by default).
 */
#define EMBER_MAX_STACK_DEPTH 256
/* TASK_COMM_LEN of the kernel. */
#define EMBER_COMM_LEN 16
/* Processes the daemon can exclude in the kernel at once (beyond: in user space). */
#define EMBER_SAMPLE_DROP_MAX 16384
/* Processes an on-demand capture of one application samples at once. */
#define EMBER_SAMPLE_ALLOW_MAX 4096
/* Number of buffers the sampler alternates between (double buffering). */
#define EMBER_SAMPLE_NBUF 2

/* Flags of ember_sample_key: the stack existed but could not be read or stored. */
#define EMBER_KEY_USTACK_LOST 0x1
#define EMBER_KEY_KSTACK_LOST 0x2
/* The task was in execve: no user stack of either program to walk (shown as "[execve]"). */
#define EMBER_KEY_EXECVE 0x4

/*
 * Key of the counts maps: one folded stack of one process. Stacks are stored
 * once in the stacks map of the same buffer, content-addressed by a 64-bit hash
 * of their addresses; 0 means no stack (kernel thread: no user stack; sample in
 * user mode: no kernel stack; or lost, see flags).
 */
struct ember_sample_key {
	__u32 tgid;		   /* process id (thread group) */
	__u32 flags;		   /* EMBER_KEY_* */
	__u64 user_stack;	   /* hash of the user stack in the stacks map, or 0 */
	__u64 kern_stack;	   /* hash of the kernel stack in the stacks map, or 0 */
	char comm[EMBER_COMM_LEN]; /* thread name at sampling time */
};
_Static_assert(sizeof(struct ember_sample_key) == 40, "ember_sample_key is ABI");

/* Flags of ember_stack: the walk stopped at EMBER_MAX_STACK_DEPTH, callers are missing. */
#define EMBER_STACK_TRUNCATED 0x1
/* Walked without the process's unwind tables (not loaded yet): callers may be missing. */
#define EMBER_STACK_NO_TABLES 0x2
/* Taken while its process tore down its memory at exit: the interrupted instruction alone. */
#define EMBER_STACK_EXITED 0x4

/* Value of the stacks maps: one stack, leaf first. */
struct ember_stack {
	__u32 len;			  /* valid entries in ips */
	__u32 flags;			  /* EMBER_STACK_* */
	__u64 ips[EMBER_MAX_STACK_DEPTH]; /* instruction pointers, leaf first */
};
_Static_assert(sizeof(struct ember_stack) == 8 + 8 * EMBER_MAX_STACK_DEPTH, "ember_stack is ABI");

/*
 * The stacks maps of the folding objects (bpf/fold.bpf.h) hold a stack in
 * parts, so that their memory follows the frames kept rather than the deepest
 * stack possible: the stack seen as words (struct ember_stack's len and flags
 * in word 0, then ips) is cut into windows of EMBER_STACK_PART_WORDS words,
 * part i holding words [i * W, (i + 1) * W). A stack of up to W - 1 frames
 * (most, measured: docs/benchmarks.md) takes one part, a deepest one
 * EMBER_STACK_PARTS_MAX. Part 0 is stored last: when it is there, every
 * other part is.
 */
#define EMBER_STACK_PART_WORDS 32
#define EMBER_STACK_WORDS (1 + EMBER_MAX_STACK_DEPTH)
#define EMBER_STACK_PARTS_MAX \
	((EMBER_STACK_WORDS + EMBER_STACK_PART_WORDS - 1) / EMBER_STACK_PART_WORDS)
/* The parts of a stack of len frames. */
#define EMBER_STACK_PARTS(len) (((len) + 1 + EMBER_STACK_PART_WORDS - 1) / EMBER_STACK_PART_WORDS)

/* Key of the parted stacks maps: the stack's hash (as in ember_sample_key) and the part. */
struct ember_stack_key {
	__u64 hash;
	__u32 part; /* 0 .. EMBER_STACK_PARTS_MAX - 1 */
	__u32 pad;  /* 0 */
};
_Static_assert(sizeof(struct ember_stack_key) == 16, "ember_stack_key is ABI");

/* Value of the parted stacks maps: words [part * W, part * W + W) of the stack. */
struct ember_stack_part {
	__u64 w[EMBER_STACK_PART_WORDS];
};

/*
 * A sample of a process whose tables are not loaded yet (its first, and those
 * until the daemon has read its mappings): instead of a frame-pointer walk,
 * the cpu program (and the growth and offcpu ones) sends its registers, kernel
 * stack and the user stack's pages from sp's on through the deferred ring
 * buffer, and the daemon walks it with the tables once they are loaded
 * (lib/symbols/uwalk.c), as perf does with a stack copy. The pages up to the
 * end of the stack's mapping, at most EMBER_DEFER_PAGES_MAX, 64 KiB (a
 * compiler's deepest samples: docs/benchmarks.md); EMBER_DEFER_PAGES_MIN
 * where that end cannot be looked up.
 */
#define EMBER_DEFER_PAGES_MIN 4
#define EMBER_DEFER_PAGES_MAX 16
#define EMBER_DEFER_PAGE 4096
#define EMBER_DEFER_KSTACK_MAX 128 /* the kernel's perf_event_max_stack (127) and one */

/*
 * One record of the deferred ring buffer (bpf/fold.bpf.h -> daemon/sample/deferred.c),
 * from the cpu, growth or offcpu program: this header, then the user stack's
 * pages (1 to 16 of them reserved).
 */
struct ember_deferred_sample {
	__u32 tgid;
	__u32 flags;		   /* EMBER_KEY_* of the event (KSTACK_LOST when unreadable) */
	__u64 n;		   /* what it adds to its stack's count */
	__u64 wait_id;		   /* 0: a sample; else an off-CPU wait, whose end comes later */
	__u64 ktime_ns;		   /* bpf_ktime_get_ns() when taken: before or after an exec */
	__u64 ip, sp, bp, bx;	   /* user registers at the sample */
	__u64 stack_base;	   /* user address of stack[0]: the page holding sp */
	__u32 stack_len;	   /* bytes of stack read: whole pages until one failed */
	__u32 kstack_len;	   /* frames in kips (0: none, or a sample in user mode) */
	__u32 source;		   /* whose: enum ember_proc_source (cpu, growth, offcpu) */
	__u32 pad;		   /* 0 */
	char comm[EMBER_COMM_LEN]; /* thread name at sampling time */
	struct ember_rt_trace rt;  /* CPython's frames of the thread at the sample, if read */
	__u64 kips[EMBER_DEFER_KSTACK_MAX]; /* kernel stack, leaf first */
	__u8 stack[];			    /* user memory from stack_base: the record's rest */
};
_Static_assert(sizeof(struct ember_deferred_sample) ==
		       104 + sizeof(struct ember_rt_trace) + 8 * EMBER_DEFER_KSTACK_MAX,
	       "ember_deferred_sample is ABI");

/*
 * Index of a sampling program's per-CPU metrics array. Every early return of
 * the program increments one; the daemon sums them over CPUs and reports deltas.
 */
enum ember_sample_metric {
	EMBER_SAMPLE_M_SAMPLES = 0,   /* samples that reached the program */
	EMBER_SAMPLE_M_COUNTED,	      /* samples added to a counts map */
	EMBER_SAMPLE_M_IDLE_SKIPPED,  /* idle task samples left out (not a loss) */
	EMBER_SAMPLE_M_FILTERED,      /* samples of processes not selected (not a loss) */
	EMBER_SAMPLE_M_USTACK_FAILED, /* unused since the table walk, which keeps at least the ip */
	EMBER_SAMPLE_M_KSTACK_FAILED, /* kernel stack unreadable: sample kept, stack lost */
	EMBER_SAMPLE_M_STACKS_FULL,   /* stacks map full: sample kept, stack lost */
	EMBER_SAMPLE_M_COUNTS_FULL,   /* counts map full: the whole sample was dropped */
	EMBER_SAMPLE_M_PROC_EVENT_LOST, /* first-sample event lost (ring full; an exiting one's: 1/4 full); retried */
	/* The user stack walk (bpf/unwind.bpf.h): frames by how they were unwound... */
	EMBER_SAMPLE_M_FRAMES_TABLE,	/* frames unwound by an .eh_frame table row */
	EMBER_SAMPLE_M_FRAMES_FP,	/* frames unwound by frame pointer: no table there */
	EMBER_SAMPLE_M_FRAMES_BAD_RULE, /* frames by frame pointer: a rule the walk cannot use */
	EMBER_SAMPLE_M_PROC_NO_TABLES,	/* samples of a process whose tables are not loaded yet */
	/* ... and each user stack by why it ended: */
	EMBER_SAMPLE_M_END_OUTERMOST,  /* the outermost frame (_start, thread start): complete */
	EMBER_SAMPLE_M_END_SIGNAL,     /* a signal frame whose saved registers were unreadable */
	EMBER_SAMPLE_M_END_NO_TABLE,   /* frame pointers failed where no table exists */
	EMBER_SAMPLE_M_END_BAD_RULE,   /* frame pointers failed after an unusable rule */
	EMBER_SAMPLE_M_END_UNREADABLE, /* a table's rule read memory that could not be read */
	EMBER_SAMPLE_M_END_DEPTH,      /* EMBER_MAX_STACK_DEPTH reached: marked truncated */
	EMBER_SAMPLE_M_END_EXITED,     /* exiting, its memory released (exit_mm): the leaf alone */
	/* Samples of a process not loaded yet or with tables being compiled, walked by the daemon: */
	EMBER_SAMPLE_M_DEFERRED,   /* sent with their stack to the deferred ring buffer */
	EMBER_SAMPLE_M_DEFER_FULL, /* the ring was full: walked with frame pointers instead */
	/* Samples of a process tearing down its memory at exit, by its user stack read at exit: */
	EMBER_SAMPLE_M_EXIT_STACK, /* that stack instead of the leaf alone (counted by its own end) */
	/* The runtimes' frames (bpf/uwalk_rt.bpf.h) in place of their native ones: */
	EMBER_SAMPLE_M_RT_PY_FRAMES,   /* CPython frames stored */
	EMBER_SAMPLE_M_RT_V8_FRAMES,   /* V8 (JavaScript) frames stored */
	EMBER_SAMPLE_M_RT_UNSUPPORTED, /* honest frames of a runtime version without a layout */
	EMBER_SAMPLE_M_RT_NO_THREAD,   /* walks whose thread's runtime state was not found */
	EMBER_SAMPLE_M_RT_BAD_FRAME, /* walks whose runtime frames ended at one not the runtime's */
	EMBER_SAMPLE_M_NR,
};

#endif /* EMBER_SAMPLE_H */
