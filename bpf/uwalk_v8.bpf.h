/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * V8's JavaScript frames on the one walk (bpf/uwalk.bpf.h): V8 keeps rbp
 * frame chains in its JIT code and builtins, and every JavaScript frame holds
 * its JSFunction below its frame pointer. Where the frame at (ip, bp) is one,
 * a word naming its function (include/ember/runtime.h: a SharedFunctionInfo
 * and bytecode offset, or an optimised Code and pc offset) replaces the
 * native frame's address; the native step goes on as for any frame. The
 * layout comes from the binary's v8dbg_* symbols (lib/symbols/v8.c); every
 * object is type-checked, and one that is not what it should be leaves the
 * native address in place. Names are read on the host (v8_name()).
 */
#ifndef EMBER_UWALK_V8_BPF_H
#define EMBER_UWALK_V8_BPF_H

#include "ember/runtime.h"

/*
 * The words a V8 frame's reads go through, one after the other (a frame's
 * slots, a Code's fields, the words above sp), and the search of the
 * mappings between: one room, since the walk's deepest calls leave the BPF
 * stack no more.
 */
#define UW_V8_ROOM_WORDS 3
union uw_v8_room {
	__u64 w[UW_V8_ROOM_WORDS];
	struct uw_map_search q;
};

/* A tagged pointer to a heap object: low bits 01 (no pointer compression). */
#define UW_V8_HEAP_TAG 1
#define UW_V8_HEAP_TAG_MASK 3
/* A Smi: low bit 0, its value in the upper half. */
#define UW_V8_SMI_SHIFT 32

static __always_inline bool uw_v8_is_obj(__u64 t)
{
	return (t & UW_V8_HEAP_TAG_MASK) == UW_V8_HEAP_TAG && t > 4096;
}

/* The instance type map (a tagged Map) gives its objects, or 0. */
static __always_inline __u16 uw_v8_map_type(const struct ember_rt_proc *rt, struct uw_env *env,
					    __u64 map)
{
	__u16 type = 0;

	if (!uw_v8_is_obj(map) ||
	    !uw_env_read_mem(env, &type, sizeof(type), map - 1 + rt->off[EMBER_V8_MAP_TYPE]))
		return 0;
	return type;
}

/* The instance type of tagged object t, or 0 (no type is 0... but a string's: never asked). */
static __always_inline __u16 uw_v8_type(const struct ember_rt_proc *rt, struct uw_env *env, __u64 t)
{
	__u64 map = 0;

	if (!uw_v8_is_obj(t) || !uw_env_read_mem(env, &map, sizeof(map), t - 1))
		return 0;
	return uw_v8_map_type(rt, env, map);
}

/*
 * Reads n words of the stack at addr into w: a frame's slots, through the
 * walk's window of the stack (the native step reads the frame's next).
 */
static __always_inline bool uw_v8_stack(struct uw_env *env, __u64 *w, int n, __u64 addr)
{
	for (int i = 0; i < n; i++)
		if (!uw_env_read(env, &w[i], addr + 8 * i))
			return false;
	return true;
}

/*
 * The word of an interpreted frame of function m (the interpreter runs in
 * the embedded builtins): the function and the bytecode offset V8 keeps in
 * the frame (a Smi: the offset from the BytecodeArray's tagged address), the
 * BytecodeArray in the slot above it (its type checked once, then
 * remembered). Other frames of the builtins are the builtins' own, named as
 * native code.
 */
static __always_inline bool uw_v8_interpreted(const struct uw_frame *f,
					      const struct ember_rt_proc *rt, struct uw_env *env,
					      struct ember_v8_memo *m, __u64 *word,
					      union uw_v8_room *room)
{
	__u64 *slot = room->w; /* the bytecode offset, the BytecodeArray */
	__s64 bc;

	if (!uw_v8_stack(env, slot, 2, f->bp - rt->off[EMBER_V8_FP_BYTECODE_OFFSET]) ||
	    (slot[0] & 1))
		return false;
	if (!m->bytecode || slot[1] != m->bytecode) {
		if (uw_v8_type(rt, env, slot[1]) != rt->off[EMBER_V8_TYPE_BYTECODE])
			return false;
		m->bytecode = slot[1];
	}
	bc = (__s64)slot[0] >> UW_V8_SMI_SHIFT;
	bc -= rt->off[EMBER_V8_BYTECODE_DATA] - UW_V8_HEAP_TAG;
	if (bc < 0)
		bc = 0; /* the function's entry (kFunctionEntryBytecodeOffset) */
	if (bc > (__s64)EMBER_RT_AUX_MAX)
		bc = EMBER_RT_AUX_MAX;
	*word = EMBER_RT_WORD(EMBER_RT_V8, (__u64)bc, m->sfi - 1);
	return true;
}

