// SPDX-License-Identifier: MIT
/*
 * The user stack walk of the BPF programs (bpf/uwalk.bpf.h, the one source),
 * compiled for the host over a copy of the stack (uwalk.h): the stack is read
 * from the copy alone, rows through the caller's callbacks, loops are plain
 * loops. The stack window and the row cache of the kernel's environment have
 * no counterpart here: a cache of rules is the row source's business.
 */
#include <linux/types.h>
#include <stdbool.h>
#include <string.h>

#include "uwalk.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
/* bpf_loop()'s contract: fn(i, ctx) for i < n, until it returns non-zero */
#define UW_LOOP(n, fn, ctx)                                   \
	do {                                                  \
		for (__u32 uw_i_ = 0; uw_i_ < (n); uw_i_++) { \
			if ((fn)(uw_i_, (ctx)))               \
				break;                        \
		}                                             \
	} while (0)
#define UW_GLOBAL static

/* A table's rows: read through the caller's callback. */
typedef struct {
	uwalk_row_fn fn;
	void *arg;
} uw_row_src;

/* The host's environment of one walk: the stack copy and the caller's rule source. */
struct uw_env {
	const struct uwalk_stack *stk;
	const struct uwalk_rows *src;
	const struct uwalk_mem *mem;	    /* the process's memory, or NULL: none but the copy */
	const struct ember_rt_trace *trace; /* CPython's chain as read at the sample, or NULL */
	__u64 rt[EMBER_RT_SCRATCH_WORDS];   /* the runtime walk's memos (uwalk_rt.bpf.h) */
	__u64 rt_base;			    /* process address of rt_buf[0] */
	__u32 rt_len;			    /* valid bytes in rt_buf; 0: empty */
	__u8 rt_buf[EMBER_RT_WINDOW]
		__attribute__((aligned(8))); /* read as words (uwalk_rt.bpf.h) */
	bool beyond;		 /* a read went past the copy's end: a deeper stack than it holds */
	__u64 win_base, win_len; /* the kernel's window of the stack, as it would be */
	struct uwalk_result *cost;   /* where the kernel's reads and lookups are counted */
	struct ember_v8_memo v8_one; /* the V8 memo's one slot where the caller keeps none */
	__u64 walk;		     /* this walk, told from every other of the process's */
};

/* Walks begun, whatever their memo: each its own number (uw_env_walk()). */
static __u64 uw_walks;

/* Counts a kernel read of the stack word at addr: one where its window would be refilled. */
static void uw_env_count_read(struct uw_env *env, __u64 addr)
{
	__u64 lo, len;

	if (addr >= env->win_base && addr - env->win_base + sizeof(__u64) <= env->win_len)
		return;
	env->cost->stack_reads++;
	ember_unwind_window_at(addr, &lo, &len); /* as bpf/unwind.bpf.h's uw_env_refill() */
	if (len) {
		env->win_base = lo;
		env->win_len = len;
	}
}

/* Where len bytes at user address addr lie for the copy of the stack. */
enum uw_copy_at {
	UW_IN_COPY,   /* in it */
	UW_PAST_COPY, /* above its end, within reach of a stack: what a longer copy would hold */
	UW_NOT_STACK, /* elsewhere */
};

static enum uw_copy_at uw_copy_at(const struct uwalk_stack *s, __u64 addr, __u32 len)
{
	if (s->bytes && addr >= s->base && addr - s->base <= s->len &&
	    s->len - (addr - s->base) >= len)
		return UW_IN_COPY;
	return addr >= s->base && addr - s->base < (64u << 20) ? UW_PAST_COPY : UW_NOT_STACK;
}

/* The word at user address addr, from the copy only. */
static bool uw_env_read(struct uw_env *env, __u64 *v, __u64 addr)
{
	const struct uwalk_stack *s = env->stk;
	enum uw_copy_at at = uw_copy_at(s, addr, sizeof(*v));

	uw_env_count_read(env, addr);
	if (at != UW_IN_COPY) {
		env->beyond = at == UW_PAST_COPY;
		return false;
	}
	memcpy(v, s->bytes + (addr - s->base), sizeof(*v));
	return true;
}

/*
 * Any user memory (a runtime's frames): the stack's from the copy, as it was
 * at the sample (never the live stack, which moved on: past the copy's end
 * is unreadable, as for uw_env_read()); the rest through the caller's reader,
 * if any.
 */
static bool uw_env_read_mem(struct uw_env *env, void *dst, __u32 len, __u64 addr)
{
	enum uw_copy_at at;

	if (!env)
		return false;
	env->cost->mem_reads++;
	env->cost->mem_bytes += len;
	at = uw_copy_at(env->stk, addr, len);
	if (at == UW_IN_COPY) {
		memcpy(dst, env->stk->bytes + (addr - env->stk->base), len);
		return true;
	}
	if (at == UW_PAST_COPY) {
		env->beyond = true;
		return false;
	}
	return env->mem && env->mem->read(env->mem->arg, dst, len, addr);
}

/* The thread's memo of its CPython state, the caller's (the kernel's is per task), or NULL. */
static struct ember_py_ts_memo *uw_env_py_ts_memo(struct uw_env *env, __u32 tid, bool create)
{
	(void)tid;
	(void)create;
	return env && env->mem ? env->mem->ts_memo : NULL;
}

/* The walk running, told from every other (the V8 memo's slots checked in it). */
static __u64 uw_env_walk(struct uw_env *env)
{
	return env ? env->walk : 0;
}

