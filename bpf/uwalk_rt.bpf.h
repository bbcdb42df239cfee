/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The runtime walkers, part of the one walk (bpf/uwalk.bpf.h, which includes
 * this file): where the native walk stands in a runtime's own code (CPython's
 * eval loop), the runtime's frames (include/ember/runtime.h: tagged words of
 * a code object and an instruction) are stored in place of that native
 * frame, so that native code called from the runtime and back keeps its
 * order. The layout of a runtime's structures comes from the daemon
 * (struct ember_rt_proc), found in the binaries' own symbols. Every read of
 * the runtime's memory may fail or lie: a chain that does not look like the
 * runtime's ends the runtime's frames (counted), never the walk.
 */
#ifndef EMBER_UWALK_RT_BPF_H
#define EMBER_UWALK_RT_BPF_H

#include "ember/runtime.h"
#include "uwalk_v8.bpf.h"

/* What the runtime step says about the native frame at f->ip. */
enum uw_rt_say {
	UW_RT_NATIVE = 0, /* not a runtime's (or not readable): its own address is stored */
	UW_RT_MORE,	  /* a runtime frame in rt->word, more follow for this native frame */
	UW_RT_LAST,	  /* a runtime frame in rt->word, its last: the native frame is unwound */
	UW_RT_DONE,	  /* no more for it: the native frame is unwound, nothing stored */
};

/* Why a walk's runtime frames stopped short (the first reason), for the metrics. */
enum uw_rt_miss {
	UW_RT_OK = 0,
	UW_RT_NO_THREAD = 1, /* the thread's state was not found (not a runtime's thread yet) */
	UW_RT_BAD_FRAME = 2, /* a frame that is not the runtime's (a corrupt or moving chain) */
};

/* The runtime walk's state within one stack walk: pointer-free, as struct uw_frame. */
struct uw_rt {
	__u64 cur;    /* CPython: the next interpreter frame to give, 0: none */
	__u64 word;   /* the frame the last step gave */
	__u64 reads;  /* hash of what the host reads of the frames given (EMBER_RT_WORD_READ) */
	__u16 in_run; /* frames given for the native frame at hand */
	__u16 frames; /* runtime frames given in this walk */
	__u16 unsupported; /* honest frames of a version without a layout */
	__u8 started;	   /* the thread's state was looked up: cur is its innermost frame */
	__u8 miss;	   /* enum uw_rt_miss */
};
_Static_assert(sizeof(struct uw_rt) == 32, "struct uw_rt has no hole");

/* Threads of one interpreter looked at for the sampled one: beyond, no Python frames. */
#define UW_PY_THREADS_MAX 256
/* Words of an interpreter frame read at once: its fixed fields, every version's. */
#define UW_PY_FRAME_WORDS 10
/* The scratch's words: the cycle check's (uw_py_cycle()). */
#define UW_PY_TORTOISE 0
#define UW_PY_POWER_STEPS 1
/* The scratch's word after those: the code object last found to be one (uw_py_code()). */
#define UW_PY_CODE_OK 2
/*
 * And the walked process, tgid << 32 | the generation of its entry, under which
 * code objects are kept across walks (uw_py_code()); 0: none, kept for this walk only.
 */
#define UW_PY_WHO 3
_Static_assert(UW_PY_WHO < EMBER_RT_SCRATCH_WORDS, "the scratch holds the walk's memos");
#define UW_PY_FRAME_BYTES (UW_PY_FRAME_WORDS * 8)
_Static_assert(UW_PY_FRAME_BYTES <= EMBER_RT_WINDOW, "a frame's record fits the window");
/* _PyInterpreterFrame.owner of a C stack's entry frame (3.12+: FRAME_OWNED_BY_CSTACK). */
#define UW_PY_OWNED_BY_CSTACK 3
/* PyObject.ob_type: the same in every version ember knows. */
#define UW_PY_OB_TYPE 8

/* The search of an interpreter's threads for the sampled one, across UW_LOOP steps. */
struct uw_py_threads {
	struct uw_env *env;
	__u64 ts; /* the thread state looked at; 0: none left */
	__u64 off_tid, off_next;
	__u32 tid; /* the sampled thread's */
	__u32 found;
};

