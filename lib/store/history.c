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
#include "history.h"

#define HISTORY_FILE "history.db"
/* PRAGMA user_version of the schema below; bump it with a migration. */
#define SCHEMA_VERSION 4
/* How long a statement waits on the other side's lock (a checkpoint, a writer). */
#define BUSY_TIMEOUT_MS 5000
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
/* zstd's default level: cheap enough to run every interval, ~4x on pprof. */
#define BLOB_ZSTD_LEVEL 3

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

/*
 * Overlap with [?1, ?2), oldest first. Variants: with or without the blob
 * (listing should not read megabytes), with or without a type (only
 * "type = ?3" lets an index serve both filter and order), and by schema:
 * a v3 file (read-only) has no rollups, raw rows only, or raw rows with every
 * whole period [?5, ?6) of a series that has a rollup replaced by it (?7 the
 * period; ?5 and ?6 are multiples of it). A raw row belongs to the period of
 * its start; the NOT EXISTS probes profiles_rollup, the rollup rows come from
 * profiles_kind.
 */
#define QUERY_COLS "SELECT id, start_ns, end_ns, type, app, labels, samples, processes, raw_size, "
#define QUERY_WHERE                                           \
	" FROM profiles WHERE start_ns < ?2 AND end_ns > ?1 " \
	"AND (?4 IS NULL OR app = ?4)"
#define QUERY_ORDER " ORDER BY start_ns, id"
#define BY_TYPE " AND type = ?3"
#define RAW_WHERE QUERY_WHERE " AND rollup = 0"
#define HIDDEN_BY_ROLLUP                                                                       \
	" AND NOT (start_ns >= ?5 AND start_ns < ?6 AND EXISTS (SELECT 1 FROM profiles AS r "     \
	"WHERE r.rollup = 1 AND r.type = profiles.type AND r.app = profiles.app "                 \
	"AND r.labels = profiles.labels AND r.start_ns = profiles.start_ns - "                    \
	"(profiles.start_ns - ?5) % ?7))"
#define ROLLUP_WHERE                                                               \
	" FROM profiles WHERE rollup = 1 AND start_ns >= ?5 AND start_ns < ?6 "     \
	"AND (start_ns - ?5) % ?7 = 0 AND (?4 IS NULL OR app = ?4)"
#define WITH_ROLLUPS(blob, type)                                                   \
	QUERY_COLS blob ", 1, 0" RAW_WHERE type HIDDEN_BY_ROLLUP " UNION ALL " QUERY_COLS blob \
		", rollup_profiles, 1" ROLLUP_WHERE type " ORDER BY 2, 1"

/* How a query treats rollups; also the file's schema (a v3 file has none). */
enum query_mode { QUERY_V3, QUERY_RAW, QUERY_ROLLUPS, QUERY_MODES };

static const char *const query_sql[QUERY_MODES][2][2] = {
	[QUERY_V3][0][0] = QUERY_COLS "NULL, 1, 0" QUERY_WHERE QUERY_ORDER,
	[QUERY_V3][0][1] = QUERY_COLS "NULL, 1, 0" QUERY_WHERE BY_TYPE QUERY_ORDER,
	[QUERY_V3][1][0] = QUERY_COLS "blob, 1, 0" QUERY_WHERE QUERY_ORDER,
	[QUERY_V3][1][1] = QUERY_COLS "blob, 1, 0" QUERY_WHERE BY_TYPE QUERY_ORDER,
	[QUERY_RAW][0][0] = QUERY_COLS "NULL, 1, 0" RAW_WHERE QUERY_ORDER,
	[QUERY_RAW][0][1] = QUERY_COLS "NULL, 1, 0" RAW_WHERE BY_TYPE QUERY_ORDER,
	[QUERY_RAW][1][0] = QUERY_COLS "blob, 1, 0" RAW_WHERE QUERY_ORDER,
	[QUERY_RAW][1][1] = QUERY_COLS "blob, 1, 0" RAW_WHERE BY_TYPE QUERY_ORDER,
	[QUERY_ROLLUPS][0][0] = WITH_ROLLUPS("NULL", ""),
	[QUERY_ROLLUPS][0][1] = WITH_ROLLUPS("NULL", BY_TYPE),
	[QUERY_ROLLUPS][1][0] = WITH_ROLLUPS("blob", ""),
	[QUERY_ROLLUPS][1][1] = WITH_ROLLUPS("blob", BY_TYPE),
};

