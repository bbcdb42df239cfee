// SPDX-License-Identifier: MIT
/*
 * Rollups: one row per series and period merging its raw rows, so that views
 * over long ranges read few blobs; the period the file's rollups were built with.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "history_int.h"

/* --- rollups ---------------------------------------------------------------------- */

/* The state key that records the rollup period of a file's rollups. */
#define KEY_ROLLUP_PERIOD "rollup_period_ns"

/* Reads the period the file's rollups were built with (the default when none). */
void hist_load_rollup_period(struct history *h)
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
	return hist_push_stmt(h, which, writes, out);
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
	ret = hist_step_done(st);
	if (!ret)
		ret = hist_state_set_int(h, KEY_ROLLUP_PERIOD, period_ns);
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
	ret = h ? hist_follow(h) : -EINVAL;
	if (!ret)
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
		s->type = hist_dup_column(st, 0);
		s->app = hist_dup_column(st, 1);
		s->labels = hist_dup_column(st, 2);
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
	rc |= sqlite3_bind_int64(st, 5,
				 period_start > INT64_MAX - h->rollup_period ?
					 INT64_MAX :
					 period_start + h->rollup_period);
	if (rc != SQLITE_OK) {
		sqlite3_clear_bindings(st);
		return -ENOMEM;
	}
	while (!ret && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		memset(&row, 0, sizeof(row));
		hist_read_meta(st, &row);
		row.profiles = 1;
		ret = hist_read_blob(st, &pprof, &row.pprof_len);
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
	return ret ? ret : hist_put_row(h, st, m, pprof, len, profiles, id_out);
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
