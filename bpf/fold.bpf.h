/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * In-kernel folding shared by every stack-sampling object (cpu, growth): the
 * double-buffered counts and stacks maps and the process filter, over
 * bpf/stack.bpf.h's stack hash. The daemon half is daemon/sample/fold.c.
 */
#ifndef EMBER_FOLD_BPF_H
#define EMBER_FOLD_BPF_H

#include "ember/sample.h"
#include "ember/proc.h"
#include "core_fixes.bpf.h"
#include "proc_maps.bpf.h"
#include "stack.bpf.h"
#include "unwind.bpf.h"

/*
 * The buffers' generation: the programs write to buffer active_buf & 1. The
 * daemon adds one to flip, then waits for running programs to finish before
 * it drains the other buffer; a CPU's memo of stacks stored is of one generation.
 */
__u32 active_buf = 0;

#ifndef FOLD_PROC_SOURCE
#define FOLD_PROC_SOURCE EMBER_PROC_SRC_CPU /* the object's sampler, for the log */
#endif

/*
 * Set to 1 by the daemon before it adds the first process to drop_tgids: until
 * then (no exclusion configured) each sample skips that map's lookup.
 */
__u32 drops_used = 0;

/* Event counts (or weights) per folded stack, buffer 0 and 1; sized by the daemon. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct ember_sample_key);
	__type(value, __u64);
} counts0 SEC(".maps"), counts1 SEC(".maps");

/*
 * Stacks referenced by counts0 and counts1, keyed by the hash of their
 * addresses: unlike a stack-trace map, two stacks never evict each other short
 * of a 64-bit hash collision. In parts of 32 words (include/ember/sample.h), so
 * that a map holds about 6 times more stacks in the same memory than whole
 * 256-frame entries would (most stacks fit one part). Preallocated (sized by
 * the daemon, in parts): allocating in the timer interrupt can fail
 * transiently (seen: 1 in ~2000 inserts), and a full preallocated map is the
 * only way left to lose a stack.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct ember_stack_key);
	__type(value, struct ember_stack_part);
} stacks0 SEC(".maps"), stacks1 SEC(".maps");

/*
 * Processes not to sample (excluded by configuration, or unmatched with
 * profile = matched); maintained by the daemon as it classifies processes,
 * created by the cpu object and shared by fd with the others.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EMBER_SAMPLE_DROP_MAX);
	__type(key, __u32);
	__type(value, __u8);
} drop_tgids SEC(".maps");

/*
 * Stacks this CPU stored lately, direct-mapped by hash, each valid for the
 * generation (active_buf) it was stored in: at 19 Hz a sample's every map
 * access is a cache and TLB miss, and the stacks map's lookup costs several
 * (bucket, element, key) where a steady workload stores few new stacks.
 */
#define STORED_SLOTS 64

struct stored_memo {
	__u64 hash[STORED_SLOTS];
	__u32 gen[STORED_SLOTS];
};

/* Per-CPU: the stacks memo (struct stored_memo). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stored_memo);
} stored SEC(".maps");

/*
 * Stores st under its hash h in the stacks map of generation gen, stacks0 or
 * stacks1 (store_stack_parts() for the cpu metrics). Only this store is written
 * for each buffer: every path through the walk before it is checked by the
 * verifier once, not twice.
 */
static __always_inline bool store_stack_gen(const struct ember_stack *st, __u64 h, __u32 gen)
{
	if ((gen & 1) == 0)
		return store_stack_parts(st, h, &stacks0, EMBER_SAMPLE_M_STACKS_FULL);
	return store_stack_parts(st, h, &stacks1, EMBER_SAMPLE_M_STACKS_FULL);
}

/*
 * Stores the stack in scratch once in the stacks map of generation gen
 * (store_stack_gen()), past this CPU's memo.
 */
static __always_inline __u64 keep_stack(struct ember_stack *st, __u32 gen, bool *lost)
{
	__u32 zero = 0;
	struct stored_memo *m = bpf_map_lookup_elem(&stored, &zero);
	__u64 h = stack_hash(st);
	__u32 i = h % STORED_SLOTS;

	if (m && m->hash[i] == h && m->gen[i] == gen)
		return h;
	if (!store_stack_gen(st, h, gen)) {
		*lost = true;
		return 0;
	}
	if (m) {
		m->hash[i] = h;
		m->gen[i] = gen;
	}
	return h;
}