/* The push queue's statements; "push_state = 0" (pending) lets the index serve. */
enum push_stmt {
	PUSH_OLDEST,
	PUSH_NEWEST,
	PUSH_MARK,
	PUSH_ATTEMPT,
	PUSH_EXPIRE,
	PUSH_COUNTS,
	PUSH_PENDING,
	PUSH_STATE_SET,
	PUSH_STATE_GET,
	PRUNE_AGE_PICK,
	PRUNE_AGE,
	PRUNE_SIZE_PICK,
	PRUNE_SIZE,
	SIZE_PAGES,
	ROLLUP_TODO,
	ROLLUP_ROWS,
	ROLLUP_INSERT,
	ROLLUP_DROP,
	ROLLUP_COUNT,
	PUSH_STMT_COUNT
};

/* Rows a prune may delete: all of them, or (?1 != 0) all but those waiting to be pushed. */
#define PRUNABLE "(?1 = 0 OR push_state != 0)"
/* ... and of those, the ones whose interval ended before ?2. */
#define AGED "profiles WHERE start_ns < ?2 AND end_ns < ?2 AND " PRUNABLE

#define PENDING_COLS QUERY_COLS "blob, push_attempts FROM profiles WHERE push_state = 0 "

static const char *const push_sql[PUSH_STMT_COUNT] = {
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
	[ROLLUP_ROWS] = QUERY_COLS "blob FROM profiles WHERE rollup = 0 AND type = ?1 "
			"AND app = ?2 AND labels = ?3 AND start_ns >= ?4 AND start_ns < ?5 "
			"ORDER BY start_ns, id",
	[ROLLUP_INSERT] = "INSERT INTO profiles (start_ns, end_ns, type, app, labels, samples, "
			  "processes, raw_size, blob, rollup, rollup_profiles, push_state) "
			  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 1, ?10, 4)",
	[ROLLUP_DROP] = "DELETE FROM profiles WHERE rollup = 1",
	[ROLLUP_COUNT] = "SELECT count(*), coalesce(sum(length(blob)), 0) FROM profiles "
			 "WHERE rollup = 1",
};

enum {
	COL_ID,
	COL_START,
	COL_END,
	COL_TYPE,
	COL_APP,
	COL_LABELS,
	COL_SAMPLES,
	COL_PROCESSES,
	COL_RAW_SIZE,
	COL_BLOB,
	COL_PROFILES = 10,	/* query_sql: the raw profiles a row stands for */
	COL_ROLLUP,		/* query_sql: 1 for a rollup row */
	COL_ATTEMPTS = 10	/* PENDING_COLS */
};

struct history {
	sqlite3 *db;
	char *path;
	bool read_only;
	int version;		/* a read-only open may see a v1 file: no push state */
	struct history_upgrade upgrade; /* what this writer's open did once to an older file */
	bool incremental;	/* auto_vacuum = INCREMENTAL: a prune can shrink the file */
	sqlite3_stmt *insert;
	int64_t rollup_period;	/* HISTORY_ROLLUP_PERIOD_NS or what the file records */
	sqlite3_stmt *query[QUERY_MODES][2][2]; /* [mode][with_blob][by_type], on first use */
	sqlite3_stmt *push[PUSH_STMT_COUNT]; /* push_sql, prepared on first use */
};

static int sqlite_errno(int rc)
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
static int checkpoint_truncate(sqlite3 *db, int busy_ms)
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
 * auto_vacuum must come before WAL and the first table to apply to a new file.
 */
