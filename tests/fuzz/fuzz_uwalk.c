// SPDX-License-Identifier: MIT
/*
 * libFuzzer: the user-space walk over a stack copy (lib/symbols/uwalk.c) with
 * registers, mappings, a table and stack bytes from the input. Whatever they
 * hold, the walk ends within EMBER_MAX_STACK_DEPTH frames, starts at ip, and
 * says why it ended.
 *
 * Input: ip, sp, bp, bx (little-endian u64); a byte n, then n mappings (start, end,
 * bias: u64; table: u32); a byte m, then m rows of table 0 (16 bytes each, as
 * include/ember/unwind.h); the rest is the stack, from sp's page.
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ember_unwind_proc proc;
	static struct uwalk_result res;
	struct input in = {0};
	uint64_t regs[4];
	uint8_t n, m;
	struct uwalk_rows src = {find, &in};
	struct uwalk_stack stk;

	memset(&proc, 0, sizeof(proc));
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
	stk = (struct uwalk_stack){data, regs[1] & ~4095ull, size};
	uwalk(n & 0x80 ? NULL : &proc, &src, &stk,
	      &(struct uwalk_regs){.ip = regs[0], .sp = regs[1], .bp = regs[2], .bx = regs[3]},
	      &res);
	if (res.n < 1 || res.n > EMBER_MAX_STACK_DEPTH || res.ips[0] != regs[0])
		__builtin_trap();
	if (res.end < EMBER_CPU_M_END_OUTERMOST || res.end > EMBER_CPU_M_END_DEPTH)
		__builtin_trap();
	if (res.truncated != (res.end == EMBER_CPU_M_END_DEPTH))
		__builtin_trap();
	if (res.by_table + res.by_fp + res.bad_rule != res.n)
		__builtin_trap(); /* every frame kept was stepped from, one way */
	return 0;
}
