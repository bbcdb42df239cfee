// SPDX-License-Identifier: MIT
/*
 * A damaged history: the bounded check of a writer's open, moving a damaged
 * file aside for a fresh one (copying over every row that still reads), and
 * the reads that go on by id past the damaged pages.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "clock.h"
#include "history_int.h"

/* Ids tried one by one past a damaged page when the largest id cannot be read either. */
#define SCAN_MAX_MISSES (1u << 20)
/* How often (in SQLite VM steps) a bounded statement looks at the clock. */
#define PROGRESS_STEPS 1000

struct deadline {
	int64_t end_ns;
	bool hit;
};

static int past_deadline(void *arg)
{
	struct deadline *d = arg;

	if (mono_ns() < d->end_ns)
		return 0;
	d->hit = true;
	return 1;
}

/* SQLite's complaint on one line ("*** in database main ***\nPage 20: ..."). */
static void set_why(char *why, size_t len, const char *msg)
{
	if (!why || !len)
		return;
	snprintf(why, len, "%s", msg ? msg : "damaged");
	for (char *c = why; *c; c++)
		if ((unsigned char)*c < 0x20)
			*c = ' ';
}

int history_check(struct history *h, int64_t budget_ns, bool *complete, char *why, size_t len)
{
	struct deadline d = {.end_ns = mono_ns() + budget_ns};
	sqlite3_stmt *st = NULL;
	const char *res;
	int rc, ret = 0;

	*complete = true;
	if (!h->db)
		return -EIO;
	sqlite3_progress_handler(h->db, PROGRESS_STEPS, past_deadline, &d);
	rc = sqlite3_prepare_v2(h->db, "PRAGMA quick_check(1)", -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		res = (const char *)sqlite3_column_text(st, 0);
		if (!res || strcmp(res, "ok")) {
			set_why(why, len, res);
			ret = -EBADMSG;
		}
	} else if ((rc & 0xff) == SQLITE_INTERRUPT && d.hit) {
		*complete = false;
	} else {
		ret = sqlite_errno(rc);
		set_why(why, len, sqlite3_errmsg(h->db));
	}
	sqlite3_finalize(st);
	sqlite3_progress_handler(h->db, 0, NULL, NULL);
	return ret;
}

void history_damage_info(const struct history *h, struct history_damage *d)
{
	*d = h->damage;
}

void history_recovery_info(const struct history *h, struct history_recovery *r)
{
	*r = h->recovery;
}

/* --- reading on by id ------------------------------------------------------------ */

/* One id's row: 0, -EBADMSG when it does not read (counted), another -errno stops. */
typedef int (*scan_fn)(int64_t id, void *arg);

struct scan {
	sqlite3 *db;
	const char *schema;  /* "main", or "dmg" for an attached damaged file */
	int64_t deadline_ns; /* 0: none */
	uint64_t read, unreadable;
	bool cut; /* the deadline came first */
	char first_error[128];
};

static int one_int(sqlite3 *db, const char *sql, int64_t *out)
{
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		*out = sqlite3_column_int64(st, 0);
	else if (rc == SQLITE_ROW)
		rc = SQLITE_DONE; /* an empty table */
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : sqlite_errno(rc);
}

/* The smallest or largest id, from the table or else from an index that holds every row. */
static int id_bound(struct scan *s, const char *agg, int64_t *out)
{
	char sql[160];
	int ret;

	snprintf(sql, sizeof(sql), "SELECT %s(id) FROM %s.profiles", agg, s->schema);
	ret = one_int(s->db, sql, out);
	if (ret != -EBADMSG)
		return ret;
	snprintf(sql, sizeof(sql), "SELECT %s(id) FROM %s.profiles INDEXED BY profiles_type_start",
		 agg, s->schema);
	return one_int(s->db, sql, out);
}

static void note_error(struct scan *s)
{
	if (!s->first_error[0])
		snprintf(s->first_error, sizeof(s->first_error), "%s", sqlite3_errmsg(s->db));
}