/*
 * V8 14.6: the isolate thread tid runs, from its thread pointer
 * (EMBER_V8_ISOLATE_TLS); 0 where it cannot be read (the walk of a copy, a
 * thread that entered none), and the group's first isolate stands for it.
 */
static __always_inline __u64 uw_v8_thread_isolate(const struct ember_rt_proc *rt,
						  struct uw_env *env, __u32 tid)
{
	__u64 tp = rt->off[EMBER_V8_ISOLATE_TLS] != EMBER_RT_OFF_NONE ? uw_env_tp(env, tid) : 0;
	__u64 isolate = 0;

	if (tp <= rt->off[EMBER_V8_ISOLATE_TLS] ||
	    !uw_env_read_mem(env, &isolate, sizeof(isolate), tp - rt->off[EMBER_V8_ISOLATE_TLS]))
		return 0;
	return isolate;
}

/*
 * The dispatch table of V8 13.6 on: its isolate group's (14.6: the table of
 * thread tid's isolate, else of the group's first); its place is a constant
 * of the version. 0 when it cannot be reached.
 */
static __always_inline __u64 uw_v8_table(const struct ember_rt_proc *rt, struct uw_env *env,
					 __u32 tid)
{
	__u64 group = 0, table = 0;

	if (rt->off[EMBER_V8_ISOLATE_TABLE] != EMBER_RT_OFF_NONE)
		table = uw_v8_thread_isolate(rt, env, tid);
	if (!rt->addr[0] ||
	    (!table &&
	     (!uw_env_read_mem(env, &group, sizeof(group), rt->addr[0]) || !group ||
	      !uw_env_read_mem(env, &table, sizeof(table), group + rt->off[EMBER_V8_GROUP_TABLE]) ||
	      !table)) ||
	    /* 14.6: that was an isolate, which holds its own table */
	    (rt->off[EMBER_V8_ISOLATE_TABLE] != EMBER_RT_OFF_NONE &&
	     (!uw_env_read_mem(env, &table, sizeof(table),
			       table + rt->off[EMBER_V8_ISOLATE_TABLE]) ||
	      !table)))
		return 0;
	return table;
}

/* The Code dispatch handle m->code_at's entry of m->table holds; 0 when unreadable. */
static __always_inline __u64 uw_v8_entry(const struct ember_v8_memo *m, struct uw_env *env)
{
	__u64 entry = 0;

	if (!uw_env_read_mem(
		    env, &entry, sizeof(entry),
		    m->table + (m->code_at >> EMBER_V8_DISPATCH_SHIFT) * EMBER_V8_DISPATCH_ENTRY +
			    8))
		return 0;
	return entry >> EMBER_V8_DISPATCH_CODE_SHIFT | UW_V8_HEAP_TAG;
}

/* The u32 at byte i (4-aligned, below 24) of w: Code's fields read at once. */
static __always_inline __u32 uw_v8_u32(const __u32 *w, __u16 i)
{
	switch (i) {
	case 0:
		return w[0];
	case 4:
		return w[1];
	case 8:
		return w[2];
	case 12:
		return w[3];
	case 16:
		return w[4];
	default:
		return w[5];
	}
}

/*
 * Where m's function's code field, or (V8 13.6 on) its dispatch handle,
 * lies in its header (v8_detect()'s head_ok() checks both fit).
 */
static __always_inline __u16 uw_v8_code_at(const struct ember_rt_proc *rt)
{
	if (rt->off[EMBER_V8_JSFUNC_CODE] != EMBER_RT_OFF_NONE)
		return rt->off[EMBER_V8_JSFUNC_CODE];
	if (rt->off[EMBER_V8_JSFUNC_DISPATCH] != EMBER_RT_OFF_NONE)
		return rt->off[EMBER_V8_JSFUNC_DISPATCH];
	return 0; /* neither: its code is never reached (the map's word stands for it) */
}

/* Whether memo slot m holds function func of f's process (as this generation of its entry). */
static __always_inline bool uw_v8_memo_holds(const struct ember_v8_memo *m,
					     const struct uw_frame *f, __u64 func)
{
	return m->func == func && m->tgid == f->tgid && m->gen == f->gen;
}

/*
 * Reads JSFunction func's header (map to code field) at once into m, the
 * memo's slot for it, and checks it against what m keeps: its map (whose
 * type was checked when it was kept) and its SharedFunctionInfo; what
 * changed is taken anew, its Code forgotten. False when func is no
 * JSFunction.
 */
