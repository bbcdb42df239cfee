/* SPDX-License-Identifier: MIT */
/*
 * A deferred sample as the ring hands it over (struct ember_deferred_sample and
 * the stack bytes after it), checked before anything is taken from it: which
 * parts of it lie inside the record and can be walked.
 */
#ifndef EMBER_DEFERREC_H
#define EMBER_DEFERREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember/sample.h"

/* The usable parts of one record, each inside it. */
struct deferrec_view {
	const uint8_t *stack; /* user stack bytes kept: from sp less the red zone */
	size_t stack_len;     /* 0 when the record's stack is unsound */
	uint64_t stack_base;  /* user address of stack[0] */
	const __u64 *kips;    /* kernel frames, leaf first */
	uint32_t kstack_len;
	const struct ember_rt_trace *rt; /* CPython's frames, or NULL */
	size_t rt_bytes;		 /* of rt that hold frames */
	bool bad_stack;			 /* lengths or addresses the program never writes */
	bool bad_kstack;
};

/*
 * v from the record r of size bytes. False when r is shorter than its header;
 * else parts the program could not have written (a stack longer than the
 * record or not of whole pages, more kernel frames than fit) are left out of
 * v and said in bad_stack / bad_kstack.
 */
bool deferrec_view(const struct ember_deferred_sample *r, size_t size, struct deferrec_view *v);

#endif
