/* SPDX-License-Identifier: MIT */
/*
 * What the history's files share (history.c: the file, its schema and its
 * statements; history_read.c, history_queue.c, history_retention.c,
 * history_rollups.c): the handle, the statements' indexes, the row columns.
 */
#ifndef EMBER_HISTORY_INT_H
#define EMBER_HISTORY_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

#include "history.h"

struct zstd_cctx;

/* How long a statement waits on the other side's lock (a checkpoint, a writer). */
#define BUSY_TIMEOUT_MS 5000

/* The columns every row read starts with (enum below); queries, the queue, rollups. */
#define QUERY_COLS "SELECT id, start_ns, end_ns, type, app, labels, samples, processes, raw_size, "

/* How a query treats rollups; also the file's schema (a v3 file has none). */
enum query_mode { QUERY_V3, QUERY_RAW, QUERY_ROLLUPS, QUERY_MODES };

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
	COL_PROFILES = 10, /* query_sql: the raw profiles a row stands for */
	COL_ROLLUP,	   /* query_sql: 1 for a rollup row */
	COL_ATTEMPTS = 10  /* PENDING_COLS */
};

struct history {
	sqlite3 *db;
	char *path;
	bool read_only;
	int version;			/* a read-only open may see a v1 file: no push state */
	struct history_upgrade upgrade; /* what this writer's open did once to an older file */
	bool incremental;		/* auto_vacuum = INCREMENTAL: a prune can shrink the file */
	sqlite3_stmt *insert;
	struct zstd_cctx *zstd; /* the blobs' compression context, kept: made on first use */
	int64_t rollup_period;	/* HISTORY_ROLLUP_PERIOD_NS or what the file records */
	sqlite3_stmt *query[QUERY_MODES][2][2]; /* [mode][with_blob][by_type], on first use */
	sqlite3_stmt *push[PUSH_STMT_COUNT];	/* hist_push_sql, prepared on first use */
	char *data_dir;
	uint64_t dev, ino;		  /* history.db as opened: another handle may replace it */
	struct history_damage damage;	  /* what reads of this handle met */
	struct history_recovery recovery; /* what this handle's open or stores moved aside */
};

/* history.c: every statement but the queries (history_read.c), by enum push_stmt. */
extern const char *const hist_push_sql[PUSH_STMT_COUNT];

int sqlite_errno(int rc);
/* Prepares *st once (a persistent statement kept in h). */
int hist_prepare(struct history *h, const char *sql, sqlite3_stmt **st);
int checkpoint_truncate(sqlite3 *db, int busy_ms);
/* Compresses pprof and stores it with st (bound: ?1-?8 meta, ?9 blob, then extra > 0 as ?10). */
int hist_put_row(struct history *h, sqlite3_stmt *st, const struct history_meta *m,
		 const uint8_t *pprof, size_t len, int64_t extra, int64_t *id_out);

/* history_read.c */
const char *hist_column_str(sqlite3_stmt *st, int col);
void hist_read_meta(sqlite3_stmt *st, struct history_row *row);
int hist_read_blob(sqlite3_stmt *st, uint8_t **out, size_t *out_len);
/* Whether a row's "k=v\n" label lines (or NULL: none) include every label q asks for. */
bool hist_labels_match(const char *labels, const struct history_query *q);

/* history_queue.c */
int hist_push_stmt(struct history *h, enum push_stmt which, bool writes, sqlite3_stmt **out);
int hist_step_done(sqlite3_stmt *st);
char *hist_dup_column(sqlite3_stmt *st, int col);
int hist_state_set_int(struct history *h, const char *key, int64_t v);
/* A write of n items at v in one transaction: 0 to go on, 1 when n is 0, or -errno. */
int hist_batch_ok(const struct history *h, const void *v, size_t n);
/* BEGIN IMMEDIATE: 0 or -errno. */
int hist_begin_transaction(struct history *h);
/* Ends the transaction that BEGIN IMMEDIATE opened: committed when ret is 0, else rolled back. */
int hist_end_transaction(struct history *h, int ret);

/* history.c: closes the file and opens h->path again (a replaced file), in place. */
int hist_reopen(struct history *h);
void hist_close_db(struct history *h);
int hist_open_db(struct history *h, const char **err);

/* history_damage.c */
/* A writer's open: a bounded quick check, and the file moved aside when damaged. */
void hist_check_on_open(struct history *h);
/* A handle opened before another one replaced history.db follows it (stat per call). */
int hist_follow(struct history *h);
/* history_query's way on in a damaged file: every row that reads, by id. */
int hist_query_damaged(struct history *h, const struct history_query *q, bool with_blob,
		       history_cb cb, void *arg, int64_t *done, size_t n_done);

/* history_rollups.c */
void hist_load_rollup_period(struct history *h);

#endif
