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

	return found ? *found : NULL;
}

static void free_negative(void *p)
{
	struct table *t = p;

	if (t->id == NO_ID)
		free(t);
}

/* Forgets every negative entry once there are too many (each is merely tried again). */
static void trim_negatives(struct tablecache *c)
{
	if (c->negatives < TABLECACHE_NEGATIVE_MAX)
		return;
	tdestroy(c->tree, free_negative);
	c->tree = NULL;
	c->negatives = 0;
	for (size_t i = 0; i < EMBER_UNWIND_TABLES_MAX; i++)
		if (c->by_id[i] && !c->by_id[i]->vdso)
			tsearch(c->by_id[i], &c->tree, cmp_table);
}

bool tablecache_insert(struct tablecache *c, struct table *t)
{
	if (t->id == NO_ID) {
		trim_negatives(c);
		c->negatives++;
	}
	return tsearch(t, &c->tree, cmp_table) != NULL;
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
	c->tree = NULL;
	c->negatives = 0;
}
