/* SPDX-License-Identifier: MIT */
/*
 * Folded stacks by frame name: the samples of many pprof profiles merged as
 * they stream in (one decoded profile at a time), which is what emberctl's
 * views (top, tree, callers, flame graphs, folded) read. Two value slots let a
 * diff hold a base window (slot 1) beside the window of interest (slot 0).
 */
#ifndef EMBER_STACKSET_H
#define EMBER_STACKSET_H

#include <stddef.h>
#include <stdint.h>

#include "pprof.h"

#define STACKSET_SLOTS 2
/* Frames kept per stack: deeper ones keep their root-most frames. */
#define STACKSET_MAX_DEPTH 1024

/* One folded stack: frame name ids, root first, and its value in each slot. */
struct stackset_stack {
	const uint32_t *frames;
	uint32_t n;
	int64_t value[STACKSET_SLOTS];
};

struct stackset;

struct stackset *stackset_new(void);
void stackset_free(struct stackset *s);

/*
 * Adds the samples of p that pass f (NULL: all), counting the value of the
 * sample type named value_type (e.g. "samples"), into slot. Frames are the
 * functions of each location's lines (inlined ones included), or, for a
 * location without lines, pprof_unnamed_frame()'s "FILE+0xOFFSET" ("0xADDR").
 * 0; -ENOENT when p has no such sample type; -EBADMSG when p is invalid;
 * -ENOMEM.
 */
int stackset_add_profile(struct stackset *s, const pprof_profile *p, const struct pprof_filter *f,
			 const char *value_type, int slot);

/* stackset_add_profile() with r, a reader of p from pprof_decode_arena(): no second validation. */
int stackset_add_read(struct stackset *s, const pprof_profile *p, const struct pprof_reader *r,
		      const struct pprof_filter *f, const char *value_type, int slot);

/* Adds value to the stack of names (root first) in slot. 0 or -ENOMEM. */
int stackset_add(struct stackset *s, const char *const *names, size_t n, int64_t value, int slot);

size_t stackset_len(const struct stackset *s);
/* Stack i (0 <= i < stackset_len); its frames stay valid until the next add. */
void stackset_get(const struct stackset *s, size_t i, struct stackset_stack *out);
/* The name of id; ids are dense from 0 in order of first appearance. */
const char *stackset_name(const struct stackset *s, uint32_t id);
size_t stackset_names(const struct stackset *s);
/* The id of name, or -1 when no stack has it. */
int64_t stackset_find_name(const struct stackset *s, const char *name);
/* The sum of every stack's value in slot. */
int64_t stackset_total(const struct stackset *s, int slot);
/* Samples whose stack was cut at STACKSET_MAX_DEPTH frames. */
uint64_t stackset_truncated(const struct stackset *s);
/* Adds every stack of src, slot by slot, into dst (and its count of cut stacks). 0 or -ENOMEM. */
int stackset_merge(struct stackset *dst, const struct stackset *src);

#endif
