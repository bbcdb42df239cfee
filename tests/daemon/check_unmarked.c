// SPDX-License-Identifier: MIT
/*
 * Push verdicts the history cannot take (a full disk, made by a SQLite VFS
 * whose writes fail on demand): kept in memory, never pushed twice, written
 * once the disk takes writes again, and pushing paused while the list is full.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <sqlite3.h>

#include "clock.h"
#include "config.h"
#include "history.h"
#include "suites.h"
#include "uploader.h"
#include "uploader_fixture.h"

/* More than the uploader keeps: its list fills and it must pause. */
#define MAX_PROFILES (UPLOADER_UNMARKED_MAX + 8)

/* --- a disk that fills on demand: every write of SQLite fails with SQLITE_FULL -------- */

static atomic_bool disk_full;
static sqlite3_vfs *real_vfs;
static sqlite3_vfs full_vfs;

/* A file of full_vfs: the real one follows it in the same allocation. */
struct full_file {
	sqlite3_file base;
	sqlite3_file *real;
};

#define REAL(f) (((struct full_file *)(f))->real)

static int ff_close(sqlite3_file *f)
{
	return REAL(f)->pMethods->xClose(REAL(f));
}
static int ff_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off)
{
	return REAL(f)->pMethods->xRead(REAL(f), buf, n, off);
}
static int ff_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off)
{
	if (atomic_load(&disk_full))
		return SQLITE_FULL;
	return REAL(f)->pMethods->xWrite(REAL(f), buf, n, off);
}
static int ff_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	return REAL(f)->pMethods->xTruncate(REAL(f), size);
}
static int ff_sync(sqlite3_file *f, int flags)
{
	return REAL(f)->pMethods->xSync(REAL(f), flags);
}
static int ff_size(sqlite3_file *f, sqlite3_int64 *size)
{
	return REAL(f)->pMethods->xFileSize(REAL(f), size);
}
static int ff_lock(sqlite3_file *f, int lock)
{
	return REAL(f)->pMethods->xLock(REAL(f), lock);
}
static int ff_unlock(sqlite3_file *f, int lock)
{
	return REAL(f)->pMethods->xUnlock(REAL(f), lock);
}
static int ff_reserved(sqlite3_file *f, int *out)
{
	return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}
static int ff_control(sqlite3_file *f, int op, void *arg)
{
	return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}
static int ff_sector(sqlite3_file *f)
{
	return REAL(f)->pMethods->xSectorSize(REAL(f));
}
static int ff_device(sqlite3_file *f)
{
	return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}
static int ff_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **out)
{
	return REAL(f)->pMethods->xShmMap(REAL(f), region, size, extend, out);
}
static int ff_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
	return REAL(f)->pMethods->xShmLock(REAL(f), offset, n, flags);
}
static void ff_shm_barrier(sqlite3_file *f)
{
	REAL(f)->pMethods->xShmBarrier(REAL(f));
}
static int ff_shm_unmap(sqlite3_file *f, int delete_flag)
{
	return REAL(f)->pMethods->xShmUnmap(REAL(f), delete_flag);
}

/* Version 2: shared memory (WAL), no memory-mapped reads. */
static const sqlite3_io_methods full_methods = {
	.iVersion = 2,
	.xClose = ff_close,
	.xRead = ff_read,
	.xWrite = ff_write,
	.xTruncate = ff_truncate,
	.xSync = ff_sync,
	.xFileSize = ff_size,
	.xLock = ff_lock,
	.xUnlock = ff_unlock,
	.xCheckReservedLock = ff_reserved,
	.xFileControl = ff_control,
	.xSectorSize = ff_sector,
	.xDeviceCharacteristics = ff_device,
	.xShmMap = ff_shm_map,
	.xShmLock = ff_shm_lock,
	.xShmBarrier = ff_shm_barrier,
	.xShmUnmap = ff_shm_unmap,
};

static int ff_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out_flags)
{
	struct full_file *ff = (struct full_file *)f;
	int rc;

	(void)vfs;
	ff->real = (sqlite3_file *)(ff + 1);
	rc = real_vfs->xOpen(real_vfs, name, ff->real, flags, out_flags);
	/* NULL: SQLite does not close a file that did not open */
	f->pMethods = rc == SQLITE_OK ? &full_methods : NULL;
	return rc;
}