/* The kernel stack, through the kernel's own walk (ORC or frame pointers). */
static __always_inline __u64 kernel_stack(void *ctx, __u32 gen, bool *lost)
{
	struct ember_stack *st = scratch_stack();
	long bytes;

	if (!st)
		return 0;
	bytes = bpf_get_stack(ctx, st->ips, sizeof(st->ips), 0);
	if (bytes < 0) {
		metric_inc(EMBER_SAMPLE_M_KSTACK_FAILED);
		*lost = true;
		return 0;
	}
	st->len = bytes / sizeof(__u64);
	st->flags = 0;
	return keep_stack(st, gen, lost);
}

#ifdef FOLD_EXIT_STACKS
/* A process's user stack read at its last thread's exit, and how that walk ended. */
struct exit_stack {
	__u32 end; /* EMBER_SAMPLE_M_END_* */
	__u32 pad;
	struct ember_stack st;
};

/*
 * The user stack of a thread about to release its process's address space
 * (the last user of it, at sched_process_exit: bpf/cpu.bpf.c), for its samples
 * in the teardown after, when no user memory is left to walk.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct exit_stack);
} exit_stacks SEC(".maps");

/*
 * A walk that ended at an exiting task's leaf (UW_EXITED): the stack its
 * thread had at the exit instead, counted by how that walk ended.
 */
static __always_inline void exit_stack_use(struct ember_stack *st, struct uw_result *res)
{
	struct exit_stack *ex =
		bpf_task_storage_get(&exit_stacks, bpf_get_current_task_btf(), NULL, 0);

	if (!ex || !ex->st.len || ex->st.ips[0] != st->ips[0])
		return;
	if (bpf_probe_read_kernel(st, sizeof(*st), &ex->st))
		return;
	res->end = ex->end;
	metric_inc(EMBER_SAMPLE_M_EXIT_STACK);
}
#endif

/* What the runtime walkers did in one walk (bpf/uwalk_rt.bpf.h), into the metrics. */
static __always_inline void rt_metrics(const struct uw_result *res)
{
	metric_add(res->rt_kind == EMBER_RT_PYTHON ? EMBER_SAMPLE_M_RT_PY_FRAMES :
						     EMBER_SAMPLE_M_RT_V8_FRAMES,
		   res->rt_frames);
	metric_add(EMBER_SAMPLE_M_RT_UNSUPPORTED, res->rt_unsupported);
	if (res->rt_miss == UW_RT_NO_THREAD)
		metric_inc(EMBER_SAMPLE_M_RT_NO_THREAD);
	else if (res->rt_miss == UW_RT_BAD_FRAME)
		metric_inc(EMBER_SAMPLE_M_RT_BAD_FRAME);
}

/*
 * The user stack, walked with unwind tables (bpf/unwind.bpf.h) from regs into
 * the scratch stack; NULL when there is none (a kernel thread: regs NULL).
 * *rt: what names its runtime frames (rt_announce()'s key), 0 when it has none.
 */
static __always_inline struct ember_stack *
walk_user_stack(void *ctx, const struct ember_uregs *regs, __u32 tgid,
		const struct ember_unwind_proc *proc, __u64 *rt)
{
	struct ember_stack *st = scratch_stack();
	struct uw_result res;

#if !defined(__TARGET_ARCH_x86)
	/* the table walk is x86-64's: elsewhere, the kernel's frame-pointer walk */
	long bytes = st ? bpf_get_stack(ctx, st->ips, sizeof(st->ips), BPF_F_USER_STACK) : 0;

	if (bytes <= 0)
		return NULL; /* none (a kernel thread), or unreadable */
	st->len = bytes / sizeof(__u64);
	st->flags = 0;
	return st;
#endif
	if (!st || !regs)
		return NULL;
	uw_walk(st, tgid, proc, regs, &res);
#ifdef FOLD_EXIT_STACKS
	if (res.end == UW_EXITED)
		exit_stack_use(st, &res);
#endif
	metric_inc(res.end);
	metric_add(EMBER_SAMPLE_M_PROC_NO_TABLES, res.no_proc);
	metric_add(EMBER_SAMPLE_M_FRAMES_TABLE, res.by_table);
	metric_add(EMBER_SAMPLE_M_FRAMES_FP, res.by_fp);
	metric_add(EMBER_SAMPLE_M_FRAMES_BAD_RULE, res.bad_rule);
	if (res.rt_kind != EMBER_RT_NONE)
		rt_metrics(&res);
	*rt = res.rt_frames ? res.rt_reads | 1 : 0;
	return st;
}