/*
 * Every id from the smallest on: the next id at or after x, then its row. A
 * seek that lands in a damaged page fails, or gives an id below x (a b-tree
 * whose keys are out of order): x moves on by one, counted, until the seek
 * passes the page; at most SCAN_MAX_MISSES in a row, whatever the largest id
 * claims. Without a readable largest id, misses are counted only when a row
 * reads after them. An id the seek gives whose row fn does not find
 * (-ENOENT) is unreadable, not read.
 */
static int scan_ids(struct scan *s, scan_fn fn, void *arg)
{
	int64_t x = 1, max = 0, id;
	uint64_t misses = 0, steps = 0;
	bool max_known;
	sqlite3_stmt *next;
	char sql[128];
	int rc, ret = 0;

	if (id_bound(s, "min", &x) == -ENOENT)
		return 0;
	max_known = id_bound(s, "max", &max) == 0;
	snprintf(sql, sizeof(sql), "SELECT id FROM %s.profiles WHERE id >= ?1 ORDER BY id LIMIT 1",
		 s->schema);
	rc = sqlite3_prepare_v2(s->db, sql, -1, &next, NULL);
	if (rc != SQLITE_OK) {
		note_error(s);
		return sqlite_errno(rc);
	}
	while ((!max_known || x <= max) && misses < SCAN_MAX_MISSES) {
		if (s->deadline_ns && !(++steps % 64) && mono_ns() > s->deadline_ns) {
			s->cut = true;
			break;
		}
		sqlite3_bind_int64(next, 1, x);
		rc = sqlite3_step(next);
		id = rc == SQLITE_ROW ? sqlite3_column_int64(next, 0) : 0;
		sqlite3_reset(next);
		if (rc == SQLITE_DONE)
			break;
		if (rc == SQLITE_ROW && id < x) {
			rc = SQLITE_CORRUPT;
			if (!s->first_error[0])
				snprintf(s->first_error, sizeof(s->first_error),
					 "row ids out of order (id %" PRId64 " after %" PRId64 ")",
					 id, x);
		}
		if (rc != SQLITE_ROW) {
			if (sqlite_errno(rc) != -EBADMSG) {
				ret = sqlite_errno(rc);
				break;
			}
			note_error(s);
			misses++;
			if (max_known)
				s->unreadable++;
			x++;
			continue;
		}
		if (!max_known)
			s->unreadable += misses;
		misses = 0;
		ret = fn(id, arg);
		if (ret == -EBADMSG || ret == -ENOENT) {
			note_error(s);
			s->unreadable++;
			ret = 0;
		} else if (ret) {
			break;
		} else {
			s->read++;
		}
		if (id == INT64_MAX)
			break;
		x = id + 1;
	}
	sqlite3_finalize(next);
	return ret;
}

/* --- history_query past damage --------------------------------------------------- */

struct damaged_query {
	struct history *h;
	const struct history_query *q;
	bool with_blob;
	history_cb cb;
	void *arg;
	const int64_t *done; /* ids the query gave before it met the damage, sorted */
	size_t n_done;
	sqlite3_stmt *row;
};

static int cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static bool row_matches(const struct history_row *row, const struct history_query *q)
{
	if (row->meta.start_ns >= q->until_ns || row->meta.end_ns <= q->since_ns)
		return false;
	if (q->type && strcmp(row->meta.type, q->type))
		return false;
	if (q->app && strcmp(row->meta.app, q->app))
		return false;
	if (q->n_shards > 1 && (uint64_t)row->id % q->n_shards != q->shard)
		return false;
	return hist_labels_match(row->meta.labels, q);
}

static int query_one(int64_t id, void *arg)
{
	struct damaged_query *dq = arg;
	struct history_row row = {.profiles = 1};
	uint8_t *pprof = NULL;
	int rc, ret = 0;

	sqlite3_bind_int64(dq->row, 1, id);
	rc = sqlite3_step(dq->row);
	if (rc == SQLITE_ROW) {
		hist_read_meta(dq->row, &row);
		if (row_matches(&row, dq->q) &&
		    !(dq->n_done &&
		      bsearch(&id, dq->done, dq->n_done, sizeof(*dq->done), cmp_id))) {
			if (dq->with_blob)
				ret = hist_read_blob(dq->row, &pprof, &row.pprof_len);
			row.pprof = pprof;
			if (!ret)
				ret = dq->cb(&row, dq->arg);
			free(pprof);
		}
	} else {
		/* SQLITE_DONE: the seek gave an id whose row is not there */
		ret = rc == SQLITE_DONE ? -ENOENT : sqlite_errno(rc);
	}
	sqlite3_reset(dq->row);
	return ret;
}