/* Makes full_vfs SQLite's default: every history_open() after this uses it. */
static void use_full_vfs(void)
{
	if (real_vfs)
		return; /* registered by an earlier test of this process (CK_FORK=no) */
	real_vfs = sqlite3_vfs_find(NULL);
	ck_assert_ptr_nonnull(real_vfs);
	full_vfs = *real_vfs;
	full_vfs.zName = "ember-test-full";
	full_vfs.szOsFile = (int)sizeof(struct full_file) + real_vfs->szOsFile;
	full_vfs.xOpen = ff_open;
	ck_assert_int_eq(sqlite3_vfs_register(&full_vfs, 1), SQLITE_OK);
}

/* --- a collector that takes everything, counting what it got ------------------------- */

struct fake {
	pthread_mutex_t lock;
	size_t calls;
	long status;		    /* the answer to every push: 200, or 400 */
	size_t n_backoffs;	    /* pauses asked for */
	size_t calls_at_backoff[4]; /* calls made when the first pauses were asked */
};

static struct fake fake;
static struct upfx fx;

static int fake_send(void *ctx, const char *url, const uint8_t *body, size_t len,
		     struct push_reply *r)
{
	struct fake *f = ctx;

	(void)url, (void)body, (void)len;
	pthread_mutex_lock(&f->lock);
	f->calls++;
	r->status = f->status;
	r->body = f->status == 200 ? NULL : "{\"code\":\"invalid_argument\",\"message\":\"no\"}";
	r->body_len = r->body ? strlen(r->body) : 0;
	pthread_mutex_unlock(&f->lock);
	return 0;
}

static int64_t fake_backoff(void *ctx, unsigned int retry)
{
	struct fake *f = ctx;

	(void)retry;
	pthread_mutex_lock(&f->lock);
	if (f->n_backoffs < 4)
		f->calls_at_backoff[f->n_backoffs] = f->calls;
	f->n_backoffs++;
	pthread_mutex_unlock(&f->lock);
	return NS_PER_MS;
}

static const struct uploader_transport transport = {
	.send = fake_send,
	.backoff_ns = fake_backoff,
	.ctx = &fake,
};

static void setup(void)
{
	memset(&fake, 0, sizeof(fake));
	pthread_mutex_init(&fake.lock, NULL);
	fake.status = 200;
	atomic_store(&disk_full, false);
	use_full_vfs();
	upfx_setup(&fx, "check_unmarked");
}

static void teardown(void)
{
	atomic_store(&disk_full, false);
	upfx_teardown(&fx);
}

/* Stores n one-sample cpu profiles, 10 s apart, oldest first; their ids go to ids (may be NULL). */
static void store(size_t n, int64_t *ids)
{
	int64_t t = real_ns() - (int64_t)(n + 6) * 10 * NS_PER_SEC;

	for (size_t i = 0; i < n; i++)
		upfx_store(&fx, "a", "", t + (int64_t)i * 10 * NS_PER_SEC, (int64_t)i + 1,
			   ids ? &ids[i] : NULL);
}

static struct history_push_counts counts(void)
{
	return upfx_counts(&fx);
}

static struct uploader *start(void)
{
	return upfx_start(&fx, &transport);
}

static size_t calls(void)
{
	size_t n;

	pthread_mutex_lock(&fake.lock);
	n = fake.calls;
	pthread_mutex_unlock(&fake.lock);
	return n;
}

static size_t backoffs(void)
{
	size_t n;

	pthread_mutex_lock(&fake.lock);
	n = fake.n_backoffs;
	pthread_mutex_unlock(&fake.lock);
	return n;
}

/* The stats once done(st, arg) holds; fails past UPFX_BOUND_NS. */
static struct uploader_stats
wait_for(struct uploader *u, bool (*done)(const struct uploader_stats *, uint64_t), uint64_t arg)
{
	int64_t end = mono_ns() + UPFX_BOUND_NS;
	struct uploader_stats st;

	for (;;) {
		uploader_stats(u, &st);
		if (done(&st, arg))
			return st;
		ck_assert_msg(mono_ns() < end,
			      "uploader stuck: sent %llu rejected %llu unmarked %llu, %zu calls, "
			      "%zu pauses",
			      (unsigned long long)st.sent, (unsigned long long)st.rejected,
			      (unsigned long long)st.unmarked, calls(), backoffs());
		usleep(1000);
	}
}