/*
 * Key of rt_seen: a process and what the daemon reads to name the runtime
 * frames of a stack of it (struct uw_rt.reads: a Python frame's code object,
 * not its line, which changes at nearly every sample of a loop).
 */
struct rt_seen_key {
	__u32 tgid;
	__u32 zero;
	__u64 reads;
};

/*
 * The runtime frames announced to the daemon (rt_announce()), as what it
 * reads to name them, each with the generation (active_buf) it was announced
 * in; the least recently used forgotten first (then merely announced again).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct rt_seen_key);
	__type(value, __u32);
} rt_seen SEC(".maps");

/*
 * Per CPU: when an EMBER_PROC_RT_FRAMES record last woke the daemon. Records
 * sent without a wakeup wait behind others (a young process's, a lazy exec's)
 * for the daemon's next one, and the process may be gone by then; a wakeup
 * per record would be one for each new function a loop calls.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} rt_woken SEC(".maps");

/* At most one wakeup per CPU this often (ns) for runtime frames: their reading waits no more. */
#define RT_WAKE_NS (50ull * 1000 * 1000)

/* The head of an EMBER_PROC_RT_FRAMES record (struct ember_proc_rt_event without its words). */
struct rt_event_head {
	struct ember_proc_event e;
	__u32 n, zero;
};

/*
 * Sends st, a user stack of tgid whose runtime frames the daemon names by
 * reading what rt says (walk_user_stack(); 0: it has none, nothing to do), to
 * the daemon (EMBER_PROC_RT_FRAMES) the first time this generation: their
 * names live in the process's memory, gone at its exit, which may come before
 * the drain. Once per distinct rt, not per stack: a Python loop's stacks
 * differ by their lines at nearly every sample, which the daemon has once it
 * read their code objects. The daemon woken for it at most every RT_WAKE_NS
 * per CPU. Not when the events ring is filling (process events come first);
 * then its next sample tries again.
 */
_Static_assert((EMBER_MAX_STACK_DEPTH & (EMBER_MAX_STACK_DEPTH - 1)) == 0,
	       "rt_announce() bounds a stack's words with a mask");
__noinline int rt_announce(__u32 tgid, const struct ember_stack *st, __u64 rt, __u32 gen)
{
	struct rt_seen_key k = {.tgid = tgid, .reads = rt};
	__u32 *seen, n = st ? st->len : 0;
	struct rt_event_head head = {
		.e = {.type = EMBER_PROC_RT_FRAMES, .source = FOLD_PROC_SOURCE, .tgid = tgid},
		.n = n};
	struct bpf_dynptr dp;
	__u32 bytes, zero = 0;
	__u64 *woken, wake = 0;

	if (!rt || !n || n > EMBER_MAX_STACK_DEPTH || proc_ring_filling())
		return 0;
	seen = bpf_map_lookup_elem(&rt_seen, &k);
	if (seen && *seen == gen)
		return 0;
	/* 1 to EMBER_MAX_STACK_DEPTH words, in a form the verifier bounds (a power of 2) */
	bytes = (((n - 1) & (EMBER_MAX_STACK_DEPTH - 1)) + 1) * sizeof(__u64);
	/* the dynptr must be released even when the reservation failed */
	if (bpf_ringbuf_reserve_dynptr(&events, sizeof(head) + bytes, 0, &dp)) {
		bpf_ringbuf_discard_dynptr(&dp, 0);
		return 0;
	}
	head.e.ktime_ns = bpf_ktime_get_ns();
	head.e.cgroup_id = bpf_get_current_cgroup_id();
	woken = bpf_map_lookup_elem(&rt_woken, &zero);
	if (woken && head.e.ktime_ns - *woken >= RT_WAKE_NS) {
		*woken = head.e.ktime_ns;
		wake = BPF_RB_FORCE_WAKEUP;
	}
	if (bpf_dynptr_write(&dp, 0, &head, sizeof(head), 0) ||
	    bpf_dynptr_write(&dp, sizeof(head), (void *)st->ips, bytes, 0)) {
		bpf_ringbuf_discard_dynptr(&dp, 0);
		return 0;
	}
	bpf_ringbuf_submit_dynptr(&dp, wake);
	bpf_map_update_elem(&rt_seen, &k, &gen, BPF_ANY);
	return 0;
}

