// SPDX-License-Identifier: MIT
/*
 * membound: the memory bound against fake caches and a fake RSS. Over the
 * limit it shrinks by the excess, once per excursion in the log's count, and
 * not again until RSS grew by 1/16 of the limit when the rest is not cache.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "membound.h"
#include "suites.h"

#define MiB (1ULL << 20)

/* The fake: caches of `cache` bytes, RSS of `base` bytes that are not cache, plus the caches. */
struct fake {
	uint64_t base, cache;
	uint64_t caps_limit; /* the last limit set_caps was given */
	int caps_calls, shrinks, measures;
	uint64_t last_target;
};

static struct fake fk;
static struct interval_report rep;
static struct membound mb;

static void fake_caps(void *arg, uint64_t limit)
{
	struct fake *f = arg;

	f->caps_limit = limit;
	f->caps_calls++;
}

static uint64_t fake_shrink(void *arg, uint64_t target)
{
	struct fake *f = arg;
	uint64_t freed = f->cache > target ? f->cache - target : 0;

	f->shrinks++;
	f->last_target = target;
	f->cache -= freed;
	return freed;
}

/* What the report reads: RSS and the caches' bytes. */
static void fake_read(struct fake *f, struct interval_report *r)
{
	r->st.mem.rss = f->base + f->cache;
	memset(r->st.caches, 0, sizeof(r->st.caches));
	r->st.caches[STATUS_CACHE_BINARIES].bytes = f->cache;
}

static void fake_measure(void *arg, struct interval_report *r)
{
	struct fake *f = arg;

	f->measures++;
	fake_read(f, r);
}

static void setup(void)
{
	memset(&fk, 0, sizeof(fk));
	memset(&rep, 0, sizeof(rep));
	membound_init(&mb, &(struct membound_ops){fake_caps, fake_shrink, fake_measure, &fk},
		      100 * MiB);
}

/* One interval: the report gathered, then the bound. */
static void interval(uint64_t limit)
{
	fake_read(&fk, &rep);
	membound_check(&mb, limit, &rep);
}

/* The trim test measures glibc's heap (see EMBER_ASAN_ALLOCATOR in suites.h). */
#ifndef EMBER_ASAN_ALLOCATOR
/* This process's anonymous resident memory, in bytes. */
static uint64_t rss_anon(void)
{
	char line[128];
	unsigned long long kib = 0;
	FILE *f = fopen("/proc/self/status", "r");

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "RssAnon: %llu kB", &kib) == 1)
			break;
	fclose(f);
	return kib * 1024;
}

/*
 * 16 MiB in small blocks, all freed but the last (the heap's top cannot
 * shrink past it): they stay resident (for the next interval's reuse) while
 * RSS is under half the limit, and the check after the interval hands them
 * back once it is past; again only once RSS grew by 256 KiB.
 */
START_TEST(test_trims_free_heap)
{
	enum { N = 4096, SIZE = 4096 };
	static char *v[N];
	uint64_t before, after;

	fk.base = 10 * MiB;
	fake_read(&fk, &rep);
	for (int i = 0; i < N; i++) {
		v[i] = malloc(SIZE);
		ck_assert_ptr_nonnull(v[i]);
		memset(v[i], 1, SIZE);
	}
	for (int i = 0; i < N - 1; i++)
		free(v[i]);
	before = rss_anon();
	membound_check(&mb, 64 * MiB, &rep); /* 10 MiB: far from the bound, kept */
	ck_assert_uint_eq(mb.trims, 0);
	ck_assert_uint_eq(fk.measures, 0);
	membound_check(&mb, 16 * MiB, &rep); /* past half of it: handed back */
	after = rss_anon();
	ck_assert_uint_eq(mb.trims, 1);
	ck_assert_msg(after + 8 * MiB < before, "RssAnon %llu KiB before the trim, %llu after",
		      (unsigned long long)before >> 10, (unsigned long long)after >> 10);
	ck_assert_uint_eq(rep.st.mem.rss, 10 * MiB); /* measured again after it */
	membound_check(&mb, 16 * MiB, &rep);	     /* RSS did not grow since */
	ck_assert_uint_eq(mb.trims, 1);
	fk.base += 128 * 1024; /* grew by less than 256 KiB: not yet */
	fake_read(&fk, &rep);
	membound_check(&mb, 16 * MiB, &rep);
	ck_assert_uint_eq(mb.trims, 1);
	fk.base += 256 * 1024; /* it grew: trimmed again (16 MiB are still free) */
	fake_read(&fk, &rep);
	membound_check(&mb, 16 * MiB, &rep);
	ck_assert_uint_eq(mb.trims, 2);
	free(v[N - 1]);
}
END_TEST
#endif

