/* SPDX-License-Identifier: MIT */
/*
 * ABI of the runtime walkers (bpf/uwalk_rt.bpf.h): how the daemon tells the
 * walk where a process's interpreter or JIT keeps its frames (struct
 * ember_rt_proc, part of the process's unwind entry), and how the walk writes
 * a runtime's frame into a stack (a tagged word, named on the host by
 * lib/symbols/runtime.c from the process's memory). x86-64 only.
 */
#ifndef EMBER_RUNTIME_H
#define EMBER_RUNTIME_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* The runtimes whose frames the walk reads. */
enum ember_rt_kind {
	EMBER_RT_NONE = 0,
	EMBER_RT_PYTHON = 1, /* CPython: the eval loop's frames, by code object */
	EMBER_RT_V8 = 2,     /* V8 (Node.js): JavaScript frames, by function */
};
/*
 * A word's kind only, never a process's: a V8 frame of baseline (Sparkplug)
 * code, by its function (a SharedFunctionInfo) and its pc's offset in the
 * function's baseline Code, which holds no way back to the function.
 */
#define EMBER_RT_WORD_V8_BASELINE 3
/*
 * A word's kind only: a V8 frame whose pc lies outside its function's code
 * (optimised code entered on the stack: on-stack replacement), by its
 * JSFunction and the pc's low 16 bits; the drain finds the code holding it
 * among those the function's feedback vector keeps.
 */
#define EMBER_RT_WORD_V8_OSR 4

/*
 * A stack word that is a runtime's frame, not an address: bit 63 set, a kind
 * in bits 62..60 (1..6: a kernel address has 7 there, a user one 0), 16 bits
 * of the kind's own (CPython: the instruction's index in its code, clamped
 * to EMBER_RT_AUX_MAX), and the frame's object's address (8-aligned, below
 * 2^47) shifted right by 3. An object address of 0: the runtime's version is
 * not supported, and the 16 bits say which (major << 8 | minor).
 */
#define EMBER_RT_TAG (1ull << 63)
#define EMBER_RT_KIND_SHIFT 60
#define EMBER_RT_AUX_SHIFT 44
#define EMBER_RT_AUX_MAX 0xffffull
#define EMBER_RT_PTR_MASK ((1ull << EMBER_RT_AUX_SHIFT) - 1)
#define EMBER_RT_WORD(kind, aux, ptr)                              \
	(EMBER_RT_TAG | ((__u64)(kind) << EMBER_RT_KIND_SHIFT) |   \
	 (((__u64)(aux)&EMBER_RT_AUX_MAX) << EMBER_RT_AUX_SHIFT) | \
	 (((__u64)(ptr) >> 3) & EMBER_RT_PTR_MASK))
#define EMBER_RT_WORD_KIND(w) ((__u32)(((w) >> EMBER_RT_KIND_SHIFT) & 7))
#define EMBER_RT_WORD_AUX(w) ((__u32)(((w) >> EMBER_RT_AUX_SHIFT) & EMBER_RT_AUX_MAX))
#define EMBER_RT_WORD_PTR(w) (((w)&EMBER_RT_PTR_MASK) << 3)
/*
 * What the host reads from the process to name runtime frame word w
 * (lib/symbols/runtime.c), as a word: a Python frame's code object alone (the
 * lines of every instruction are in its location table, read with it), a V8
 * frame's whole word (named anew for each). Stacks whose frames read the
 * same are announced once (bpf/fold.bpf.h's rt_announce()).
 */
#define EMBER_RT_WORD_READ(w)                                      \
	(EMBER_RT_WORD_KIND(w) == EMBER_RT_PYTHON ?                \
		 (w) & ~(EMBER_RT_AUX_MAX << EMBER_RT_AUX_SHIFT) : \
		 (w))
/* Whether stack word w is a runtime's frame (else an address, user or kernel). */
#define EMBER_RT_IS_WORD(w) \
	(((w)&EMBER_RT_TAG) && EMBER_RT_WORD_KIND(w) != 0 && EMBER_RT_WORD_KIND(w) != 7)

/* Flags of ember_rt_proc. */
#define EMBER_RT_F_UNSUPPORTED 0x1 /* a version ember has no layout for: one honest frame */

