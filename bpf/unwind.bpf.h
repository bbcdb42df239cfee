/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The user stack walk of every sampling program: bpf/uwalk.bpf.h's walk in the
 * kernel's environment, with .eh_frame tables (include/ember/unwind.h, loaded
 * by daemon/unwind/unwinder.c) where a binary has them, frame pointers where it has
 * none (JIT code, a process not loaded yet).
 */
#ifndef EMBER_UNWIND_BPF_H
#define EMBER_UNWIND_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "core_fixes.bpf.h"
#include "ember/sample.h"
#include "ember/unwind.h"
#include "unwind_procs.bpf.h"

/* One element of unwind_rows (EMBER_ROWS_PER_BLOCK rows). */
struct ember_unwind_block {
	struct ember_unwind_row r[EMBER_ROWS_PER_BLOCK];
};

/*
 * Rows of every loaded table, EMBER_ROWS_PER_BLOCK an element keyed by its
 * block number, each table from a block's first row. A hash map without
 * preallocation, so that its memory follows the tables loaded: created and
 * sized (the table memory cap) by daemon/unwind/unwinder.c, which writes a table's
 * rows before any process refers to it and deletes them when it drops it;
 * reused by fd here.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ember_unwind_block);
} unwind_rows SEC(".maps");

/* Where each table's rows lie in unwind_rows, by table id; nrows 0 = unusable. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EMBER_UNWIND_TABLES_MAX);
	__type(key, __u32);
	__type(value, struct ember_unwind_table);
} unwind_tables SEC(".maps");

/*
 * Processes with a frame outside every mapping the daemon gave (a library
 * loaded since it read them): it reads their mappings again, at most every
 * few seconds. The value is EMBER_UNWIND_STALE_*. LRU: a flood of such
 * processes only delays some rescans.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} unwind_stale SEC(".maps");

/*
 * The rule last found for an address of a process, per CPU, direct-mapped by
 * the address's 16-byte block: steady workloads return to the same code again
 * and again, and one cached slot replaces two binary searches (~30 cache
 * misses when cold). A slot holds the whole address range its row covers, not
 * only the address looked up: the leaf frame's address is wherever the sample
 * hit, different at nearly every sample, and an exact key missed on it
 * (measured: 1.8 searches per walk at 19 Hz, 0.2 with ranges). A slot is valid
 * for the generation of the process's entry it was found under.
 */
struct uw_cached {
	__u64 lo, hi; /* the addresses [lo, hi) it holds for */
	__u32 tgid;
	__u32 gen;		     /* ember_unwind_proc.gen when it was found */
	struct ember_unwind_row row; /* the row, when has_row */
	__u16 has_row;		     /* a table covers ip */
	__u16 in_map;		     /* ip lies in one of the process's mappings */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EMBER_UNWIND_CACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct uw_cached);
} unwind_cache SEC(".maps");

/*
 * The walk's environment (bpf/uwalk.bpf.h): user memory is read through the
 * CPU's window of the stack (struct uw_env), rows from unwind_rows; the
 * per-frame step is a global subprogram, its loops bpf_loop() steps.
 */
#define UW_LOOP(n, fn, ctx) bpf_loop(n, fn, ctx, 0)
#define UW_GLOBAL __attribute__((noinline))
/* Rows are read from unwind_rows: no source to name. */
typedef void uw_row_src;

/*
 * Bytes of the user stack read at once: each read from user memory has a
 * fixed cost (a fault-safe copy; under some hypervisors, trapped privileged
 * instructions) far above its per-byte cost, and one window holds the saved
 * registers of several frames. Never past the end of the window's page, which
 * may be the top of the stack.
 */
#define UW_WINDOW EMBER_UNWIND_WINDOW

/* The stack window of the walk running on this CPU: how the walk reads user memory. */
struct uw_env {
	__u64 base; /* user address of buf[0] */
	__u32 len;  /* valid bytes in buf; 0: empty */
	__u32 busy; /* a walk runs: one that interrupts it (an interrupt's) must not walk */
	__u64 rt[EMBER_RT_SCRATCH_WORDS]; /* the runtime walk's memos (uwalk_rt.bpf.h) */
	__u64 rt_base;			  /* user address of rt_buf[0] */
	__u32 rt_len;			  /* valid bytes in rt_buf; 0: empty */
	__u32 rt_pad;
	__u64 walk; /* walks begun on this CPU: the one running (the V8 memo's, uwalk_v8.bpf.h) */
	__u8 buf[UW_WINDOW];
	__u8 rt_buf[EMBER_RT_WINDOW]; /* a runtime's memory around its frames (uwalk_rt.bpf.h) */
};

