// SPDX-License-Identifier: MIT
/* The pairing of a deferred off-CPU wait with its end (waitpair.h). */
#include <stdlib.h>
#include <string.h>

#include "waitpair.h"

void wait_end_free(struct wait_end *e)
{
	free(e->waker_ips);
	e->waker_ips = NULL;
}

bool wait_end_drops(const struct wait_end *e)
{
	return e->ended && !e->wait_ns && !e->runq_ns;
}

bool wait_end_read(const struct ember_offcpu_wait_end *r, struct wait_end *end)
{
	uint32_t ulen = r->waker_user.len, klen = r->waker_kern.len;

	*end = (struct wait_end){.ended = true, .wait_ns = r->wait_ns, .runq_ns = r->runq_ns};
	if (ulen > EMBER_MAX_STACK_DEPTH || klen > EMBER_MAX_STACK_DEPTH)
		return false;
	if (!ulen && !klen)
		return true;
	end->waker_ips = malloc((ulen + klen) * sizeof(uint64_t));
	if (!end->waker_ips)
		return true;
	memcpy(end->waker_ips, r->waker_user.ips, ulen * sizeof(uint64_t));
	memcpy(end->waker_ips + ulen, r->waker_kern.ips, klen * sizeof(uint64_t));
	end->waker_tgid = r->waker_tgid;
	end->waker_ulen = ulen;
	end->waker_klen = klen;
	end->waker_uflags = r->waker_user.flags;
	return true;
}

bool wait_end_has_waker(const struct wait_end *e)
{
	return e->waker_ips && e->wait_ns;
}

/* Into s (a wait not ended), its end if it was read early: the slot is free again. */
static void take_early(struct waitpair *p, struct wait_sample *s)
{
	for (int i = 0; i < WAITPAIR_EARLY_MAX; i++) {
		struct wait_early *e = &p->early[i];

		if (e->wait_id == s->wait_id && e->tgid == s->tgid) {
			s->end = e->end; /* its waker's stacks go with it */
			e->end.waker_ips = NULL;
			e->wait_id = 0;
			return;
		}
	}
}

/* Frees open wait s, dropped: lost, and its end, if it comes, freed (gone_take()). */
static void drop(struct waitpair *p, struct wait_sample *s)
{
	p->gone[p->ngone++ % WAITPAIR_EARLY_MAX] = (struct wait_gone){s->wait_id, s->tgid};
	p->lost++;
	p->free_sample(s);
}

/* Whether tgid's wait wait_id was dropped (forgotten now: an end comes once). */
static bool gone_take(struct waitpair *p, uint64_t wait_id, uint32_t tgid)
{
	for (int i = 0; i < WAITPAIR_EARLY_MAX; i++)
		if (p->gone[i].wait_id == wait_id && p->gone[i].tgid == tgid) {
			p->gone[i].wait_id = 0;
			return true;
		}
	return false;
}

/* Drops the oldest open wait (the list's last), lost. */
static void drop_oldest(struct waitpair *p)
{
	struct wait_sample **pp = &p->open;

	while (*pp && (*pp)->next)
		pp = &(*pp)->next;
	if (*pp) {
		drop(p, *pp);
		*pp = NULL;
		p->nopen--;
	}
}

struct wait_sample *waitpair_walked(struct waitpair *p, struct wait_sample *s)
{
	if (s->wait_id && !s->end.ended)
		take_early(p, s);
	if (wait_end_drops(&s->end)) {
		p->free_sample(s);
		return NULL;
	}
	if (!s->wait_id || s->end.ended)
		return s;
	if (p->nopen >= WAITPAIR_OPEN_MAX)
		drop_oldest(p);
	s->next = p->open;
	p->open = s;
	p->nopen++;
	return NULL;
}

/* Takes out of the open waits the one of tgid's wait wait_id: NULL when none is open. */
static struct wait_sample *take_open(struct waitpair *p, uint64_t wait_id, uint32_t tgid)
{
	for (struct wait_sample **pp = &p->open; *pp; pp = &(*pp)->next) {
		struct wait_sample *s = *pp;

		if (s->wait_id == wait_id && s->tgid == tgid) {
			*pp = s->next;
			p->nopen--;
			return s;
		}
	}
	return NULL;
}

/*
 * Keeps an end (taken) for its wait, in a free slot; all taken, in place of the
 * oldest kept, whose wait, never walked, is lost. (A ring lost an end kept
 * while WAITPAIR_EARLY_MAX others came and went: a slow walk's wait.)
 */
static void keep_early(struct waitpair *p, uint64_t wait_id, uint32_t tgid, struct wait_end *end)
{
	struct wait_early *slot = &p->early[0];

	for (int i = 0; i < WAITPAIR_EARLY_MAX && slot->wait_id; i++)
		if (!p->early[i].wait_id || p->nearly - p->early[i].put > p->nearly - slot->put)
			slot = &p->early[i];
	if (slot->wait_id)
		p->lost++;
	wait_end_free(&slot->end);
	*slot = (struct wait_early){wait_id, tgid, p->nearly++, *end};
}

struct wait_sample *waitpair_end(struct waitpair *p, uint64_t wait_id, uint32_t tgid,
				 struct wait_end *end)
{
	struct wait_sample *s = take_open(p, wait_id, tgid);

	if (!s && gone_take(p, wait_id, tgid)) {
		wait_end_free(end);
		return NULL;
	}
	if (!s) {
		keep_early(p, wait_id, tgid, end);
		return NULL;
	}
	s->end = *end;
	if (wait_end_drops(&s->end)) {
		p->free_sample(s);
		return NULL;
	}
	return s;
}

void waitpair_exited(struct waitpair *p, uint32_t tgid)
{
	for (struct wait_sample **pp = &p->open; *pp;) {
		struct wait_sample *s = *pp;

		if (s->tgid != tgid) {
			pp = &s->next;
			continue;
		}
		*pp = s->next;
		p->nopen--;
		drop(p, s);
	}
}

void waitpair_clear(struct waitpair *p)
{
	for (int i = 0; i < WAITPAIR_EARLY_MAX; i++)
		wait_end_free(&p->early[i].end);
	for (struct wait_sample *s = p->open, *next; s; s = next) {
		next = s->next;
		p->free_sample(s);
	}
	p->open = NULL;
	p->nopen = 0;
}
