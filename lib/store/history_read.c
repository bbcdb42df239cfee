// SPDX-License-Identifier: MIT
/*
 * Reading the history: the rows of a time range, raw or with rollups in place
 * of whole periods, each with its pprof decompressed on request.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "compress.h"

#include "history_int.h"
#include "labels.h"

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
#define QUERY_WHERE                                           \
	" FROM profiles WHERE start_ns < ?2 AND end_ns > ?1 " \
	"AND (?4 IS NULL OR app = ?4)"
#define QUERY_ORDER " ORDER BY start_ns, id"
#define BY_TYPE " AND type = ?3"
#define RAW_WHERE QUERY_WHERE " AND rollup = 0"
#define HIDDEN_BY_ROLLUP                                                                      \
	" AND NOT (start_ns >= ?5 AND start_ns < ?6 AND EXISTS (SELECT 1 FROM profiles AS r " \
	"WHERE r.rollup = 1 AND r.type = profiles.type AND r.app = profiles.app "             \
	"AND r.labels = profiles.labels AND r.start_ns = profiles.start_ns - "                \
	"(profiles.start_ns - ?5) % ?7))"
#define ROLLUP_WHERE                                                            \
	" FROM profiles WHERE rollup = 1 AND start_ns >= ?5 AND start_ns < ?6 " \
	"AND (start_ns - ?5) % ?7 = 0 AND (?4 IS NULL OR app = ?4)"
#define WITH_ROLLUPS(blob, type)                                                               \
	QUERY_COLS blob ", 1, 0" RAW_WHERE type HIDDEN_BY_ROLLUP " UNION ALL " QUERY_COLS blob \
			", rollup_profiles, 1" ROLLUP_WHERE type " ORDER BY 2, 1"

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

const char *hist_column_str(sqlite3_stmt *st, int col)
{
	const unsigned char *s = sqlite3_column_text(st, col);

	return s ? (const char *)s : "";
}

void hist_read_meta(sqlite3_stmt *st, struct history_row *row)
{
	int64_t samples = sqlite3_column_int64(st, COL_SAMPLES);
	int64_t processes = sqlite3_column_int64(st, COL_PROCESSES);

	row->id = sqlite3_column_int64(st, COL_ID);
	row->meta.start_ns = sqlite3_column_int64(st, COL_START);
	row->meta.end_ns = sqlite3_column_int64(st, COL_END);
	row->meta.type = hist_column_str(st, COL_TYPE);
	row->meta.app = hist_column_str(st, COL_APP);
	row->meta.labels = hist_column_str(st, COL_LABELS);
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
int hist_read_blob(sqlite3_stmt *st, uint8_t **out, size_t *out_len)
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

/* Whether a row's labels (labels_format's text) include every "k=v" the query asks for. */
bool hist_labels_match(const char *labels, const struct history_query *q)
{
	struct label_set row;

	if (!q->n_labels)
		return true;
	labels_parse(labels, &row, NULL, NULL);
	for (size_t i = 0; i < q->n_labels; i++) {
		const char *eq = strchr(q->labels[i], '=');
		char name[CONFIG_NAME_MAX];
		const char *value;

		if (!eq || (size_t)(eq - q->labels[i]) >= sizeof(name))
			return false;
		memcpy(name, q->labels[i], (size_t)(eq - q->labels[i]));
		name[eq - q->labels[i]] = '\0';
		value = labels_get(&row, name);
		if (!value || strcmp(value, eq + 1))
			return false;
	}
	return true;
}

/* The ids a query gave, so that reading on past damage gives none twice. */
struct given {
	int64_t *ids;
	size_t n, cap;
};

static int give(struct given *g, int64_t id)
{
	int64_t *ids;

	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 256;
		ids = realloc(g->ids, g->cap * sizeof(*ids));
		if (!ids)
			return -ENOMEM;
		g->ids = ids;
	}
	g->ids[g->n++] = id;
	return 0;
}

/* Rows are only valid during cb; a query may not be started from inside cb. */
int history_query(struct history *h, const struct history_query *q, bool with_blob, history_cb cb,
		  void *arg)
{
	struct given given = {0};
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
	ret = hist_prepare(h, query_sql[mode][with_blob][q->type != NULL], st);
	if (ret == -EBADMSG)
		return hist_query_damaged(h, q, with_blob, cb, arg, NULL, 0);
	if (ret)
		return ret;
	ret = bind_query(*st, q, h->rollup_period);
	while (!ret && (rc = sqlite3_step(*st)) == SQLITE_ROW) {
		memset(&row, 0, sizeof(row));
		hist_read_meta(*st, &row);
		read_profiles(*st, &row);
		if (!hist_labels_match(row.meta.labels ? row.meta.labels : "", q))
			continue;
		/* another reader takes this row; skipped before its blob is read */
		if (q->n_shards > 1 && (uint64_t)row.id % q->n_shards != q->shard)
			continue;
		pprof = NULL;
		if (with_blob)
			ret = hist_read_blob(*st, &pprof, &row.pprof_len);
		row.pprof = pprof;
		if (!ret && !row.rollup)
			ret = give(&given, row.id);
		if (!ret)
			ret = cb(&row, arg);
		free(pprof);
	}
	if (!ret && rc != SQLITE_DONE)
		ret = sqlite_errno(rc);
	sqlite3_reset(*st);
	sqlite3_clear_bindings(*st);
	if (ret == -EBADMSG && rc != SQLITE_ROW && rc != SQLITE_DONE)
		ret = hist_query_damaged(h, q, with_blob, cb, arg, given.ids, given.n);
	free(given.ids);
	return ret;
}

int history_types(struct history *h, char *buf, size_t len, size_t *n)
{
	sqlite3_stmt *st;
	size_t used = 0;
	int rc;

	if (!h || !buf || !n)
		return -EINVAL;
	*n = 0;
	/* profiles_type_start leads with type: DISTINCT walks the index, not the blobs */
	rc = sqlite3_prepare_v2(h->db, "SELECT DISTINCT type FROM profiles ORDER BY type", -1, &st,
				NULL);
	if (rc != SQLITE_OK) {
		sqlite3_finalize(st);
		return sqlite_errno(rc);
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *t = hist_column_str(st, 0);
		size_t tl = strlen(t) + 1;

		if (tl > len - used)
			break;
		memcpy(buf + used, t, tl);
		used += tl;
		(*n)++;
	}
	sqlite3_finalize(st);
	if (sqlite_errno(rc) == -EBADMSG) {
		h->damage.damaged = true; /* the types it could read: the queries read on */
		return 0;
	}
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : sqlite_errno(rc);
}
