// SPDX-License-Identifier: MIT
/*
 * libFuzzer: the input as a deferred sample record from the ring (its header, then
 * the stack bytes), as emberd's deferred walks take it (lib/symbols/deferrec.c). The
 * program writes these, but their stack is any process's memory and their lengths
 * are only as right as the program: every part of the view must lie inside the
 * record, the stack kept must be where its address says, and bounds must hold.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "deferrec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool inside(const void *p, size_t len, const void *base, size_t size)
{
	const uint8_t *b = base, *q = p;

	return q >= b && (size_t)(q - b) <= size && len <= size - (size_t)(q - b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* the ring hands records 8-byte aligned */
	struct ember_deferred_sample *r = malloc(size ? size : 1);
	struct deferrec_view v;

	if (!r)
		return 0;
	memcpy(r, data, size);
	if (!deferrec_view(r, size, &v)) {
		if (size >= sizeof(*r))
			__builtin_trap();
		free(r);
		return 0;
	}
	if (!inside(v.stack, v.stack_len, r, size) ||
	    !inside(v.kips, v.kstack_len * sizeof(uint64_t), r, size) ||
	    (v.rt && !inside(v.rt, v.rt_bytes, r, size)) || (!v.rt && v.rt_bytes) ||
	    v.rt_bytes > sizeof(r->rt) || v.kstack_len > EMBER_DEFER_KSTACK_MAX ||
	    v.stack_len > EMBER_DEFER_PAGES_MAX * EMBER_DEFER_PAGE)
		__builtin_trap();
	/* stack[i] is the user byte at stack_base + i, as in the record */
	if ((uint64_t)(v.stack - r->stack) != v.stack_base - r->stack_base)
		__builtin_trap();
	if (v.stack_len && (v.stack_base > r->sp || v.bad_stack))
		__builtin_trap();
	/* a sound record's stack is kept from sp (less the red zone) to its end */
	if (!v.bad_stack && r->sp - r->stack_base <= r->stack_len &&
	    v.stack_base + v.stack_len != r->stack_base + r->stack_len)
		__builtin_trap();
	for (size_t i = 0; i < v.stack_len; i += 4096)
		(void)*(volatile const uint8_t *)(v.stack + i);
	free(r);
	return 0;
}
