// SPDX-License-Identifier: MIT
/* The unwind tables by file identity and by id, with their negative entries (tablecache.h). */
#include <search.h>
#include <stdlib.h>

#include "tablecache.h"

static int cmp_table(const void *a, const void *b)
{
	return file_key_cmp(&((const struct table *)a)->key, &((const struct table *)b)->key);
}

struct table *tablecache_find(struct tablecache *c, const struct file_key *key)
{
	struct table probe = {.key = *key}, **found = tfind(&probe, &c->tree, cmp_table);

	if (!found)
		found = tfind(&probe, &c->negative, cmp_table);
	return found ? *found : NULL;
}

/*
 * Forgets every negative entry once there are too many (each is merely tried
 * again): a tree of their own, so that the loaded tables' is never rebuilt.
 */
static void trim_negatives(struct tablecache *c)
{
	if (c->negatives < TABLECACHE_NEGATIVE_MAX)
		return;
	tdestroy(c->negative, free);
	c->negative = NULL;
	c->negatives = 0;
}

bool tablecache_insert(struct tablecache *c, struct table *t)
{
	if (t->id != NO_ID)
		return tsearch(t, &c->tree, cmp_table) != NULL;
	trim_negatives(c);
	if (!tsearch(t, &c->negative, cmp_table))
		return false;
	c->negatives++;
	return true;
}

void tablecache_place(struct tablecache *c, struct table *t)
{
	c->by_id[t->id] = t;
}

void tablecache_remove(struct tablecache *c, struct table *t)
{
	c->by_id[t->id] = NULL;
	tdelete(t, &c->tree, cmp_table);
}

static void free_table(void *p)
{
	if (!((struct table *)p)->vdso)
		free(p);
}

void tablecache_free(struct tablecache *c)
{
	tdestroy(c->tree, free_table);
	tdestroy(c->negative, free);
	c->tree = c->negative = NULL;
	c->negatives = 0;
}