static int setup_writer(struct history *h)
{
	int rc;

	rc = sqlite3_exec(h->db,
			  "PRAGMA auto_vacuum = INCREMENTAL; PRAGMA journal_mode = WAL; "
			  "PRAGMA synchronous = NORMAL",
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

static void load_rollup_period(struct history *h);

static int open_db(struct history *h, const char **err)
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
	if (!h->read_only) {
		ret = setup_writer(h);
		if (ret) {
			*err = sqlite3_errstr(sqlite3_errcode(h->db));
			return ret;
		}
	}
	ret = check_schema(h->db, &h->version, err);
	if (!ret && !h->read_only)
		vacuum_once(h);
	if (!ret)
		load_rollup_period(h);
	return ret;
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
	if (!read_only) {
		ret = make_dir(data_dir);
		if (ret) {
			*err = strerror(-ret);
			goto err_close;
		}
	}
	ret = open_db(h, err);
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
	sqlite3_finalize(h->insert);
	for (int m = 0; m < QUERY_MODES; m++) {
		for (int b = 0; b < 2; b++) {
			for (int t = 0; t < 2; t++)
				sqlite3_finalize(h->query[m][b][t]);
		}
	}
	for (int i = 0; i < PUSH_STMT_COUNT; i++)
		sqlite3_finalize(h->push[i]);
	sqlite3_close(h->db);
	free(h->path);
	free(h);
}

const char *history_path(const struct history *h)
{
	return h->path;
}

static int prepare(struct history *h, const char *sql, sqlite3_stmt **st)
{
	int rc;

	if (*st)
		return 0;
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
static int put_row(struct history *h, sqlite3_stmt *st, const struct history_meta *m,
		   const uint8_t *pprof, size_t len, int64_t extra, int64_t *id_out)
{
	uint8_t *blob = NULL;
	size_t blob_len;
	int ret, rc;

	if (!meta_valid(m) || !pprof || len == 0)
		return -EINVAL;
	if (len > EMBER_MAX_PROFILE_BYTES)
		return -EFBIG;
	ret = zstd_compress_buf(pprof, len, BLOB_ZSTD_LEVEL, &blob, &blob_len);
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
	ret = prepare(h, insert_sql, &h->insert);
	return ret ? ret : put_row(h, h->insert, m, pprof, len, 0, id_out);
}

static const char *column_str(sqlite3_stmt *st, int col)
{
	const unsigned char *s = sqlite3_column_text(st, col);

	return s ? (const char *)s : "";
}

static void read_meta(sqlite3_stmt *st, struct history_row *row)
{
	int64_t samples = sqlite3_column_int64(st, COL_SAMPLES);
	int64_t processes = sqlite3_column_int64(st, COL_PROCESSES);

	row->id = sqlite3_column_int64(st, COL_ID);
	row->meta.start_ns = sqlite3_column_int64(st, COL_START);
	row->meta.end_ns = sqlite3_column_int64(st, COL_END);
	row->meta.type = column_str(st, COL_TYPE);
	row->meta.app = column_str(st, COL_APP);
	row->meta.labels = column_str(st, COL_LABELS);
	/* Clamped, not trusted: the file may have been edited or damaged. */
	row->meta.samples = samples < 0 ? 0 : (uint64_t)samples;
	if (processes < 0)
		processes = 0;
	row->meta.processes = processes > UINT32_MAX ? UINT32_MAX : (uint32_t)processes;
}

/* query_sql's last column: 1 for a raw row, how many raw rows a rollup merges. */
static void read_profiles(sqlite3_stmt *st, struct history_row *row)
{
	int64_t n = sqlite3_column_int64(st, COL_PROFILES);

	row->profiles = n < 1 ? 1 : n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
	row->rollup = sqlite3_column_int(st, COL_ROLLUP) == 1;
}

/*
 * Decompresses the row's blob into a buffer the caller frees. A blob that
 * does not decompress, or not to the size recorded when it was stored, is
 * corrupt: *out stays NULL and the row is still reported.
 */
static int read_blob(sqlite3_stmt *st, uint8_t **out, size_t *out_len)
{
	const void *blob = sqlite3_column_blob(st, COL_BLOB);
	int blob_len = sqlite3_column_bytes(st, COL_BLOB);
	int64_t raw_size = sqlite3_column_int64(st, COL_RAW_SIZE);
	int ret;

	*out = NULL;
	*out_len = 0;
	if (!blob && sqlite3_errcode(sqlite3_db_handle(st)) == SQLITE_NOMEM)
		return -ENOMEM;
	if (!blob || blob_len <= 0 || raw_size <= 0 || raw_size > EMBER_MAX_PROFILE_BYTES)
		return 0;
	ret = zstd_decompress_buf(blob, (size_t)blob_len, (size_t)raw_size, out, out_len);
	if (ret == -ENOMEM)
		return ret;
	if (ret || *out_len != (size_t)raw_size) {
		free(*out);
		*out = NULL;
		*out_len = 0;
	}
	return 0;
}

/*
 * The whole periods inside [since, until): [*first, *end), both multiples of
 * period, none before the epoch (rollups start at 0 or later, and so "start_ns
 * - ?5" in the SQL cannot overflow).
 */
static void whole_periods(int64_t since, int64_t until, int64_t period, int64_t *first,
			  int64_t *end)
{
	int64_t q = since < 0 ? 0 : since / period;

	if (q * period < since)
		q++; /* q * period may overflow now: */
	*first = q > INT64_MAX / period ? INT64_MAX : q * period;
	*end = until < 0 ? 0 : until / period * period;
	if (*end < *first)
		*end = *first;
}

static int bind_query(sqlite3_stmt *st, const struct history_query *q, int64_t period)
{
	int64_t first, end;
	int rc = SQLITE_OK;

	rc |= sqlite3_bind_int64(st, 1, q->since_ns);
	rc |= sqlite3_bind_int64(st, 2, q->until_ns);
	if (q->type)
		rc |= sqlite3_bind_text(st, 3, q->type, -1, SQLITE_STATIC);
	if (q->app)
		rc |= sqlite3_bind_text(st, 4, q->app, -1, SQLITE_STATIC);
	else
		rc |= sqlite3_bind_null(st, 4);
	if (sqlite3_bind_parameter_count(st) >= 7) {
		whole_periods(q->since_ns, q->until_ns, period, &first, &end);
		rc |= sqlite3_bind_int64(st, 5, first);
		rc |= sqlite3_bind_int64(st, 6, end);
		rc |= sqlite3_bind_int64(st, 7, period);
	}
	return rc == SQLITE_OK ? 0 : -ENOMEM;
}

/* Whether a row's "k=v\n" label lines include every label the query asks for. */
static bool labels_match(const char *labels, const struct history_query *q)
{
	for (size_t i = 0; i < q->n_labels; i++) {
		size_t n = strlen(q->labels[i]);
		const char *p = labels;
		bool found = false;

		while (p && *p && !found) {
			const char *nl = strchr(p, '\n');
			size_t len = nl ? (size_t)(nl - p) : strlen(p);

			found = len == n && !memcmp(p, q->labels[i], n);
			p = nl ? nl + 1 : NULL;
		}
		if (!found)
			return false;
	}
	return true;
}

/* Rows are only valid during cb; a query may not be started from inside cb. */
int history_query(struct history *h, const struct history_query *q, bool with_blob, history_cb cb,
		  void *arg)
{
	enum query_mode mode;
	sqlite3_stmt **st;
	struct history_row row;
	uint8_t *pprof;
	int ret, rc = SQLITE_DONE;

	if (!h || !q || !cb)
		return -EINVAL;
	if (q->since_ns >= q->until_ns)
		return 0; /* an empty window overlaps nothing, not even a row spanning it */
	mode = h->version < 4 ? QUERY_V3 : q->use_rollups ? QUERY_ROLLUPS : QUERY_RAW;
	st = &h->query[mode][with_blob][q->type != NULL];
	ret = prepare(h, query_sql[mode][with_blob][q->type != NULL], st);
	if (ret)
		return ret;
	ret = bind_query(*st, q, h->rollup_period);
	while (!ret && (rc = sqlite3_step(*st)) == SQLITE_ROW) {
		memset(&row, 0, sizeof(row));
		read_meta(*st, &row);
		read_profiles(*st, &row);
		if (!labels_match(row.meta.labels ? row.meta.labels : "", q))
			continue;
		/* another reader takes this row; skipped before its blob is read */
		if (q->n_shards > 1 && (uint64_t)row.id % q->n_shards != q->shard)
			continue;
		pprof = NULL;
		if (with_blob)
			ret = read_blob(*st, &pprof, &row.pprof_len);
		row.pprof = pprof;
		if (!ret)
			ret = cb(&row, arg);
		free(pprof);
	}
	if (!ret && rc != SQLITE_DONE)
		ret = sqlite_errno(rc);
	sqlite3_reset(*st);
	sqlite3_clear_bindings(*st);
	return ret;
}

/* --- the push queue --------------------------------------------------------------- */

/* Prepares a push statement; -ENODATA on a file without push state, -EROFS for writes. */
static int push_stmt(struct history *h, enum push_stmt which, bool writes, sqlite3_stmt **out)
{
	int ret;

	if (!h)
		return -EINVAL;
	if (h->version < 2)
		return -ENODATA;
	if (writes && h->read_only)
		return -EROFS;
	ret = prepare(h, push_sql[which], &h->push[which]);
	*out = h->push[which];
	return ret;
}

/* Steps a statement that returns no rows, then resets it. */
static int step_done(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE ? 0 : sqlite_errno(rc);
}

static char *dup_column(sqlite3_stmt *st, int col)
{
	return strdup(column_str(st, col));
}

static int read_pending(sqlite3_stmt *st, struct history_pending *p)
{
	struct history_row row = {0};
	int64_t attempts = sqlite3_column_int64(st, COL_ATTEMPTS);

	read_meta(st, &row);
	p->id = row.id;
	p->start_ns = row.meta.start_ns;
	p->end_ns = row.meta.end_ns;
	p->attempts = attempts < 0 ? 0 : attempts > UINT32_MAX ? UINT32_MAX : (uint32_t)attempts;
	p->type = dup_column(st, COL_TYPE);
	p->app = dup_column(st, COL_APP);
	p->labels = dup_column(st, COL_LABELS);
	if (!p->type || !p->app || !p->labels)
		return -ENOMEM;
	return read_blob(st, &p->pprof, &p->pprof_len);
}

int history_next_pending(struct history *h, bool newest, struct history_pending *out)
{
	sqlite3_stmt *st;
	int ret, rc;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	ret = push_stmt(h, newest ? PUSH_NEWEST : PUSH_OLDEST, false, &st);
	if (ret)
		return ret;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		ret = read_pending(st, out);
	else
		ret = rc == SQLITE_DONE ? -ENOENT : sqlite_errno(rc);
	sqlite3_reset(st);
	if (ret)
		history_pending_free(out);
	return ret;
}

void history_pending_free(struct history_pending *p)
{
	if (!p)
		return;
	free(p->type);
	free(p->app);
	free(p->labels);
	free(p->pprof);
	memset(p, 0, sizeof(*p));
}

static int bind_message(sqlite3_stmt *st, int col, const char *message)
{
	if (!message)
		return sqlite3_bind_null(st, col);
	return sqlite3_bind_text(st, col, message, -1, SQLITE_STATIC);
}

/* 0 when the statement changed a row, -ENOENT when none matched. */
static int step_changed(struct history *h, sqlite3_stmt *st)
{
	int ret = step_done(st);

	if (!ret && sqlite3_changes(h->db) == 0)
		ret = -ENOENT;
	return ret;
}

int history_mark(struct history *h, int64_t id, enum history_push_state state, const char *message,
		 int64_t now_ns)
{
	sqlite3_stmt *st;
	int ret, rc = SQLITE_OK;

	if (state != HISTORY_SENT && state != HISTORY_REJECTED && state != HISTORY_EXPIRED)
		return -EINVAL;
	ret = push_stmt(h, PUSH_MARK, true, &st);
	if (ret)
		return ret;
	rc |= sqlite3_bind_int64(st, 1, id);
	rc |= sqlite3_bind_int(st, 2, state);
	rc |= bind_message(st, 3, message);
	rc |= sqlite3_bind_int64(st, 4, now_ns);
	if (rc != SQLITE_OK) {
		sqlite3_clear_bindings(st);
		return -ENOMEM;
	}
	return step_changed(h, st);
}

int history_mark_attempt(struct history *h, int64_t id, const char *message, int64_t now_ns)
{
	sqlite3_stmt *st;
	int ret, rc = SQLITE_OK;

	ret = push_stmt(h, PUSH_ATTEMPT, true, &st);
	if (ret)
		return ret;
	rc |= sqlite3_bind_int64(st, 1, id);
	rc |= bind_message(st, 2, message);
	rc |= sqlite3_bind_int64(st, 3, now_ns);
	if (rc != SQLITE_OK) {
		sqlite3_clear_bindings(st);
		return -ENOMEM;
	}
	return step_changed(h, st);
}

int history_expire_pending(struct history *h, int64_t cutoff_ns, int64_t now_ns, uint64_t *n)
{
	sqlite3_stmt *st;
	int ret, rc = SQLITE_OK;

	if (n)
		*n = 0;
	ret = push_stmt(h, PUSH_EXPIRE, true, &st);
	if (ret)
		return ret;
	rc |= sqlite3_bind_int64(st, 1, cutoff_ns);
	rc |= sqlite3_bind_int64(st, 2, now_ns);
	if (rc != SQLITE_OK) {
		sqlite3_clear_bindings(st);
		return -ENOMEM;
	}
	ret = step_done(st);
	if (!ret && n)
		*n = (uint64_t)sqlite3_changes64(h->db);
	return ret;
}

int history_push_counts(struct history *h, struct history_push_counts *c)
{
	sqlite3_stmt *st;
	int ret, rc;

	if (!c)
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	ret = push_stmt(h, PUSH_COUNTS, false, &st);
	if (ret)
		return ret;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t n = sqlite3_column_int64(st, 1);
		uint64_t count = n < 0 ? 0 : (uint64_t)n;

		switch (sqlite3_column_int(st, 0)) {
		case HISTORY_PENDING:
			c->pending = count;
			c->oldest_pending_ns = sqlite3_column_int64(st, 2);
			break;
		case HISTORY_SENT:
			c->sent = count;
			break;
		case HISTORY_REJECTED:
			c->rejected = count;
			break;
		case HISTORY_EXPIRED:
			c->expired = count;
			break;
		default: /* a state from a newer ember, or an edited file */
			break;
		}
	}
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : sqlite_errno(rc);
}

int history_pending_count(struct history *h, uint64_t *n, int64_t *oldest_ns)
{
	sqlite3_stmt *st;
	int ret, rc;

	if (!n || !oldest_ns)
		return -EINVAL;
	*n = 0;
	*oldest_ns = 0;
	ret = push_stmt(h, PUSH_PENDING, false, &st);
	if (ret)
		return ret;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		int64_t count = sqlite3_column_int64(st, 0);

		*n = count < 0 ? 0 : (uint64_t)count;
		*oldest_ns = sqlite3_column_int64(st, 1); /* NULL reads as 0 */
	}
	sqlite3_reset(st);
	return rc == SQLITE_ROW ? 0 : sqlite_errno(rc);
}

