// SPDX-License-Identifier: MIT
/*
 * libFuzzer: the user-space walk over a stack copy (lib/symbols/uwalk.c) with
 * registers, mappings, a table and stack bytes from the input, and CPython's
 * frames as a deferred record carries them (struct ember_rt_trace). Whatever
 * they hold, the walk ends within EMBER_MAX_STACK_DEPTH frames, starts at ip
 * (or a runtime's frame), gives no more runtime frames than the trace holds,
 * and says why it ended.
 *
 * Input: ip, sp, bp, bx (little-endian u64); a byte n, then n % 9 mappings (start,
 * end, bias: u64; table: u32) (n & 0x80: walked without them; n & 0x40: a CPython
 * whose eval loop is the first mapping, its chain read at the sample); a byte m, then
 * m rows of table 0 (16 bytes each, as include/ember/unwind.h); with n & 0x40, a
 * byte t, 16 bytes of the trace's run ends and t % 129 words of it; the rest is the
 * stack, from sp's page. Else with n & 0x20, a V8 whose builtins are the first
 * mapping's code (Node 22's layout; n & 0x10: Node 24's, functions holding dispatch
 * handles), its heap the stack's bytes seen again at HEAP, and the memo of its
 * functions kept from input to input, as the kernel keeps it per CPU whatever
 * process it walks: stale slots never break the walk.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "uwalk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAPS_MAX 8
#define ROWS_MAX 64

struct input {
	struct ember_unwind_row rows[ROWS_MAX];
	uint32_t nrows;
};

static bool take(const uint8_t **p, size_t *left, void *out, size_t n)
{
	if (*left < n)
		return false;
	memcpy(out, *p, n);
	*p += n;
	*left -= n;
	return true;
}

static bool row_at(void *arg, uint32_t i, struct ember_unwind_row *out)
{
	const struct input *in = arg;

	if (i >= in->nrows)
		return false;
	*out = in->rows[i];
	return true;
}

static bool find(void *arg, uint32_t table, uint64_t pc, struct ember_unwind_row *out)
{
	const struct input *in = arg;
	uint64_t lo, hi;

	if (table != 0 || !uwalk_search(in->nrows, row_at, arg, pc, out, &lo, &hi))
		return false;
	if (lo > pc || pc >= hi)
		__builtin_trap(); /* the range found must hold pc */
	return true;
}

/* A CPython trace (n & 0x40): the runtime's eval loop is the first mapping's code. */
static bool take_trace(const uint8_t **p, size_t *left, struct ember_unwind_proc *proc,
		       struct ember_rt_trace *t)
{
	uint8_t n;

	memset(t, 0, sizeof(*t));
	if (!take(p, left, &n, 1) || !take(p, left, t->last, sizeof(t->last)))
		return false;
	t->kind = EMBER_RT_PYTHON;
	t->n = n % (EMBER_RT_TRACE_MAX + 1);
	for (uint32_t i = 0; i < t->n; i++)
		if (!take(p, left, &t->words[i], sizeof(t->words[i])))
			return false;
	proc->rt.kind = EMBER_RT_PYTHON;
	if (proc->nmaps) {
		proc->rt.text[0] = proc->maps[0].start;
		proc->rt.text[1] = proc->maps[0].end;
	}
	return true;
}

/* The V8 heap: the input's stack bytes, mapped again here. */
#define HEAP 0x10000000ull

struct heap {
	const uint8_t *bytes;
	size_t len;
};

static bool heap_read(void *arg, void *dst, size_t len, uint64_t addr)
{
	const struct heap *h = arg;

	if (addr < HEAP || addr - HEAP > h->len || len > h->len - (addr - HEAP))
		return false;
	memcpy(dst, h->bytes + (addr - HEAP), len);
	return true;
}