/*
 * Raw rows only: a rollup stands for raw rows of its period, which this
 * way reads themselves (rollups given before the damage was met are not
 * taken back: a view may count that period twice, said by the damage note).
 */
int hist_query_damaged(struct history *h, const struct history_query *q, bool with_blob,
		       history_cb cb, void *arg, int64_t *done, size_t n_done)
{
	struct damaged_query dq = {h, q, with_blob, cb, arg, done, n_done, NULL};
	struct scan s = {.db = h->db, .schema = "main"};
	char sql[512];
	int rc, ret;

	if (n_done) /* done may be NULL then: qsort wants a pointer */
		qsort(done, n_done, sizeof(*done), cmp_id);
	snprintf(sql, sizeof(sql), QUERY_COLS "%s FROM profiles WHERE id = ?1%s",
		 with_blob ? "blob" : "NULL", h->version >= 4 ? " AND rollup = 0" : "");
	rc = sqlite3_prepare_v2(h->db, sql, -1, &dq.row, NULL);
	if (rc != SQLITE_OK) {
		snprintf(h->damage.first_error, sizeof(h->damage.first_error), "%s",
			 sqlite3_errmsg(h->db));
		h->damage.damaged = true;
		return sqlite_errno(rc);
	}
	ret = scan_ids(&s, query_one, &dq);
	sqlite3_finalize(dq.row);
	h->damage.damaged = true;
	h->damage.rows_read += s.read; /* every id that read, given before or now */
	h->damage.unreadable += s.unreadable;
	if (!h->damage.first_error[0])
		snprintf(h->damage.first_error, sizeof(h->damage.first_error), "%s", s.first_error);
	if (!ret && !s.read && !n_done)
		ret = -EBADMSG;
	return ret;
}

/* --- moving a damaged file aside ------------------------------------------------- */

/* <data-dir>/damaged-YYYYmmddTHHMMSSZ[-N], created 0700. */
static int make_damaged_dir(const struct history *h, char *dir, size_t len)
{
	time_t now = time(NULL);
	char stamp[32];
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	for (int n = 1; n < 100; n++) {
		if (n == 1)
			snprintf(dir, len, "%s/damaged-%s", h->data_dir, stamp);
		else
			snprintf(dir, len, "%s/damaged-%s-%d", h->data_dir, stamp, n);
		if (mkdir(dir, 0700) == 0)
			return 0;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* history.db, then its -wal and -shm when there are any, under the same names in dir. */
static int move_files(const struct history *h, const char *dir)
{
	static const char *const suffix[] = {"", "-wal", "-shm"};
	char from[PATH_MAX], to[PATH_MAX];

	for (size_t i = 0; i < 3; i++) {
		snprintf(from, sizeof(from), "%s%s", h->path, suffix[i]);
		snprintf(to, sizeof(to), "%s/history.db%s", dir, suffix[i]);
		if (rename(from, to) < 0 && (i == 0 || errno != ENOENT))
			return -errno;
	}
	return 0;
}

/* The columns copied, by the damaged file's schema version. */
static const char *salvage_cols(int version)
{
	if (version >= 4)
		return "start_ns, end_ns, type, app, labels, samples, processes, raw_size, blob, "
		       "push_state, push_attempts, push_error, push_changed_ns, rollup, "
		       "rollup_profiles";
	if (version >= 2)
		return "start_ns, end_ns, type, app, labels, samples, processes, raw_size, blob, "
		       "push_state, push_attempts, push_error, push_changed_ns";
	return "start_ns, end_ns, type, app, labels, samples, processes, raw_size, blob";
}

static int salvage_one(int64_t id, void *arg)
{
	sqlite3_stmt *st = arg;
	int rc;

	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return sqlite_errno(rc);
	/* no row copied: the seek gave an id whose row is not there */
	return sqlite3_changes(sqlite3_db_handle(st)) ? 0 : -ENOENT;
}

/* Copies every row of dir/history.db that reads into h's fresh file, within the budget. */
static void salvage(struct history *h, const char *dir)
{
	struct scan s = {.db = h->db, .schema = "dmg"};
	char sql[1024], src[PATH_MAX];
	sqlite3_stmt *st = NULL;
	int64_t version = 0;
	const char *cols;
	int rc, ret;

	snprintf(src, sizeof(src), "%s/history.db", dir);
	rc = sqlite3_prepare_v2(h->db, "ATTACH ?1 AS dmg", -1, &st, NULL);
	if (rc == SQLITE_OK && sqlite3_bind_text(st, 1, src, -1, SQLITE_STATIC) == SQLITE_OK)
		rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return;
	if (one_int(h->db, "PRAGMA dmg.user_version", &version) == 0) {
		cols = salvage_cols((int)version);
		snprintf(sql, sizeof(sql),
			 "INSERT OR IGNORE INTO main.profiles (%s) SELECT %s FROM dmg.profiles "
			 "WHERE id = ?1",
			 cols, cols);
		st = NULL;
		if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) == SQLITE_OK) {
			s.deadline_ns = mono_ns() + HISTORY_SALVAGE_BUDGET_NS;
			ret = scan_ids(&s, salvage_one, st);
			h->recovery.salvage_cut = s.cut || (ret && ret != -EBADMSG);
		}
		sqlite3_finalize(st);
		if (version >= 2)
			sqlite3_exec(h->db,
				     "INSERT OR IGNORE INTO main.collector_state "
				     "SELECT key, value FROM dmg.collector_state",
				     NULL, NULL, NULL);
	} else {
		s.unreadable = 1; /* not even the schema reads */
	}
	h->recovery.salvaged = s.read;
	h->recovery.unreadable = s.unreadable;
	sqlite3_exec(h->db, "DETACH dmg", NULL, NULL, NULL);
}

