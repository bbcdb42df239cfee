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
	int64_t start_ns, end_ns;	/* the interval the profile covers */
	const char *type;		/* "cpu", ... */
	const char *app;		/* application (service_name); "" for host-wide */
	const char *labels;		/* "k=v" lines sorted by key, '\n'-separated, or "" */
	uint64_t samples;		/* total sample count */
	uint32_t processes;		/* distinct pids */
};

struct history_row {
	int64_t id;
	struct history_meta meta;
	const uint8_t *pprof;		/* uncompressed pprof, only when asked for */
	size_t pprof_len;
};

/* Rows overlapping [since_ns, until_ns); NULL strings match everything. */
struct history_query {
	int64_t since_ns, until_ns;
	const char *type;
	const char *app;
	const char *const *labels;	/* "k=v" each row's labels must all include */
	size_t n_labels;
};

struct history;

/* Opens (creating the directory 0700 and the schema unless read_only).
 * NULL with errno set; *err (may be NULL) gets a static or sqlite message. */
struct history *history_open(const char *data_dir, bool read_only, const char **err);
void history_close(struct history *h);
const char *history_path(const struct history *h);

/* Compresses pprof (uncompressed bytes) with zstd and stores it. */
int history_put(struct history *h, const struct history_meta *m, const uint8_t *pprof,
		size_t len, int64_t *id_out);

/* Calls cb for each matching row, oldest first; with_blob decompresses the
 * profile (a corrupt blob is reported to cb as pprof == NULL, not an error).
 * A non-zero return of cb stops and is returned. */
typedef int (*history_cb)(const struct history_row *row, void *arg);
int history_query(struct history *h, const struct history_query *q, bool with_blob,
		  history_cb cb, void *arg);

#endif