/* Offsets the walk reads a runtime's structures at: indexes of ember_rt_proc.off. */
enum ember_py_off {
	EMBER_PY_RUNTIME_INTERP_HEAD = 0, /* _PyRuntime.interpreters.head */
	EMBER_PY_INTERP_THREADS_HEAD,	  /* PyInterpreterState.threads.head */
	EMBER_PY_TSTATE_NEXT,		  /* PyThreadState.next */
	EMBER_PY_TSTATE_TID,		  /* PyThreadState.native_thread_id */
	EMBER_PY_TSTATE_CFRAME,		  /* PyThreadState.cframe (3.11, 3.12); EMBER_RT_OFF_NONE */
	EMBER_PY_FRAME_CURRENT,		  /* _PyCFrame.current_frame, or PyThreadState's (3.13) */
	EMBER_PY_FRAME_CODE,		  /* _PyInterpreterFrame.f_code (f_executable, 3.13) */
	EMBER_PY_FRAME_PREVIOUS,	  /* _PyInterpreterFrame.previous */
	EMBER_PY_FRAME_INSTR,		  /* .prev_instr (3.11, 3.12), .instr_ptr (3.13) */
	EMBER_PY_FRAME_IS_ENTRY,	  /* .is_entry (3.11); EMBER_RT_OFF_NONE after */
	EMBER_PY_FRAME_OWNER,		  /* .owner: 3 is a C stack's entry frame (3.12+) */
	EMBER_PY_CODE_ADAPTIVE,		  /* PyCodeObject.co_code_adaptive: instruction 0 */
	EMBER_PY_OFF_NR,
};
#define EMBER_RT_OFF_MAX 56
/* Words of the runtime walk's memos (the walk's environment holds them: uwalk_rt.bpf.h). */
#define EMBER_RT_SCRATCH_WORDS 4
/*
 * The first slot of a runtime walk's memo of 1 << bits slots (V8's functions,
 * CPython's code objects) for an object at addr: Fibonacci's hash of its
 * 8-aligned address; the kernel's and the host's walks, and the tests.
 */
static inline __attribute__((always_inline)) __u32 ember_rt_memo_slot(__u64 addr, __u32 bits)
{
	return (__u32)((addr >> 3) * 0x9e3779b97f4a7c15ull >> (64 - bits));
}

/*
 * A thread's own CPython thread state, remembered from its last walk (the
 * kernel's task storage, bpf/unwind.bpf.h; the host walk's caller's): one
 * read to check it where a search of the interpreter's threads took one or
 * two a thread. runtime: the _PyRuntime it was found under; 0: none yet.
 */
struct ember_py_ts_memo {
	__u64 runtime;
	__u64 ts;
};

/*
 * A CPython code object the walk found to be one (its type read), kept in a
 * direct-mapped table by its address (per CPU: bpf/unwind.bpf.h's
 * py_code_memo; the host walk's caller's): a frame of a function met again
 * costs no read of its code object. A live frame holds its code, which CPython
 * never moves; the type read is a check against a torn or garbage frame, and
 * the host reads the type again when it names the frame.
 */
#define EMBER_PY_CODE_MEMO_BITS 6
#define EMBER_PY_CODE_MEMO_SLOTS (1u << EMBER_PY_CODE_MEMO_BITS)
struct ember_py_code_memo {
	__u64 code;	 /* the code object's address; 0: none */
	__u32 tgid, gen; /* its process, and the generation of the process's entry */
};

/*
 * Bytes of a runtime's memory the walk reads at once (the walk's environment
 * holds them): CPython's frames lie one under the other in a thread's data
 * stack, and one read of user memory costs about as much as 1 KiB copied.
 */
#define EMBER_RT_WINDOW 1024
#define EMBER_RT_OFF_NONE 0xffff

/*
 * V8 (Node.js): indexes of ember_rt_proc.off, from the v8dbg_* symbols node
 * exports (lib/symbols/v8.c). Frame slots are distances below the frame
 * pointer; fields are byte offsets in an untagged object; types are
 * Map.instance_type values. text[0..1]: the embedded builtins (the
 * interpreter's trampoline and handlers among them); text[2..3]: the binary's
 * text holding them (its C++ frames are never JavaScript's); addr[0]: V8
 * 13.6 on, &IsolateGroup::default_isolate_group_ (where its dispatch table
 * is found), else 0; addr[1]: V8's table of bytecode sizes (read on the host
 * only), 0: none found.
 * A frame word's object: a SharedFunctionInfo (aux: the bytecode offset of an
 * interpreted frame, EMBER_RT_AUX_MAX when unknown; of kind
 * EMBER_RT_WORD_V8_BASELINE, the pc's offset in its baseline Code) or an
 * optimised Code (aux: the pc's offset in its instructions).
 */