/* The user stack (walk_user_stack()) kept in generation gen: its hash, 0 when none or lost. */
static __always_inline __u64 user_stack(void *ctx, const struct ember_uregs *regs, __u32 tgid,
					const struct ember_unwind_proc *proc, __u32 gen, bool *lost)
{
	__u64 rt = 0;
	struct ember_stack *st = walk_user_stack(ctx, regs, tgid, proc, &rt);
	__u64 h = st ? keep_stack(st, gen, lost) : 0;

	/* called whatever rt is: a branch on it here would double the verifier's paths after */
	if (h)
		rt_announce(tgid, st, rt, gen);
	return h;
}

/* Adds n to the folded stack key (1 for a sample; bytes for a weighed event). */
static __always_inline void add_count(void *counts, const struct ember_sample_key *key, __u64 n)
{
	__u64 *count = bpf_map_lookup_elem(counts, key);

	if (!count) {
		if (!bpf_map_update_elem(counts, key, &n, BPF_NOEXIST)) {
			metric_inc(EMBER_SAMPLE_M_COUNTED);
			return;
		}
		/* another CPU may have inserted it meanwhile */
		count = bpf_map_lookup_elem(counts, key);
		if (!count) {
			metric_inc(EMBER_SAMPLE_M_COUNTS_FULL);
			return;
		}
	}
	__sync_fetch_and_add(count, n);
	metric_inc(EMBER_SAMPLE_M_COUNTED);
}

/* Adds n to the folded stack key in the counts map of generation gen: counts0 or counts1. */
static __always_inline void add_count_gen(const struct ember_sample_key *key, __u64 n, __u32 gen)
{
	if ((gen & 1) == 0)
		add_count(&counts0, key, n);
	else
		add_count(&counts1, key, n);
}

/* Reports the first sample of a process: note_process_m() for the cpu metrics. */
static __always_inline void note_process(__u32 tgid)
{
	note_process_m(tgid, EMBER_SAMPLE_M_PROC_EVENT_LOST, FOLD_PROC_SOURCE);
}

/* Whether the daemon excluded tgid (counted as filtered: not a loss). */
static __always_inline bool fold_dropped(__u32 tgid)
{
	if (drops_used && bpf_map_lookup_elem(&drop_tgids, &tgid)) {
		metric_inc(EMBER_SAMPLE_M_FILTERED);
		return true;
	}
	return false;
}

/*
 * Whether the current task is in an execve: replacing its program
 * (stack.bpf.h's exec_over()), or, with FOLD_EXEC_SYSCALL and sampled in the
 * kernel, in the system call before that (opening the file, copying the
 * arguments), where a forked child never read has no tables nor names for
 * the old program: a bare address. (The growth programs' faults in an exec
 * come after: the new stack's. The check cost ember_growth_fault half again
 * its verification.)
 */
static __always_inline bool fold_in_execve(bool kernel)
{
	struct task_struct *task = bpf_get_current_task_btf();

	if (!exec_over(task, (__u64)task->mm))
		return true;
#ifdef FOLD_EXEC_SYSCALL
	return kernel && ember_in_exec_syscall();
#else
	return false;
#endif
}

/* One event to fold: whose, what it weighs, and where its stacks start. */
struct fold_event {
	__u32 tgid;
	__u32 flags;			/* EMBER_KEY_* of the object (kind of event) */
	__u64 n;			/* what it adds to its stack's count */
	const struct ember_uregs *regs; /* user registers, or NULL: no user stack */
	bool kstack;			/* take the kernel stack of ctx too */
};

#if defined(FOLD_DEFER) && defined(__TARGET_ARCH_x86)
/*
 * Set by the daemon before load (daemon/sample/sampler.c, growth.c, offcpu.c) when it
 * reads the deferred ring: a sample (or a sampled wait) of a process whose
 * tables are not loaded goes there.
 */
