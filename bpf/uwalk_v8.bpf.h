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

/* The instance type of tagged object t, or 0 (no type is 0... but a string's: never asked). */
static __always_inline __u16 uw_v8_type(const struct ember_rt_proc *rt, struct uw_env *env, __u64 t)
{
	__u64 map = 0;
	__u16 type = 0;

	if (!uw_v8_is_obj(t) || !uw_env_read_mem(env, &map, sizeof(map), t - 1) ||
	    !uw_v8_is_obj(map) ||
	    !uw_env_read_mem(env, &type, sizeof(type), map - 1 + rt->off[EMBER_V8_MAP_TYPE]))
		return 0;
	return type;
}

/*
 * The word of an interpreted frame (the interpreter runs in the embedded
 * builtins): its function and the bytecode offset V8 keeps in the frame (a
 * Smi: the offset from the BytecodeArray's tagged address), the
 * BytecodeArray in the slot above it. Other frames of the builtins are the
 * builtins' own, named as native code.
 */
static __always_inline bool uw_v8_interpreted(const struct uw_frame *f,
					      const struct ember_rt_proc *rt, struct uw_env *env,
					      __u64 sfi, __u64 *word, union uw_v8_room *room)
{
	__u64 *slot = room->w; /* the bytecode offset, the BytecodeArray */
	__s64 bc;

	if (!uw_env_read_mem(env, slot, 2 * sizeof(*slot),
			     f->bp - rt->off[EMBER_V8_FP_BYTECODE_OFFSET]) ||
	    (slot[0] & 1) || uw_v8_type(rt, env, slot[1]) != rt->off[EMBER_V8_TYPE_BYTECODE])
		return false;
	bc = (__s64)slot[0] >> UW_V8_SMI_SHIFT;
	bc -= rt->off[EMBER_V8_BYTECODE_DATA] - UW_V8_HEAP_TAG;
	if (bc < 0)
		bc = 0; /* the function's entry (kFunctionEntryBytecodeOffset) */
	if (bc > (__s64)EMBER_RT_AUX_MAX)
		bc = EMBER_RT_AUX_MAX;
	*word = EMBER_RT_WORD(EMBER_RT_V8, (__u64)bc, sfi - 1);
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
 * The Code a JSFunction (tagged) runs: its code field, or from V8 13.6 the
 * entry of its dispatch handle in its isolate group's table (14.6: the
 * table of thread tid's isolate, else of the group's first), a Code checked
 * by its type: the table's place is a constant of the version. False when
 * it cannot be reached.
 */
static __always_inline bool uw_v8_code(const struct ember_rt_proc *rt, struct uw_env *env,
				       __u32 tid, __u64 func, __u64 *code)
{
	__u64 group = 0, table = 0, entry = 0;
	__u32 handle = 0;

	if (rt->off[EMBER_V8_JSFUNC_CODE] != EMBER_RT_OFF_NONE)
		return uw_env_read_mem(env, code, sizeof(*code),
				       func - 1 + rt->off[EMBER_V8_JSFUNC_CODE]) &&
		       uw_v8_is_obj(*code);
	if (rt->off[EMBER_V8_ISOLATE_TABLE] != EMBER_RT_OFF_NONE)
		table = uw_v8_thread_isolate(rt, env, tid);
	if (!rt->addr[0] || rt->off[EMBER_V8_JSFUNC_DISPATCH] == EMBER_RT_OFF_NONE ||
	    (!table &&
	     (!uw_env_read_mem(env, &group, sizeof(group), rt->addr[0]) || !group ||
	      !uw_env_read_mem(env, &table, sizeof(table), group + rt->off[EMBER_V8_GROUP_TABLE]) ||
	      !table)) ||
	    /* 14.6: that was an isolate, which holds its own table */
	    (rt->off[EMBER_V8_ISOLATE_TABLE] != EMBER_RT_OFF_NONE &&
	     (!uw_env_read_mem(env, &table, sizeof(table),
			       table + rt->off[EMBER_V8_ISOLATE_TABLE]) ||
	      !table)) ||
	    !uw_env_read_mem(env, &handle, sizeof(handle),
			     func - 1 + rt->off[EMBER_V8_JSFUNC_DISPATCH]) ||
	    !uw_env_read_mem(
		    env, &entry, sizeof(entry),
		    table + (__u64)(handle >> EMBER_V8_DISPATCH_SHIFT) * EMBER_V8_DISPATCH_ENTRY +
			    8))
		return false;
	*code = entry >> EMBER_V8_DISPATCH_CODE_SHIFT | UW_V8_HEAP_TAG;
	return uw_v8_type(rt, env, *code) == rt->off[EMBER_V8_TYPE_CODE];
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
	if (!uw_env_read_mem(env, w, UW_V8_RET_SCAN * sizeof(*w), f->sp))
		return 0;
	for (int i = 0; i < UW_V8_RET_SCAN; i++)
		if (w[i] > start && w[i] - start < size)
			return w[i];
	return 0;
}