enum ember_v8_off {
	EMBER_V8_FP_CONTEXT = 0,     /* fp - this: the context, or a typed frame's marker (a Smi) */
	EMBER_V8_FP_FUNCTION,	     /* fp - this: a JavaScript frame's JSFunction */
	EMBER_V8_FP_BYTECODE_OFFSET, /* fp - this: an interpreted frame's bytecode offset (a Smi) */
	EMBER_V8_MAP_TYPE,	     /* Map.instance_type (u16) */
	EMBER_V8_JSFUNC_SHARED,	     /* JSFunction.shared */
	EMBER_V8_JSFUNC_CODE,	     /* JSFunction.code */
	EMBER_V8_CODE_START,	     /* Code: its instructions' address; or CODE_HEADER */
	EMBER_V8_CODE_SIZE,	     /* Code: their size (u32), near its flags */
	EMBER_V8_CODE_FLAGS,	     /* Code.flags (u32): its kind, masked and shifted */
	EMBER_V8_CODE_KIND,	     /* the kind in Code.flags: its mask, and shift << 8 */
	EMBER_V8_KIND_BASELINE, /* CodeKind::BASELINE (Sparkplug: no way back to its function) */
	EMBER_V8_TYPE_JSFUNC_FIRST,  /* JSFunction and its subclasses' types: first */
	EMBER_V8_TYPE_JSFUNC_LAST,   /* ... and last */
	EMBER_V8_TYPE_SFI,	     /* SHARED_FUNCTION_INFO_TYPE */
	EMBER_V8_TYPE_CODE,	     /* CODE_TYPE */
	EMBER_V8_TYPE_BYTECODE,	     /* BYTECODE_ARRAY_TYPE */
	EMBER_V8_TYPE_SCRIPT,	     /* SCRIPT_TYPE */
	EMBER_V8_TYPE_SCOPE_INFO,    /* SCOPE_INFO_TYPE */
	EMBER_V8_TYPE_FIXED_ARRAY,   /* FIXED_ARRAY_TYPE */
	EMBER_V8_TYPE_BYTE_ARRAY,    /* BYTE_ARRAY_TYPE */
	EMBER_V8_SFI_NAME,	     /* SharedFunctionInfo.name_or_scope_info */
	EMBER_V8_SFI_DATA,	     /* SharedFunctionInfo.function_data */
	EMBER_V8_SFI_SCRIPT,	     /* SharedFunctionInfo.script_or_debug_info */
	EMBER_V8_SCRIPT_NAME,	     /* Script.name */
	EMBER_V8_SCRIPT_SOURCE,	     /* Script.source */
	EMBER_V8_BYTECODE_POSITIONS, /* BytecodeArray.source_position_table */
	EMBER_V8_BYTECODE_DATA,	     /* BytecodeArray: its first bytecode */
	EMBER_V8_CODE_POSITIONS,     /* Code.source_position_table */
	EMBER_V8_CODE_DEOPT,	     /* Code.deoptimization_data (baseline: its BytecodeArray) */
	EMBER_V8_DEOPT_SFI,	     /* index of the function's SharedFunctionInfo in it */
	EMBER_V8_DEOPT_INLINING,     /* index of its inlined calls' positions (a ByteArray) */
	EMBER_V8_SCOPE_FIRST_VARS,   /* ScopeInfo: slot of its first variable part */
	/*
	 * Trusted space's arrays (V8 12: code metadata moved there), laid out as
	 * FixedArray and ByteArray; EMBER_RT_OFF_NONE before. A table or the
	 * deoptimization data is either kind (12.3 moved one, 12.4 the other).
	 */
	EMBER_V8_TYPE_TRUSTED_FIXED_ARRAY, /* TRUSTED_FIXED_ARRAY_TYPE */
	EMBER_V8_TYPE_TRUSTED_BYTE_ARRAY,  /* TRUSTED_BYTE_ARRAY_TYPE */
	/*
	 * Code's header size where its instructions follow it inline (V8 before
	 * 11.1.204: Node 18); EMBER_RT_OFF_NONE where CODE_START points at them.
	 */
	EMBER_V8_CODE_HEADER,
	/*
	 * ScopeInfo: slot of its function's start position (V8 13.6 on, ahead of
	 * the context locals, their count in the slot before); EMBER_RT_OFF_NONE
	 * where it follows the function's name, after them.
	 */
	EMBER_V8_SCOPE_POSITION,
	/*
	 * V8 13.6 on (leaptiering), EMBER_RT_OFF_NONE before: a JSFunction holds
	 * no Code but a handle (u32) into its isolate group's dispatch table,
	 * whose entry (16 bytes, at the handle >> EMBER_V8_DISPATCH_SHIFT) holds
	 * its Code's tagged address << 16 in its second word; the deoptimization
	 * data, a ProtectedFixedArray, holds a wrapper of the function.
	 */
	EMBER_V8_JSFUNC_DISPATCH,      /* JSFunction.dispatch_handle (u32) */
	EMBER_V8_GROUP_TABLE,	       /* IsolateGroup: its table's entries, or its isolate */
	EMBER_V8_TYPE_PROTECTED_ARRAY, /* PROTECTED_FIXED_ARRAY_TYPE */
	EMBER_V8_TYPE_SFI_WRAPPER,     /* SHARED_FUNCTION_INFO_WRAPPER_TYPE */
	EMBER_V8_SFI_WRAPPER_SHARED,   /* SharedFunctionInfoWrapper.shared_info */
	/*
	 * V8 14.6: each isolate has its own dispatch table; GROUP_TABLE is then
	 * where the group holds its first (the main thread's) isolate, and this
	 * where the isolate holds its table's entries. EMBER_RT_OFF_NONE before.
	 */
	EMBER_V8_ISOLATE_TABLE,
	/*
	 * Read on the host only, to name the functions TurboFan inlined: the
	 * deoptimization data's literal array (its first entries the inlined
	 * functions, by InliningPosition's function id) and the weak arrays it
	 * may be (EMBER_RT_OFF_NONE where a version has no such type).
	 */
	EMBER_V8_DEOPT_LITERALS,
	EMBER_V8_TYPE_WEAK_ARRAY,	    /* WEAK_FIXED_ARRAY_TYPE */
	EMBER_V8_TYPE_TRUSTED_WEAK_ARRAY,   /* TRUSTED_WEAK_FIXED_ARRAY_TYPE (13 on) */
	EMBER_V8_TYPE_PROTECTED_WEAK_ARRAY, /* PROTECTED_WEAK_FIXED_ARRAY_TYPE (13 on) */
	/*
	 * V8 14.6 (with ISOLATE_TABLE): bytes below a thread's pointer (x86-64's
	 * fs_base) where the isolate it runs lies (v8::internal::g_current_isolate_,
	 * static TLS of the executable), so that a worker's frames are read through
	 * its own isolate's table; EMBER_RT_OFF_NONE where the binary does not say.
	 */
	EMBER_V8_ISOLATE_TLS,
	/*
	 * Read on the host only, to tell a baseline frame's bytecode from its pc:
	 * the bytecodes in the table of their sizes at addr[1]
	 * (interpreter::Bytecodes::kBytecodeSizes, three scales of them), 0: none.
	 */
	EMBER_V8_BYTECODE_COUNT,
	/*
	 * Read on the host only, to find a frame's on-stack-replaced code: the
	 * function's feedback cell, the cell's value (its feedback vector, whose
	 * slots hold weak references to that code, or from V8 12 to its
	 * CodeWrapper), the vector's type, the wrapper's (EMBER_RT_OFF_NONE
	 * before 12).
	 */
	EMBER_V8_JSFUNC_FEEDBACK,
	EMBER_V8_CELL_VALUE,
	EMBER_V8_TYPE_FEEDBACK_VECTOR,
	EMBER_V8_TYPE_CODE_WRAPPER,
	EMBER_V8_OFF_NR,
};
_Static_assert(EMBER_V8_OFF_NR <= EMBER_RT_OFF_MAX, "V8's offsets fit ember_rt_proc.off");
/* A dispatch handle's entry index, and where an entry's Code lies (V8 13.6). */
#define EMBER_V8_DISPATCH_SHIFT 8
#define EMBER_V8_DISPATCH_ENTRY 16
#define EMBER_V8_DISPATCH_CODE_SHIFT 16