const volatile __u32 defer_walks = 0;

/*
 * Samples of processes not loaded yet, with their user stack's pages (struct
 * ember_deferred_sample), for the daemon to walk once it has loaded the tables
 * (daemon/sample/deferred.c); and the ends of such off-CPU waits (struct
 * ember_offcpu_wait_end). The cpu object's, shared with the growth and offcpu
 * ones by fd.
 * 1 MiB: 15 to 60 records, read as they come.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} deferred SEC(".maps");

/* Bytes waiting in the deferred ring past which a record wakes the daemon: half of it. */
#define DEFER_WAKE_BYTES (1 << 19)

/* bpf_find_vma() callback: the end of the mapping that holds the stack pointer. */
static long defer_vma_end(struct task_struct *task, struct vm_area_struct *vma, void *arg)
{
	*(__u64 *)arg = vma->vm_end;
	return 0;
}

/*
 * The pages from sp's on to the end of its mapping (the stack's top: a
 * thread's, or the main one's with its arguments and environment above), or
 * 0 when it cannot be looked up (its lock taken).
 */
static __always_inline __u32 defer_stack_pages(__u64 sp)
{
	__u64 end = 0, base = sp & ~(__u64)(EMBER_DEFER_PAGE - 1), pages;

	if (bpf_find_vma(bpf_get_current_task_btf(), sp, defer_vma_end, &end, 0) || end <= base)
		return 0;
	pages = (end - base) / EMBER_DEFER_PAGE; /* a thread's stack: 2048 pages, and more */
	return pages < EMBER_DEFER_PAGES_MAX ? pages : EMBER_DEFER_PAGES_MAX;
}

/*
 * A record of the deferred ring being written: reserved as a dynptr, whose
 * size need not be a constant (a plain reservation's must: one copy of
 * everything that writes the record for each size, several times the
 * verifier's work and the program's text), its header, and its room.
 */
struct defer_rec {
	struct bpf_dynptr dp;
	struct ember_deferred_sample *d;
	__u32 room; /* pages of stack it has room for */
	__u32 top;  /* pages from sp's to the stack's top; 0: unknown */
};

/*
 * Reserves a record of the deferred ring with room for the stack above regs'
 * sp, to its top, at most EMBER_DEFER_PAGES_MAX pages (EMBER_DEFER_PAGES_MIN
 * when its top is unknown): its header, or NULL when the ring is full
 * (counted). A record reserved is submitted with defer_submit_rec().
 */
static __always_inline struct ember_deferred_sample *defer_reserve(const struct ember_uregs *regs,
								   struct defer_rec *rec)
{
	__u32 top = defer_stack_pages(regs->sp);

	rec->top = top;
	if (!top)
		rec->room = EMBER_DEFER_PAGES_MIN;
	else
		rec->room = top < EMBER_DEFER_PAGES_MAX ? top : EMBER_DEFER_PAGES_MAX;
	/* the dynptr must be released even when the reservation failed */
	if (bpf_ringbuf_reserve_dynptr(
		    &deferred, sizeof(struct ember_deferred_sample) + rec->room * EMBER_DEFER_PAGE,
		    0, &rec->dp)) {
		bpf_ringbuf_discard_dynptr(&rec->dp, 0);
		metric_inc(EMBER_SAMPLE_M_DEFER_FULL);
		return NULL;
	}
	rec->d = bpf_dynptr_data(&rec->dp, 0, sizeof(struct ember_deferred_sample));
	if (!rec->d) /* never: the record holds its header */
		bpf_ringbuf_discard_dynptr(&rec->dp, 0);
	return rec->d;
}

/*
 * The record's user registers and the user stack from sp's page on (the
 * current task's memory) up to the stack's top, as far as the record has room.
 * A page below the top that cannot be read was never touched (not present,
 * and not to be faulted in here): it holds no frame, and stays zeros (as
 * bpf_probe_read_user() leaves it). Where the top is unknown, the first such
 * page ends the copy.
 */