/*
 * The word of a frame outside the binary's builtins: its function's
 * optimised Code and the pc's offset in it, when the pc lies there (baseline
 * code, which has no way back to its function: the function and the offset);
 * else (code entered on the stack from a loop, or replaced since) the
 * JSFunction with the pc's low bits (EMBER_RT_WORD_V8_OSR). Code's
 * instructions' address (V8 11.1.204 on), flags and size lie within the 24
 * bytes from the address, read at once (v8_detect()'s code_ok() checks);
 * before, the instructions follow Code's header inline, their size 8 before
 * the flags. True when the frame may be interpreted: the function's code is
 * a builtin (kinds below BASELINE: an interpreted function's is the
 * interpreter's entry, which V8 12 runs from a copy of the builtins beside
 * its JIT code, short builtin calls, outside text[0..1]) or was not
 * reached; the caller tells such frames by their slots.
 */
static __always_inline bool uw_v8_jit(const struct uw_frame *f,
				      const struct ember_unwind_proc *proc, struct uw_env *env,
				      __u64 func, __u64 sfi, __u64 *word, union uw_v8_room *room)
{
	const struct ember_rt_proc *rt = &proc->rt;
	__u64 code = 0, start, ip = f->ip, *w = room->w;
	__u32 kind_bits = rt->off[EMBER_V8_CODE_KIND], flags, size, kind;
	__u16 at_flags = rt->off[EMBER_V8_CODE_FLAGS], at_size = rt->off[EMBER_V8_CODE_SIZE];
	bool inline_code = rt->off[EMBER_V8_CODE_HEADER] != EMBER_RT_OFF_NONE;
	__u16 base = inline_code ? at_flags - 8 : rt->off[EMBER_V8_CODE_START];

	*word = EMBER_RT_WORD(EMBER_RT_V8, EMBER_RT_AUX_MAX, sfi - 1);
	if (!uw_v8_code(rt, env, f->tid, func, &code))
		return true;
	if (at_flags < base || at_size < base ||
	    !uw_env_read_mem(env, w, sizeof(room->w), code - 1 + base))
		return false;
	start = inline_code ? code - 1 + rt->off[EMBER_V8_CODE_HEADER] : w[0];
	flags = uw_v8_u32((const __u32 *)w, at_flags - base);
	size = uw_v8_u32((const __u32 *)w, at_size - base);
	kind = (flags >> ((kind_bits >> 8) & 31)) & (kind_bits & 0xff);
	if (kind < rt->off[EMBER_V8_KIND_BASELINE])
		return true;
	/*
	 * a pc in a mapping (the binary's builtins, or their copy beside the JIT
	 * code): a builtin that built no frame, its return into the code found
	 * above sp; in no mapping, JIT code: code entered on the stack (OSR)
	 */
	if (ip < start || ip - start >= size)
		ip = uw_find_map_in(proc, f->ip, &room->q) ? uw_v8_ret(f, env, start, size, w) : 0;
	if (!ip) { /* code the function runs from its loop (OSR), found on the host */
		*word = EMBER_RT_WORD(EMBER_RT_WORD_V8_OSR, f->ip & EMBER_RT_AUX_MAX, func - 1);
		return false;
	}
	if (ip - start >= EMBER_RT_AUX_MAX)
		return false;
	if (kind == rt->off[EMBER_V8_KIND_BASELINE])
		*word = EMBER_RT_WORD(EMBER_RT_WORD_V8_BASELINE, ip - start, sfi - 1);
	else
		*word = EMBER_RT_WORD(EMBER_RT_V8, ip - start, code - 1);
	return false;
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
	__u64 func, sfi;
	bool builtins = f->ip >= rt->text[0] && f->ip < rt->text[1];
	__u16 type;

	if (rt->flags & EMBER_RT_F_UNSUPPORTED)
		return false;
	if (!builtins && f->ip >= rt->text[2] && f->ip < rt->text[3])
		return false;
	/* the JSFunction, the context */
	if (f->bp < f->sp ||
	    !uw_env_read_mem(env, room.w, 2 * sizeof(room.w[0]),
			     f->bp - rt->off[EMBER_V8_FP_FUNCTION]) ||
	    !uw_v8_is_obj(room.w[1]))
		return false;
	func = room.w[0];
	type = uw_v8_type(rt, env, func);
	if (type < rt->off[EMBER_V8_TYPE_JSFUNC_FIRST] ||
	    type > rt->off[EMBER_V8_TYPE_JSFUNC_LAST] ||
	    !uw_env_read_mem(env, room.w, sizeof(room.w[0]),
			     func - 1 + rt->off[EMBER_V8_JSFUNC_SHARED]) ||
	    !uw_v8_is_obj(room.w[0]))
		return false;
	sfi = room.w[0];
	/*
	 * In the binary's builtins, a frame that is not interpreted is a
	 * builtin's own (named as native code), but for a builtin that built no
	 * frame, called from the function's code: the function's word, at the
	 * return there (as where the builtins run from a copy, outside them);
	 * elsewhere, a function whose code is a builtin but whose frame is not
	 * interpreted keeps its own word.
	 */
	if (builtins && uw_v8_interpreted(f, rt, env, sfi, word, &room))
		return true;
	if (!uw_v8_jit(f, proc, env, func, sfi, word, &room))
		return !builtins || EMBER_RT_WORD_AUX(*word) != EMBER_RT_AUX_MAX ||
		       EMBER_RT_WORD_KIND(*word) == EMBER_RT_WORD_V8_OSR;
	if (!builtins)
		uw_v8_interpreted(f, rt, env, sfi, word, &room); /* else the function's */
	return !builtins;
}

#endif /* EMBER_UWALK_V8_BPF_H */
