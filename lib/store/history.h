/* SPDX-License-Identifier: MIT */
/*
 * The local history: SQLite (WAL) at <data-dir>/history.db, one row per stored
 * profile with its time range, type, labels and a zstd-compressed pprof blob.
 */
#ifndef EMBER_HISTORY_H
#define EMBER_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct history_meta {
	int64_t start_ns, end_ns; /* the interval the profile covers */
	const char *type;	  /* "cpu", ... */
	const char *app;	  /* application (service_name); "" for host-wide */
	const char *labels;	  /* labels_format's text (one "k=v" line a label), or "" */
	uint64_t samples;	  /* total sample count */
	uint32_t processes;	  /* distinct pids */
};

struct history_row {
	int64_t id;
	struct history_meta meta;
	const uint8_t *pprof; /* uncompressed pprof, only when asked for */
	size_t pprof_len;
	bool rollup;	   /* a rollup row (history_query's use_rollups) */
	uint32_t profiles; /* raw profiles the row stands for: 1, or a rollup's */
};

/*
 * Rows overlapping [since_ns, until_ns); NULL strings match everything. Raw
 * rows only, unless use_rollups: then, for each series (type, app, labels) and
 * each whole rollup period inside [since_ns, until_ns) that has a rollup, the
 * rollup row stands for the raw rows that started in that period (a raw row
 * belongs to the period of its start), so each raw row counts exactly once.
 */
struct history_query {
	int64_t since_ns, until_ns;
	const char *type;
	const char *app;
	const char *const *labels; /* "k=v" each row's labels must all include */
	size_t n_labels;
	uint32_t n_shards, shard; /* > 1: only rows whose id % n_shards == shard */
	bool use_rollups;	  /* rollups in place of whole periods' raw rows */
};

struct history;

/* Opens (creating the directory 0700 and the schema unless read_only).
 * NULL with errno set; *err (may be NULL) gets a static or sqlite message. */
struct history *history_open(const char *data_dir, bool read_only, const char **err);
void history_close(struct history *h);
/*
 * Hands back what the connection keeps between uses: its compression context
 * (made again at the next store) and the unused pages of its cache. For a
 * writer that stores rarely (the hourly rollups).
 */
void history_release_memory(struct history *h);
/* The connection's page cache, in KiB (each has 512 by default): for one that reads little. */
int history_set_cache_kib(struct history *h, int kib);
const char *history_path(const struct history *h);

/* Compresses pprof (uncompressed bytes) with zstd and stores it. */
int history_put(struct history *h, const struct history_meta *m, const uint8_t *pprof, size_t len,
		int64_t *id_out);

/* One profile of history_put_all(). */
struct history_put {
	struct history_meta meta;
	const uint8_t *pprof; /* uncompressed */
	size_t len;
};
/*
 * Stores v[0..n) as history_put() would, in one transaction: all of them, or
 * none (the first error). The pages they share (the table's last leaf, the
 * indexes') are written to the WAL once, where n puts wrote them n times.
 */
int history_put_all(struct history *h, const struct history_put *v, size_t n);

/* Calls cb for each matching row, oldest first; with_blob decompresses the
 * profile (a corrupt blob is reported to cb as pprof == NULL, not an error).
 * A non-zero return of cb stops and is returned. */
typedef int (*history_cb)(const struct history_row *row, void *arg);
int history_query(struct history *h, const struct history_query *q, bool with_blob, history_cb cb,
		  void *arg);

/*
 * The profile types the history holds ("cpu", ...), each once, in order, each
 * a NUL-terminated name in buf (at most len bytes, cut at a whole name);
 * *n gets how many. The views name them when asked for a type it does not hold.
 */
int history_types(struct history *h, char *buf, size_t len, size_t *n);

/*
 * Store-and-forward: the history is the push queue. Every stored profile starts
 * pending; the uploader takes pending rows and marks each one sent, rejected
 * (the collector refused it: not retried) or expired (older than the
 * collector's ingestion window: never pushed, still kept locally).
 */
enum history_push_state {
	HISTORY_PENDING = 0,
	HISTORY_SENT = 1,
	HISTORY_REJECTED = 2,
	HISTORY_EXPIRED = 3,
	HISTORY_LOCAL = 4, /* a rollup: never pushed (not a queue state) */
};