/* SQLite's memory is bounded (softly) once the bound is set up. */
START_TEST(test_sqlite_bounded)
{
	ck_assert_int_eq(sqlite3_soft_heap_limit64(-1), 2 * 1024 * 1024);
}
END_TEST

START_TEST(test_caps_follow_limit)
{
	ck_assert_int_eq(fk.caps_calls, 1);
	ck_assert_uint_eq(fk.caps_limit, 100 * MiB);
	interval(100 * MiB);
	ck_assert_int_eq(fk.caps_calls, 1); /* unchanged: not set again */
	membound_limit(&mb, 50 * MiB);
	interval(50 * MiB);
	ck_assert_int_eq(fk.caps_calls, 2);
	ck_assert_uint_eq(fk.caps_limit, 50 * MiB);
	ck_assert_uint_eq(rep.st.mem.limit, 50 * MiB);
}
END_TEST

START_TEST(test_under_limit)
{
	fk.base = 40 * MiB;
	fk.cache = 50 * MiB;
	interval(100 * MiB);
	ck_assert_int_eq(fk.shrinks, 0);
	ck_assert(!rep.st.mem.over);
	ck_assert_uint_eq(rep.st.mem.shrink_runs, 0);
}
END_TEST

/* 130 MiB over 100: the caches (60 MiB) give back the 30 MiB excess, and RSS is under again. */
START_TEST(test_shrinks_by_excess)
{
	fk.base = 70 * MiB;
	fk.cache = 60 * MiB;
	interval(100 * MiB);
	ck_assert_int_eq(fk.shrinks, 1);
	ck_assert_uint_eq(fk.last_target, 30 * MiB);
	ck_assert_int_eq(fk.measures, 1);
	ck_assert_uint_eq(rep.st.mem.rss, 100 * MiB);
	ck_assert_uint_eq(rep.st.mem.last_freed, 30 * MiB);
	ck_assert_uint_eq(rep.st.mem.freed_total, 30 * MiB);
	ck_assert_uint_eq(rep.st.mem.shrink_runs, 1);
	ck_assert_uint_eq(rep.st.mem.shrink_events, 1);
	ck_assert(rep.st.mem.over);
	ck_assert_int_ne(rep.st.mem.last_shrink_ns, 0);
	ck_assert_uint_eq(rep.st.caches[STATUS_CACHE_BINARIES].bytes, 30 * MiB);
	/* at the limit: under it again, the excursion ends */
	interval(100 * MiB);
	ck_assert_int_eq(fk.shrinks, 1);
	ck_assert(!rep.st.mem.over);
}
END_TEST

/*
 * What is over is not cache: all the caches go, RSS stays over, and the next
 * shrink waits until RSS grew by limit/16; the excursion is counted once.
 */
START_TEST(test_not_cache_waits)
{
	fk.base = 150 * MiB;
	fk.cache = 10 * MiB;
	interval(128 * MiB);
	ck_assert_int_eq(fk.shrinks, 1);
	ck_assert_uint_eq(fk.last_target, 0); /* held 10 MiB < excess 32 MiB: all of it */
	ck_assert_uint_eq(rep.st.mem.rss, 150 * MiB);
	ck_assert(rep.st.mem.over);
	/* caches refill by 5 MiB: under 150 + 128/16 = 158 MiB, no shrink */
	fk.cache = 5 * MiB;
	interval(128 * MiB);
	ck_assert_int_eq(fk.shrinks, 1);
	ck_assert_uint_eq(rep.st.mem.shrink_runs, 1);
	/* 9 MiB more: over 158, shrunk again, still the same excursion */
	fk.cache = 9 * MiB;
	interval(128 * MiB);
	ck_assert_int_eq(fk.shrinks, 2);
	ck_assert_uint_eq(rep.st.mem.shrink_runs, 2);
	ck_assert_uint_eq(rep.st.mem.shrink_events, 1);
	ck_assert_uint_eq(rep.st.mem.freed_total, 19 * MiB);
	/* back under: a new excursion later counts as a second event */
	fk.base = 100 * MiB;
	interval(128 * MiB);
	ck_assert(!rep.st.mem.over);
	fk.base = 200 * MiB;
	interval(128 * MiB);
	ck_assert_uint_eq(rep.st.mem.shrink_events, 2);
	ck_assert_int_eq(fk.shrinks, 3);
}
END_TEST

Suite *membound_suite(void)
{
	Suite *s = suite_create("membound");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_caps_follow_limit);
	tcase_add_test(tc, test_under_limit);
	tcase_add_test(tc, test_shrinks_by_excess);
	tcase_add_test(tc, test_not_cache_waits);
#ifndef EMBER_ASAN_ALLOCATOR
	tcase_add_test(tc, test_trims_free_heap);
#endif
	tcase_add_test(tc, test_sqlite_bounded);
	suite_add_tcase(s, tc);
	return s;
}
