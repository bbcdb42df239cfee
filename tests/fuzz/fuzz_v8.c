// SPDX-License-Identifier: MIT
/*
 * libFuzzer: the input as a V8 source position table (every code offset
 * looked up), as a baseline code's bytecode offset table and bytecodes, and
 * as a process's memory in which a frame word (interpreted, optimised,
 * baseline or on-stack-replaced) is named with Node 20's layout, V8's bytecode sizes at its
 * start: whatever the heap holds, naming ends, within bounds, with a
 * NUL-terminated name.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "v8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input mapped at HEAP, the rest of memory unreadable. */
#define HEAP 0x100000ull

struct image {
	const uint8_t *p;
	size_t n;
};

static bool image_read(void *arg, void *dst, size_t len, uint64_t addr)
{
	const struct image *im = arg;

	if (addr < HEAP || addr - HEAP > im->n || len > im->n - (addr - HEAP))
		return false;
	memcpy(dst, im->p + (addr - HEAP), len);
	return true;
}

static void layout(struct ember_rt_proc *rt)
{
	static const uint16_t off[EMBER_V8_OFF_NR] = {
		8,   16,  40,  12,  24, 48, 40, 56, 48, 15, 11, 2066, 2080, 262, 245, 191,
		167, 261, 175, 190, 16, 8,  32, 16, 8,	32, 54, 24,   16,   6,	 7,   3,
	};

	memset(rt, 0, sizeof(*rt));
	rt->kind = EMBER_RT_V8;
	rt->version = 11 << 16 | 3 << 8 | 0xff;
	memcpy(rt->off, off, sizeof(off));
	rt->off[EMBER_V8_TYPE_TRUSTED_FIXED_ARRAY] = EMBER_RT_OFF_NONE; /* Node 20: none */
	rt->off[EMBER_V8_TYPE_TRUSTED_BYTE_ARRAY] = EMBER_RT_OFF_NONE;
	rt->off[EMBER_V8_CODE_HEADER] = EMBER_RT_OFF_NONE;
	for (int i = EMBER_V8_SCOPE_POSITION; i < EMBER_V8_OFF_NR; i++)
		rt->off[i] = EMBER_RT_OFF_NONE; /* V8 13.6's: none */
	rt->off[EMBER_V8_DEOPT_LITERALS] = 2;	/* the functions inlined */
	rt->off[EMBER_V8_TYPE_WEAK_ARRAY] = 240;
	rt->off[EMBER_V8_BYTECODE_COUNT] = 8; /* sizes of 8 bytecodes, at HEAP */
	rt->addr[1] = HEAP;
	rt->off[EMBER_V8_JSFUNC_FEEDBACK] = 40; /* on-stack-replaced code: Node 20's */
	rt->off[EMBER_V8_CELL_VALUE] = 8;
	rt->off[EMBER_V8_TYPE_FEEDBACK_VECTOR] = 249;
}

static void check_name(const struct rt_name *n)
{
	if (memchr(n->function, 0, sizeof(n->function)) == NULL ||
	    memchr(n->file, 0, sizeof(n->file)) == NULL || n->n_inlined > RT_INLINED_MAX)
		__builtin_trap();
	for (uint32_t i = 0; i < n->n_inlined; i++)
		if (memchr(n->inlined[i].function, 0, sizeof(n->inlined[i].function)) == NULL ||
		    memchr(n->inlined[i].file, 0, sizeof(n->inlined[i].file)) == NULL)
			__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct image im = {data, size};
	struct rt_mem mem = {image_read, &im, NULL};
	struct ember_rt_proc rt;
	struct rt_name n;
	uint64_t pos;
	int64_t bc;

	for (int64_t off = -1; off < 64; off++)
		(void)v8_position_at(data, size, off, &pos);
	for (uint32_t pc = 0; size > 24 && pc < 256; pc += 13)
		(void)v8_baseline_offset(data + 24, size - 24, data + 24, size - 24, data, 8, pc,
					 &bc);
	layout(&rt);
	/* words at the first objects the input could hold, with a few offsets */
	for (uint64_t obj = HEAP; obj < HEAP + 256 && obj < HEAP + size; obj += 8) {
		const uint32_t aux[] = {0, 7, 0x40, EMBER_RT_AUX_MAX};

		for (size_t i = 0; i < sizeof(aux) / sizeof(aux[0]); i++) {
			(void)v8_name(&mem, &rt, EMBER_RT_WORD(EMBER_RT_V8, aux[i], obj), &n);
			check_name(&n);
			(void)v8_name(&mem, &rt,
				      EMBER_RT_WORD(EMBER_RT_WORD_V8_BASELINE, aux[i], obj), &n);
			check_name(&n);
			(void)v8_name(&mem, &rt, EMBER_RT_WORD(EMBER_RT_WORD_V8_OSR, aux[i], obj),
				      &n);
			check_name(&n);
		}
	}
	return 0;
}