static __always_inline bool uw_v8_memo_fn(struct ember_v8_memo *m, const struct uw_frame *f,
					  const struct ember_rt_proc *rt, struct uw_env *env,
					  __u64 func)
{
	__u16 at_sfi = rt->off[EMBER_V8_JSFUNC_SHARED], at_code = uw_v8_code_at(rt);
	__u64 sfi, code_at, walk = uw_env_walk(env);
	__u16 type;

	/* checked in this walk already (a recursion): it has not changed in the microseconds since */
	if (walk && m->walk == walk && uw_v8_memo_holds(m, f, func))
		return true;
	m->walk = 0;
	/*
	 * 64 bytes at once (a size the verifier sees whole); where they run past
	 * what can be read (a function at the end of the heap's readable part),
	 * the three words it needs one by one
	 */
	if (!uw_env_read_mem(env, m->head, sizeof(m->head), func - 1) &&
	    (!uw_env_read_mem(env, &m->head[0], sizeof(m->head[0]), func - 1) ||
	     !uw_env_read_mem(env, &m->head[(at_sfi / 8) & (EMBER_V8_HEAD_WORDS - 1)],
			      sizeof(m->head[0]), func - 1 + (at_sfi & ~7)) ||
	     !uw_env_read_mem(env, &m->head[(at_code / 8) & (EMBER_V8_HEAD_WORDS - 1)],
			      sizeof(m->head[0]), func - 1 + (at_code & ~7))))
		return false;
	sfi = m->head[(at_sfi / 8) & (EMBER_V8_HEAD_WORDS - 1)];
	code_at = rt->off[EMBER_V8_JSFUNC_CODE] != EMBER_RT_OFF_NONE ?
			  m->head[(at_code / 8) & (EMBER_V8_HEAD_WORDS - 1)] :
			  ((const __u32 *)m->head)[(at_code / 4) & (2 * EMBER_V8_HEAD_WORDS - 1)];
	if (!uw_v8_memo_holds(m, f, func) || m->map != m->head[0]) {
		m->func = 0;
		type = uw_v8_map_type(rt, env, m->head[0]);
		if (type < rt->off[EMBER_V8_TYPE_JSFUNC_FIRST] ||
		    type > rt->off[EMBER_V8_TYPE_JSFUNC_LAST])
			return false;
		m->func = func;
		m->tgid = f->tgid;
		m->gen = f->gen;
		m->map = m->head[0];
		m->sfi = 0;
		m->table = 0;
	}
	if (!uw_v8_is_obj(sfi))
		return false;
	if (m->sfi != sfi) {
		m->sfi = sfi;
		m->bytecode = 0;
		m->code = 0;
	}
	if (m->code_at != code_at) {
		m->code_at = code_at;
		m->code = 0;
	}
	/* a code field is checked by now; a dispatch entry once read (uw_v8_memo_code()) */
	if (rt->off[EMBER_V8_JSFUNC_CODE] != EMBER_RT_OFF_NONE)
		m->walk = walk;
	return true;
}

/*
 * The Code m's function runs, and its instructions, into m: kept while its
 * code field holds the same (V8 13.6 on: while its dispatch entry does,
 * one read), else read, the instructions' address (V8 11.1.204 on), flags
 * and size within the 24 bytes from the address, read at once (v8_detect()'s
 * code_ok() checks); before, the instructions follow Code's header inline,
 * their size 8 before the flags. False when it cannot be reached.
 */
static __always_inline bool uw_v8_memo_code(struct ember_v8_memo *m, const struct uw_frame *f,
					    const struct ember_rt_proc *rt, struct uw_env *env,
					    __u64 *w /* 3 words of room */)
{
	__u32 kind_bits = rt->off[EMBER_V8_CODE_KIND], flags;
	__u16 at_flags = rt->off[EMBER_V8_CODE_FLAGS], at_size = rt->off[EMBER_V8_CODE_SIZE];
	bool inline_code = rt->off[EMBER_V8_CODE_HEADER] != EMBER_RT_OFF_NONE;
	__u16 base = inline_code ? at_flags - 8 : rt->off[EMBER_V8_CODE_START];
	__u64 code = m->code_at, walk = uw_env_walk(env);

	if (rt->off[EMBER_V8_JSFUNC_CODE] == EMBER_RT_OFF_NONE) {
		if (rt->off[EMBER_V8_JSFUNC_DISPATCH] == EMBER_RT_OFF_NONE)
			return false;
		if (m->code && walk && m->walk == walk)
			return true; /* its entry read in this walk already */
		if (!m->table)
			m->table = uw_v8_table(rt, env, f->tid);
		code = m->table ? uw_v8_entry(m, env) : 0;
		if (code == m->code && code) {
			m->walk = walk;
			return true;
		}
		m->code = 0;
		if (uw_v8_type(rt, env, code) != rt->off[EMBER_V8_TYPE_CODE]) {
			m->table = 0; /* found anew next time */
			return false;
		}
	} else if (code == m->code) {
		return true;
	}
	if (!uw_v8_is_obj(code) || at_flags < base || at_size < base ||
	    !uw_env_read_mem(env, w, UW_V8_ROOM_WORDS * sizeof(*w), code - 1 + base))
		return false;
	m->start = inline_code ? code - 1 + rt->off[EMBER_V8_CODE_HEADER] : w[0];
	flags = uw_v8_u32((const __u32 *)w, at_flags - base);
	m->size = uw_v8_u32((const __u32 *)w, at_size - base);
	m->kind = (flags >> ((kind_bits >> 8) & 31)) & (kind_bits & 0xff);
	m->code = code;
	if (rt->off[EMBER_V8_JSFUNC_CODE] == EMBER_RT_OFF_NONE)
		m->walk = walk;
	return true;
}

