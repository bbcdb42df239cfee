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
#define EMBER_RT_OFF_MAX 32
/* Words of a runtime's frame record the walk reads at once (the walk's environment holds them). */
#define EMBER_RT_SCRATCH_WORDS 12
#define EMBER_RT_OFF_NONE 0xffff

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

#endif /* EMBER_RUNTIME_H */