/* --- collector state ------------------------------------------------------------- */

int history_state_set(struct history *h, const char *key, const char *value)
{
	sqlite3_stmt *st;
	int ret, rc = SQLITE_OK;

	if (!key || !value)
		return -EINVAL;
	ret = push_stmt(h, PUSH_STATE_SET, true, &st);
	if (ret)
		return ret;
	rc |= sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	rc |= sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
	if (rc != SQLITE_OK) {
		sqlite3_clear_bindings(st);
		return -ENOMEM;
	}
	return step_done(st);
}

int history_state_get(struct history *h, const char *key, char *value, size_t len)
{
	sqlite3_stmt *st;
	int ret, rc;

	if (!key || !value || !len)
		return -EINVAL;
	ret = push_stmt(h, PUSH_STATE_GET, false, &st);
	if (ret)
		return ret;
	if (sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC) != SQLITE_OK) {
		sqlite3_clear_bindings(st);
		return -ENOMEM;
	}
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		snprintf(value, len, "%s", column_str(st, 0));
	ret = rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : sqlite_errno(rc);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return ret;
}

/* Keys of the collector state; a value is text, numbers in decimal. */
#define KEY_URL "url"
#define KEY_LAST_SUCCESS "last_success_ns"
#define KEY_LAST_ERROR_AT "last_error_ns"
#define KEY_LAST_STATUS "last_status"
#define KEY_LAST_ERROR "last_error"
#define KEY_OUTAGE "outage_since_ns"