/*
 * A JavaScript function the V8 walk read (bpf/uwalk_v8.bpf.h), kept in one
 * of two slots by its address (per CPU: bpf/unwind.bpf.h's v8_memo;
 * the host walk's caller's): a frame of a function met again that runs the
 * Code or BytecodeArray kept costs no read; another, as in a recursive or a
 * repeated stack, one read of its header, compared with what was read
 * before, where reading it whole took six to twelve (its map and type, its
 * shared info, its code, the Code's fields).
 */
#define EMBER_V8_MEMO_BITS 7
#define EMBER_V8_MEMO_SLOTS (1u << EMBER_V8_MEMO_BITS)
/* A JSFunction's header as read at once: map to its code field (v8_detect() checks). */
#define EMBER_V8_HEAD_WORDS 8
struct ember_v8_memo {
	__u64 func;	 /* the JSFunction (tagged); 0: none */
	__u32 tgid, gen; /* its process, and the generation of the process's entry */
	__u64 map;	 /* its map, of a JSFunction's type (checked when kept) */
	__u64 sfi;	 /* its SharedFunctionInfo */
	__u64 code_at;	 /* its code field, or dispatch handle (V8 13.6 on) */
	__u64 table;	 /* the dispatch table the handle indexes; 0: a code field */
	__u64 code;	 /* the Code it runs; 0: not read since the above changed */
	__u64 start;	 /* the Code's instructions */
	__u32 size;	 /* their size */
	__u32 kind;	 /* the Code's kind */
	__u64 bytecode;	 /* a BytecodeArray of its interpreted frames, checked; 0: none */
	__u64 walk;	 /* the walk (uw_env_walk()) that last checked all the above; 0: none */
	__u64 head[EMBER_V8_HEAD_WORDS]; /* its header as just read (the walk's scratch) */
};