static long uw_py_thread_step(__u32 i, void *arg)
{
	struct uw_py_threads *q = arg;
	__u64 tid = 0, next = 0;

	(void)i;
	if (!q->ts || !uw_env_read_mem(q->env, &tid, sizeof(tid), q->ts + q->off_tid))
		return 1;
	if (tid == q->tid) {
		q->found = 1;
		return 1;
	}
	if (!uw_env_read_mem(q->env, &next, sizeof(next), q->ts + q->off_next) || next == q->ts)
		next = 0;
	q->ts = next;
	return 0;
}

/* The innermost interpreter frame of thread tid, or 0. */
static __always_inline __u64 uw_py_thread_frame(const struct ember_rt_proc *rt, struct uw_env *env,
						__u32 tid)
{
	struct uw_py_threads q = {.env = env,
				  .tid = tid,
				  .off_tid = rt->off[EMBER_PY_TSTATE_TID],
				  .off_next = rt->off[EMBER_PY_TSTATE_NEXT]};
	struct ember_py_ts_memo *memo = uw_env_py_ts_memo(env, tid, false);
	__u64 interp = 0, at, frame = 0;

	if (!rt->addr[0])
		return 0;
	/* the state found last time, if it is still this thread's: one read (into frame's room) */
	if (memo && memo->runtime == rt->addr[0] && memo->ts) {
		q.ts = memo->ts;
		q.found = uw_env_read_mem(env, &frame, sizeof(frame), q.ts + q.off_tid) &&
			  frame == tid;
	}
	if (!q.found) {
		if (!uw_env_read_mem(env, &interp, sizeof(interp),
				     rt->addr[0] + rt->off[EMBER_PY_RUNTIME_INTERP_HEAD]) ||
		    !interp ||
		    !uw_env_read_mem(env, &q.ts, sizeof(q.ts),
				     interp + rt->off[EMBER_PY_INTERP_THREADS_HEAD]))
			return 0;
		/* bound: the threads of one interpreter looked at */
		UW_LOOP(UW_PY_THREADS_MAX, uw_py_thread_step, &q);
		if (!q.found)
			return 0;
		/*
		 * asked again, made now that a state was found (a thread that never
		 * runs Python gets none): a pointer kept across the search would take
		 * room on the stack
		 */
		memo = uw_env_py_ts_memo(env, tid, true);
		if (memo) {
			memo->runtime = rt->addr[0];
			memo->ts = q.ts;
		}
	}
	at = q.ts;
	if (rt->off[EMBER_PY_TSTATE_CFRAME] != EMBER_RT_OFF_NONE &&
	    (!uw_env_read_mem(env, &at, sizeof(at), q.ts + rt->off[EMBER_PY_TSTATE_CFRAME]) || !at))
		return 0;
	if (!uw_env_read_mem(env, &frame, sizeof(frame), at + rt->off[EMBER_PY_FRAME_CURRENT]))
		return 0;
	return frame;
}

/*
 * The word holding byte off of the frame at byte at of the window
 * (uw_py_read_frame()), read in place: the offsets are the version's, known
 * only at run time; the mask is the bound the verifier sees, and changes
 * nothing (at and the word's offset are 8-aligned, their sum below the
 * window's end). A field past the frame's record reads 0.
 */
static __always_inline __u64 uw_py_word(const struct uw_env *env, __u32 at, __u32 off)
{
	if (off >= UW_PY_FRAME_BYTES)
		return 0;
	return *(const __u64 *)(env->rt_buf + ((at + (off & ~7u)) & (EMBER_RT_WINDOW - 8)));
}

static __always_inline __u32 uw_py_byte(const struct uw_env *env, __u32 at, __u32 off)
{
	return (uw_py_word(env, at, off) >> ((off & 7) * 8)) & 0xff;
}

/*
 * Brings the record of the interpreter frame at addr (its UW_PY_FRAME_WORDS
 * words) into the window of the runtime's memory (env->rt_buf), at byte *at
 * of it: a frame's callers lie just below it in the thread's data stack, so
 * that one read, ending at this frame's record, holds several of theirs. The
 * window starts no lower than addr's page, mapped if the frame is; its words
 * are read aligned (the window's start and addr are).
 */