/* A pending profile taken for pushing; owned by the caller, see history_pending_free(). */
struct history_pending {
	int64_t id;
	int64_t start_ns, end_ns;
	char *type, *app, *labels;
	uint32_t attempts; /* failed attempts so far */
	uint8_t *pprof;	   /* uncompressed; NULL when the stored blob is bad */
	size_t pprof_len;
};

/* The oldest (newest == false) or newest pending profile by start time.
 * 0, -ENOENT when none is pending, or another negative errno. */
int history_next_pending(struct history *h, bool newest, struct history_pending *out);
void history_pending_free(struct history_pending *p);

/* Moves a row to state (sent, rejected or expired) with message (may be NULL). */
int history_mark(struct history *h, int64_t id, enum history_push_state state, const char *message,
		 int64_t now_ns);

/* A verdict on a pushed profile, as history_mark() takes it. */
struct history_verdict {
	int64_t id;
	enum history_push_state state;
	const char *message; /* may be NULL */
	int64_t at_ns;
};

/* At most this many verdicts in one call below (a bound on the query's text). */
#define HISTORY_VERDICTS_MAX 4096

/*
 * history_mark() of each of v[0..n) in one transaction: all written, or none
 * (-errno: a full disk). A row that is gone (deleted meanwhile) is passed over.
 */
int history_mark_all(struct history *h, const struct history_verdict *v, size_t n);
/*
 * history_next_pending(), passing over the profiles of the n verdicts in
 * skip: pushed already, their verdicts not yet written (a full disk).
 */
int history_next_pending_except(struct history *h, bool newest, const struct history_verdict *skip,
				size_t n, struct history_pending *out);
/* Counts a failed attempt on a row that stays pending, with its cause. */
int history_mark_attempt(struct history *h, int64_t id, const char *message, int64_t now_ns);
/* Marks every pending row that started before cutoff_ns expired; *n (may be NULL) gets how many. */
int history_expire_pending(struct history *h, int64_t cutoff_ns, int64_t now_ns, uint64_t *n);

struct history_push_counts {
	uint64_t pending, sent, rejected, expired;
	int64_t oldest_pending_ns; /* start of the oldest pending profile; 0 when none */
};

/*
 * Counts by state: reads the whole (push_state, start_ns) index, so it is for
 * `emberctl status`, not for every push. -ENODATA on a history written before
 * push states existed (a read-only open of a v1 file).
 */
int history_push_counts(struct history *h, struct history_push_counts *c);
/* Pending profiles only, and the start of the oldest (0 when none): cheap. */
int history_pending_count(struct history *h, uint64_t *n, int64_t *oldest_ns);

/*
 * The collector's state, kept by the uploader after each change so that
 * `emberctl status` can show it even when the daemon is down.
 */
struct history_collector_state {
	char url[1024];		 /* credentials removed */
	int64_t last_success_ns; /* 0: never */
	int64_t last_error_ns;	 /* 0: never */
	long last_status;	 /* HTTP status of the last error; 0: transport error */
	char last_error[256];	 /* one line */
	int64_t outage_since_ns; /* 0: the collector is reachable */
};

int history_collector_save(struct history *h, const struct history_collector_state *s);
/* Missing keys read as zero/empty; -ENODATA as for history_push_counts(). */
int history_collector_load(struct history *h, struct history_collector_state *s);

/* The key/value table underneath; values are bounded by len (truncated, always terminated). */
int history_state_set(struct history *h, const char *key, const char *value);
/* 0, -ENOENT when the key is missing. */
int history_state_get(struct history *h, const char *key, char *value, size_t len);

/* --- rollups ---------------------------------------------------------------------- */

/*
 * A rollup merges the raw profiles of one series (type, app, labels) that
 * started in one period [P, P + period), P a multiple of the period since the
 * epoch: one row in place of 360 for an hour of 10 s intervals, so that a
 * view over a day reads 24 rows instead of 8640. Rollups are local: never
 * pushed, not counted as pending/sent/... (push state HISTORY_LOCAL).
 */
