// SPDX-License-Identifier: MIT
/*
 * Retention: the history's size on disk, and the prune that keeps it within
 * its age and size bounds, in bounded steps on the sampling thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "history_int.h"

/*
 * How long a prune's WAL truncation waits for readers (emberctl, the uploader)
 * to leave the WAL: short, it runs on the sampling thread; a busy reader only
 * postpones the truncation to the next prune.
 */
#define CHECKPOINT_BUSY_MS 100
/* A deleted row frees about its blob plus this (its other columns, index entries). */
#define PRUNE_ROW_OVERHEAD 256
/* Rounds of "pick the oldest rows by blob size, delete, measure" per prune. */
#define PRUNE_ROUNDS 16
/*
 * A prune runs on the sampling thread. Over a large backlog (a first prune
 * after lowering a bound) it deletes at most this many rows and blob bytes
 * (deleting reads every overflow page: ~1 s per 100 MiB) and moves at most
 * this many pages (64 MiB of 4 KiB pages) to shrink the file; the next prunes
 * go on until the history is within its bounds.
 */
#define PRUNE_MAX_ROWS 4096
#define PRUNE_MAX_BYTES (64ULL << 20)
#define PRUNE_MAX_VACUUM_PAGES 16384

/* --- size and retention ------------------------------------------------------------ */

const struct history_upgrade *history_upgrade_info(const struct history *h)
{
	return &h->upgrade;
}

int history_size(struct history *h, struct history_size *s)
{
	char wal[PATH_MAX];
	struct stat st;
	int64_t pages, free_pages, page_size;
	int ret, rc;

	if (!h || !s)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	ret = hist_prepare(h, hist_push_sql[SIZE_PAGES], &h->push[SIZE_PAGES]);
	if (ret)
		return ret;
	rc = sqlite3_step(h->push[SIZE_PAGES]);
	if (rc == SQLITE_ROW) {
		pages = sqlite3_column_int64(h->push[SIZE_PAGES], 0);
		free_pages = sqlite3_column_int64(h->push[SIZE_PAGES], 1);
		page_size = sqlite3_column_int64(h->push[SIZE_PAGES], 2);
		if (pages > 0 && page_size > 0) {
			s->db_bytes = (uint64_t)pages * (uint64_t)page_size;
			if (free_pages > 0 && free_pages <= pages)
				s->free_bytes = (uint64_t)free_pages * (uint64_t)page_size;
		}
	}
	sqlite3_reset(h->push[SIZE_PAGES]);
	if (rc != SQLITE_ROW)
		return sqlite_errno(rc);
	if (stat(h->path, &st) == 0 && st.st_size > 0)
		s->file_bytes = (uint64_t)st.st_size;
	if (snprintf(wal, sizeof(wal), "%s-wal", h->path) < (int)sizeof(wal) &&
	    stat(wal, &st) == 0 && st.st_size > 0)
		s->wal_bytes = (uint64_t)st.st_size;
	return 0;
}

/* Steps a DELETE ... RETURNING length(blob): counts the rows and adds up their blobs. */
static int step_deleted(sqlite3_stmt *st, uint64_t *rows, uint64_t *bytes)
{
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t len = sqlite3_column_int64(st, 0);

		(*rows)++;
		*bytes += len > 0 ? (uint64_t)len : 0;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE ? 0 : sqlite_errno(rc);
}

/* ?1 protect_pending, then ?2 cutoff and ?3 limit for the statements that have them. */
static int bind_prune(sqlite3_stmt *st, bool protect_pending, int64_t cutoff, int64_t limit)
{
	int n = sqlite3_bind_parameter_count(st), rc = SQLITE_OK;

	rc |= sqlite3_bind_int(st, 1, protect_pending);
	if (n >= 2)
		rc |= sqlite3_bind_int64(st, 2, cutoff);
	if (n >= 3)
		rc |= sqlite3_bind_int64(st, 3, limit);
	if (rc != SQLITE_OK) {
		sqlite3_clear_bindings(st);
		return -ENOMEM;
	}
	return 0;
}

/* What one prune may still delete. */
struct prune_budget {
	int64_t rows;
	uint64_t bytes;
};