/* A V8 of Node 22's layout, or (dispatch) Node 24's, as v8_detect() finds them. */
static void v8_proc(struct ember_unwind_proc *proc, bool dispatch)
{
	struct ember_rt_proc *rt = &proc->rt;
	static const struct {
		enum ember_v8_off o;
		uint16_t v;
	} off[] = {
		{EMBER_V8_FP_CONTEXT, 8},	   {EMBER_V8_FP_FUNCTION, 16},
		{EMBER_V8_FP_BYTECODE_OFFSET, 32}, {EMBER_V8_MAP_TYPE, 12},
		{EMBER_V8_JSFUNC_SHARED, 32},	   {EMBER_V8_TYPE_JSFUNC_FIRST, 2066},
		{EMBER_V8_TYPE_JSFUNC_LAST, 2080}, {EMBER_V8_TYPE_BYTECODE, 170},
		{EMBER_V8_TYPE_CODE, 187},	   {EMBER_V8_CODE_START, 40},
		{EMBER_V8_CODE_FLAGS, 52},	   {EMBER_V8_CODE_SIZE, 56},
		{EMBER_V8_CODE_KIND, 15},	   {EMBER_V8_KIND_BASELINE, 10},
		{EMBER_V8_BYTECODE_DATA, 40},
	};

	rt->kind = EMBER_RT_V8;
	for (int i = 0; i < EMBER_RT_OFF_MAX; i++)
		rt->off[i] = EMBER_RT_OFF_NONE;
	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++)
		rt->off[off[i].o] = off[i].v;
	if (dispatch) {
		rt->off[EMBER_V8_JSFUNC_DISPATCH] = 24;
		rt->off[EMBER_V8_GROUP_TABLE] = 16;
		rt->addr[0] = HEAP;
	} else {
		rt->off[EMBER_V8_JSFUNC_CODE] = 24;
	}
	if (proc->nmaps) {
		rt->text[0] = proc->maps[0].start;
		rt->text[1] = proc->maps[0].end;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ember_v8_memo memo[EMBER_V8_MEMO_SLOTS];
	static struct ember_py_code_memo codes[EMBER_PY_CODE_MEMO_SLOTS];
	struct heap heap;
	struct uwalk_mem mem = {
		.read = heap_read, .arg = &heap, .v8_memo = memo, .py_code_memo = codes};
	const struct uwalk_mem *live = NULL;
	static struct ember_unwind_proc proc;
	static struct uwalk_result res;
	static struct ember_rt_trace trace;
	const struct ember_rt_trace *traced = NULL;
	struct input in = {0};
	uint64_t regs[4];
	uint8_t n, m;
	struct uwalk_rows src = {find, &in};
	struct uwalk_stack stk;

	memset(&proc, 0, sizeof(proc));
	proc.gen = 1; /* one process to the memos, across inputs: what they kept may be stale */
	if (!take(&data, &size, regs, sizeof(regs)) || !take(&data, &size, &n, 1))
		return 0;
	for (uint8_t i = 0; i < n % (MAPS_MAX + 1); i++) {
		struct ember_unwind_map *e = &proc.maps[proc.nmaps];

		if (!take(&data, &size, &e->start, 8) || !take(&data, &size, &e->end, 8) ||
		    !take(&data, &size, &e->bias, 8) || !take(&data, &size, &e->table, 4))
			return 0;
		proc.nmaps++;
	}
	if (!take(&data, &size, &m, 1))
		return 0;
	for (uint8_t i = 0; i < m % (ROWS_MAX + 1); i++)
		if (!take(&data, &size, &in.rows[in.nrows++], sizeof(in.rows[0])))
			return 0;
	if ((n & 0x40) && !take_trace(&data, &size, &proc, &trace))
		return 0;
	traced = n & 0x40 ? &trace : NULL;
	stk = (struct uwalk_stack){data, regs[1] & ~4095ull, size};
	if ((n & 0x60) == 0x20) {
		v8_proc(&proc, n & 0x10);
		heap = (struct heap){data, size};
		live = &mem;
	}
	uwalk_traced(
		n & 0x80 ? NULL : &proc, &src, &stk, live, traced,
		&(struct uwalk_regs){.ip = regs[0], .sp = regs[1], .bp = regs[2], .bx = regs[3]},
		&res);
	if (res.n < 1 || res.n > EMBER_MAX_STACK_DEPTH)
		__builtin_trap();
	if (traced) { /* a runtime's frames may stand in the leaf's place; no more than it held */
		if (res.rt_frames > trace.n)
			__builtin_trap();
		return 0;
	}
	if (res.rt_frames > res.n)
		__builtin_trap();
	if (!live && res.ips[0] != regs[0])
		__builtin_trap();
	if (res.end < EMBER_SAMPLE_M_END_OUTERMOST || res.end > EMBER_SAMPLE_M_END_DEPTH)
		__builtin_trap();
	if (res.truncated != (res.end == EMBER_SAMPLE_M_END_DEPTH))
		__builtin_trap();
	if (res.by_table + res.by_fp + res.bad_rule != res.n)
		__builtin_trap(); /* every frame kept was stepped from, one way */
	return 0;
}