#define HISTORY_ROLLUP_PERIOD_NS (3600LL * 1000000000LL)
/* The shortest period a test may set (history_set_rollup_period). */
#define HISTORY_ROLLUP_MIN_PERIOD_NS (1000000000LL)

/* A series: the strings every profile of one stream carries. */
struct history_series {
	char *type, *app, *labels;
};

void history_series_free(struct history_series *s);

/* The period of this file's rollups: HISTORY_ROLLUP_PERIOD_NS unless a test set another. */
int64_t history_rollup_period(const struct history *h);
/*
 * Test only (emberd's EMBER_TEST_ROLLUP_SECONDS): records another period in
 * the file, deleting the rollups of the previous one. -EINVAL out of
 * [HISTORY_ROLLUP_MIN_PERIOD_NS, HISTORY_ROLLUP_PERIOD_NS].
 */
int history_set_rollup_period(struct history *h, int64_t period_ns);

/*
 * A series and period that have raw profiles and no rollup, among the periods
 * inside [floor(from_ns), floor(before_ns)) (floors to multiples of the
 * period): the (skip + 1)-th in order of period, then series (the caller frees
 * s). -ENOENT when there is none; -ENODATA on a file older than rollups.
 */
int history_rollup_todo(struct history *h, int64_t from_ns, int64_t before_ns, uint32_t skip,
			struct history_series *s, int64_t *period_start);
/* cb for each raw row of series s that started in [period_start, + period), with its blob. */
int history_period_rows(struct history *h, const struct history_series *s, int64_t period_start,
			history_cb cb, void *arg);
/*
 * Stores a rollup of profiles raw rows (m->start_ns a period start); -EEXIST
 * when the series already has one of that period.
 */
int history_put_rollup(struct history *h, const struct history_meta *m, uint32_t profiles,
		       const uint8_t *pprof, size_t len, int64_t *id_out);
/* How many rollup rows the history holds and their stored (zstd) bytes. */
int history_rollup_count(struct history *h, uint64_t *rows, uint64_t *bytes);

/* --- damage ---------------------------------------------------------------------- */

/*
 * What reads of a handle met in a damaged file (SQLITE_CORRUPT or NOTADB):
 * history_query() then reads on by id, every row whose pages are intact, and
 * counts the ids it could not read (about the rows lost: an id deleted by
 * retention inside a damaged page counts too). It fails (-EBADMSG) only when
 * it read no row at all.
 */
struct history_damage {
	bool damaged;
	uint64_t rows_read;    /* rows read by the damaged queries (each query's, summed) */
	uint64_t unreadable;   /* ids that could not be read */
	char first_error[128]; /* SQLite's message */
};

void history_damage_info(const struct history *h, struct history_damage *d);

/*
 * A damaged history moved aside: by a writer's open (a quick check of at most
 * HISTORY_CHECK_BUDGET_NS: a larger file is checked as far as it gets) or by
 * history_recover(). The damaged files go, under their own names, to
 * <data-dir>/damaged-YYYYmmddTHHMMSSZ/ (readable by emberctl --data-dir), a
 * fresh history.db takes their place, and every row that can still be read
 * is copied into it (within HISTORY_SALVAGE_BUDGET_NS), its push state kept.
 */
#define HISTORY_CHECK_BUDGET_NS (2LL * 1000000000LL)
#define HISTORY_SALVAGE_BUDGET_NS (20LL * 1000000000LL)

struct history_recovery {
	uint64_t moved;	     /* times this handle moved a damaged file aside */
	char moved_to[512];  /* the directory of the last one */
	char why[128];	     /* what the check or the store said */
	uint64_t salvaged;   /* rows copied into the fresh history */
	uint64_t unreadable; /* ids that could not be read */
	bool salvage_cut;    /* the budget ran out: the rest is only in moved_to */
	int err;	     /* 0, or why the move or the fresh file failed */
};

/* What the last move did (moved == 0: none). */
void history_recovery_info(const struct history *h, struct history_recovery *r);

/*
 * Checks the file with PRAGMA quick_check for at most budget_ns. 0 when it is
 * sound (or the check ran out of time: *complete false), -EBADMSG when it is
 * damaged (why gets SQLite's first complaint), another -errno when the check
 * could not run.
 */
int history_check(struct history *h, int64_t budget_ns, bool *complete, char *why, size_t len);

