// SPDX-License-Identifier: MIT
/*
 * The local history: one SQLite database in WAL mode, so that emberctl reads
 * while emberd writes; one row per profile, its pprof stored as a zstd blob.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <sqlite3.h>

#include "clock.h"
#include "compress.h"
#include "history_int.h"

#define HISTORY_FILE "history.db"
/* PRAGMA user_version of the schema below; bump it with a migration. */
#define SCHEMA_VERSION 4
/* zstd's default level: cheap enough to run every interval, ~4x on pprof. */
#define BLOB_ZSTD_LEVEL 3
/*
 * Each connection's page cache in KiB (SQLite's default: 2 MiB), set with
 * history_set_cache_kib(). emberd holds several (store, uploader, rollups, checks)
 * whose caches fill with the growing history and stay full; the pages are in the
 * kernel's page cache anyway, and every read here goes through an index.
 */
#define CACHE_KIB 512

static const char schema_sql[] = "CREATE TABLE profiles ("
				 "id INTEGER PRIMARY KEY, "
				 "start_ns INTEGER NOT NULL, "
				 "end_ns INTEGER NOT NULL, "
				 "type TEXT NOT NULL, "
				 "app TEXT NOT NULL, "
				 "labels TEXT NOT NULL, "
				 "samples INTEGER NOT NULL, "
				 "processes INTEGER NOT NULL, "
				 "raw_size INTEGER NOT NULL, "
				 "blob BLOB NOT NULL);"
				 "CREATE INDEX profiles_type_start ON profiles(type, start_ns);"
				 "PRAGMA user_version = 1;";

/*
 * v2: the history is the push queue. Rows of a v1 file become pending; the
 * (push_state, start_ns) index finds the oldest and newest pending row and
 * counts rows by state without reading the table. collector_state holds
 * what `emberctl status` shows when the daemon is down.
 */
static const char migrate_v2_sql[] =
	"ALTER TABLE profiles ADD COLUMN push_state INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE profiles ADD COLUMN push_attempts INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE profiles ADD COLUMN push_error TEXT;"
	"ALTER TABLE profiles ADD COLUMN push_changed_ns INTEGER NOT NULL DEFAULT 0;"
	"CREATE INDEX profiles_push ON profiles(push_state, start_ns);"
	"CREATE TABLE collector_state (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;"
	"PRAGMA user_version = 2;";

/*
 * v3: retention. An index on start_ns lets a prune find the oldest rows of
 * every type without a scan, and push_state in it tells which of them wait to
 * be pushed without reading the table (a long outage leaves many). The file
 * also switches to incremental auto-vacuum (see vacuum_once()): no SQL here.
 */
static const char migrate_v3_sql[] =
	"CREATE INDEX profiles_start ON profiles(start_ns, push_state);"
	"PRAGMA user_version = 3;";

/*
 * v4: rollups. A rollup row (rollup = 1) merges the raw rows of one series
 * (type, app, labels) that started in one period (HISTORY_ROLLUP_PERIOD_NS);
 * it is local (push_state 4: the uploader never takes it) and rollup_profiles
 * says how many raw rows it merges. profiles_rollup
 * finds a series' rollup of a period; profiles_kind serves the time-range
 * queries with the raw/rollup test inside the index: a column added by ALTER
 * TABLE lies after the blob, and reading it from the row would walk the blob's
 * overflow pages.
 */
static const char *const migrate_v4_columns[][2] = {
	{"rollup", "ALTER TABLE profiles ADD COLUMN rollup INTEGER NOT NULL DEFAULT 0"},
	{"rollup_profiles",
	 "ALTER TABLE profiles ADD COLUMN rollup_profiles INTEGER NOT NULL DEFAULT 0"},
};
static const char migrate_v4_sql[] =
	"CREATE UNIQUE INDEX IF NOT EXISTS profiles_rollup "
	"ON profiles(type, app, labels, start_ns) WHERE rollup = 1;"
	"CREATE INDEX IF NOT EXISTS profiles_kind ON profiles(rollup, type, start_ns);"
	"PRAGMA user_version = 4;";

