/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * What every stack-keeping object shares (cpu, growth, alloc, malloc): the
 * metrics and scratch maps, the stack hash, storing a stack once (whole, or in
 * parts), and the first-sample report. bpf/fold.bpf.h adds the double-buffered folding.
 */
#ifndef EMBER_STACK_BPF_H
#define EMBER_STACK_BPF_H

#include <bpf/bpf_core_read.h>

#include "ember/sample.h"

/* Entries of the includer's metrics map: EMBER_SAMPLE_M_NR unless it counts more. */
#ifndef FOLD_METRICS_NR
#define FOLD_METRICS_NR EMBER_SAMPLE_M_NR
#endif

/*
 * The stack being read, padded to whole parts: the last part of a deepest
 * stack is stored straight from here (keep_stack_parts()).
 */
struct stack_scratch {
	struct ember_stack st;
	__u64 pad[EMBER_STACK_PARTS_MAX * EMBER_STACK_PART_WORDS - EMBER_STACK_WORDS];
};

/* Per-CPU scratch space for the stack being read (too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_scratch);
} scratch SEC(".maps");

/* Per-CPU counters indexed by the includer's metric enum; summed by the daemon. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FOLD_METRICS_NR);
	__type(key, __u32);
	__type(value, __u64);
} metrics SEC(".maps");

static __always_inline void metric_add(__u32 m, __u64 n)
{
	__u32 key = m;
	__u64 *v;

	if (!n) /* most of the walk's counts are 0: no lookup, no cache line touched */
		return;
	v = bpf_map_lookup_elem(&metrics, &key);
	if (v)
		*v += n;
}

static __always_inline void metric_inc(__u32 m)
{
	metric_add(m, 1);
}

static __always_inline struct ember_stack *scratch_stack(void)
{
	__u32 zero = 0;
	struct stack_scratch *s = bpf_map_lookup_elem(&scratch, &zero);

	return s ? &s->st : NULL;
}

/* State of the stack hash across bpf_loop() steps. */
struct hash_state {
	const struct ember_stack *st;
	__u64 h;
};

static long hash_step(__u32 i, void *arg)
{
	struct hash_state *hs = arg;
	__u64 j = i;

	if (j >= EMBER_MAX_STACK_DEPTH || j >= hs->st->len)
		return 1;
	barrier_var(j); /* the checked register is the one that indexes */
	hs->h = (hs->h ^ hs->st->ips[j]) * 0x100000001b3ULL;
	return 0;
}

/*
 * FNV-1a over whole words, then a final avalanche; 0 is reserved for "none".
 * bpf_loop() (v5.17): the verifier checks the step once, where an open-coded
 * loop of 127 iterations was walked at every one of its four inlined copies,
 * which made up most of the program's load time.
 */
static __always_inline __u64 stack_hash(const struct ember_stack *st)
{
	struct hash_state hs = {.st = st, .h = 0xcbf29ce484222325ULL};
	__u64 h;

	/* bound: the deepest stack kept */
	bpf_loop(EMBER_MAX_STACK_DEPTH, hash_step, &hs, 0);
	h = hs.h ^ st->flags; /* a truncated stack is not the complete one */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h ? h : 1;
}

/*
 * Stores st under its hash h in stacks unless there. False, with metric full
 * counted, when the map is full.
 */
static __always_inline bool store_stack(const struct ember_stack *st, __u64 h, void *stacks,
					__u32 full)
{
	if (bpf_map_lookup_elem(stacks, &h))
		return true;
	if (bpf_map_update_elem(stacks, &h, st, BPF_NOEXIST) && !bpf_map_lookup_elem(stacks, &h)) {
		metric_inc(full);
		return false;
	}
	return true;
}

/*
 * Stores st once in stacks. Returns its hash, or 0 with *lost set (and metric
 * full counted) when the map is full.
 */
static __always_inline __u64 keep_stack_m(struct ember_stack *st, void *stacks, __u32 full,
					  bool *lost)
{
	__u64 h = stack_hash(st);

	if (store_stack(st, h, stacks, full))
		return h;
	*lost = true;
	return 0;
}