/* Whether history.db is still the file h has open (no other handle replaced it). */
static bool still_ours(const struct history *h)
{
	struct stat st;

	return stat(h->path, &st) == 0 && st.st_dev == h->dev && st.st_ino == h->ino;
}

/* The move and the fresh file, under the lock that keeps two handles from both moving. */
static int recover_locked(struct history *h, const char *why)
{
	char dir[sizeof(h->recovery.moved_to)];
	int ret;

	if (h->db && !still_ours(h))
		return hist_reopen(h); /* another handle moved it: follow */
	hist_close_db(h);
	ret = make_damaged_dir(h, dir, sizeof(dir));
	if (!ret)
		ret = move_files(h, dir);
	if (ret) {
		h->recovery.err = ret;
		hist_reopen(h); /* the damaged file, what of it reads */
		return ret;
	}
	h->recovery.moved++;
	snprintf(h->recovery.moved_to, sizeof(h->recovery.moved_to), "%s", dir);
	snprintf(h->recovery.why, sizeof(h->recovery.why), "%s", why ? why : "damaged");
	h->recovery.salvaged = h->recovery.unreadable = 0;
	h->recovery.salvage_cut = false;
	ret = hist_reopen(h);
	h->recovery.err = ret;
	if (!ret)
		salvage(h, dir);
	return ret;
}

int history_recover(struct history *h, const char *why)
{
	char lock[PATH_MAX];
	int fd, ret;

	if (h->read_only)
		return -EROFS;
	snprintf(lock, sizeof(lock), "%s/history.lock", h->data_dir);
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	ret = recover_locked(h, why);
	close(fd);
	return ret;
}

void hist_check_on_open(struct history *h)
{
	char why[128] = "";
	bool complete;

	if (history_check(h, HISTORY_CHECK_BUDGET_NS, &complete, why, sizeof(why)) == -EBADMSG)
		history_recover(h, why);
}

int hist_follow(struct history *h)
{
	struct stat st;

	if (h->read_only)
		return 0;
	if (h->db && stat(h->path, &st) < 0)
		return 0; /* being replaced right now: the old file until the new one is there */
	if (h->db && st.st_dev == h->dev && st.st_ino == h->ino)
		return 0;
	return hist_reopen(h);
}
