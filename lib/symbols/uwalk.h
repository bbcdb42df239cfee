/* SPDX-License-Identifier: MIT */
/*
 * The user stack walk of the BPF programs, in user space, over a copy of the
 * stack: for samples taken before a process's tables were loaded, which the
 * cpu program hands to the daemon with their registers and stack bytes
 * (struct ember_deferred_sample) instead of walking them with frame pointers.
 * The same code: uwalk.c compiles bpf/uwalk.bpf.h, the walk the kernel runs.
 * Pure: rows come through a callback, the stack only from the copy. x86-64.
 */
#ifndef EMBER_UWALK_H
#define EMBER_UWALK_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ember/sample.h>
#include <ember/unwind.h>

/*
 * Where the walk finds rules: the row of table (an id of the tables array) in
 * force at pc (an address minus the mapping's bias), false where there is none.
 * uwalk_search() is the search over a table's rows.
 */
struct uwalk_rows {
	bool (*find)(void *arg, uint32_t table, uint64_t pc, struct ember_unwind_row *out);
	void *arg;
};

/* Reads row i (0 .. nrows - 1) of one table: false when it cannot. */
typedef bool (*uwalk_row_fn)(void *arg, uint32_t i, struct ember_unwind_row *out);

/*
 * The row in force at pc among a table's nrows sorted rows, read with row; and
 * [*lo, *hi), the pcs it covers (*hi UINT64_MAX for the last). False where no
 * row covers pc or one could not be read.
 */
bool uwalk_search(uint32_t nrows, uwalk_row_fn row, void *arg, uint64_t pc,
		  struct ember_unwind_row *out, uint64_t *lo, uint64_t *hi);

/* Values of uwalk_result.rt_miss: why the runtime's frames stopped short (enum uw_rt_miss). */
#define UWALK_RT_NO_THREAD 1 /* the thread's state was not found */
#define UWALK_RT_BAD_FRAME 2 /* a frame that is not the runtime's */

/* What one walk gives: the frames, leaf first, and how it went (as struct uw_result). */
struct uwalk_result {
	__u64 ips[EMBER_MAX_STACK_DEPTH]; /* as the BPF walk stores them */
	uint32_t n;
	uint32_t end; /* EMBER_SAMPLE_M_END_*: why the stack ended */
	uint32_t by_table, by_fp, bad_rule;
	uint32_t rt_frames, rt_miss, rt_unsupported; /* the runtime's frames (uwalk_rt.bpf.h) */
	/*
	 * What the walk would cost in the kernel (bpf/unwind.bpf.h): reads of user
	 * memory, each a bpf_probe_read_user() (the stack's through the window of
	 * EMBER_UNWIND_WINDOW bytes, a runtime's records directly), and rule
	 * lookups (one a native frame; the CPU's cache of rules serves most).
	 */
	uint32_t stack_reads, mem_reads, mem_bytes, rules;
	bool truncated;	 /* EMBER_MAX_STACK_DEPTH reached */
	bool fp_guessed; /* frame-pointer steps may have skipped callers (uw_fp_guessed()) */
	bool copy_short; /* it ended reading past the copy: callers missing, not a bad stack */
};

/*
 * Bytes below rsp that x86-64 code may use without moving it, and that signal
 * delivery leaves alone (the SysV ABI's red zone): a copy holding them reads
 * a register an epilogue has just popped, as the BPF walk does in place.
 */
#define UWALK_RED_ZONE 128

/* The stack bytes a sample carries: stack[i] is the byte at user address base + i. */
struct uwalk_stack {
	const uint8_t *bytes;
	uint64_t base;
	size_t len;
};

/* The user registers a walk starts from (rbx: the CFA of ld.so's trampolines). */
struct uwalk_regs {
	uint64_t ip, sp, bp, bx;
	uint32_t tid; /* the thread's id: a runtime's state is found by it */
};

/* Reads len bytes of the process's memory at addr into dst: false when it cannot. */
struct uwalk_mem {
	bool (*read)(void *arg, void *dst, size_t len, uint64_t addr);
	void *arg;
	struct ember_py_ts_memo *ts_memo; /* the walked thread's, as the kernel keeps; or NULL */
	/* the V8 walk's functions, EMBER_V8_MEMO_SLOTS kept between walks of one process; or NULL */
	struct ember_v8_memo *v8_memo;
	/* CPython's code objects, EMBER_PY_CODE_MEMO_SLOTS kept between walks of one process; or NULL */
	struct ember_py_code_memo *py_code_memo;
	uint64_t tp; /* the walked thread's pointer (x86-64's fs_base); 0: not known */
};

/*
 * Walks the stack whose registers are regs with proc's mappings (NULL: frame
 * pointers only) and the rows src reads; memory outside stk is unreadable.
 * Always ends: at most EMBER_MAX_STACK_DEPTH frames.
 */
void uwalk(const struct ember_unwind_proc *proc, const struct uwalk_rows *src,
	   const struct uwalk_stack *stk, const struct uwalk_regs *regs, struct uwalk_result *out);
/*
 * The same where the process's memory beyond the copy can be read (mem): the
 * runtimes' frames are read too (bpf/uwalk_rt.bpf.h), as in the kernel; the
 * stack itself still from the copy alone. The deferred walk reads the live
 * process moments after its sample: right for V8, whose frames are on the
 * stack (the copy) and point at objects that live on in its heap, wrong for
 * CPython, whose frame chain is in the heap and moved on with the thread.
 */
void uwalk_mem(const struct ember_unwind_proc *proc, const struct uwalk_rows *src,
	       const struct uwalk_stack *stk, const struct uwalk_mem *mem,
	       const struct uwalk_regs *regs, struct uwalk_result *out);
/*
 * The same where CPython's frame chain was read at the sample (trace, if its
 * kind says so): its words are given where the walk would read the chain.
 */
void uwalk_traced(const struct ember_unwind_proc *proc, const struct uwalk_rows *src,
		  const struct uwalk_stack *stk, const struct uwalk_mem *mem,
		  const struct ember_rt_trace *trace, const struct uwalk_regs *regs,
		  struct uwalk_result *out);

/*
 * Reads CPython's frame chain of thread tid through mem into out, as the
 * kernel does for a sample walked later (bpf/uwalk_rt.bpf.h's uw_py_trace()).
 */
void uwalk_rt_trace(const struct ember_rt_proc *info, const struct uwalk_mem *mem, uint32_t tid,
		    struct ember_rt_trace *out);

#endif
