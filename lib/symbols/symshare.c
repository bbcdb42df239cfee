// SPDX-License-Identifier: MIT
/*
 * Pure: the symbol cache's charges per user and per process, and the room a
 * new binary has within them. A few hundred users and processes hold binaries
 * at once at most: a linear search, over entries removed when they reach 0.
 */
#include <errno.h>
#include <stdlib.h>

#include "symshare.h"

static struct symshare_ent *find(const struct symshare *t, uint8_t proc, uint32_t id)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].proc == proc && t->v[i].id == id)
			return &t->v[i];
	return NULL;
}

static uint64_t held(const struct symshare *t, uint8_t proc, uint32_t id)
{
	const struct symshare_ent *e = find(t, proc, id);

	return e ? e->bytes : 0;
}

/* bytes added to entry (proc, id), created on first charge and removed at 0. */
static int add(struct symshare *t, uint8_t proc, uint32_t id, int64_t bytes)
{
	struct symshare_ent *e = find(t, proc, id);

	if (!e) {
		if (bytes <= 0)
			return 0;
		if (t->n == t->cap) {
			size_t cap = t->cap ? 2 * t->cap : 16;
			struct symshare_ent *v = reallocarray(t->v, cap, sizeof(*v));

			if (!v)
				return -ENOMEM;
			t->v = v;
			t->cap = cap;
		}
		e = &t->v[t->n++];
		*e = (struct symshare_ent){.id = id, .proc = proc};
	}
	e->bytes += (uint64_t)bytes;
	if (!e->bytes)
		*e = t->v[--t->n];
	return 0;
}

int symshare_charge(struct symshare *t, uid_t uid, pid_t pid, int64_t bytes)
{
	uint64_t user = held(t, 0, (uint32_t)uid), proc = held(t, 1, (uint32_t)pid);

	/* a refund is never more than was charged, to either */
	if (bytes < 0 && (uint64_t)-bytes > (user < proc ? user : proc))
		bytes = -(int64_t)(user < proc ? user : proc);
	if (add(t, 0, (uint32_t)uid, bytes))
		return -ENOMEM;
	if (add(t, 1, (uint32_t)pid, bytes)) {
		add(t, 0, (uint32_t)uid, -bytes);
		return -ENOMEM;
	}
	t->total += (uint64_t)bytes;
	return 0;
}

uint64_t symshare_user(const struct symshare *t, uid_t uid)
{
	return held(t, 0, (uint32_t)uid);
}

uint64_t symshare_proc(const struct symshare *t, pid_t pid)
{
	return held(t, 1, (uint32_t)pid);
}

/* What a share of limit bytes has left with used held; lowers *room to it, noting by. */
static void bound(uint64_t limit, uint64_t used, enum symshare_by which, uint64_t *room,
		  enum symshare_by *by)
{
	uint64_t left = used < limit ? limit - used : 0;

	if (left < *room) {
		*room = left;
		*by = which;
	}
}

uint64_t symshare_room(const struct symshare *t, uid_t uid, pid_t pid, uint64_t cap,
		       enum symshare_by *by)
{
	uint64_t room = cap / SYMSHARE_FILE;

	*by = SYMSHARE_BY_FILE;
	bound(cap / SYMSHARE_PROC, symshare_proc(t, pid), SYMSHARE_BY_PROC, &room, by);
	if (uid != 0)
		bound(cap / SYMSHARE_USER, symshare_user(t, uid), SYMSHARE_BY_USER, &room, by);
	bound(cap, t->total, SYMSHARE_BY_CACHE, &room, by);
	return room;
}

void symshare_free(struct symshare *t)
{
	free(t->v);
	*t = (struct symshare){0};
}
