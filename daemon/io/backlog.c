// SPDX-License-Identifier: MIT
/*
 * The store backlog: a queue of profiles bounded in bytes, oldest dropped
 * first (see backlog.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backlog.h"

void backlog_init(struct backlog *b, uint64_t cap)
{
	memset(b, 0, sizeof(*b));
	b->cap = cap;
}

static void drop_oldest(struct backlog *b)
{
	uint64_t bytes = b->head->bytes;

	backlog_pop(b);
	b->dropped++;
	b->dropped_bytes += bytes;
}

void backlog_set_cap(struct backlog *b, uint64_t cap)
{
	b->cap = cap;
	while (b->head && b->bytes > b->cap)
		drop_oldest(b);
}

/* Copies s after the entry's other parts; returns where it went. */
static const char *put_str(char **at, const char *s)
{
	size_t n = strlen(s) + 1;
	char *dst = *at;

	memcpy(dst, s, n);
	*at += n;
	return dst;
}

int backlog_push(struct backlog *b, const struct history_meta *m, const uint8_t *pprof, size_t len)
{
	const char *type = m->type ? m->type : "", *app = m->app ? m->app : "";
	const char *labels = m->labels ? m->labels : "";
	size_t strs = strlen(type) + strlen(app) + strlen(labels) + 3;
	uint64_t bytes = sizeof(struct backlog_entry) + strs + len;
	struct backlog_entry *e;
	char *at;

	if (bytes > b->cap) {
		b->dropped++;
		b->dropped_bytes += bytes;
		return -E2BIG;
	}
	e = malloc(sizeof(*e) + strs + len);
	if (!e)
		return -ENOMEM;
	while (b->head && b->bytes + bytes > b->cap)
		drop_oldest(b);
	e->next = NULL;
	e->meta = *m;
	e->pprof = (uint8_t *)(e + 1);
	memcpy(e->pprof, pprof, len);
	e->len = len;
	at = (char *)e->pprof + len;
	e->meta.type = put_str(&at, type);
	e->meta.app = put_str(&at, app);
	e->meta.labels = put_str(&at, labels);
	e->bytes = bytes;
	if (b->tail)
		b->tail->next = e;
	else
		b->head = e;
	b->tail = e;
	b->n++;
	b->bytes += bytes;
	return 0;
}

const struct backlog_entry *backlog_peek(const struct backlog *b)
{
	return b->head;
}

void backlog_pop(struct backlog *b)
{
	struct backlog_entry *e = b->head;

	if (!e)
		return;
	b->head = e->next;
	if (!b->head)
		b->tail = NULL;
	b->n--;
	b->bytes -= e->bytes;
	free(e);
}

void backlog_free(struct backlog *b)
{
	while (b->head)
		backlog_pop(b);
}
