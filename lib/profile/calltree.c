// SPDX-License-Identifier: MIT
/* Call trees of a stackset; see calltree.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "util.h"

/* A key while looking a child up. */
struct child_key {
	uint32_t parent, name;
};

static bool child_match(const void *ctx, size_t idx, const void *key)
{
	const struct calltree *t = ctx;
	const struct child_key *k = key;

	return t->v[idx].parent == k->parent && t->v[idx].name == k->name;
}

static uint32_t child_hash(uint32_t parent, uint32_t name)
{
	return hash_fold(hash_mix(hash_mix(0, parent), name));
}

/* The child of parent named name, created when new; 0 on -ENOMEM. */
static uint32_t child(struct calltree *t, uint32_t parent, uint32_t name)
{
	struct child_key k = {.parent = parent, .name = name};
	uint32_t h = child_hash(parent, name);
	size_t found = hashtab_find(&t->tab, h, child_match, t, &k);
	struct calltree_node *p;

	if (found)
		return (uint32_t)found - 1;
	if (array_grow((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v), 1024) ||
	    hashtab_add(&t->tab, h, t->n))
		return 0;
	p = &t->v[parent];
	t->v[t->n] = (struct calltree_node){
		.name = name,
		.parent = parent,
		.next_sibling = p->first_child,
		.depth = p->depth + 1,
	};
	p->first_child = (uint32_t)t->n;
	return (uint32_t)t->n++;
}

/* Adds the frames[from], frames[from + step], ... path (n frames) under the root. */
static int add_path(struct calltree *t, const struct stackset_stack *st, long from, long step,
		    long n)
{
	uint32_t node = 0;

	for (int s = 0; s < STACKSET_SLOTS; s++)
		t->v[0].total[s] += st->value[s];
	for (long i = 0; i < n; i++) {
		node = child(t, node, st->frames[from + i * step]);
		if (!node)
			return -ENOMEM;
		for (int s = 0; s < STACKSET_SLOTS; s++)
			t->v[node].total[s] += st->value[s];
	}
	for (int s = 0; s < STACKSET_SLOTS; s++)
		t->v[node].self[s] += st->value[s];
	return 0;
}

static int add_stack(struct calltree *t, const struct stackset_stack *st, enum calltree_kind kind,
		     uint32_t focus)
{
	long n = st->n, i;

	if (kind == CALLTREE_TOP_DOWN)
		return add_path(t, st, 0, 1, n);
	if (kind == CALLTREE_CALLEES) {
		for (i = 0; i < n && st->frames[i] != focus; i++)
			;
		return i < n ? add_path(t, st, i, 1, n - i) : 0;
	}
	for (i = n - 1; i >= 0 && st->frames[i] != focus; i--)
		;
	return i >= 0 ? add_path(t, st, i, -1, i + 1) : 0;
}

static int by_name(const void *a, const void *b, void *arg)
{
	const struct calltree *t = arg;

	return strcmp(calltree_name(t, *(const uint32_t *)a),
		      calltree_name(t, *(const uint32_t *)b));
}

/* Relinks every node's children in name order. */
static int sort_children(struct calltree *t)
{
	uint32_t *kids = malloc(t->n * sizeof(uint32_t));
	size_t k;

	if (!kids)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		k = 0;
		for (uint32_t c = t->v[i].first_child; c; c = t->v[c].next_sibling)
			kids[k++] = c;
		if (k < 2)
			continue;
		qsort_r(kids, k, sizeof(*kids), by_name, t);
		t->v[i].first_child = kids[0];
		for (size_t j = 0; j < k; j++)
			t->v[kids[j]].next_sibling = j + 1 < k ? kids[j + 1] : 0;
	}
	free(kids);
	return 0;
}

int calltree_build(struct calltree *t, const struct stackset *s, enum calltree_kind kind,
		   uint32_t focus)
{
	struct stackset_stack st;
	int ret;

	*t = (struct calltree){.set = s};
	ret = array_grow((void **)&t->v, &t->cap, 1, sizeof(*t->v), 1024);
	if (ret)
		return ret;
	t->v[0] = (struct calltree_node){.name = CALLTREE_ROOT_NAME};
	t->n = 1;
	for (size_t i = 0; i < stackset_len(s); i++) {
		stackset_get(s, i, &st);
		ret = add_stack(t, &st, kind, focus);
		if (ret)
			goto fail;
	}
	ret = sort_children(t);
	if (!ret)
		return 0;
fail:
	calltree_free(t);
	return ret;
}

void calltree_free(struct calltree *t)
{
	free(t->v);
	hashtab_free(&t->tab);
	*t = (struct calltree){0};
}

const char *calltree_name(const struct calltree *t, uint32_t node)
{
	uint32_t name = t->v[node].name;

	return name == CALLTREE_ROOT_NAME ? "all" : stackset_name(t->set, name);
}

uint32_t *calltree_preorder(const struct calltree *t)
{
	uint32_t *order = malloc((t->n ? t->n : 1) * sizeof(uint32_t));
	uint32_t node = 0;
	size_t k = 0;

	if (!order || !t->n)
		return order;
	for (;;) {
		order[k++] = node;
		if (t->v[node].first_child) {
			node = t->v[node].first_child;
			continue;
		}
		while (node && !t->v[node].next_sibling)
			node = t->v[node].parent;
		if (!node)
			break;
		node = t->v[node].next_sibling;
	}
	return order;
}