static const char insert_sql[] =
	"INSERT INTO profiles (start_ns, end_ns, type, app, labels, samples, processes, "
	"raw_size, blob) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";

/* Rows a prune may delete: all of them, or (?1 != 0) all but those waiting to be pushed. */
#define PRUNABLE "(?1 = 0 OR push_state != 0)"
/* ... and of those, the ones whose interval ended before ?2. */
#define AGED "profiles WHERE start_ns < ?2 AND end_ns < ?2 AND " PRUNABLE

/* ?1: a JSON array of ids passed over (their verdicts wait to be written), or NULL. */
#define PENDING_COLS                                                         \
	QUERY_COLS "blob, push_attempts FROM profiles WHERE push_state = 0 " \
		   "AND id NOT IN (SELECT value FROM json_each(?1)) "

const char *const hist_push_sql[PUSH_STMT_COUNT] = {
	[PUSH_OLDEST] = PENDING_COLS "ORDER BY start_ns, id LIMIT 1",
	[PUSH_NEWEST] = PENDING_COLS "ORDER BY start_ns DESC, id DESC LIMIT 1",
	[PUSH_MARK] = "UPDATE profiles SET push_state = ?2, push_error = ?3, push_changed_ns = ?4 "
		      "WHERE id = ?1",
	[PUSH_ATTEMPT] = "UPDATE profiles SET push_attempts = push_attempts + 1, push_error = ?2, "
			 "push_changed_ns = ?3 WHERE id = ?1 AND push_state = 0",
	[PUSH_EXPIRE] = "UPDATE profiles SET push_state = 3, push_changed_ns = ?2, "
			"push_error = 'older than the collector accepts' "
			"WHERE push_state = 0 AND start_ns < ?1",
	[PUSH_COUNTS] = "SELECT push_state, count(*), min(start_ns) FROM profiles "
			"GROUP BY push_state",
	[PUSH_PENDING] = "SELECT count(*), min(start_ns) FROM profiles WHERE push_state = 0",
	[PUSH_STATE_SET] = "INSERT OR REPLACE INTO collector_state (key, value) VALUES (?1, ?2)",
	[PUSH_STATE_GET] = "SELECT value FROM collector_state WHERE key = ?1",
	/*
	 * A prune's two passes, each a pick (the oldest rows' stored sizes, to
	 * choose how many) and a delete of that many (?3). Past retention:
	 * start_ns < ?2 lets profiles_start serve, a row ends at or after it starts.
	 */
	[PRUNE_AGE_PICK] = "SELECT length(blob) FROM " AGED " ORDER BY start_ns, id",
	[PRUNE_AGE] = "DELETE FROM profiles WHERE id IN (SELECT id FROM " AGED
		      " ORDER BY start_ns, id LIMIT ?3) RETURNING length(blob)",
	/*
	 * By size, a rollup (rollup 1, push state 4: prunable) goes after the
	 * raw rows that started at its period's start, before the later ones:
	 * from then on views read that period's remaining raw rows.
	 */
	[PRUNE_SIZE_PICK] = "SELECT length(blob) FROM profiles WHERE " PRUNABLE
			    " ORDER BY start_ns, rollup, id",
	[PRUNE_SIZE] = "DELETE FROM profiles WHERE id IN (SELECT id FROM profiles WHERE " PRUNABLE
		       " ORDER BY start_ns, rollup, id LIMIT ?3) RETURNING length(blob)",
	[SIZE_PAGES] = "SELECT * FROM pragma_page_count(), pragma_freelist_count(), "
		       "pragma_page_size()",
	/*
	 * Rollups (v4). The (?4 + 1)-th, in order of period then series, of the
	 * series and periods in [?1, ?2) (multiples of the period ?3) that have
	 * raw rows and no rollup. Then one series' raw rows of one period [?4, ?5).
	 */
	[ROLLUP_TODO] = "SELECT type, app, labels, start_ns - (start_ns - ?1) % ?3 AS period "
			"FROM profiles WHERE rollup = 0 AND start_ns >= ?1 AND start_ns < ?2 "
			"AND NOT EXISTS (SELECT 1 FROM profiles AS r WHERE r.rollup = 1 "
			"AND r.type = profiles.type AND r.app = profiles.app "
			"AND r.labels = profiles.labels "
			"AND r.start_ns = profiles.start_ns - (profiles.start_ns - ?1) % ?3) "
			"GROUP BY period, type, app, labels ORDER BY period, type, app, labels "
			"LIMIT 1 OFFSET ?4",
	[ROLLUP_ROWS] =
		QUERY_COLS "blob FROM profiles WHERE rollup = 0 AND type = ?1 "
			   "AND app = ?2 AND labels = ?3 AND start_ns >= ?4 AND start_ns < ?5 "
			   "ORDER BY start_ns, id",
	[ROLLUP_INSERT] = "INSERT INTO profiles (start_ns, end_ns, type, app, labels, samples, "
			  "processes, raw_size, blob, rollup, rollup_profiles, push_state) "
			  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 1, ?10, 4)",
	[ROLLUP_DROP] = "DELETE FROM profiles WHERE rollup = 1",
	[ROLLUP_COUNT] = "SELECT count(*), coalesce(sum(length(blob)), 0) FROM profiles "
			 "WHERE rollup = 1",
};