static int state_set_int(struct history *h, const char *key, int64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%lld", (long long)v);
	return history_state_set(h, key, buf);
}

static int64_t state_get_int(struct history *h, const char *key)
{
	char buf[24];

	if (history_state_get(h, key, buf, sizeof(buf)))
		return 0;
	return strtoll(buf, NULL, 10);
}

/* All keys in one transaction: a reader never sees half an update. */
int history_collector_save(struct history *h, const struct history_collector_state *s)
{
	int ret, rc;

	if (!h || !s)
		return -EINVAL;
	if (h->read_only)
		return -EROFS;
	rc = sqlite3_exec(h->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return sqlite_errno(rc);
	ret = history_state_set(h, KEY_URL, s->url);
	if (!ret)
		ret = state_set_int(h, KEY_LAST_SUCCESS, s->last_success_ns);
	if (!ret)
		ret = state_set_int(h, KEY_LAST_ERROR_AT, s->last_error_ns);
	if (!ret)
		ret = state_set_int(h, KEY_LAST_STATUS, s->last_status);
	if (!ret)
		ret = history_state_set(h, KEY_LAST_ERROR, s->last_error);
	if (!ret)
		ret = state_set_int(h, KEY_OUTAGE, s->outage_since_ns);
	rc = sqlite3_exec(h->db, ret ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL);
	if (!ret && rc != SQLITE_OK)
		ret = sqlite_errno(rc);
	return ret;
}

int history_collector_load(struct history *h, struct history_collector_state *s)
{
	int ret;

	if (!h || !s)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	if (h->version < 2)
		return -ENODATA;
	ret = history_state_get(h, KEY_URL, s->url, sizeof(s->url));
	if (ret && ret != -ENOENT)
		return ret;
	s->last_success_ns = state_get_int(h, KEY_LAST_SUCCESS);
	s->last_error_ns = state_get_int(h, KEY_LAST_ERROR_AT);
	s->last_status = (long)state_get_int(h, KEY_LAST_STATUS);
	s->outage_since_ns = state_get_int(h, KEY_OUTAGE);
	ret = history_state_get(h, KEY_LAST_ERROR, s->last_error, sizeof(s->last_error));
	return ret == -ENOENT ? 0 : ret;
}

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
	ret = prepare(h, push_sql[SIZE_PAGES], &h->push[SIZE_PAGES]);
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
	ret = push_stmt(h, pick, false, &st);
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

	ret = push_stmt(h, del, true, &st);
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

/* --- rollups ---------------------------------------------------------------------- */

/* The state key that records the rollup period of a file's rollups. */
#define KEY_ROLLUP_PERIOD "rollup_period_ns"

/* Reads the period the file's rollups were built with (the default when none). */
static void load_rollup_period(struct history *h)
{
	char buf[24];
	long long v;

	h->rollup_period = HISTORY_ROLLUP_PERIOD_NS;
	if (h->version < 4 || history_state_get(h, KEY_ROLLUP_PERIOD, buf, sizeof(buf)))
		return;
	v = strtoll(buf, NULL, 10);
	if (v >= HISTORY_ROLLUP_MIN_PERIOD_NS && v <= HISTORY_ROLLUP_PERIOD_NS)
		h->rollup_period = v;
}

int64_t history_rollup_period(const struct history *h)
{
	return h->rollup_period;
}

/* A rollup statement: -ENODATA on a file older than v4, -EROFS for writes on a reader. */
static int rollup_stmt(struct history *h, enum push_stmt which, bool writes, sqlite3_stmt **out)
{
	if (!h)
		return -EINVAL;
	if (h->version < 4)
		return -ENODATA;
	return push_stmt(h, which, writes, out);
}

int history_set_rollup_period(struct history *h, int64_t period_ns)
{
	sqlite3_stmt *st;
	int ret, rc;

	if (!h || period_ns < HISTORY_ROLLUP_MIN_PERIOD_NS || period_ns > HISTORY_ROLLUP_PERIOD_NS)
		return -EINVAL;
	if (period_ns == h->rollup_period)
		return 0;
	ret = rollup_stmt(h, ROLLUP_DROP, true, &st);
	if (ret)
		return ret;
	rc = sqlite3_exec(h->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return sqlite_errno(rc);
	ret = step_done(st);
	if (!ret)
		ret = state_set_int(h, KEY_ROLLUP_PERIOD, period_ns);
	rc = sqlite3_exec(h->db, ret ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL);
	if (!ret && rc != SQLITE_OK)
		ret = sqlite_errno(rc);
	if (!ret)
		h->rollup_period = period_ns;
	return ret;
}

/* The multiple of period at or below t (the lowest one for t below it). */
static int64_t period_floor(int64_t t, int64_t period)
{
	int64_t q = t / period;

	if (q * period > t && q > INT64_MIN / period + 1)
		q--;
	return q * period;
}

void history_series_free(struct history_series *s)
{
	if (!s)
		return;
	free(s->type);
	free(s->app);
	free(s->labels);
	memset(s, 0, sizeof(*s));
}

int history_rollup_todo(struct history *h, int64_t from_ns, int64_t before_ns, uint32_t skip,
			struct history_series *s, int64_t *period_start)
{
	int64_t period = h ? h->rollup_period : 0, first, end;
	sqlite3_stmt *st;
	int ret, rc = SQLITE_OK;

	if (!s || !period_start)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	ret = rollup_stmt(h, ROLLUP_TODO, false, &st);
	if (ret)
		return ret;
	first = period_floor(from_ns < 0 ? 0 : from_ns, period); /* see whole_periods() */
	end = period_floor(before_ns, period);
	if (first >= end)
		return -ENOENT;
	rc |= sqlite3_bind_int64(st, 1, first);
	rc |= sqlite3_bind_int64(st, 2, end);
	rc |= sqlite3_bind_int64(st, 3, period);
	rc |= sqlite3_bind_int64(st, 4, skip);
	if (rc != SQLITE_OK) {
		sqlite3_clear_bindings(st);
		return -ENOMEM;
	}
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		s->type = dup_column(st, 0);
		s->app = dup_column(st, 1);
		s->labels = dup_column(st, 2);
		*period_start = sqlite3_column_int64(st, 3);
		ret = s->type && s->app && s->labels ? 0 : -ENOMEM;
	} else {
		ret = rc == SQLITE_DONE ? -ENOENT : sqlite_errno(rc);
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (ret)
		history_series_free(s);
	return ret;
}

int history_period_rows(struct history *h, const struct history_series *s, int64_t period_start,
			history_cb cb, void *arg)
{
	struct history_row row;
	sqlite3_stmt *st;
	uint8_t *pprof;
	int ret, rc = SQLITE_OK;

	if (!s || !s->type || !s->app || !s->labels || !cb)
		return -EINVAL;
	ret = rollup_stmt(h, ROLLUP_ROWS, false, &st);
	if (ret)
		return ret;
	rc |= sqlite3_bind_text(st, 1, s->type, -1, SQLITE_STATIC);
	rc |= sqlite3_bind_text(st, 2, s->app, -1, SQLITE_STATIC);
	rc |= sqlite3_bind_text(st, 3, s->labels, -1, SQLITE_STATIC);
	rc |= sqlite3_bind_int64(st, 4, period_start);
	rc |= sqlite3_bind_int64(st, 5, period_start > INT64_MAX - h->rollup_period
						 ? INT64_MAX
						 : period_start + h->rollup_period);
	if (rc != SQLITE_OK) {
		sqlite3_clear_bindings(st);
		return -ENOMEM;
	}
	while (!ret && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		memset(&row, 0, sizeof(row));
		read_meta(st, &row);
		row.profiles = 1;
		ret = read_blob(st, &pprof, &row.pprof_len);
		row.pprof = pprof;
		if (!ret)
			ret = cb(&row, arg);
		free(pprof);
	}
	if (!ret && rc != SQLITE_DONE && rc != SQLITE_ROW)
		ret = sqlite_errno(rc);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return ret;
}

int history_put_rollup(struct history *h, const struct history_meta *m, uint32_t profiles,
		       const uint8_t *pprof, size_t len, int64_t *id_out)
{
	sqlite3_stmt *st;
	int ret;

	if (!m || profiles == 0 || period_floor(m->start_ns, h->rollup_period) != m->start_ns)
		return -EINVAL;
	ret = rollup_stmt(h, ROLLUP_INSERT, true, &st);
	return ret ? ret : put_row(h, st, m, pprof, len, profiles, id_out);
}

int history_rollup_count(struct history *h, uint64_t *rows, uint64_t *bytes)
{
	sqlite3_stmt *st;
	int ret, rc;

	if (!rows || !bytes)
		return -EINVAL;
	*rows = *bytes = 0;
	ret = rollup_stmt(h, ROLLUP_COUNT, false, &st);
	if (ret)
		return ret;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		int64_t n = sqlite3_column_int64(st, 0), b = sqlite3_column_int64(st, 1);

		*rows = n < 0 ? 0 : (uint64_t)n;
		*bytes = b < 0 ? 0 : (uint64_t)b;
	}
	sqlite3_reset(st);
	return rc == SQLITE_ROW ? 0 : sqlite_errno(rc);
}