/*
 * How many of the oldest rows pick yields free about want bytes, from their
 * stored sizes: one pass over the index and the blobs' lengths (no blob is
 * read), instead of a delete-and-measure round per row; within the budget.
 */
static int rows_to_delete(struct history *h, enum push_stmt pick, bool protect_pending,
			  int64_t cutoff, uint64_t want, const struct prune_budget *b, int64_t *n)
{
	sqlite3_stmt *st;
	uint64_t sum = 0;
	int ret, rc = SQLITE_DONE;

	*n = 0;
	if (want > b->bytes)
		want = b->bytes;
	ret = hist_push_stmt(h, pick, false, &st);
	if (!ret)
		ret = bind_prune(st, protect_pending, cutoff, 0);
	if (ret)
		return ret;
	while (sum < want && *n < b->rows && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t len = sqlite3_column_int64(st, 0);

		sum += (len > 0 ? (uint64_t)len : 0) + PRUNE_ROW_OVERHEAD;
		(*n)++;
	}
	ret = rc != SQLITE_DONE && rc != SQLITE_ROW ? sqlite_errno(rc) : 0;
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return ret;
}

/* Deletes the n oldest rows del matches; counts them into *rows, *bytes and the budget. */
static int delete_rows(struct history *h, enum push_stmt del, bool protect_pending, int64_t cutoff,
		       int64_t n, struct prune_budget *b, uint64_t *rows, uint64_t *bytes)
{
	uint64_t nrows = 0, nbytes = 0;
	sqlite3_stmt *st;
	int ret;

	ret = hist_push_stmt(h, del, true, &st);
	if (!ret)
		ret = bind_prune(st, protect_pending, cutoff, n);
	if (!ret)
		ret = step_deleted(st, &nrows, &nbytes);
	*rows += nrows;
	*bytes += nbytes;
	b->rows -= (int64_t)nrows < b->rows ? (int64_t)nrows : b->rows;
	b->bytes -= nbytes < b->bytes ? nbytes : b->bytes;
	return ret;
}

static bool budget_spent(const struct prune_budget *b)
{
	return b->rows <= 0 || b->bytes == 0;
}

/* Profiles whose interval ended before cutoff_ns, oldest first, within the budget. */
static int prune_age(struct history *h, int64_t cutoff_ns, bool protect_pending,
		     struct prune_budget *b, struct history_prune_result *r)
{
	int64_t n;
	int ret;

	ret = rows_to_delete(h, PRUNE_AGE_PICK, protect_pending, cutoff_ns, UINT64_MAX, b, &n);
	if (!ret && n)
		ret = delete_rows(h, PRUNE_AGE, protect_pending, cutoff_ns, n, b, &r->aged,
				  &r->aged_bytes);
	if (!ret && n && budget_spent(b))
		r->more = true;
	return ret;
}

/*
 * The oldest prunable profiles until the pages in use fit max_size. Pages,
 * not blob bytes, are the bound: a row sharing its page with a survivor frees
 * nothing, so each round measures again and picks more.
 */
static int prune_size(struct history *h, uint64_t max_size, bool protect_pending,
		      struct prune_budget *b, struct history_prune_result *r)
{
	struct history_size sz;
	int64_t n;
	int ret;

	ret = history_size(h, &sz);
	for (int round = 0; !ret && sz.db_bytes - sz.free_bytes > max_size; round++) {
		if (round == PRUNE_ROUNDS || budget_spent(b)) {
			r->more = true; /* the next prune goes on */
			return 0;
		}
		ret = rows_to_delete(h, PRUNE_SIZE_PICK, protect_pending, 0,
				     sz.db_bytes - sz.free_bytes - max_size, b, &n);
		if (ret)
			return ret;
		if (n == 0) {
			r->over_size = true;
			return 0;
		}
		ret = delete_rows(h, PRUNE_SIZE, protect_pending, 0, n, b, &r->sized,
				  &r->sized_bytes);
		if (!ret)
			ret = history_size(h, &sz);
	}
	return ret;
}

#define STR_(x) #x
#define STR(x) STR_(x)

