/* SPDX-License-Identifier: MIT */
/*
 * The pairing of a deferred off-CPU wait's walked sample with its end (struct
 * ember_offcpu_wait_end: when the thread ran again, and who woke it), in
 * either order: a wait walked before its end stays open for it; an end read
 * before its wait was walked (whose copy the ring lost, or gives later) is
 * kept early for it. Pure: two lists, no lock (one thread uses them).
 */
#ifndef EMBER_WAITPAIR_H
#define EMBER_WAITPAIR_H

#include <stdbool.h>
#include <stdint.h>

#include "ember/offcpu.h"

/* Waits walked and open for their end at once; beyond, the oldest is dropped. */
#define WAITPAIR_OPEN_MAX 1024
/* Ends read before their wait was walked: kept for it, this many at once (then the oldest goes). */
#define WAITPAIR_EARLY_MAX 64

/*
 * How a wait ended: ended false until it has; and who woke it: waker_ulen user
 * then waker_klen kernel frames in waker_ips (its own allocation, or NULL:
 * none), owned by whoever holds the end.
 */
struct wait_end {
	bool ended;
	uint64_t wait_ns, runq_ns;
	uint32_t waker_tgid, waker_ulen, waker_klen;
	uint32_t waker_uflags; /* EMBER_STACK_* of the waker's user stack */
	uint64_t *waker_ips;
};

/* A walked sample as the pairing sees it: the caller's sample holds one. */
struct wait_sample {
	struct wait_sample *next; /* in the open waits */
	uint64_t wait_id;	  /* 0: a sample, no wait */
	uint32_t tgid;
	struct wait_end end;
};

/* An end read before its wait was walked; wait_id 0: a free slot. */
struct wait_early {
	uint64_t wait_id; /* 0: a free slot */
	uint32_t tgid;
	uint32_t put; /* when it was kept (struct waitpair's nearly then) */
	struct wait_end end;
};

/* An open wait dropped (lost): its end, when it comes, is not kept nor counted again. */
struct wait_gone {
	uint64_t wait_id; /* 0: a free slot */
	uint32_t tgid;
};

/* The open waits and the early ends: zero-initialized with free_sample set, it is empty. */
struct waitpair {
	void (*free_sample)(struct wait_sample *s); /* the caller's, for the samples dropped */
	struct wait_sample *open;		    /* newest first */
	uint32_t nopen;
	struct wait_early early[WAITPAIR_EARLY_MAX]; /* a free slot first, else the oldest */
	uint32_t nearly;			     /* ends put there since the start */
	struct wait_gone gone[WAITPAIR_EARLY_MAX];   /* the waits dropped last: a ring */
	uint32_t ngone;				     /* put there since the start */
	uint64_t lost; /* waits left out: ended without their sample, or never */
};

void wait_end_free(struct wait_end *e);
/* Whether an ended wait is left out (too short: the program sends both times 0). */
bool wait_end_drops(const struct wait_end *e);
/*
 * The end r says into end: its times, and its waker's stacks copied (none:
 * none sent, or out of memory, which leaves the wait without a waker). False
 * when r's stacks are not as the program writes them: the end has no waker.
 */
bool wait_end_read(const struct ember_offcpu_wait_end *r, struct wait_end *end);
/* Whether the wait is also its waker's: a waker's stacks, and time waited until its wakeup. */
bool wait_end_has_waker(const struct wait_end *e);

/*
 * s walked: s when it is for the drain (a sample, or a wait ended, maybe by
 * an end kept early); NULL when p keeps it open for its end, or has freed it
 * (its end drops it).
 */
struct wait_sample *waitpair_walked(struct waitpair *p, struct wait_sample *s);
/*
 * The end (taken) of tgid's wait wait_id: the open wait it ends, out of p and
 * with its end, for the drain; NULL when its end dropped it (freed), or when
 * none is open: the end is kept early, the oldest of too many lost; or freed
 * when its wait was dropped already (counted lost then, not again).
 */
struct wait_sample *waitpair_end(struct waitpair *p, uint64_t wait_id, uint32_t tgid,
				 struct wait_end *end);
/* tgid exited: its open waits will not end (freed, lost). */
void waitpair_exited(struct waitpair *p, uint32_t tgid);
/* Frees every open wait and early end. */
void waitpair_clear(struct waitpair *p);

#endif