static __always_inline bool uw_py_read_frame(struct uw_env *env, __u64 addr, __u32 *at)
{
	__u64 end = addr + UW_PY_FRAME_BYTES, lo, len, off;

	/* the interpreter's frames are 8-byte aligned: another address is garbage */
	if (addr & 7)
		return false;
	if (addr < env->rt_base || end > env->rt_base + env->rt_len) {
		lo = addr & ~4095ull;
		len = end - lo;
		if (len > EMBER_RT_WINDOW) {
			len = EMBER_RT_WINDOW;
			lo = end - len;
		}
		env->rt_len = 0;
		/* the mask: a bound the verifier sees on the register the read takes */
		if (!uw_env_read_mem(env, env->rt_buf, len & (EMBER_RT_WINDOW * 2 - 1), lo))
			return false;
		env->rt_base = lo;
		env->rt_len = len;
	}
	off = addr - env->rt_base;
	if (off > EMBER_RT_WINDOW - UW_PY_FRAME_BYTES)
		return false;
	*at = (__u32)off;
	return true;
}

/*
 * The code memo's slot for code object code of the walked process (a hash of
 * its address), or NULL: none kept, or no process told.
 */
static __always_inline struct ember_py_code_memo *uw_py_code_memo(struct uw_env *env, __u64 code)
{
	if (!(env->rt[UW_PY_WHO] & 0xffffffff))
		return NULL;
	return uw_env_py_code_memo(env, ember_rt_memo_slot(code, EMBER_PY_CODE_MEMO_BITS));
}

/*
 * Whether code is a code object (its type's): a frame's f_code, checked once
 * for a run of frames of one function (a recursion), remembered in the
 * scratch, and once while it stays in the code memo's slot for it.
 */
static __always_inline bool uw_py_code(struct uw_env *env, const struct ember_rt_proc *info,
				       __u64 code)
{
	struct ember_py_code_memo *m;
	__u64 who = env->rt[UW_PY_WHO], type = 0;

	if (!code)
		return false;
	if (code == env->rt[UW_PY_CODE_OK])
		return true;
	m = uw_py_code_memo(env, code);
	if (m && m->code == code && m->tgid == (__u32)(who >> 32) && m->gen == (__u32)who) {
		env->rt[UW_PY_CODE_OK] = code;
		return true;
	}
	if (!uw_env_read_mem(env, &type, sizeof(type), code + UW_PY_OB_TYPE) ||
	    type != info->addr[1])
		return false;
	env->rt[UW_PY_CODE_OK] = code;
	if (m) {
		m->code = code;
		m->tgid = (__u32)(who >> 32);
		m->gen = (__u32)who;
	}
	return true;
}

/* The end of the frames of one run of the eval loop: what its native frame gets. */
static __always_inline __u32 uw_py_run_over(struct uw_rt *rt)
{
	__u32 had = rt->in_run;

	rt->in_run = 0;
	return had ? UW_RT_DONE : UW_RT_NATIVE;
}

/*
 * Whether next closes a loop of the frame chain (Brent's algorithm: the
 * frame last saved is compared with each next one, saved again after 1, 2,
 * 4, ... steps): a garbage or moving chain ends, counted, long before the
 * depth limit, and no bogus frame is repeated.
 */
static __always_inline bool uw_py_cycle(struct uw_env *env, __u64 next)
{
	__u64 steps = env->rt[UW_PY_POWER_STEPS] & 0xffffffff;
	__u64 power = env->rt[UW_PY_POWER_STEPS] >> 32;

	if (next == env->rt[UW_PY_TORTOISE])
		return true;
	if (++steps >= power) {
		env->rt[UW_PY_TORTOISE] = next;
		power = power ? power * 2 : 1;
		steps = 0;
	}
	env->rt[UW_PY_POWER_STEPS] = power << 32 | steps;
	return false;
}

/* The frame after the one read: prev, or 0 where the chain loops (counted). */
static __always_inline __u64 uw_py_prev(struct uw_rt *rt, struct uw_env *env, __u64 prev)
{
	if (prev && uw_py_cycle(env, prev)) {
		rt->miss = rt->miss ? rt->miss : UW_RT_BAD_FRAME;
		return 0;
	}
	return prev;
}

/*
 * The next Python frame of the native eval frame at hand, into rt->word.
 * 3.11 marks the first frame an eval loop ran with is_entry; 3.12 on put a
 * frame owned by the C stack below it, which is not the program's.
 */
static __always_inline __u32 uw_py_next(struct uw_rt *rt, const struct ember_rt_proc *info,
					struct uw_env *env)
{
	__u64 code, instr, start, idx = 0, prev;
	__u32 entry = 0, at = 0;