int sqlite_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return -EBADMSG;
	default:
		return -EIO;
	}
}

static int make_dir(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0700) == 0)
		return 0;
	if (errno != EEXIST)
		return -errno;
	if (stat(dir, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

static int user_version(sqlite3 *db, int *version)
{
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sqlite_errno(rc);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : sqlite_errno(rc);
}

/* Whether profiles has column name already (an interrupted or hand-made upgrade). */
static bool has_column(sqlite3 *db, const char *name)
{
	sqlite3_stmt *st;
	bool found = false;

	if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info('profiles') WHERE name = ?1",
			       -1, &st, NULL) != SQLITE_OK)
		return false;
	if (sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC) == SQLITE_OK)
		found = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return found;
}

/* v4, idempotent: each column only when missing, the indexes IF NOT EXISTS. */
static int migrate_v4(sqlite3 *db)
{
	int rc = SQLITE_OK;

	for (size_t i = 0; rc == SQLITE_OK && i < 2; i++) {
		if (!has_column(db, migrate_v4_columns[i][0]))
			rc = sqlite3_exec(db, migrate_v4_columns[i][1], NULL, NULL, NULL);
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, migrate_v4_sql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? 0 : sqlite_errno(rc);
}

/*
 * Creates the schema, or brings an older one up to date, once: a new file goes
 * through the same migrations as an old one. The IMMEDIATE transaction makes
 * two writers (emberd's sampler and its uploader) agree.
 */
static int create_schema(sqlite3 *db)
{
	int rc, version = 0, err;

	rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return sqlite_errno(rc);
	err = user_version(db, &version);
	if (!err && version == 0) {
		rc = sqlite3_exec(db, schema_sql, NULL, NULL, NULL);
		err = rc == SQLITE_OK ? 0 : sqlite_errno(rc);
		version = 1;
	}
	if (!err && version == 1) {
		rc = sqlite3_exec(db, migrate_v2_sql, NULL, NULL, NULL);
		err = rc == SQLITE_OK ? 0 : sqlite_errno(rc);
		version = 2;
	}
	if (!err && version == 2) {
		rc = sqlite3_exec(db, migrate_v3_sql, NULL, NULL, NULL);
		err = rc == SQLITE_OK ? 0 : sqlite_errno(rc);
		version = 3;
	}
	if (!err && version == 3)
		err = migrate_v4(db);
	rc = sqlite3_exec(db, err ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL);
	if (!err && rc != SQLITE_OK)
		err = sqlite_errno(rc);
	return err;
}

/* One integer from a statement that yields one row (a PRAGMA). */
static int query_int(sqlite3 *db, const char *sql, int64_t *out)
{
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sqlite_errno(rc);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : sqlite_errno(rc);
}

/* Moves the WAL into the file and truncates it; a reader inside it only postpones that. */
int checkpoint_truncate(sqlite3 *db, int busy_ms)
{
	int rc;

	sqlite3_busy_timeout(db, busy_ms);
	rc = sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
	return rc == SQLITE_OK || (rc & 0xff) == SQLITE_BUSY ? 0 : sqlite_errno(rc);
}

/*
 * Part of v3: auto_vacuum = INCREMENTAL, so that a prune gives deleted pages
 * back to the file system. A new file has it from setup_writer(); an older
 * one needs one VACUUM, which rewrites the whole file (slow on a large
 * history, and it needs that much free disk), outside any transaction. Its
 * failure is not fatal: deleted pages are then reused but the file does not
 * shrink, and the next open tries again. h->upgrade tells the caller.
 * Runs after check_schema(): never on a file of a newer ember.
 */
static void vacuum_once(struct history *h)
{
	struct history_size sz;
	int64_t mode = 0, t0;
	int rc;

	if (query_int(h->db, "PRAGMA auto_vacuum", &mode) || mode == 2) {
		h->incremental = mode == 2;
		return;
	}
	if (!history_size(h, &sz))
		h->upgrade.bytes_before = sz.file_bytes + sz.wal_bytes;
	t0 = mono_ns();
	rc = sqlite3_exec(h->db, "PRAGMA auto_vacuum = INCREMENTAL; VACUUM", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		h->upgrade.err = sqlite_errno(rc);
		return;
	}
	h->upgrade.err = checkpoint_truncate(h->db, BUSY_TIMEOUT_MS);
	h->upgrade.vacuumed = true;
	h->incremental = true;
	h->upgrade.took_ns = mono_ns() - t0;
	if (!history_size(h, &sz))
		h->upgrade.bytes_after = sz.file_bytes + sz.wal_bytes;
}

/*
 * WAL lets readers (emberctl) run while the daemon writes; synchronous=NORMAL
 * is durable across crashes of the process and only risks the last commits on
 * power loss, which costs one fsync per checkpoint instead of per profile.
 * auto_vacuum must come before WAL and the first table to apply to a new file;
 * it is set only when not set yet: setting it writes the header, which a full
 * disk refuses (and the writer could not open).
 */
static int setup_writer(struct history *h)
{
	int64_t mode = 0;
	int rc = SQLITE_OK;

	if (query_int(h->db, "PRAGMA auto_vacuum", &mode) || mode != 2)
		rc = sqlite3_exec(h->db, "PRAGMA auto_vacuum = INCREMENTAL", NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(h->db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL",
				  NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return sqlite_errno(rc);
	return create_schema(h->db);
}

static int check_schema(sqlite3 *db, int *out_version, const char **err)
{
	int version = 0, ret;

	ret = user_version(db, &version);
	*out_version = version;
	if (ret) {
		*err = "cannot read the schema version";
		return ret;
	}
	if (version == 0) {
		*err = "history.db holds no ember history";
		return -ENOENT;
	}
	if (version > SCHEMA_VERSION) {
		*err = "history.db was written by a newer ember";
		return -EPROTO;
	}
	return 0;
}

void hist_load_rollup_period(struct history *h);

/* Why setting up the writer failed (ret): a rollback after the failure reset SQLite's code. */
static const char *setup_cause(sqlite3 *db, int ret)
{
	int rc = sqlite3_errcode(db);

	if (rc != SQLITE_OK)
		return sqlite3_errstr(rc);
	return ret == -EBADMSG ? sqlite3_errstr(SQLITE_CORRUPT) : strerror(-ret);
}

int hist_open_db(struct history *h, const char **err)
{
	int flags =
		h->read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	struct stat st;
	int rc, ret;

	/* sqlite's CANTOPEN says neither "missing" nor "not allowed": ask first. */
	if (h->read_only && stat(h->path, &st) < 0) {
		ret = -errno;
		*err = ret == -ENOENT ? "no history.db in the data directory" : strerror(-ret);
		return ret;
	}
	rc = sqlite3_open_v2(h->path, &h->db, flags, NULL);
	if (rc != SQLITE_OK) {
		*err = sqlite3_errstr(rc);
		return sqlite_errno(rc);
	}
	sqlite3_extended_result_codes(h->db, 1);
	sqlite3_busy_timeout(h->db, BUSY_TIMEOUT_MS);
	/* it reads the schema: a damaged file fails below, with its cause */
	(void)history_set_cache_kib(h, CACHE_KIB);
	if (!h->read_only) {
		ret = setup_writer(h);
		if (ret) {
			*err = setup_cause(h->db, ret);
			return ret;
		}
	}
	ret = check_schema(h->db, &h->version, err);
	if (!ret && !h->read_only)
		vacuum_once(h);
	if (!ret)
		hist_load_rollup_period(h);
	if (!ret && stat(h->path, &st) == 0) {
		h->dev = st.st_dev;
		h->ino = st.st_ino;
	}
	return ret;
}

/* Every statement and the connection; the handle's other state stays. */
void hist_close_db(struct history *h)
{
	sqlite3_finalize(h->insert);
	h->insert = NULL;
	for (int m = 0; m < QUERY_MODES; m++) {
		for (int b = 0; b < 2; b++) {
			for (int t = 0; t < 2; t++) {
				sqlite3_finalize(h->query[m][b][t]);
				h->query[m][b][t] = NULL;
			}
		}
	}
	for (int i = 0; i < PUSH_STMT_COUNT; i++) {
		sqlite3_finalize(h->push[i]);
		h->push[i] = NULL;
	}
	sqlite3_close(h->db);
	h->db = NULL;
}

int hist_reopen(struct history *h)
{
	const char *err;

	hist_close_db(h);
	h->version = 0;
	return hist_open_db(h, &err);
}

struct history *history_open(const char *data_dir, bool read_only, const char **err)
{
	const char *ignored;
	struct history *h;
	int ret;

	if (!err)
		err = &ignored;
	*err = NULL;
	if (!data_dir || !*data_dir) {
		*err = "no data directory";
		errno = EINVAL;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		goto err_nomem;
	h->read_only = read_only;
	if (asprintf(&h->path, "%s/%s", data_dir, HISTORY_FILE) < 0) {
		h->path = NULL;
		goto err_nomem;
	}
	h->data_dir = strdup(data_dir);
	if (!h->data_dir)
		goto err_nomem;
	if (!read_only) {
		ret = make_dir(data_dir);
		if (ret) {
			*err = strerror(-ret);
			goto err_close;
		}
	}
	ret = hist_open_db(h, err);
	if (ret && !read_only && ret == -EBADMSG) {
		/* not even the schema reads: the check moves it aside and starts afresh */
		hist_close_db(h);
		ret = history_recover(h, *err ? *err : "cannot read the schema");
		if (ret)
			*err = "the history is damaged and cannot be moved aside";
	} else if (!ret && !read_only) {
		hist_check_on_open(h);
	}
	if (ret)
		goto err_close;
	return h;

err_nomem:
	*err = strerror(ENOMEM);
	ret = -ENOMEM;
err_close:
	history_close(h);
	errno = -ret;
	return NULL;
}

void history_close(struct history *h)
{
	if (!h)
		return;
	hist_close_db(h);
	zstd_cctx_free(h->zstd);
	free(h->path);
	free(h->data_dir);
	free(h);
}

void history_release_memory(struct history *h)
{
	zstd_cctx_free(h->zstd);
	h->zstd = NULL;
	if (h->db)
		sqlite3_db_release_memory(h->db);
}

int history_set_cache_kib(struct history *h, int kib)
{
	char sql[48];
	int rc;

	if (kib < 1)
		return -EINVAL;
	snprintf(sql, sizeof(sql), "PRAGMA cache_size = -%d", kib);
	rc = sqlite3_exec(h->db, sql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? 0 : sqlite_errno(rc);
}

const char *history_path(const struct history *h)
{
	return h->path;
}

int hist_prepare(struct history *h, const char *sql, sqlite3_stmt **st)
{
	int rc;

	if (*st)
		return 0;
	if (!h->db)
		return -EIO; /* a damaged file that could neither be moved nor opened again */
	rc = sqlite3_prepare_v3(h->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
	return rc == SQLITE_OK ? 0 : sqlite_errno(rc);
}

static bool meta_valid(const struct history_meta *m)
{
	return m && m->type && *m->type && m->start_ns <= m->end_ns && m->samples <= INT64_MAX;
}

static int bind_meta(sqlite3_stmt *st, const struct history_meta *m, size_t raw_size)
{
	int rc = SQLITE_OK;

	rc |= sqlite3_bind_int64(st, 1, m->start_ns);
	rc |= sqlite3_bind_int64(st, 2, m->end_ns);
	rc |= sqlite3_bind_text(st, 3, m->type, -1, SQLITE_STATIC);
	rc |= sqlite3_bind_text(st, 4, m->app ? m->app : "", -1, SQLITE_STATIC);
	rc |= sqlite3_bind_text(st, 5, m->labels ? m->labels : "", -1, SQLITE_STATIC);
	rc |= sqlite3_bind_int64(st, 6, (sqlite3_int64)m->samples);
	rc |= sqlite3_bind_int64(st, 7, m->processes);
	rc |= sqlite3_bind_int64(st, 8, (sqlite3_int64)raw_size);
	return rc == SQLITE_OK ? 0 : -ENOMEM;
}

/* Compresses pprof and stores it with st (bound: ?1-?8 meta, ?9 blob, then extra > 0 as ?10). */
int hist_put_row(struct history *h, sqlite3_stmt *st, const struct history_meta *m,
		 const uint8_t *pprof, size_t len, int64_t extra, int64_t *id_out)
{
	uint8_t *blob = NULL;
	size_t blob_len;
	int ret, rc;

	if (!meta_valid(m) || !pprof || len == 0)
		return -EINVAL;
	if (len > EMBER_MAX_PROFILE_BYTES)
		return -EFBIG;
	if (!h->zstd)
		h->zstd = zstd_cctx_new(); /* without one, a context per call */
	ret = h->zstd ? zstd_compress_with(h->zstd, pprof, len, BLOB_ZSTD_LEVEL, &blob, &blob_len) :
			zstd_compress_buf(pprof, len, BLOB_ZSTD_LEVEL, &blob, &blob_len);
	if (ret)
		return ret;
	if (blob_len > INT_MAX) {
		ret = -EFBIG;
		goto out;
	}
	ret = bind_meta(st, m, len);
	if (!ret && sqlite3_bind_blob(st, 9, blob, (int)blob_len, SQLITE_STATIC) != SQLITE_OK)
		ret = -ENOMEM;
	if (!ret && extra > 0 && sqlite3_bind_int64(st, 10, extra) != SQLITE_OK)
		ret = -ENOMEM;
	if (ret)
		goto out;
	rc = sqlite3_step(st);
	if (rc != SQLITE_DONE) {
		ret = (rc & 0xff) == SQLITE_CONSTRAINT ? -EEXIST : sqlite_errno(rc);
		goto out;
	}
	if (id_out)
		*id_out = sqlite3_last_insert_rowid(h->db);
out:
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	free(blob);
	return ret;
}

int history_put(struct history *h, const struct history_meta *m, const uint8_t *pprof, size_t len,
		int64_t *id_out)
{
	int ret;

	if (h->read_only)
		return -EROFS;
	ret = hist_follow(h);
	if (!ret)
		ret = hist_prepare(h, insert_sql, &h->insert);
	return ret ? ret : hist_put_row(h, h->insert, m, pprof, len, 0, id_out);
}

int history_put_all(struct history *h, const struct history_put *v, size_t n)
{
	int ret = hist_batch_ok(h, v, n);

	if (!ret)
		ret = hist_follow(h); /* before the transaction: it may open the file anew */
	if (!ret)
		ret = hist_prepare(h, insert_sql, &h->insert);
	if (!ret)
		ret = hist_begin_transaction(h);
	if (ret)
		return ret > 0 ? 0 : ret;
	for (size_t i = 0; i < n && !ret; i++)
		ret = hist_put_row(h, h->insert, &v[i].meta, v[i].pprof, v[i].len, 0, NULL);
	return hist_end_transaction(h, ret);
}