/*
 * Where frame f of code [start, start + size) runs when its ip lies
 * elsewhere: in a builtin that builds no frame (baseline and optimised code
 * call such builtins for arithmetic and property access), whose return into
 * the code lies in the first words above its sp (the OpenTelemetry profiler
 * looks there too); 0 when none does.
 */
#define UW_V8_RET_SCAN UW_V8_ROOM_WORDS
static __always_inline __u64 uw_v8_ret(const struct uw_frame *f, struct uw_env *env, __u64 start,
				       __u32 size, __u64 *w /* UW_V8_RET_SCAN words of room */)
{
	if (!uw_v8_stack(env, w, UW_V8_RET_SCAN, f->sp))
		return 0;
	for (int i = 0; i < UW_V8_RET_SCAN; i++)
		if (w[i] > start && w[i] - start < size)
			return w[i];
	return 0;
}

/*
 * The word of a frame of function m outside the binary's builtins: its
 * optimised Code and the pc's offset in it, when the pc lies there (baseline
 * code, which has no way back to its function: the function and the offset);
 * else (code entered on the stack from a loop, or replaced since) the
 * JSFunction with the pc's low bits (EMBER_RT_WORD_V8_OSR). True when the
 * frame may be interpreted: the function's code is a builtin (kinds below
 * BASELINE: an interpreted function's is the interpreter's entry, which V8
 * 12 runs from a copy of the builtins beside its JIT code, short builtin
 * calls, outside text[0..1]) or was not reached; the caller tells such
 * frames by their slots.
 */
static __always_inline bool uw_v8_jit(const struct uw_frame *f,
				      const struct ember_unwind_proc *proc, struct uw_env *env,
				      struct ember_v8_memo *m, __u64 *word, union uw_v8_room *room)
{
	const struct ember_rt_proc *rt = &proc->rt;
	__u64 start, ip = f->ip;
	__u32 size;

	*word = EMBER_RT_WORD(EMBER_RT_V8, EMBER_RT_AUX_MAX, m->sfi - 1);
	if (!uw_v8_memo_code(m, f, rt, env, room->w) || m->kind < rt->off[EMBER_V8_KIND_BASELINE])
		return true;
	start = m->start;
	size = m->size;
	/*
	 * a pc in a mapping (the binary's builtins, or their copy beside the JIT
	 * code): a builtin that built no frame, its return into the code found
	 * above sp; in no mapping, JIT code: code entered on the stack (OSR)
	 */
	if (ip < start || ip - start >= size)
		ip = uw_find_map_in(proc, f->ip, &room->q) ?
			     uw_v8_ret(f, env, start, size, room->w) :
			     0;
	if (!ip) { /* code the function runs from its loop (OSR), found on the host */
		*word = EMBER_RT_WORD(EMBER_RT_WORD_V8_OSR, f->ip & EMBER_RT_AUX_MAX, m->func - 1);
		return false;
	}
	if (ip - start >= EMBER_RT_AUX_MAX)
		return false;
	if (m->kind == rt->off[EMBER_V8_KIND_BASELINE])
		*word = EMBER_RT_WORD(EMBER_RT_WORD_V8_BASELINE, ip - start, m->sfi - 1);
	else
		*word = EMBER_RT_WORD(EMBER_RT_V8, ip - start, m->code - 1);
	return false;
}