/* Slot i of the caller's V8 memo, or the walk's own single slot (each function read whole). */
static struct ember_v8_memo *uw_env_v8_memo(struct uw_env *env, __u32 i)
{
	if (!env)
		return NULL;
	if (env->mem && env->mem->v8_memo)
		return &env->mem->v8_memo[i & (EMBER_V8_MEMO_SLOTS - 1)];
	return &env->v8_one;
}

/* Slot i of the caller's CPython code memo, or NULL: each code object's type is read. */
static struct ember_py_code_memo *uw_env_py_code_memo(struct uw_env *env, __u32 i)
{
	if (!env || !env->mem || !env->mem->py_code_memo)
		return NULL;
	return &env->mem->py_code_memo[i & (EMBER_PY_CODE_MEMO_SLOTS - 1)];
}

/* The walked thread's pointer, as the caller knows it (a copy's walk does not: 0). */
static __u64 uw_env_tp(struct uw_env *env, __u32 tid)
{
	(void)tid;
	return env && env->mem ? env->mem->tp : 0;
}

/* CPython's chain as the kernel read it at the sample, if it did: given in place of the live one. */
static const struct ember_rt_trace *uw_env_rt_trace(struct uw_env *env)
{
	return env && env->trace && env->trace->kind == EMBER_RT_PYTHON ? env->trace : NULL;
}

static bool uw_env_row(const uw_row_src *src, __u32 i, struct ember_unwind_row *out)
{
	return src->fn(src->arg, i, out);
}

#include "uwalk.bpf.h"
_Static_assert(UWALK_RT_NO_THREAD == UW_RT_NO_THREAD && UWALK_RT_BAD_FRAME == UW_RT_BAD_FRAME,
	       "uwalk.h says the walk's reasons");

/* The row of table in force at pc, from the caller's source: it holds for pc alone here. */
static bool uw_env_table_rule(struct uw_env *env, __u32 table, __u64 pc,
			      struct ember_unwind_row *out, __u64 *lo, __u64 *hi)
{
	*lo = pc;
	*hi = pc + 1;
	return env->src->find(env->src->arg, table, pc, out);
}

static bool uw_env_rule(struct uw_frame *f, const struct ember_unwind_proc *proc,
			struct uw_env *env, __u64 at, struct ember_unwind_row *out)
{
	__u64 lo, hi;
	bool in_map;

	env->cost->rules++;
	return uw_rule_at(f, proc, env, at, out, &lo, &hi, &in_map);
}

bool uwalk_search(uint32_t nrows, uwalk_row_fn row, void *arg, uint64_t pc,
		  struct ember_unwind_row *out, uint64_t *lo, uint64_t *hi)
{
	uw_row_src src = {row, arg};
	__u64 l, h;

	if (!uw_search_rows(&src, 0, nrows, pc, out, &l, &h))
		return false;
	*lo = l;
	*hi = h; /* ~0 for the last row: UINT64_MAX */
	return true;
}

void uwalk(const struct ember_unwind_proc *proc, const struct uwalk_rows *src,
	   const struct uwalk_stack *stk, const struct uwalk_regs *regs, struct uwalk_result *out)
{
	uwalk_mem(proc, src, stk, NULL, regs, out);
}

void uwalk_mem(const struct ember_unwind_proc *proc, const struct uwalk_rows *src,
	       const struct uwalk_stack *stk, const struct uwalk_mem *mem,
	       const struct uwalk_regs *regs, struct uwalk_result *out)
{
	uwalk_traced(proc, src, stk, mem, NULL, regs, out);
}

void uwalk_traced(const struct ember_unwind_proc *proc, const struct uwalk_rows *src,
		  const struct uwalk_stack *stk, const struct uwalk_mem *mem,
		  const struct ember_rt_trace *trace, const struct uwalk_regs *regs,
		  struct uwalk_result *out)
{
	struct uw_env env = {.stk = stk,
			     .src = src,
			     .mem = mem,
			     .trace = trace,
			     .cost = out,
			     .walk = __atomic_add_fetch(&uw_walks, 1, __ATOMIC_RELAXED)};
	struct uw_walk_state w = {.f = {.ip = regs->ip,
					.sp = regs->sp,
					.bp = regs->bp,
					.bx = regs->bx,
					.tid = regs->tid,
					.gen = proc ? proc->gen : 0},
				  .ips = out->ips,
				  .proc = proc,
				  .env = &env};
	__u32 end;

	memset(out, 0, sizeof(*out));
	uw_walk_frames(&w);
	end = w.f.end;
	out->n = w.f.n;
	out->end = end;
	out->by_table = w.f.by_table;
	out->by_fp = w.f.by_fp;
	out->bad_rule = w.f.bad_rule;
	out->rt_frames = w.rt.frames;
	out->rt_miss = w.rt.miss;
	out->rt_unsupported = w.rt.unsupported;
	out->truncated = end == UW_DEPTH;
	out->fp_guessed = uw_fp_guessed(&w.f, proc);
	out->copy_short = env.beyond && end != UW_OUTERMOST && end != UW_DEPTH;
}

void uwalk_rt_trace(const struct ember_rt_proc *info, const struct uwalk_mem *mem, uint32_t tid,
		    struct ember_rt_trace *out)
{
	struct uwalk_result cost;
	struct uwalk_stack none = {.base = UINT64_MAX}; /* no stack copy: every read is mem's */
	struct uw_env env = {.stk = &none, .mem = mem, .cost = &cost};

	memset(out, 0, sizeof(*out));
	uw_py_trace(info, &env, tid, out);
}