/*
 * Hands the pages deleted rows freed back to the file system, up to a bound
 * (free pages left over make r->more), and empties the WAL.
 */
static int compact(struct history *h, struct history_prune_result *r)
{
	static const char vacuum_sql[] =
		"PRAGMA incremental_vacuum(" STR(PRUNE_MAX_VACUUM_PAGES) ")";
	struct history_size sz;
	int rc, ret;

	rc = sqlite3_exec(h->db, vacuum_sql, NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return sqlite_errno(rc);
	ret = history_size(h, &sz);
	if (!ret && sz.free_bytes && h->incremental)
		r->more = true;
	return ret ? ret : checkpoint_truncate(h->db, CHECKPOINT_BUSY_MS);
}

int history_prune(struct history *h, int64_t now_ns, int64_t retention_ns, uint64_t max_size,
		  bool protect_pending, struct history_prune_result *r)
{
	struct prune_budget budget = {PRUNE_MAX_ROWS, PRUNE_MAX_BYTES};
	struct history_size sz;
	int64_t cutoff, oldest;
	int ret;

	if (!h || !r || retention_ns <= 0 || max_size == 0)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	if (h->read_only)
		return -EROFS;
	if (h->version < 3)
		return -ENODATA;
	cutoff = now_ns < INT64_MIN + retention_ns ? INT64_MIN : now_ns - retention_ns;
	ret = prune_age(h, cutoff, protect_pending, &budget, r);
	if (!ret)
		ret = prune_size(h, max_size, protect_pending, &budget, r);
	if (!ret)
		ret = history_size(h, &sz);
	/* the WAL counts too: what was written since the last checkpoint may tip it over */
	if (!ret && (r->aged + r->sized || sz.db_bytes + sz.wal_bytes > max_size)) {
		ret = compact(h, r);
		r->compacted = !ret;
		if (!ret)
			ret = history_size(h, &sz);
	}
	if (!ret && r->over_size && protect_pending)
		ret = history_pending_count(h, &r->pending, &oldest);
	if (!ret) {
		r->db_bytes = sz.db_bytes;
		r->file_bytes = sz.file_bytes;
		r->wal_bytes = sz.wal_bytes;
	}
	return ret;
}

int history_prunable(struct history *h, bool protect_pending, int64_t cutoff_ns, bool *any)
{
	struct prune_budget one = {1, UINT64_MAX};
	int64_t n = 0;
	int ret;

	if (!h || !any)
		return -EINVAL;
	if (protect_pending)
		ret = rows_to_delete(h, PRUNE_SIZE_PICK, true, 0, 1, &one, &n);
	else
		ret = rows_to_delete(h, PRUNE_AGE_PICK, false, cutoff_ns, 1, &one, &n);
	*any = n > 0;
	return ret;
}

/* --- the reserve ---------------------------------------------------------------------- */

static int reserve_path(const struct history *h, char *path, size_t len)
{
	return snprintf(path, len, "%s-reserve", h->path) < (int)len ? 0 : -ENAMETOOLONG;
}

int history_reserve(struct history *h, uint64_t bytes)
{
	char path[PATH_MAX];
	struct stat st;
	int fd, ret;

	if (!h || h->read_only)
		return -EINVAL;
	ret = reserve_path(h, path, sizeof(path));
	if (ret)
		return ret;
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	ret = fstat(fd, &st) ? -errno : 0;
	/* allocated, not a sparse size: the blocks are what is given back */
	if (!ret && (uint64_t)st.st_blocks * 512 < bytes)
		ret = -posix_fallocate(fd, 0, (off_t)bytes);
	close(fd);
	return ret;
}

int history_unreserve(struct history *h)
{
	char path[PATH_MAX];
	int ret;

	if (!h || h->read_only)
		return -EINVAL;
	ret = reserve_path(h, path, sizeof(path));
	if (ret)
		return ret;
	return unlink(path) ? -errno : 0;
}

int history_checkpoint(struct history *h)
{
	if (!h || h->read_only)
		return -EINVAL;
	return checkpoint_truncate(h->db, CHECKPOINT_BUSY_MS);
}