/* Per-CPU room for the window (too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct uw_env);
} unwind_window SEC(".maps");

/*
 * CPython runtimes by executable file, for the samples of a process the
 * daemon has not loaded yet (fold.bpf.h's defer_runtime()). The unwinder's
 * (daemon/unwind/unwinder.c fills it as it finds them), shared by fd.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, EMBER_RT_EXES_MAX);
	__type(key, struct ember_rt_exe_key);
	__type(value, struct ember_rt_exe);
} rt_exes SEC(".maps");

/*
 * Refills the window around addr (ember_unwind_window_at()): 0; 1 where the
 * word at addr fits in no window (read it alone); -1 where it cannot be read.
 * A global subprogram: verified once, not at every read that may refill.
 */
UW_GLOBAL int uw_env_refill(struct uw_env *win, __u64 addr)
{
	__u64 lo, len;

	if (!win)
		return 1;
	ember_unwind_window_at(addr, &lo, &len);
	if (!len)
		return 1;
	win->len = 0;
	if (bpf_probe_read_user(win->buf, len & (UW_WINDOW * 2 - 1), (const void *)lo))
		return -1;
	win->base = lo;
	win->len = len;
	return 0;
}

/* Reads the word at user address addr, through the window when there is one. */
static __always_inline bool uw_env_read(struct uw_env *win, __u64 *v, __u64 addr)
{
	__u64 off;
	int got;

	if (!win)
		return bpf_probe_read_user(v, sizeof(*v), (const void *)addr) == 0;
	if (addr < win->base || addr - win->base + sizeof(*v) > win->len) {
		got = uw_env_refill(win, addr);
		if (got)
			return got > 0 &&
			       bpf_probe_read_user(v, sizeof(*v), (const void *)addr) == 0;
	}
	off = addr - win->base;
	if (off > UW_WINDOW - sizeof(*v))
		return false;
	*v = *(const __u64 *)(win->buf + off);
	return true;
}

/* Any user memory (a runtime's frames, away from the stack): read directly. */
static __always_inline bool uw_env_read_mem(struct uw_env *win, void *dst, __u32 len, __u64 addr)
{
	(void)win;
	return bpf_probe_read_user(dst, len, (const void *)addr) == 0;
}

/* Row idx of unwind_rows. */
static __always_inline bool uw_env_row(const uw_row_src *src, __u32 idx,
				       struct ember_unwind_row *out)
{
	__u32 blk = idx / EMBER_ROWS_PER_BLOCK;
	__u64 at = idx - blk * EMBER_ROWS_PER_BLOCK; /* 64 bits: no zero-extended copy is tested */
	const struct ember_unwind_block *b = bpf_map_lookup_elem(&unwind_rows, &blk);

	if (!b)
		return false;
	/*
	 * The bound said to the verifier, which does not follow a remainder;
	 * the barrier keeps clang from proving the test needless and dropping it.
	 */
	barrier_var(at);
	if (at >= EMBER_ROWS_PER_BLOCK)
		return false;
	*out = b->r[at];
	return true;
}

/*
 * The V8 walk's functions read lately (struct ember_v8_memo), per CPU: a
 * walk runs on one CPU to its end, and no other walk runs there meanwhile
 * (struct uw_env's busy).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EMBER_V8_MEMO_SLOTS);
	__type(key, __u32);
	__type(value, struct ember_v8_memo);
} v8_memo SEC(".maps");

/* The walk running on this CPU, told from every other it ran (0: none counted). */
static __always_inline __u64 uw_env_walk(struct uw_env *env)
{
	return env ? env->walk : 0;
}

/* Slot i of this CPU's V8 memo. */
static __always_inline struct ember_v8_memo *uw_env_v8_memo(struct uw_env *env, __u32 i)
{
	(void)env;
	i &= EMBER_V8_MEMO_SLOTS - 1;
	return bpf_map_lookup_elem(&v8_memo, &i);
}

/*
 * The CPython walk's code objects found lately (struct ember_py_code_memo),
 * per CPU, as v8_memo.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EMBER_PY_CODE_MEMO_SLOTS);
	__type(key, __u32);
	__type(value, struct ember_py_code_memo);
} py_code_memo SEC(".maps");

/* Slot i of this CPU's CPython code memo. */
static __always_inline struct ember_py_code_memo *uw_env_py_code_memo(struct uw_env *env, __u32 i)
{
	(void)env;
	i &= EMBER_PY_CODE_MEMO_SLOTS - 1;
	return bpf_map_lookup_elem(&py_code_memo, &i);
}