	if (!rt->cur || !env)
		return uw_py_run_over(rt);
	if (!uw_py_read_frame(env, rt->cur, &at)) {
		rt->cur = 0;
		rt->miss = rt->miss ? rt->miss : UW_RT_BAD_FRAME;
		return uw_py_run_over(rt);
	}
	prev = uw_py_word(env, at, info->off[EMBER_PY_FRAME_PREVIOUS]);
	if (info->off[EMBER_PY_FRAME_OWNER] != EMBER_RT_OFF_NONE &&
	    info->off[EMBER_PY_FRAME_IS_ENTRY] == EMBER_RT_OFF_NONE &&
	    uw_py_byte(env, at, info->off[EMBER_PY_FRAME_OWNER]) == UW_PY_OWNED_BY_CSTACK) {
		/* the entry of this eval loop's run: the frames past it are an outer run's */
		rt->cur = uw_py_prev(rt, env, prev);
		return uw_py_run_over(rt);
	}
	code = uw_py_word(env, at, info->off[EMBER_PY_FRAME_CODE]);
	if (!uw_py_code(env, info, code)) {
		/* not a code object: garbage, or a frame being torn down */
		rt->cur = 0;
		rt->miss = rt->miss ? rt->miss : UW_RT_BAD_FRAME;
		return uw_py_run_over(rt);
	}
	instr = uw_py_word(env, at, info->off[EMBER_PY_FRAME_INSTR]);
	start = code + info->off[EMBER_PY_CODE_ADAPTIVE];
	if (instr > start)
		idx = (instr - start) / 2; /* code units of 2 bytes; before the first: 0 */
	if (idx > EMBER_RT_AUX_MAX)
		idx = EMBER_RT_AUX_MAX; /* the host names the function, without its line */
	rt->word = EMBER_RT_WORD(EMBER_RT_PYTHON, idx, code);
	if (info->off[EMBER_PY_FRAME_IS_ENTRY] != EMBER_RT_OFF_NONE)
		entry = uw_py_byte(env, at, info->off[EMBER_PY_FRAME_IS_ENTRY]);
	rt->cur = uw_py_prev(rt, env, prev);
	rt->frames++;
	if (entry) {
		rt->in_run = 0;
		return UW_RT_LAST;
	}
	rt->in_run++;
	return UW_RT_MORE;
}

/* Whether the code at f lies in one of the runtime's ranges (its eval loop, for CPython). */
static __always_inline bool uw_rt_text(const struct uw_frame *f, const struct ember_rt_proc *info)
{
	__u64 at = uw_frame_pc(f);

	return (at >= info->text[0] && at < info->text[1]) ||
	       (at >= info->text[2] && at < info->text[3]);
}

/*
 * Finds thread tid's innermost interpreter frame: the chain's walk starts
 * there. who: the walked process (UW_PY_WHO), or 0.
 */
static __always_inline void uw_py_start(struct uw_rt *rt, const struct ember_rt_proc *info,
					struct uw_env *env, __u32 tid, __u64 who)
{
	rt->started = 1;
	rt->cur = uw_py_thread_frame(info, env, tid);
	if (!rt->cur)
		rt->miss = UW_RT_NO_THREAD;
	if (env) { /* the cycle check starts at the innermost frame; no memory read yet */
		env->rt[UW_PY_TORTOISE] = rt->cur;
		env->rt[UW_PY_POWER_STEPS] = 1ull << 32;
		env->rt[UW_PY_CODE_OK] = 0;
		env->rt[UW_PY_WHO] = who;
		env->rt_len = 0;
	}
}

/*
 * The next Python frame of a chain read at the sample (a deferred sample's
 * trace, uw_py_trace()) in place of the live chain, which moved on: the same
 * answers uw_py_next() gave when the trace was read. rt->cur: the index of
 * the next word.
 */
static __always_inline __u32 uw_py_replay(struct uw_rt *rt, const struct ember_rt_trace *t)
{
	__u32 i = (__u32)rt->cur;

	if (!rt->started) {
		rt->started = 1;
		rt->miss = t->miss;
		i = 0;
	}
	if (i >= t->n || i >= EMBER_RT_TRACE_MAX)
		return uw_py_run_over(rt);
	rt->cur = i + 1;
	rt->word = t->words[i];
	rt->frames++;
	if (t->last[i / 64] >> (i % 64) & 1) {
		rt->in_run = 0;
		return UW_RT_LAST;
	}
	rt->in_run++;
	return UW_RT_MORE;
}

/*
 * What to store for the native frame at f of a process whose runtime is info:
 * enum uw_rt_say, the runtime frame (if any) in rt->word. A global subprogram
 * in BPF, verified once; its pointers may be NULL to the verifier.
 */