static bool unmarked_is(const struct uploader_stats *st, uint64_t n)
{
	return st->unmarked == n;
}
static bool sent_at_least(const struct uploader_stats *st, uint64_t n)
{
	return st->sent >= n;
}
static bool rejected_at_least(const struct uploader_stats *st, uint64_t n)
{
	return st->rejected >= n;
}
static bool pending_is(const struct uploader_stats *st, uint64_t n)
{
	return st->pending == n;
}
static bool paused(const struct uploader_stats *st, uint64_t n)
{
	(void)st;
	return backoffs() >= n;
}

/* --- the history's side ------------------------------------------------------------ */

/* Pending profiles passed over by id, oldest and newest first; -ENOENT once all are. */
START_TEST(next_pending_except)
{
	struct history_verdict skip[3] = {{0}};
	struct history_pending p;
	struct history *h;
	int64_t ids[4];

	store(4, ids);
	h = history_open(fx.dir, false, NULL);
	ck_assert_ptr_nonnull(h);
	skip[0].id = ids[0];
	skip[1].id = ids[3];
	ck_assert_int_eq(history_next_pending_except(h, false, skip, 2, &p), 0);
	ck_assert_int_eq(p.id, ids[1]);
	history_pending_free(&p);
	ck_assert_int_eq(history_next_pending_except(h, true, skip, 2, &p), 0);
	ck_assert_int_eq(p.id, ids[2]);
	history_pending_free(&p);
	skip[2].id = ids[1];
	ck_assert_int_eq(history_next_pending_except(h, true, skip, 3, &p), 0);
	ck_assert_int_eq(p.id, ids[2]);
	history_pending_free(&p);
	skip[2].id = ids[2];
	skip[0].id = ids[1];
	skip[1].id = ids[0];
	ck_assert_int_eq(history_next_pending_except(h, false, skip, 3, &p), 0);
	ck_assert_int_eq(p.id, ids[3]);
	history_pending_free(&p);
	/* none passed over: the oldest, as history_next_pending() */
	ck_assert_int_eq(history_next_pending_except(h, false, NULL, 0, &p), 0);
	ck_assert_int_eq(p.id, ids[0]);
	history_pending_free(&p);
	history_close(h);
}
END_TEST

/* All or none: on a full disk nothing is written; a row gone is passed over. */
START_TEST(mark_all)
{
	struct history_verdict v[3];
	struct history_push_counts c;
	struct history_pending p;
	struct history *h;
	int64_t ids[3];

	store(3, ids);
	h = history_open(fx.dir, false, NULL);
	ck_assert_ptr_nonnull(h);
	v[0] = (struct history_verdict){.id = ids[0], .state = HISTORY_SENT, .at_ns = 1};
	v[1] = (struct history_verdict){
		.id = ids[2], .state = HISTORY_REJECTED, .message = "bad", .at_ns = 2};
	v[2] = (struct history_verdict){.id = ids[2] + 100, .state = HISTORY_SENT, .at_ns = 3};
	atomic_store(&disk_full, true);
	ck_assert_int_eq(history_mark_all(h, v, 3), -ENOSPC);
	atomic_store(&disk_full, false);
	c = counts();
	ck_assert_uint_eq(c.pending, 3);
	/* the failed commit left no transaction open: the next one works */
	ck_assert_int_eq(history_mark_all(h, v, 3), 0);
	c = counts();
	ck_assert_uint_eq(c.pending, 1);
	ck_assert_uint_eq(c.sent, 1);
	ck_assert_uint_eq(c.rejected, 1);
	ck_assert_int_eq(history_next_pending(h, false, &p), 0);
	ck_assert_int_eq(p.id, ids[1]);
	history_pending_free(&p);
	ck_assert_int_eq(history_mark_all(h, NULL, 0), 0);
	history_close(h);
}
END_TEST

