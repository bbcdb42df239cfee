/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The user stack walk, one source for the BPF programs (bpf/unwind.bpf.h) and
 * the host (lib/symbols/uwalk.c: the deferred walk, unit tests, fuzzing): the
 * code the kernel runs is the code the tests run. x86-64: the CFA is found
 * from rsp, rbp or rbx (ld.so's trampolines), the return address is at CFA - 8.
 *
 * The includer gives the environment first (the BPF one in unwind.bpf.h, the
 * host one in uwalk.c): the fixed-width types and bool; struct uw_env, how
 * user memory is read (with room for the runtime walk's memos, off the BPF
 * stack: __u64 rt[EMBER_RT_SCRATCH_WORDS], and for a window of its memory:
 * __u64 rt_base, __u32 rt_len, __u8 rt_buf[EMBER_RT_WINDOW]), and uw_row_src, how a table's
 * rows are read; and
 *   bool uw_env_read(struct uw_env *env, __u64 *v, __u64 addr);
 *   bool uw_env_read_mem(struct uw_env *env, void *dst, __u32 len, __u64 addr);
 *       (any user memory, for the runtimes' frames: bpf/uwalk_rt.bpf.h)
 *   const struct ember_rt_trace *uw_env_rt_trace(struct uw_env *env);
 *       (CPython's chain as read at the sample, or NULL: the live one is read)
 *   struct ember_py_ts_memo *uw_env_py_ts_memo(struct uw_env *env, __u32 tid, bool create);
 *       (thread tid's CPython state as its last walk found it, or NULL: none kept;
 *       create: made for a state just found, else only looked up)
 *   __u64 uw_env_walk(struct uw_env *env);
 *       (the walk running, told from every other that used the same memo; 0: none told)
 *   struct ember_v8_memo *uw_env_v8_memo(struct uw_env *env, __u32 i);
 *       (slot i, below EMBER_V8_MEMO_SLOTS, of the V8 walk's memo of functions, or NULL)
 *   struct ember_py_code_memo *uw_env_py_code_memo(struct uw_env *env, __u32 i);
 *       (slot i, below EMBER_PY_CODE_MEMO_SLOTS, of the CPython walk's memo of code
 *       objects, or NULL: none kept)
 *   __u64 uw_env_tp(struct uw_env *env, __u32 tid);
 *       (thread tid's thread pointer, x86-64's fs_base, or 0: not known)
 *   bool uw_env_row(const uw_row_src *src, __u32 i, struct ember_unwind_row *out);
 *   bool uw_env_table_rule(struct uw_env *env, __u32 table, __u64 pc,
 *                          struct ember_unwind_row *out, __u64 *lo, __u64 *hi);
 *   bool uw_env_rule(struct uw_frame *f, const struct ember_unwind_proc *proc,
 *                    struct uw_env *env, __u64 at, struct ember_unwind_row *out);
 *       (the two rule look-ups may cache and call uw_search_rows(), uw_rule_at():
 *       declared here, the includer defines them after including this file)
 *   UW_LOOP(n, fn, ctx): calls fn(i, ctx) for i < n until it returns non-zero;
 *   UW_GLOBAL: the attributes of uw_step(), a global subprogram in BPF (the
 *       verifier checks it once, whatever calls it), static on the host.
 */
#ifndef EMBER_UWALK_BPF_H
#define EMBER_UWALK_BPF_H

#include "ember/sample.h"
#include "ember/unwind.h"

/* Lowest address a frame may return to: the first page is never mapped. */
#define UW_MIN_IP 4096
/*
 * Addresses from here on are no user code (x86-64's user half ends below, with
 * 5-level paging too): a frame-pointer chain reaching one has left the stack's
 * frames (eight bytes of text read as an address are always up here).
 */
#define UW_MAX_IP (1ull << 56)

/* Why a walk step ended the stack (EMBER_SAMPLE_M_END_*), or 0 to go on. */
enum uw_end {
	UW_GO_ON = 0,
	UW_OUTERMOST = EMBER_SAMPLE_M_END_OUTERMOST,
	UW_SIGNAL = EMBER_SAMPLE_M_END_SIGNAL,
	UW_NO_TABLE = EMBER_SAMPLE_M_END_NO_TABLE,
	UW_BAD_RULE = EMBER_SAMPLE_M_END_BAD_RULE,
	UW_UNREADABLE = EMBER_SAMPLE_M_END_UNREADABLE,
	UW_DEPTH = EMBER_SAMPLE_M_END_DEPTH,
	UW_EXITED = EMBER_SAMPLE_M_END_EXITED,
};

/*
 * The state of one walk that uw_step() reads and writes: no pointers, so that
 * BPF's global uw_step() can take it (a pointer read from its argument would
 * be a number to the verifier), and no holes (6.18's verifier refuses a
 * bpf_loop() state with one: "verifier bug: stack slot 0, total slots 0").
 */
struct uw_frame {
	__u64 ip, sp, bp, bx; /* registers of the frame being unwound */
	__u32 tgid;
	__u32 gen; /* the process entry's gen when the walk began (the row cache's) */
	__u32 n;   /* frames stored */
	__u32 end; /* enum uw_end, once the walk ended */
	__u32 by_table, by_fp, bad_rule; /* frames by how they were unwound */
	__u32 steps;			 /* native frames unwound: 0 while at the leaf */
	__u32 tid; /* the thread walked (the runtimes find their state by it) */
	/* bytes, not words: the BPF stack holds the walk's state (512 bytes in all) */
	__u8 bx_lost;	  /* bx is not the frame's rbx (a rule not followed) */
	__u8 interrupted; /* ip is where a signal hit, not a return address */
	__u8 stale;	  /* a frame outside every known mapping: EMBER_UNWIND_STALE_* */
	__u8 pad;	  /* explicit: no hole, not even at the end */
};
_Static_assert(sizeof(struct uw_frame) == 4 * 8 + 9 * 4 + 4, "struct uw_frame has no hole");

/* The environment's rule look-ups (above), defined by the includer after this file. */
static bool uw_env_table_rule(struct uw_env *env, __u32 table, __u64 pc,
			      struct ember_unwind_row *out, __u64 *lo, __u64 *hi);
static bool uw_env_rule(struct uw_frame *f, const struct ember_unwind_proc *proc,
			struct uw_env *env, __u64 at, struct ember_unwind_row *out);

/*
 * Binary searches run as UW_LOOP steps: the verifier checks a step once,
 * where an open-coded search whose bounds depend on the data is explored
 * path by path ("the sequence of 8193 jumps is too complex").
 */
struct uw_search {
	const uw_row_src *src; /* a table's rows: read through it */
	__u32 first;	       /* the table's first row */
	__u32 lo, hi;	       /* the answer is lo: rows <= key */
	__u32 failed;	       /* a row could not be read */
	__u64 key;
};

/* A search of a process's mappings, as uw_search is of a table's rows. */
struct uw_map_search {
	const struct ember_unwind_proc *proc;
	__u64 key;
	__u32 lo, hi; /* the answer is lo: mappings starting at or below key */
};

static long uw_map_step(__u32 i, void *arg)
{
	struct uw_map_search *q = arg;
	__u32 mid;

	(void)i; /* the state says where the search is */
	if (q->lo >= q->hi)
		return 1;
	mid = (q->lo + q->hi) / 2;
	if (q->proc->maps[mid & (EMBER_UNWIND_MAPS_MAX - 1)].start <= q->key)
		q->lo = mid + 1;
	else
		q->hi = mid;
	return 0;
}

/*
 * The mapping of p holding ip, or NULL, searched in *q (the caller's room:
 * the BPF stack is short where the runtime walk asks).
 */
static __always_inline const struct ember_unwind_map *
uw_find_map_in(const struct ember_unwind_proc *p, __u64 ip, struct uw_map_search *q)
{
	const struct ember_unwind_map *m;

	q->proc = p;
	q->key = ip;
	q->lo = 0;
	q->hi = p->nmaps < EMBER_UNWIND_MAPS_MAX ? p->nmaps : EMBER_UNWIND_MAPS_MAX;
	UW_LOOP(9, uw_map_step, q); /* 9 halvings cover EMBER_UNWIND_MAPS_MAX mappings */
	if (q->lo == 0)
		return NULL;
	m = &p->maps[(q->lo - 1) & (EMBER_UNWIND_MAPS_MAX - 1)];
	return ip < m->end ? m : NULL;
}

/* The mapping of p holding ip, or NULL. */
static __always_inline const struct ember_unwind_map *uw_find_map(const struct ember_unwind_proc *p,
								  __u64 ip)
{
	struct uw_map_search q;

	return uw_find_map_in(p, ip, &q);
}

static long uw_row_step(__u32 i, void *arg)
{
	struct uw_search *q = arg;
	struct ember_unwind_row r;
	__u32 mid;

	(void)i; /* the state says where the search is */
	if (q->lo >= q->hi)
		return 1;
	mid = (q->lo + q->hi) / 2;
	if (!uw_env_row(q->src, q->first + mid, &r)) {
		q->failed = 1;
		return 1;
	}
	if (r.pc <= q->key)
		q->lo = mid + 1;
	else
		q->hi = mid;
	return 0;
}

/*
 * The row in force at pc among the nrows sorted rows from first on, read
 * through src, into *out; and [*lo, *hi), the pcs it covers (*hi ~0 for the
 * last; pc + 1 when the next row cannot be read). False where no row covers
 * pc or one could not be read.
 */
static __always_inline bool uw_search_rows(const uw_row_src *src, __u32 first, __u32 nrows,
					   __u64 pc, struct ember_unwind_row *out, __u64 *lo,
					   __u64 *hi)
{
	struct uw_search q = {.src = src, .first = first, .hi = nrows, .key = pc};
	struct ember_unwind_row next;

	if (!nrows || nrows > EMBER_UNWIND_ROWS_PER_TABLE_MAX)
		return false;
	/* bound: 25 halvings cover EMBER_UNWIND_ROWS_PER_TABLE_MAX rows */
	UW_LOOP(25, uw_row_step, &q);
	if (!q.lo || q.failed || !uw_env_row(src, first + q.lo - 1, out))
		return false;
	*lo = out->pc;
	*hi = ~0ull;
	if (q.lo < nrows)
		*hi = uw_env_row(src, first + q.lo, &next) ? next.pc : pc + 1;
	return true;
}

/*
 * A frame outside every mapping the process was given. Where it is the
 * interrupted instruction (the leaf), code runs there: a mapping is surely
 * missing. A caller's address may be frame-pointer garbage instead.
 */
static __always_inline void uw_mark_stale(struct uw_frame *f)
{
	__u32 how = f->steps == 0 ? EMBER_UNWIND_STALE_LEAF : EMBER_UNWIND_STALE_CALLER;

	if (how > f->stale)
		f->stale = how;
}

/*
 * The row of proc's tables in force at address at, into *row, and the
 * addresses [*lo, *hi) it holds for (those of its mapping, or at alone, where
 * there is none); false where no table covers at. *in_map: at lies in one of
 * proc's mappings (else marked stale).
 */
static __always_inline bool uw_rule_at(struct uw_frame *f, const struct ember_unwind_proc *proc,
				       struct uw_env *env, __u64 at, struct ember_unwind_row *row,
				       __u64 *lo, __u64 *hi, bool *in_map)
{
	const struct ember_unwind_map *m = uw_find_map(proc, at);
	__u64 pc, rlo, rhi;

	*in_map = m != NULL;
	*lo = at;
	*hi = at + 1;
	if (!m) {
		uw_mark_stale(f);
		return false;
	}
	pc = at - m->bias;
	if (m->table == EMBER_UNWIND_NO_TABLE || pc > 0xffffffffULL ||
	    !uw_env_table_rule(env, m->table, pc, row, &rlo, &rhi))
		return false;
	/* the row's range, within the mapping */
	*lo = rlo + m->bias > m->start ? rlo + m->bias : m->start;
	*hi = rhi != ~0ull && rhi + m->bias < m->end ? rhi + m->bias : m->end;
	return true;
}

/* One frame-pointer step: the caller of a frame that keeps rbp as its frame pointer. */
static __always_inline __u32 uw_fp_step(struct uw_frame *f, struct uw_env *env, __u32 fail)
{
	__u64 ra, bp;

	if (!f->bp)
		return UW_OUTERMOST; /* _start and thread starts clear rbp */
	if (f->bp < f->sp || !uw_env_read(env, &bp, f->bp) || !uw_env_read(env, &ra, f->bp + 8))
		return fail;
	f->sp = f->bp + 16;
	f->bp = bp;
	f->ip = ra;
	f->bx_lost = 1; /* the frame may have saved and used it: nothing says */
	return UW_GO_ON;
}

/*
 * Offsets in the signal frame the kernel pushed (arch/x86/include/uapi/asm/
 * sigcontext.h, ucontext.h): at a signal trampoline (__restore_rt) rsp points
 * at the struct ucontext, whose uc_mcontext (a struct sigcontext) follows
 * uc_flags, uc_link and uc_stack.
 */
#define UW_UC_MCONTEXT 40
#define UW_SC_RBP 80
#define UW_SC_RBX 88
#define UW_SC_RSP 120
#define UW_SC_RIP 128

/* Steps over a signal frame: the interrupted code's registers, as the kernel saved them. */
static __always_inline __u32 uw_signal_step(struct uw_frame *f, struct uw_env *env)
{
	__u64 sc = f->sp + UW_UC_MCONTEXT, ip, sp, bp, bx = 0;

	if (!uw_env_read(env, &ip, sc + UW_SC_RIP) || !uw_env_read(env, &sp, sc + UW_SC_RSP) ||
	    !uw_env_read(env, &bp, sc + UW_SC_RBP))
		return UW_SIGNAL;
	f->bx_lost = !uw_env_read(env, &bx, sc + UW_SC_RBX);
	f->bx = bx;
	f->ip = ip;
	f->sp = sp;
	f->bp = bp;
	f->interrupted = 1;
	return UW_GO_ON;
}

/*
 * The caller's rbx, where a row says the frame saved it (read as rbp is;
 * followed only for the rbx-based CFAs further out, so a save that cannot be
 * read marks it lost rather than ending the walk).
 */
static __always_inline void uw_restore_rbx(struct uw_frame *f, struct uw_env *env,
					   const struct ember_unwind_row *r, __u64 cfa)
{
	__u64 bx;

	if (r->rbx_kind == EMBER_RBP_LOST) {
		f->bx_lost = 1;
	} else if (r->rbx_kind == EMBER_RBP_CFA) {
		if (uw_env_read(env, &bx, cfa + r->rbx_off))
			f->bx = bx;
		else if (cfa + r->rbx_off >= f->sp)
			f->bx_lost = 1;
		/* else below sp, popped already: rbx holds it */
	}
}

/* One table step: the caller of a frame whose row says where its CFA is. */
static __always_inline __u32 uw_table_step(struct uw_frame *f, struct uw_env *env,
					   const struct ember_unwind_row *r)
{
	__u64 cfa, ra, bp;

	switch (r->cfa_kind) {
	case EMBER_CFA_RSP:
		cfa = f->sp + r->cfa_off;
		break;
	case EMBER_CFA_RBP:
		cfa = f->bp + r->cfa_off;
		break;
	case EMBER_CFA_RBX:
		if (f->bx_lost)
			return UW_BAD_RULE;
		cfa = f->bx + r->cfa_off;
		break;
	case EMBER_CFA_PLT:
		cfa = f->sp + 8 + ((f->ip & 15) >= (__u64)(__s64)r->cfa_off ? 8 : 0);
		break;
	case EMBER_CFA_END:
		return UW_OUTERMOST;
	case EMBER_CFA_SIGNAL:
		return uw_signal_step(f, env);
	default:
		return UW_BAD_RULE;
	}
	/* the caller's frame lies above this one: anything else is a bad rule or stack */
	if (cfa <= f->sp || !uw_env_read(env, &ra, cfa - 8))
		return UW_UNREADABLE;
	if (r->rbp_kind == EMBER_RBP_CFA) {
		if (uw_env_read(env, &bp, cfa + r->rbp_off))
			f->bp = bp;
		else if (cfa + r->rbp_off >= f->sp)
			return UW_UNREADABLE;
		/* else below sp, popped already (an epilogue's rule keeps the save): rbp holds it */
	}
	uw_restore_rbx(f, env, r, cfa);
	f->sp = cfa;
	f->ip = ra;
	return UW_GO_ON;
}

/*
 * The address that stands for the frame at f: a return address is after its
 * call, so the call itself (ip - 1); the leaf, or where a signal hit, as is.
 */
static __always_inline __u64 uw_frame_pc(const struct uw_frame *f)
{
	return f->steps > 0 && !f->interrupted ? f->ip - 1 : f->ip;
}

/*
 * The rule for the frame at f->ip, then one step to its caller: UW_GO_ON, or
 * why the stack ends. proc NULL: frame pointers. A global subprogram in BPF,
 * verified once for every walk of the program; its pointers may be NULL to
 * the verifier.
 */
UW_GLOBAL int uw_step(struct uw_frame *f, const struct ember_unwind_proc *proc, struct uw_env *env)
{
	struct ember_unwind_row row = {.cfa_kind = EMBER_CFA_NONE};
	bool found;
	__u64 at;

	if (!f)
		return UW_BAD_RULE;
	at = uw_frame_pc(f);
	found = proc && uw_env_rule(f, proc, env, at, &row);
	f->interrupted = 0;
	f->steps++;
	if (found && row.cfa_kind != EMBER_CFA_FP && row.cfa_kind != EMBER_CFA_NONE) {
		f->by_table++;
		return uw_table_step(f, env, &row);
	}
	if (found && row.cfa_kind == EMBER_CFA_FP) {
		f->bad_rule++;
		return uw_fp_step(f, env, UW_BAD_RULE);
	}
	f->by_fp++;
	return uw_fp_step(f, env, UW_NO_TABLE);
}

#include "uwalk_rt.bpf.h"

/* One walk across UW_LOOP steps: the frame state, and where frames go. */
struct uw_walk_state {
	struct uw_frame f;		      /* first: uw_step() writes it, nothing else */
	struct uw_rt rt;		      /* the runtime's frames (uw_rt_frame()) */
	__u64 *ips;			      /* EMBER_MAX_STACK_DEPTH frames, leaf first */
	const struct ember_unwind_proc *proc; /* the process's mappings, or NULL */
	struct uw_env *env;		      /* how memory and rows are read */
};

static long uw_walk_step(__u32 i, void *arg)
{
	struct uw_walk_state *w = arg;
	__u32 n = w->f.n, end, say = UW_RT_NATIVE;
	__u64 word = w->f.ip;

	(void)i; /* the state counts the frames */
	if (n >= EMBER_MAX_STACK_DEPTH) {
		w->f.end = UW_DEPTH;
		return 1;
	}
	if (w->proc && w->proc->rt.kind != EMBER_RT_NONE)
		say = uw_rt_frame(&w->f, &w->rt, w->proc, w->env);
	if (say == UW_RT_MORE || say == UW_RT_LAST) {
		word = w->rt.word;
		/* FNV-1a step, as stack_hash()'s */
		w->rt.reads = (w->rt.reads ^ EMBER_RT_WORD_READ(word)) * 0x100000001b3ULL;
	}
	if (say != UW_RT_DONE) {
		w->ips[n & (EMBER_MAX_STACK_DEPTH - 1)] = word;
		w->f.n = n + 1;
	}
	if (say == UW_RT_MORE)
		return 0; /* the native frame stays: its runtime frames go on */
	end = uw_step(&w->f, w->proc, w->env);
	if (!end && w->f.ip < UW_MIN_IP)
		end = UW_OUTERMOST; /* returns to 0: the end of a frame-pointer chain */
	else if (!end && w->f.ip >= UW_MAX_IP)
		end = UW_NO_TABLE; /* a chain through no frames (text read as an address) */
	w->f.end = end;
	return end ? 1 : 0;
}

/*
 * Walks the stack from w's registers into w->ips, leaf first, until it ends
 * (w->f.end) or EMBER_MAX_STACK_DEPTH frames are stored (UW_DEPTH).
 */
static __always_inline void uw_walk_frames(struct uw_walk_state *w)
{
	/*
	 * bound: the deepest stack kept, and one more step that notices the
	 * limit; twice, for the steps that store nothing (a runtime's entry frame)
	 */
	UW_LOOP(2 * EMBER_MAX_STACK_DEPTH + 1, uw_walk_step, w);
	if (!w->f.end)
		w->f.end = UW_DEPTH;
}

/*
 * Whether the walk's frame-pointer steps may have skipped callers, so that its stack is
 * not known whole: the process has no tables, or took such a step where its tables were
 * still being built, or from code outside every mapping it was given (a library it
 * loaded since it was read; not V8's code, which moves and keeps frame pointers).
 */
static __always_inline bool uw_fp_guessed(const struct uw_frame *f,
					  const struct ember_unwind_proc *proc)
{
	if (!proc)
		return true;
	return f->by_fp && (proc->pending || (f->stale && proc->rt.kind != EMBER_RT_V8));
}

#endif /* EMBER_UWALK_BPF_H */