/*
 * Per thread: its CPython thread state as its last walk found it
 * (uwalk_rt.bpf.h's uw_py_thread_frame()), gone with the thread.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ember_py_ts_memo);
} py_ts_memo SEC(".maps");

/*
 * Thread tid's memo of its state, when tid is the task this program runs for
 * (made when create: a state was found); else NULL.
 */
static __always_inline struct ember_py_ts_memo *uw_env_py_ts_memo(struct uw_env *env, __u32 tid,
								  bool create)
{
	(void)env;
	if ((__u32)bpf_get_current_pid_tgid() != tid)
		return NULL;
	return bpf_task_storage_get(&py_ts_memo, bpf_get_current_task_btf(), NULL,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

/*
 * Thread tid's thread pointer (fs_base), when tid is the task this program
 * runs for (a walk of another task's stack has none); else 0.
 */
static __always_inline __u64 uw_env_tp(struct uw_env *env, __u32 tid)
{
	(void)env;
	if ((__u32)bpf_get_current_pid_tgid() != tid)
		return 0;
#if defined(__TARGET_ARCH_x86)
	return bpf_get_current_task_btf()->thread.fsbase;
#else
	return 0; /* the runtimes' walk is x86-64's */
#endif
}

/* The kernel reads every runtime's chain as it is: no trace read earlier (uwalk_rt.bpf.h). */
static __always_inline const struct ember_rt_trace *uw_env_rt_trace(struct uw_env *env)
{
	(void)env;
	return NULL;
}

#include "uwalk.bpf.h"

/* The row of table id in force at pc (uw_search_rows() over unwind_rows). */
static __always_inline bool uw_env_table_rule(struct uw_env *env, __u32 table, __u64 pc,
					      struct ember_unwind_row *out, __u64 *lo, __u64 *hi)
{
	const struct ember_unwind_table *t = bpf_map_lookup_elem(&unwind_tables, &table);

	return t && uw_search_rows(NULL, t->first, t->nrows, pc, out, lo, hi);
}

/*
 * The row in force at address at of the walked process, copied into *row:
 * false where no table covers it. From the CPU's cache, or found and cached.
 */
static __always_inline bool uw_env_rule(struct uw_frame *f, const struct ember_unwind_proc *proc,
					struct uw_env *env, __u64 at, struct ember_unwind_row *row)
{
	/*
	 * Direct-mapped by the address's 16-byte block, offset per process: a
	 * stack's frames in one binary's text fall in neighbouring slots, a few
	 * pages of the cache, where a scattering hash touched a page per frame,
	 * each a TLB and a cache miss at 19 Hz, when nothing stays cached.
	 */
	__u32 slot = (__u32)((at >> 4) + f->tgid * 0x9e3779b1u) % EMBER_UNWIND_CACHE_SLOTS;
	struct uw_cached *c = bpf_map_lookup_elem(&unwind_cache, &slot);
	__u64 lo, hi;
	bool found, in_map;

	if (c && c->lo <= at && at < c->hi && c->tgid == f->tgid && c->gen == f->gen) {
		if (!c->in_map)
			uw_mark_stale(f);
		*row = c->row;
		return c->has_row;
	}
	found = uw_rule_at(f, proc, env, at, row, &lo, &hi, &in_map);
	if (c) {
		c->lo = lo;
		c->hi = hi;
		c->tgid = f->tgid;
		c->gen = f->gen;
		c->in_map = in_map;
		c->has_row = found;
		c->row = *row;
	}
	return found;
}

/*
 * Marks tgid's mappings stale (how: EMBER_UNWIND_STALE_*). A new mark, or one
 * made surer, wakes the daemon (EMBER_PROC_STALE), whose unwinder reads the
 * process again; a mark already there waits for it (the unwinder keeps those
 * it read a moment ago for later, with a timer). Objects without the
 * process-event ring only mark: their owner reports.
 */
static __always_inline void uw_note_stale(__u32 tgid, __u8 how)
{
	__u8 *was = bpf_map_lookup_elem(&unwind_stale, &tgid);

	if (was && *was >= how)
		return;
	if (bpf_map_update_elem(&unwind_stale, &tgid, &how, BPF_ANY))
		return;
#ifdef EMBER_PROC_MAPS_BPF_H
	if (proc_event(EMBER_PROC_STALE, tgid, EMBER_PROC_SRC_OTHER, BPF_RB_FORCE_WAKEUP))
		bpf_map_delete_elem(&unwind_stale, &tgid); /* ring full: marked again later */
#endif
}

/* What a walk did, for the caller's metrics (EMBER_SAMPLE_M_*). */
struct uw_result {
	__u32 end;     /* EMBER_SAMPLE_M_END_*: why the stack ended */
	__u32 no_proc; /* 1: the process's tables were not loaded (all frame pointers) */
	__u32 by_table, by_fp, bad_rule; /* frames by how they were unwound */
	__u32 rt_kind;			 /* the process's runtime (enum ember_rt_kind) */
	__u32 rt_frames;		 /* its frames stored */
	__u32 rt_miss;			 /* why they stopped short: enum uw_rt_miss */
	__u32 rt_unsupported;		 /* honest frames of a version without a layout */
	__u32 pad;
	__u64 rt_reads; /* hash of what the host reads to name them (struct uw_rt.reads) */
};

/* tgid's mappings and their tables, or NULL while the daemon has not loaded them. */
static __always_inline const struct ember_unwind_proc *uw_proc(__u32 tgid)
{
	return bpf_map_lookup_elem(&unwind_procs, &tgid);
}

/*
 * Walks the user stack whose registers are regs into st, leaf first, with
 * proc (uw_proc(tgid); NULL: frame pointers), and says in res how it went.
 * lib/symbols/uwalk.c walks a copy of a stack by the same rules.
 */
static __always_inline void uw_walk(struct ember_stack *st, __u32 tgid,
				    const struct ember_unwind_proc *proc,
				    const struct ember_uregs *regs, struct uw_result *res)
{
	struct uw_walk_state w = {.f = {.ip = regs->ip,
					.sp = regs->sp,
					.bp = regs->bp,
					.bx = regs->bx,
					.tgid = tgid,
					.tid = (__u32)bpf_get_current_pid_tgid(),
					.gen = proc ? proc->gen : 0},
				  .ips = st->ips,
				  .proc = proc};
	struct uw_env *win;
	__u32 zero = 0;

	st->ips[0] = regs->ip;
	st->len = 1;
	st->flags = 0;
	/*
	 * A task that has no memory any more: a process exiting, its address
	 * space torn down after exit_mm. Nothing is there to read (and its
	 * tables may be dropped already: frame pointers would read rbp as the
	 * end of the chain); the walk and its tables are not at fault.
	 */
	if (!bpf_get_current_task_btf()->mm) {
		st->flags =
			EMBER_STACK_EXITED; /* unless its stack at exit replaces it (fold.bpf.h) */
		*res = (struct uw_result){.end = UW_EXITED, .no_proc = !proc};
		return;
	}
	win = bpf_map_lookup_elem(&unwind_window, &zero);
	if (win && win->busy) {
		/*
		 * A sample taken while a tracepoint's walk runs on this CPU (the
		 * cpu object's exit walk): the window and the row cache are that
		 * walk's. The leaf alone, as unreadable; a rare sample.
		 */
		*res = (struct uw_result){.end = UW_UNREADABLE, .no_proc = !proc};
		return;
	}
	if (win) {
		win->len = 0;
		win->busy = 1;
		win->walk++;
	}
	w.env = win;
	uw_walk_frames(&w);
	if (win)
		win->busy = 0;
	if (w.f.stale)
		uw_note_stale(tgid, w.f.stale);
	st->len = w.f.n;
	st->flags = w.f.end == UW_DEPTH ? EMBER_STACK_TRUNCATED : 0;
	/* frame pointers where a table is missing or still being built: not known complete */
	if (uw_fp_guessed(&w.f, proc))
		st->flags |= EMBER_STACK_NO_TABLES;
	res->end = w.f.end;
	res->no_proc = !proc;
	res->by_table = w.f.by_table;
	res->by_fp = w.f.by_fp;
	res->bad_rule = w.f.bad_rule;
	res->rt_kind = proc ? proc->rt.kind : EMBER_RT_NONE;
	res->rt_frames = w.rt.frames;
	res->rt_miss = w.rt.miss;
	res->rt_unsupported = w.rt.unsupported;
	res->rt_reads = w.rt.reads;
}

#endif /* EMBER_UNWIND_BPF_H */