UW_GLOBAL int uw_rt_frame(struct uw_frame *f, struct uw_rt *rt,
			  const struct ember_unwind_proc *proc, struct uw_env *env)
{
	const struct ember_rt_proc *info;
	const struct ember_rt_trace *trace;

	if (!f || !rt || !proc || !env)
		return UW_RT_NATIVE;
	info = &proc->rt;
	if (info->kind == EMBER_RT_V8) {
		/* V8 keeps frame pointers: one word for its frame, then the native step */
		if (!uw_v8_frame(f, proc, env, &rt->word))
			return UW_RT_NATIVE;
		rt->frames++;
		return UW_RT_LAST;
	}
	if (info->kind != EMBER_RT_PYTHON)
		return UW_RT_NATIVE;
	if (!rt->in_run && !uw_rt_text(f, info))
		return UW_RT_NATIVE;
	if (info->flags & EMBER_RT_F_UNSUPPORTED) {
		rt->word = EMBER_RT_WORD(EMBER_RT_PYTHON, (info->version >> 8) & 0xffff, 0);
		rt->unsupported++;
		return UW_RT_LAST;
	}
	trace = uw_env_rt_trace(env); /* the host's walk of a sample whose chain was read then */
	if (trace)
		return uw_py_replay(rt, trace);
	if (!rt->started)
		uw_py_start(rt, info, env, f->tid, (__u64)f->tgid << 32 | f->gen);
	return uw_py_next(rt, info, env);
}

/*
 * The next frame of a chain being read into trace t (uw_py_trace()): 1 once
 * it is over. A global subprogram in BPF, verified once (not once per step
 * of the loop); its pointers may be NULL to the verifier.
 */
UW_GLOBAL int uw_py_trace_next(struct uw_rt *rt, const struct ember_rt_proc *info,
			       struct uw_env *env, struct ember_rt_trace *t)
{
	__u32 n, say;

	if (!rt || !info || !t)
		return 1;
	n = t->n;
	if (n >= EMBER_RT_TRACE_MAX)
		return 1;
	say = uw_py_next(rt, info, env);
	if (say == UW_RT_MORE || say == UW_RT_LAST) {
		t->words[n & (EMBER_RT_TRACE_MAX - 1)] = rt->word;
		if (say == UW_RT_LAST)
			t->last[(n / 64) & (EMBER_RT_TRACE_MAX / 64 - 1)] |= 1ull << (n % 64);
		t->n = n + 1;
	} else if (say == UW_RT_DONE && n) { /* a run ended past its last frame (3.12+) */
		n--;
		t->last[(n / 64) & (EMBER_RT_TRACE_MAX / 64 - 1)] |= 1ull << (n % 64);
	}
	return !rt->cur;
}

/*
 * uw_py_start() for uw_py_trace(): a global subprogram in BPF, whose stack
 * (the thread search's) is not the trace's too, which the programs' deepest
 * calls could not hold.
 */
UW_GLOBAL int uw_py_begin(struct uw_rt *rt, const struct ember_rt_proc *info, struct uw_env *env,
			  __u32 tid)
{
	if (!rt || !info)
		return 0;
	uw_py_start(rt, info, env, tid, 0); /* a process not loaded: no generation to keep under */
	return rt->cur != 0;
}

/*
 * Reads CPython's frame chain of thread tid into t, as the walk would give it
 * native frame by native frame (uw_py_replay() gives it back): for a sample
 * walked later, once the chain has moved on. info: a supported version's. A
 * global subprogram in BPF, verified once; its pointers may be NULL to the
 * verifier. Returns the frames read.
 */
UW_GLOBAL int uw_py_trace(const struct ember_rt_proc *info, struct uw_env *env, __u32 tid,
			  struct ember_rt_trace *t)
{
	struct uw_rt rt = {};

	if (!info || !env || !t)
		return 0;
	t->kind = EMBER_RT_PYTHON;
	t->n = 0;
	t->last[0] = 0;
	t->last[1] = 0;
	uw_py_begin(&rt, info, env, tid);
	/*
	 * bound: the frames a trace holds, and one more step that finds the
	 * chain's end; a plain loop, each step a call of a subprogram verified once
	 */
	for (__u32 i = 0; rt.cur && i < EMBER_RT_TRACE_MAX + 1; i++)
		if (uw_py_trace_next(&rt, info, env, t))
			break;
	t->miss = rt.miss;
	return t->n;
}

#endif /* EMBER_UWALK_RT_BPF_H */
