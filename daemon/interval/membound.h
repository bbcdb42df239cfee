/* SPDX-License-Identifier: MIT */
/*
 * The memory bound: sizes the symbol caches from memory_limit and, when the
 * interval report shows RSS over it, shrinks them by the excess. Acts through
 * ops (the symbolizer in emberd, fakes in the tests).
 */
#ifndef EMBER_MEMBOUND_H
#define EMBER_MEMBOUND_H

#include <stdint.h>

#include "report.h"

/* What the bound acts on: emberd's symbolizer and /proc/self, or a test's fakes. */
struct membound_ops {
	void (*set_caps)(void *arg, uint64_t memory_limit);    /* sizes the caches for a limit */
	uint64_t (*shrink)(void *arg, uint64_t target);	       /* caches down to target bytes:
								   the bytes freed */
	void (*measure)(void *arg, struct interval_report *r); /* RSS and caches into r again */
	void *arg;
};

/* The bound's state between intervals. */
struct membound {
	struct membound_ops ops;
	uint64_t applied_limit;	   /* the memory_limit the caps were derived from */
	uint64_t rss_after_shrink; /* still over after a shrink: RSS then, else 0 */
	uint64_t trims;		   /* intervals after which free heap pages were handed back */
	uint64_t rss_at_trim;	   /* RSS right after the last trim */
};

/*
 * How glibc's malloc serves emberd, so that RSS follows what is in use (big
 * buffers mapped apart, one arena; see membound.c): first thing in main(),
 * before any thread is started.
 */
void membound_malloc_setup(void);
/* Sets the caps for limit, and SQLite's soft heap limit. */
void membound_init(struct membound *mb, const struct membound_ops *ops, uint64_t limit);
/* New caps when limit changed (a reload): before the report reads the caches. */
void membound_limit(struct membound *mb, uint64_t limit);
/*
 * After each interval's report: (new caps if limit changed, free heap pages
 * handed back when RSS grew by 1 MiB since the last time, then) over limit,
 * the caches give back what RSS exceeds it by. Updates r->st.mem
 * (and r's RSS and caches when it shrank). Logs once per excursion over limit.
 */
void membound_check(struct membound *mb, uint64_t limit, struct interval_report *r);

#endif