static __always_inline void defer_user_stack(struct defer_rec *rec, const struct ember_uregs *regs)
{
	struct ember_deferred_sample *d = rec->d;
	void *page;
	__u64 base;

	d->ip = regs->ip;
	d->sp = regs->sp;
	d->bp = regs->bp;
	d->bx = regs->bx;
	bpf_get_current_comm(d->comm, sizeof(d->comm));
	/* whole pages, so that each read has a constant size */
	base = d->sp & ~(__u64)(EMBER_DEFER_PAGE - 1);
	d->stack_base = base;
	d->stack_len = 0;
	/* room is the pages to the top where it is known: the loop stops there */
	for (__u32 i = 0; i < EMBER_DEFER_PAGES_MAX && i < rec->room; i++) {
		page = bpf_dynptr_data(&rec->dp, sizeof(*d) + i * EMBER_DEFER_PAGE,
				       EMBER_DEFER_PAGE);
		if (!page)
			break;
		if (bpf_probe_read_user(page, EMBER_DEFER_PAGE,
					(const void *)(base + i * EMBER_DEFER_PAGE)) &&
		    !rec->top)
			break;
		d->stack_len += EMBER_DEFER_PAGE;
	}
}

/*
 * How a record of the deferred ring is sent. No wakeup of its own: the
 * process's events wake the daemon (its first sample's, unless it is young;
 * its exit), and the daemon reads this ring before them, so that an exit never
 * overtakes the samples taken before it. A ring half full wakes it, so that
 * none is lost to a full ring.
 */
static __always_inline __u64 defer_wake_flags(void)
{
	return bpf_ringbuf_query(&deferred, BPF_RB_AVAIL_DATA) > DEFER_WAKE_BYTES ?
		       BPF_RB_FORCE_WAKEUP :
		       BPF_RB_NO_WAKEUP;
}

/* Sends a fixed-size record of the deferred ring: the end of an off-CPU wait sent before. */
static __always_inline void defer_submit(void *rec)
{
	bpf_ringbuf_submit(rec, defer_wake_flags());
}

/* Sends a record reserved by defer_reserve() (its header and slices go with it). */
static __always_inline void defer_submit_rec(struct defer_rec *rec)
{
	bpf_ringbuf_submit_dynptr(&rec->dp, defer_wake_flags());
}

/* Per-CPU room for a deferred sample's runtime and its frames (too big for the BPF stack). */
struct defer_rt_room {
	struct ember_rt_proc rt;
	struct ember_rt_trace trace;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct defer_rt_room);
} defer_rt SEC(".maps");

/*
 * The CPython runtime of the current process, a supported version: its
 * entry's (proc), else its executable file's (rt_exes) placed where the
 * kernel loaded that file, in room; NULL: none known.
 */
static __always_inline const struct ember_rt_proc *
defer_runtime(const struct ember_unwind_proc *proc, struct defer_rt_room *room)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct ember_rt_exe_key key;
	const struct ember_rt_exe *exe;
	const struct ember_rt_proc *rt = NULL;
	__u64 bias;

	if (proc) {
		rt = &proc->rt;
	} else {
		key.dev = BPF_CORE_READ(task, mm, exe_file, f_inode, i_sb, s_dev);
		key.ino = BPF_CORE_READ(task, mm, exe_file, f_inode, i_ino);
		exe = bpf_map_lookup_elem(&rt_exes, &key);
		if (!exe)
			return NULL;
		room->rt = exe->rt;
		bias = BPF_CORE_READ(task, mm, start_code) - exe->code_vaddr;
		ember_rt_relocate(&room->rt, bias);
		rt = &room->rt;
	}
	if (rt->kind != EMBER_RT_PYTHON || (rt->flags & EMBER_RT_F_UNSUPPORTED))
		return NULL;
	return rt;
}

/*
 * CPython's frames of the sampled thread into room->trace, read now (proc:
 * the process's entry, or NULL): true when read. A global subprogram,
 * verified once: it runs for few samples, and its stack is not the
 * programs' own, which their deepest walk fills.
 */
__noinline int defer_rt_read(const struct ember_unwind_proc *proc, struct defer_rt_room *room)
{
	__u32 zero = 0;
	struct uw_env *env = bpf_map_lookup_elem(&unwind_window, &zero);
	const struct ember_rt_proc *rt;

	if (!room || !env || env->busy)
		return 0;
	rt = defer_runtime(proc, room);
	if (!rt)
		return 0;
	env->busy = 1;
	uw_py_trace(rt, env, (__u32)bpf_get_current_pid_tgid(), &room->trace);
	env->busy = 0;
	return 1;
}