/* State of storing one stack's parts across bpf_loop() steps. */
struct parts_state {
	const __u64 *w; /* the stack as words: a scratch_stack() */
	void *stacks;
	__u64 h;
	__u32 n; /* parts */
	bool failed;
};

/* Step i stores part n - 1 - i, down to part 1: part 0 is the caller's, last. */
static long part_step(__u32 i, void *arg)
{
	struct parts_state *ps = arg;
	struct ember_stack_key k = {.hash = ps->h};
	__u64 p = ps->n - 1 - (__u64)i;

	if (i + 1 >= ps->n || p >= EMBER_STACK_PARTS_MAX)
		return 1;
	barrier_var(p); /* the checked register is the one that indexes */
	k.part = p;
	if (bpf_map_update_elem(ps->stacks, &k, ps->w + p * EMBER_STACK_PART_WORDS, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(ps->stacks, &k)) {
		ps->failed = true;
		return 1;
	}
	return 0;
}

/*
 * Stores st under its hash h once in a parted stacks map (include/ember/sample.h:
 * key ember_stack_key, value ember_stack_part), st being a map value of
 * struct ember_stack (a scratch_stack() or a parked copy). False, with metric
 * full counted, when the map is full. Part 0 goes in last and is looked up
 * first: present, the stack is whole. A full map can leave parts of a lost
 * stack behind until the drain empties it, never a part 0 without the others.
 */
static __always_inline bool store_stack_parts(const struct ember_stack *st, __u64 h, void *stacks,
					      __u32 full)
{
	struct ember_stack_key k = {.hash = h};
	struct parts_state ps = {.w = (const __u64 *)st, .stacks = stacks, .h = h};
	__u32 len = st->len;

	if (bpf_map_lookup_elem(stacks, &k))
		return true;
	if (len > EMBER_MAX_STACK_DEPTH)
		len = EMBER_MAX_STACK_DEPTH;
	ps.n = EMBER_STACK_PARTS(len);
	if (ps.n > 1)
		bpf_loop(EMBER_STACK_PARTS_MAX - 1, part_step, &ps, 0);
	if (!ps.failed &&
	    (!bpf_map_update_elem(stacks, &k, st, BPF_NOEXIST) || bpf_map_lookup_elem(stacks, &k)))
		return true;
	metric_inc(full);
	return false;
}

/*
 * Stores st (a scratch_stack()) once in a parted stacks map. Returns its hash,
 * or 0 with *lost set (and metric full counted) when the map is full.
 */
static __always_inline __u64 keep_stack_parts(struct ember_stack *st, void *stacks, __u32 full,
					      bool *lost)
{
	__u64 h = stack_hash(st);

	if (store_stack_parts(st, h, stacks, full))
		return h;
	*lost = true;
	return 0;
}

#ifdef EMBER_PROC_MAPS_BPF_H /* only objects that report processes hold its maps */
#ifndef PF_EXITING
#define PF_EXITING 0x00000004
#endif

/*
 * The process this CPU last found reported and woken for: most samples of a
 * CPU are of the process it sampled last, and the known map's lookup is
 * several cache and TLB misses at 19 Hz. Its leader's start time tells a
 * reused pid, its mm an exec (after which it is reported again). Not set
 * in an exec (exec_over()): an exec puts the new mm in place long before its
 * tracepoint forgets the old image's known entry (it unmaps the old image,
 * maps the new), and a memo of the new mm taken meanwhile kept the new
 * program from being reported by this CPU's samples.
 */
struct known_memo {
	__u32 tgid;
	__u32 pad;
	__u64 start_ns;
	__u64 mm;
};

/* Per-CPU: struct known_memo. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct known_memo);
} known_last SEC(".maps");
/*
 * Whether task, with mm (0: a kernel thread's, none), is past any exec of its
 * own: its in_execve flag is set from before the new mm is in place until
 * after the exec's tracepoint (bprm_execve()). Kernels without the flag: the
 * new mm is zeroed, and its arguments' end is set a few instructions before
 * the tracepoint (create_elf_tables(), after the old image is unmapped).
 */
static __always_inline bool exec_over(struct task_struct *task, __u64 mm)
{
	if (bpf_core_field_exists(task->in_execve))
		return !BPF_CORE_READ_BITFIELD(task, in_execve);
	return !mm || BPF_CORE_READ((struct mm_struct *)mm, arg_end) != 0;
}

/* Whether task's process is younger than EMBER_PROC_YOUNG_NS (since its fork). */
static __always_inline bool proc_young(struct task_struct *task)
{
	return bpf_ktime_get_ns() - BPF_CORE_READ(task, group_leader, start_time) <
	       EMBER_PROC_YOUNG_NS;
}

/*
 * A process reported young is sampled again: once it is older, wake the
 * daemon (once) to read it while it lives; its NEW_YOUNG event is before.
 */
static __always_inline void wake_for_young(struct task_struct *task, __u8 *known_as, __u32 tgid,
					   __u32 lost, __u16 source)
{
	if (*known_as != EMBER_PROC_KNOWN_YOUNG || proc_young(task))
		return;
	*known_as = EMBER_PROC_KNOWN_WOKEN; /* two CPUs at once: two wakeups, no harm */
	if (proc_event(EMBER_PROC_WAKE, tgid, source, BPF_RB_FORCE_WAKEUP))
		metric_inc(lost); /* read at the next wakeup instead */
}

/*
 * The first sample of a process that is on its way out (EMBER_PROC_EXITING):
 * lazy, best effort (left out, counted as metric lost, once the ring is a
 * quarter full), one per such sample: few processes are ever sampled only in
 * their exit but short-lived ones.
 */
static __always_inline void note_exiting(__u32 tgid, __u32 lost, __u16 source)
{
	if (proc_ring_filling() || proc_event(EMBER_PROC_EXITING, tgid, source, BPF_RB_NO_WAKEUP))
		metric_inc(lost);
}

/*
 * Reports the first sample of a process so that the daemon captures its
 * mappings while it lives (the symbolizer names frames after it exited). A
 * failed report, counted as metric lost, is retried on its next sample. A
 * thread on its way out is not remembered as reported: after the process's
 * exit event (which forgets it) it would stay known, and a process that reuses
 * its pid would never be reported; an unknown one is sent as exiting, for its
 * cgroup. A young process is reported without a wakeup (EMBER_PROC_YOUNG_NS).
 */
static __always_inline void note_process_m(__u32 tgid, __u32 lost, __u16 source)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u8 as = EMBER_PROC_KNOWN_WOKEN, *known_as;
	__u64 wake = BPF_RB_FORCE_WAKEUP, start, mm;
	__u32 zero = 0;
	struct known_memo *memo = bpf_map_lookup_elem(&known_last, &zero);

	start = BPF_CORE_READ(task, group_leader, start_time);
	mm = (__u64)BPF_CORE_READ(task, mm);
	if (memo && memo->tgid == tgid && memo->start_ns == start && memo->mm == mm &&
	    !(task->flags & PF_EXITING))
		return;
	known_as = bpf_map_lookup_elem(&known, &tgid);
	if (task->flags & PF_EXITING) {
		if (!known_as)
			note_exiting(tgid, lost, source);
		return;
	}
	if (known_as) {
		wake_for_young(task, known_as, tgid, lost, source);
		if (memo && *known_as != EMBER_PROC_KNOWN_YOUNG && exec_over(task, mm)) {
			memo->tgid = tgid;
			memo->start_ns = start;
			memo->mm = mm;
		}
		return;
	}
	if (proc_young(task)) {
		as = EMBER_PROC_KNOWN_YOUNG;
		wake = BPF_RB_NO_WAKEUP;
	}
	if (bpf_map_update_elem(&known, &tgid, &as, BPF_NOEXIST))
		return; /* another CPU reported it meanwhile */
	/* else forced: lazy exec events may sit before it (bpf/proc.bpf.c), and it is urgent */
	if (proc_event(as == EMBER_PROC_KNOWN_YOUNG ? EMBER_PROC_NEW_YOUNG : EMBER_PROC_NEW, tgid,
		       source, wake)) {
		bpf_map_delete_elem(&known, &tgid); /* reported at its next sample */
		metric_inc(lost);
	}
}
#endif

#endif /* EMBER_STACK_BPF_H */
