// SPDX-License-Identifier: MIT
/*
 * The memory bound: caches sized from memory_limit, and shrunk by what RSS
 * exceeds it by, from the figures of the interval report; free heap pages
 * handed back once RSS nears it.
 */
#include <inttypes.h>
#include <malloc.h>
#include <time.h>

#include <sqlite3.h>

#include "clock.h"
#include "log.h"
#include "membound.h"

/* Allocations this big are mapped and unmapped on their own (see membound_init). */
#define MMAP_THRESHOLD (256 * 1024)
/*
 * SQLite's page caches (512 KiB per connection, history.c's CACHE_KIB:
 * the writer, the uploader, rollups, checks) grow with the history until
 * full; past this soft limit on all its memory together, SQLite reuses its
 * pages instead (they are in the kernel's page cache anyway).
 */
#define SQLITE_SOFT_LIMIT (2 * 1024 * 1024)
/*
 * Free heap bytes past which the arenas are trimmed after an interval (see
 * trim()). A trim costs a walk of the arenas' free lists (tens of µs), so it
 * can be this small: at 1 MiB, free space left by the churn of processes grew
 * RSS by ~20 KiB a minute for the best part of an hour before one happened.
 */
#define TRIM_FREE_BYTES (256 * 1024)

/* The caches' caps follow memory_limit, which a reload may change. */
void membound_limit(struct membound *mb, uint64_t limit)
{
	if (limit == mb->applied_limit)
		return;
	mb->ops.set_caps(mb->ops.arg, limit);
	mb->applied_limit = limit;
}

void membound_malloc_setup(void)
{
	/*
	 * Parsing a binary reads its symbol sections into buffers that are freed
	 * once its symbols are kept. A fixed mmap threshold hands such big buffers
	 * back to the system at once (glibc's moving threshold would keep them in
	 * the arena), so that RSS follows what the caches account for.
	 */
	mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
	/*
	 * One arena for every thread. glibc gives each thread that allocates
	 * (the loader, the unwinder, the uploader, the rollup builder) an arena
	 * of its own, whose resident high-water mark malloc_trim() does not
	 * bring down: the first hourly rollup build left ~0.6 MiB resident in
	 * the builder's for the daemon's life (anonymous RSS 4012 -> 4592 KiB
	 * at a first build; 3612 -> 3616 with one arena, same run, same load).
	 * The threads allocate little and rarely at once: the lock they then
	 * share costs nothing measurable, and the main arena's free pages and
	 * top are all given back by trim().
	 */
	mallopt(M_ARENA_MAX, 1);
}

void membound_init(struct membound *mb, const struct membound_ops *ops, uint64_t limit)
{
	*mb = (struct membound){.ops = *ops};
	sqlite3_soft_heap_limit64(SQLITE_SOFT_LIMIT);
	membound_limit(mb, limit);
}

/*
 * Memory freed inside the arena stays resident: glibc gives back only the top
 * of the heap by itself, and what a parse or a push freed lies between what is
 * still in use. Once RSS is past half of memory_limit, grew by TRIM_FREE_BYTES
 * since the last trim and as much is free, malloc_trim() hands the free pages
 * back (madvise): RSS then follows what is in use instead of creeping up with
 * each new binary and process. Not below that mark: a host where processes
 * come and go reuses those pages the next interval, and trimming them every
 * interval cost madvise calls, TLB shoot-downs and the page faults of taking
 * them again (4% of emberd's CPU under a few commands a second).
 */
static void trim(struct membound *mb, uint64_t limit, struct interval_report *r)
{
	struct mallinfo2 mi;

	if (r->st.mem.rss < limit / 2)
		return;
	if (mb->trims && r->st.mem.rss < mb->rss_at_trim + TRIM_FREE_BYTES)
		return;
	mi = mallinfo2();
	if (mi.fordblks < TRIM_FREE_BYTES)
		return;
	malloc_trim(0);
	mb->trims++;
	mb->ops.measure(mb->ops.arg, r);
	mb->rss_at_trim = r->st.mem.rss;
}

static uint64_t caches_held(const struct ember_status *st)
{
	uint64_t n = 0;

	for (int i = 0; i < STATUS_CACHE_NR; i++)
		n += st->caches[i].bytes;
	return n;
}

/* Back under the limit: said once, when it happens. */
static void under_limit(struct membound *mb, struct status_memory *m)
{
	if (m->over)
		log_info("memory: RSS %" PRIu64 " MiB is under memory_limit %" PRIu64 " MiB again",
			 m->rss >> 20, m->limit >> 20);
	m->over = false;
	mb->rss_after_shrink = 0;
}

/*
 * Over memory_limit, the caches give back what RSS exceeds it by (or all they
 * can). Logged once per excursion over the limit, not every interval it
 * lasts. When a shrink could not bring RSS under the limit (what is left is
 * not cache), the next one waits until RSS grew by 1/16 of the limit:
 * emptying the caches every interval would only re-read the same binaries and
 * perf maps again and again.
 */
void membound_check(struct membound *mb, uint64_t limit, struct interval_report *r)
{
	struct status_memory *m = &r->st.mem;
	uint64_t held, excess, freed, before;

	membound_limit(mb, limit);
	trim(mb, limit, r);
	before = m->rss;
	m->limit = limit;
	if (m->rss <= m->limit) {
		under_limit(mb, m);
		return;
	}
	if (mb->rss_after_shrink && m->rss <= mb->rss_after_shrink + m->limit / 16)
		return;
	held = caches_held(&r->st);
	excess = m->rss - m->limit;
	freed = mb->ops.shrink(mb->ops.arg, held > excess ? held - excess : 0);
	m->shrink_runs++;
	m->last_shrink_ns = real_ns();
	m->last_freed = freed;
	m->freed_total += freed;
	mb->ops.measure(mb->ops.arg, r);
	mb->rss_after_shrink = m->rss > m->limit ? m->rss : 0;
	if (m->over)
		return;
	m->over = true;
	m->shrink_events++;
	log_warnx("memory: RSS %" PRIu64 " MiB over memory_limit %" PRIu64 " MiB: freed %" PRIu64
		  " KiB of symbol caches, RSS now %" PRIu64 " MiB%s",
		  before >> 20, m->limit >> 20, freed >> 10, m->rss >> 20,
		  m->rss > m->limit ? " (still over: the rest is not cache; raise memory_limit)" :
				      "");
}