/*
 * A process's runtime, as the daemon found it in its mappings (the symbols a
 * runtime exports about itself): part of its unwind entry (struct
 * ember_unwind_proc). Addresses are the process's own.
 */
struct ember_rt_proc {
	__u32 kind;    /* enum ember_rt_kind; EMBER_RT_NONE: none known */
	__u32 version; /* major << 16 | minor << 8 | micro, as the runtime says */
	__u32 flags;   /* EMBER_RT_F_* */
	__u32 pad;     /* explicit padding, always 0 */
	/*
	 * Code whose native frames stand for runtime frames: [text[0], text[1])
	 * and [text[2], text[3]) (CPython: _PyEval_EvalFrameDefault; V8: its own).
	 */
	__u64 text[4];
	/* CPython: &_PyRuntime, &PyCode_Type; V8: its own */
	__u64 addr[4];
	__u16 off[EMBER_RT_OFF_MAX]; /* enum ember_py_off (V8: its own enum) */
};
_Static_assert(sizeof(struct ember_rt_proc) == 16 + 32 + 32 + 2 * EMBER_RT_OFF_MAX,
	       "ember_rt_proc is ABI");

/*
 * CPython's frame chain of a sampled thread as read at the sample, for a walk
 * made later from a copy of its stack (struct ember_deferred_sample): the chain
 * lives in the heap and moves on with the thread, so the kernel reads it then
 * (bpf/uwalk_rt.bpf.h's uw_py_trace()) and the host's walk gives its words
 * where the live walk would have read them (uw_py_replay()).
 */
#define EMBER_RT_TRACE_MAX 128
struct ember_rt_trace {
	__u32 kind; /* EMBER_RT_PYTHON: read at the sample; EMBER_RT_NONE: not read */
	__u16 n;    /* frames in words */
	__u16 miss; /* why the chain ended short (the walk's enum uw_rt_miss), 0: it did not */
	__u64 last[EMBER_RT_TRACE_MAX /
		   64];			 /* bit i: words[i] is the last of its eval loop's run */
	__u64 words[EMBER_RT_TRACE_MAX]; /* EMBER_RT_WORD()s, innermost first */
};
_Static_assert(sizeof(struct ember_rt_trace) ==
		       8 + 8 * (EMBER_RT_TRACE_MAX / 64) + 8 * EMBER_RT_TRACE_MAX,
	       "ember_rt_trace is ABI");

/*
 * Key of the unwinder's rt_exes map: a file's identity as the kernel has it
 * (inode->i_sb->s_dev: major << 20 | minor, and i_ino).
 */
struct ember_rt_exe_key {
	__u64 dev;
	__u64 ino;
};

/*
 * A CPython runtime an executable file holds (value of rt_exes), for the
 * samples of a process started from it before the daemon loaded the process:
 * rt's addresses are ELF vaddrs, placed in the process by the kernel's
 * mm->start_code less code_vaddr (the lowest vaddr of its executable segments,
 * where mm->start_code points).
 */
struct ember_rt_exe {
	__u64 code_vaddr;
	struct ember_rt_proc rt;
};
/* rt's text and addresses moved by bias (a load bias): the same in BPF and on the host. */
static inline void ember_rt_relocate(struct ember_rt_proc *rt, __u64 bias)
{
	for (int i = 0; i < 4; i++) {
		if (rt->text[i])
			rt->text[i] += bias;
		if (rt->addr[i])
			rt->addr[i] += bias;
	}
}

/* Executables whose runtime the kernel knows by file, least recently used dropped. */
#define EMBER_RT_EXES_MAX 64

#endif /* EMBER_RUNTIME_H */