/*
 * CPython's frames of the sampled thread into the record: its chain lives
 * in the heap and moves on, so the daemon's walk of the stack's copy cannot
 * read it later (struct ember_rt_trace).
 */
static __always_inline void defer_rt_trace(struct defer_rec *rec,
					   const struct ember_unwind_proc *proc)
{
	__u32 zero = 0;
	struct defer_rt_room *room = bpf_map_lookup_elem(&defer_rt, &zero);

	rec->d->rt.kind = EMBER_RT_NONE;
	rec->d->rt.n = 0;
	if (room && defer_rt_read(proc, room))
		bpf_dynptr_write(&rec->dp, __builtin_offsetof(struct ember_deferred_sample, rt),
				 &room->trace, sizeof(room->trace), 0);
}

/*
 * Sends ev to the deferred ring with its registers, kernel stack and the user
 * stack from sp's page on; false when the ring is full (counted). proc: the
 * process's entry, if it has one (its tables still being built).
 */
static __always_inline bool defer_sample(void *ctx, const struct fold_event *ev,
					 const struct ember_unwind_proc *proc)
{
	struct defer_rec rec;
	struct ember_deferred_sample *d = defer_reserve(ev->regs, &rec);
	long bytes;

	if (!d)
		return false;
	d->tgid = ev->tgid;
	d->flags = ev->flags;
	d->n = ev->n;
	d->source = FOLD_PROC_SOURCE;
	d->pad = 0;
	d->wait_id = 0;
	d->ktime_ns = bpf_ktime_get_ns();
	d->kstack_len = 0;
	if (ev->kstack) {
		bytes = bpf_get_stack(ctx, d->kips, sizeof(d->kips), 0);
		if (bytes < 0) {
			metric_inc(EMBER_SAMPLE_M_KSTACK_FAILED);
			d->flags |= EMBER_KEY_KSTACK_LOST;
		} else {
			d->kstack_len = bytes / sizeof(__u64);
		}
	}
	defer_rt_trace(&rec, proc);
	defer_user_stack(&rec, ev->regs);
	defer_submit_rec(&rec);
	metric_inc(EMBER_SAMPLE_M_DEFERRED);
	return true;
}
#endif

/*
 * Folds ev into the active buffer: generation gen = active_buf, read once, so
 * that a flip while this runs cannot split one event across both buffers.
 */
static __always_inline void fold(void *ctx, const struct fold_event *ev)
{
	/*
	 * A task in execve: its user registers are the old program's while its
	 * memory becomes the new one's; walked, they gave a bare address. No user
	 * stack then: its kernel stack says what the exec does.
	 */
	bool in_exec = ev->regs && fold_in_execve(ev->kstack);
	const struct ember_unwind_proc *proc = ev->regs && !in_exec ? uw_proc(ev->tgid) : NULL;
	struct ember_sample_key key = {};
	__u32 gen = active_buf;
	bool lost = false;

#if defined(FOLD_DEFER) && defined(__TARGET_ARCH_x86)
	/*
	 * A process not loaded yet, or whose tables are still being compiled. Not
	 * a thread on its way out: its process's exit event may be read before
	 * the copy, and its tables are never loaded (the walk here keeps the leaf).
	 */
	if (defer_walks && ev->regs && !in_exec && (!proc || proc->pending) &&
	    !(bpf_get_current_task_btf()->flags & PF_EXITING) && defer_sample(ctx, ev, proc)) {
		metric_add(EMBER_SAMPLE_M_PROC_NO_TABLES, !proc);
		return;
	}
#endif
	key.tgid = ev->tgid;
	key.flags = ev->flags;
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	if (in_exec)
		key.flags |= EMBER_KEY_EXECVE;
	else
		key.user_stack = user_stack(ctx, ev->regs, ev->tgid, proc, gen, &lost);
	if (lost)
		key.flags |= EMBER_KEY_USTACK_LOST;
	if (ev->kstack) {
		lost = false;
		key.kern_stack = kernel_stack(ctx, gen, &lost);
		if (lost)
			key.flags |= EMBER_KEY_KSTACK_LOST;
	}
	add_count_gen(&key, ev->n, gen);
}

#endif /* EMBER_FOLD_BPF_H */
