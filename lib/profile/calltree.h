/* SPDX-License-Identifier: MIT */
/*
 * Call trees of a stackset: top-down from the roots of the stacks, or the
 * callers (bottom-up) or callees of one function. What `emberctl tree`,
 * `callers`, `callees` and the flame graphs draw.
 */
#ifndef EMBER_CALLTREE_H
#define EMBER_CALLTREE_H

#include <stddef.h>
#include <stdint.h>

#include "hashtab.h"
#include "stackset.h"

#define CALLTREE_ROOT_NAME UINT32_MAX

enum calltree_kind {
	CALLTREE_TOP_DOWN, /* root -> leaf, every stack */
	CALLTREE_CALLEES,  /* focus -> what it calls, from its outermost frame in a stack */
	CALLTREE_CALLERS,  /* focus -> who calls it, from its innermost frame toward main */
};

/* One node: a frame reached by one path. Node 0 is the root ("all"). */
struct calltree_node {
	uint32_t name;		       /* stackset name id; CALLTREE_ROOT_NAME for node 0 */
	uint32_t parent;	       /* the root's is 0 */
	uint32_t first_child;	       /* 0: none (the root is nobody's child) */
	uint32_t next_sibling;	       /* 0: none; siblings sorted by name */
	uint32_t depth;		       /* the root's is 0 */
	int64_t total[STACKSET_SLOTS]; /* value of the stacks through this node */
	int64_t self[STACKSET_SLOTS];  /* value of the stacks that end here */
};

struct calltree {
	struct calltree_node *v;
	size_t n, cap;
	struct hashtab tab;	    /* (parent, name) -> node */
	const struct stackset *set; /* for names */
};

/*
 * Builds t (zero-initialized) from s. For CALLEES and CALLERS only the stacks
 * that contain focus (a name id) count, each once, under the root's one child,
 * focus: recursion does not count a stack twice. 0 or -ENOMEM.
 */
int calltree_build(struct calltree *t, const struct stackset *s, enum calltree_kind kind,
		   uint32_t focus);
void calltree_free(struct calltree *t);
const char *calltree_name(const struct calltree *t, uint32_t node);
/* Node indexes in pre-order (parents before children, siblings in order); n entries. */
uint32_t *calltree_preorder(const struct calltree *t);

#endif