/*
 * A writer's answer to a store that said the file is damaged (-EBADMSG):
 * moves it aside and starts a fresh one as described above, in place (h stays
 * valid). When another handle did so already, only follows it. 0 or -errno.
 */
int history_recover(struct history *h, const char *why);

/* --- size and retention ----------------------------------------------------------- */

/* What the history costs: the database file (all its pages) and its WAL. */
struct history_size {
	uint64_t db_bytes;   /* page_count * page_size: the file once checkpointed */
	uint64_t free_bytes; /* free pages inside it (deleted rows not yet vacuumed) */
	uint64_t file_bytes; /* history.db as the file system has it now */
	uint64_t wal_bytes;  /* the -wal file as it is now */
};

/* Works on read-only handles too (emberctl list and status show it). */
int history_size(struct history *h, struct history_size *s);

/*
 * What a writer's open did once to a file of an older ember: schema v3 turns
 * on incremental auto-vacuum, which takes one VACUUM (a rewrite of the whole
 * file). vacuumed with its figures, or err when it failed (retried at the next
 * open; the history works meanwhile but its file does not shrink).
 */
struct history_upgrade {
	bool vacuumed;
	int err;			    /* 0 or a negative errno */
	uint64_t bytes_before, bytes_after; /* database + WAL */
	int64_t took_ns;
};

const struct history_upgrade *history_upgrade_info(const struct history *h);

/* What a prune deleted and what is left. */
struct history_prune_result {
	uint64_t aged, aged_bytes;   /* rows past retention, and their stored (zstd) bytes */
	uint64_t sized, sized_bytes; /* oldest rows deleted to fit max_size */
	bool compacted;		     /* freed pages returned to the file system, WAL truncated */
	bool over_size;		     /* still over max_size: nothing left that may be deleted */
	bool more;		     /* a per-prune bound was reached: the next prune goes on */
	uint64_t pending;	     /* with protect_pending and over_size: the rows kept */
	uint64_t db_bytes, file_bytes, wal_bytes; /* after the prune, as history_size() */
};

/*
 * Retention: deletes the profiles whose interval ended before now_ns -
 * retention_ns, then the oldest ones while the pages in use (db_bytes -
 * free_bytes) exceed max_size; with protect_pending, profiles still waiting to
 * be pushed are never deleted (the uploader expires them after max_age, then
 * they may go). When it deleted anything, or the file plus its WAL exceed
 * max_size, it returns the freed pages to the file system (incremental vacuum)
 * and truncates the WAL: right after a prune, history.db plus its WAL fit
 * max_size (unless a reader held the WAL: the next prune truncates it, or only
 * unsent rows are left: over_size). One prune deletes at most 4096 rows or
 * 64 MiB of stored profiles and gives back at most 64 MiB of pages (more: the
 * next prune goes on), so that a large backlog does not stall its caller.
 * Cheap when nothing is past a bound: an index probe, a header read and a
 * stat(). -EROFS on a read-only handle.
 */
int history_prune(struct history *h, int64_t now_ns, int64_t retention_ns, uint64_t max_size,
		  bool protect_pending, struct history_prune_result *r);

/*
 * Whether the history holds a profile that may go to make room: with
 * protect_pending, one that is not waiting to be pushed (sent, rejected,
 * expired; a rollup); else one whose interval ended before cutoff_ns. A read:
 * works on a full disk.
 */
int history_prunable(struct history *h, bool protect_pending, int64_t cutoff_ns, bool *any);

/*
 * The reserve: a file beside the history (history.db-reserve) holding bytes
 * of the file system, given back when the history has filled it, so that a
 * prune can still write (deleting rows goes through the WAL) and make room.
 * history_reserve() creates or completes it (-ENOSPC: the disk is too full,
 * a part may be held); history_unreserve() removes it (-ENOENT: there was none).
 */
int history_reserve(struct history *h, uint64_t bytes);
int history_unreserve(struct history *h);

/*
 * Copies the WAL into the file and truncates it: on a full disk, what the WAL
 * holds (every commit's pages, again and again) can be far more than the
 * pages it changed. 0, or -errno (a reader keeping the WAL is not an error).
 */
int history_checkpoint(struct history *h);

#endif