/* --- the uploader's side ----------------------------------------------------------- */

/*
 * The collector takes each profile, the disk takes no verdict: each profile
 * is pushed once, its verdict kept; once the disk takes writes, all of them
 * are written and the queue is empty.
 */
START_TEST(kept_not_pushed_twice)
{
	struct uploader_stats st;
	struct uploader *u;

	store(5, NULL);
	atomic_store(&disk_full, true);
	u = start();
	wait_for(u, sent_at_least, 5);
	wait_for(u, unmarked_is, 5);
	ck_assert_uint_eq(counts().pending, 5);
	/* those 5 are pushed: not shown as waiting; idle, retrying the writes, no second push */
	wait_for(u, pending_is, 0);
	usleep(50 * 1000);
	ck_assert_uint_eq(calls(), 5);
	atomic_store(&disk_full, false);
	uploader_wake(u);
	st = wait_for(u, unmarked_is, 0);
	uploader_stop(u);
	ck_assert_uint_eq(calls(), 5);
	ck_assert_uint_eq(st.sent, 5);
	ck_assert_uint_eq(counts().sent, 5);
	ck_assert_uint_eq(counts().pending, 0);
}
END_TEST

/*
 * More profiles than the list holds: once it is full, pushing pauses (no
 * push until the verdicts are written), then goes on with the rest.
 */
START_TEST(full_list_pauses)
{
	struct uploader_stats st;
	struct uploader *u;
	size_t at_pause;

	store(MAX_PROFILES, NULL);
	atomic_store(&disk_full, true);
	u = start();
	wait_for(u, unmarked_is, UPLOADER_UNMARKED_MAX);
	wait_for(u, paused, 3);
	pthread_mutex_lock(&fake.lock);
	at_pause = fake.calls_at_backoff[0];
	pthread_mutex_unlock(&fake.lock);
	ck_assert_uint_eq(at_pause, UPLOADER_UNMARKED_MAX);
	ck_assert_uint_eq(calls(), UPLOADER_UNMARKED_MAX);
	ck_assert_uint_eq(counts().pending, MAX_PROFILES);
	atomic_store(&disk_full, false);
	wait_for(u, sent_at_least, MAX_PROFILES);
	st = wait_for(u, unmarked_is, 0);
	uploader_stop(u);
	ck_assert_uint_eq(calls(), MAX_PROFILES);
	ck_assert_uint_eq(st.sent, MAX_PROFILES);
	ck_assert_uint_eq(counts().sent, MAX_PROFILES);
	ck_assert_uint_eq(counts().pending, 0);
}
END_TEST

/* A rejection kept in memory keeps its state: written as rejected, not sent. */
START_TEST(kept_rejection)
{
	struct uploader *u;

	fake.status = 400;
	store(2, NULL);
	atomic_store(&disk_full, true);
	u = start();
	wait_for(u, rejected_at_least, 2);
	wait_for(u, unmarked_is, 2);
	atomic_store(&disk_full, false);
	uploader_wake(u);
	wait_for(u, unmarked_is, 0);
	uploader_stop(u);
	ck_assert_uint_eq(calls(), 2);
	ck_assert_uint_eq(counts().rejected, 2);
	ck_assert_uint_eq(counts().sent, 0);
}
END_TEST

/* A stop with verdicts still kept: they are lost, their profiles stay pending in the file. */
START_TEST(stop_while_kept)
{
	struct uploader *u;

	store(3, NULL);
	atomic_store(&disk_full, true);
	u = start();
	wait_for(u, unmarked_is, 3);
	uploader_stop(u);
	atomic_store(&disk_full, false);
	ck_assert_uint_eq(calls(), 3);
	ck_assert_uint_eq(counts().pending, 3);
}
END_TEST

Suite *unmarked_suite(void)
{
	Suite *s = suite_create("unmarked");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, next_pending_except);
	tcase_add_test(tc, mark_all);
	tcase_add_test(tc, kept_not_pushed_twice);
	tcase_add_test(tc, full_list_pauses);
	tcase_add_test(tc, kept_rejection);
	tcase_add_test(tc, stop_while_kept);
	suite_add_tcase(s, tc);
	return s;
}
