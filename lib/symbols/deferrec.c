// SPDX-License-Identifier: MIT
/*
 * A deferred sample record from the ring, checked: the program writes whole
 * pages of stack from the page holding sp, up to EMBER_DEFER_PAGES_MAX, and at
 * most EMBER_DEFER_KSTACK_MAX kernel frames; anything else is left out.
 */
#include <stddef.h>

#include "deferrec.h"
#include "uwalk.h"

/* The bytes of t that hold frames (0 when it is not a CPython trace or lies about its count). */
static size_t trace_bytes(const struct ember_rt_trace *t)
{
	if (t->kind != EMBER_RT_PYTHON || t->n > EMBER_RT_TRACE_MAX)
		return 0;
	return offsetof(struct ember_rt_trace, words) + t->n * sizeof(t->words[0]);
}

bool deferrec_view(const struct ember_deferred_sample *r, size_t size, struct deferrec_view *v)
{
	uint64_t len, skip;
	size_t room;

	if (size < sizeof(*r))
		return false;
	room = size - sizeof(*r);
	len = r->stack_len;
	skip = r->sp - r->stack_base;
	v->bad_stack = len > room || room > EMBER_DEFER_PAGES_MAX * EMBER_DEFER_PAGE ||
		       len % EMBER_DEFER_PAGE ||
		       r->stack_base != (r->sp & ~(uint64_t)(EMBER_DEFER_PAGE - 1));
	if (v->bad_stack || skip > len)
		len = skip = 0;
	/* an epilogue's rule may still find rbp below sp, where the record's page holds it */
	skip -= skip < UWALK_RED_ZONE ? skip : UWALK_RED_ZONE;
	v->stack = r->stack + skip;
	v->stack_len = len - skip;
	v->stack_base = r->stack_base + skip;
	v->bad_kstack = r->kstack_len > EMBER_DEFER_KSTACK_MAX;
	v->kstack_len = v->bad_kstack ? 0 : r->kstack_len;
	v->kips = r->kips;
	v->rt_bytes = trace_bytes(&r->rt);
	v->rt = v->rt_bytes ? &r->rt : NULL;
	return true;
}