/*
 * Whether frame f of function func runs what m keeps of it, so that no word
 * of the heap need be read: its pc in the Code kept (its JIT code, or the
 * interpreter's entry), or, in the binary's builtins, an interpreted frame
 * (a Smi bytecode offset: a baseline frame keeps its feedback vector there)
 * of the BytecodeArray kept. A live frame holds its function and its code,
 * and a Code or BytecodeArray is one function's; what this cannot see is
 * another function at func's address running code made where the kept Code
 * was, both moved or freed since and others made there. Taken as checked
 * in this walk (a recursion's frames, and V8 13.6's dispatch entry, read no
 * more).
 */
static __always_inline bool uw_v8_runs_kept(struct ember_v8_memo *m, const struct uw_frame *f,
					    const struct ember_rt_proc *rt, struct uw_env *env,
					    __u64 func, __u64 *slot /* 2 words of room */)
{
	if (!uw_v8_memo_holds(m, f, func))
		return false;
	if (!(m->code && f->ip >= m->start && f->ip - m->start < m->size) &&
	    (!m->bytecode || f->ip < rt->text[0] || f->ip >= rt->text[1] ||
	     !uw_v8_stack(env, slot, 2, f->bp - rt->off[EMBER_V8_FP_BYTECODE_OFFSET]) ||
	     (slot[0] & 1) || slot[1] != m->bytecode))
		return false;
	m->walk = uw_env_walk(env);
	return true;
}

/*
 * The memo's slot for function func of f's process: of the two a hash of its
 * address gives, the one holding it, else the one this walk has not used (so
 * that two functions of one stack do not take turns), else the first.
 */
static __always_inline struct ember_v8_memo *uw_v8_memo_of(struct uw_env *env,
							   const struct uw_frame *f, __u64 func)
{
	__u32 h = ember_rt_memo_slot(func, EMBER_V8_MEMO_BITS);
	struct ember_v8_memo *a = uw_env_v8_memo(env, h), *b;
	__u64 walk = uw_env_walk(env);

	if (!a || uw_v8_memo_holds(a, f, func))
		return a;
	b = uw_env_v8_memo(env, h ^ 1);
	if (!b || b == a)
		return a;
	if (uw_v8_memo_holds(b, f, func))
		return b;
	return walk && a->walk == walk ? b : a;
}

/*
 * Whether the frame at (f->ip, f->bp) is a JavaScript frame of V8 rt, and
 * then its word. A typed frame (entry, exit, stub, builtin frames) holds a
 * Smi marker where a JavaScript frame holds its context, the JSFunction in
 * the slot below (v8_detect() checks); the node binary's own C++ code
 * (rt->text[2..3], but for the builtins in text[0..1]) holds none.
 */
static __always_inline bool uw_v8_frame(const struct uw_frame *f,
					const struct ember_unwind_proc *proc, struct uw_env *env,
					__u64 *word)
{
	const struct ember_rt_proc *rt = &proc->rt;
	union uw_v8_room room = {};
	struct ember_v8_memo *m;
	bool builtins = f->ip >= rt->text[0] && f->ip < rt->text[1];
	__u64 func;

	if (rt->flags & EMBER_RT_F_UNSUPPORTED)
		return false;
	if (!builtins && f->ip >= rt->text[2] && f->ip < rt->text[3])
		return false;
	/* the JSFunction, the context */
	if (f->bp < f->sp || !uw_v8_stack(env, room.w, 2, f->bp - rt->off[EMBER_V8_FP_FUNCTION]) ||
	    !uw_v8_is_obj(room.w[1]) || !uw_v8_is_obj(room.w[0]))
		return false;
	func = room.w[0];
	m = uw_v8_memo_of(env, f, func);
	if (!m ||
	    (!uw_v8_runs_kept(m, f, rt, env, func, room.w) && !uw_v8_memo_fn(m, f, rt, env, func)))
		return false;
	/*
	 * In the binary's builtins, a frame that is not interpreted is a
	 * builtin's own (named as native code), but for a builtin that built no
	 * frame, called from the function's code: the function's word, at the
	 * return there (as where the builtins run from a copy, outside them);
	 * elsewhere, a function whose code is a builtin but whose frame is not
	 * interpreted keeps its own word.
	 */
	if (builtins && uw_v8_interpreted(f, rt, env, m, word, &room))
		return true;
	if (!uw_v8_jit(f, proc, env, m, word, &room))
		return !builtins || EMBER_RT_WORD_AUX(*word) != EMBER_RT_AUX_MAX ||
		       EMBER_RT_WORD_KIND(*word) == EMBER_RT_WORD_V8_OSR;
	if (!builtins)
		uw_v8_interpreted(f, rt, env, m, word, &room); /* else the function's */
	return !builtins;
}

#endif /* EMBER_UWALK_V8_BPF_H */
