// SPDX-License-Identifier: MIT
/*
 * The history as the push queue: the pending rows, oldest or newest first,
 * their push state, and the collector's state that `emberctl status` shows.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "history_int.h"

/* --- the push queue --------------------------------------------------------------- */

/* Prepares a push statement; -ENODATA on a file without push state, -EROFS for writes. */
int hist_push_stmt(struct history *h, enum push_stmt which, bool writes, sqlite3_stmt **out)
{
	int ret;

	if (!h)
		return -EINVAL;
	if (h->version < 2)
		return -ENODATA;
	if (writes && h->read_only)
		return -EROFS;
	ret = hist_prepare(h, hist_push_sql[which], &h->push[which]);
	*out = h->push[which];
	return ret;
}

/* Steps a statement that returns no rows, then resets it. */
int hist_step_done(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE ? 0 : sqlite_errno(rc);
}

char *hist_dup_column(sqlite3_stmt *st, int col)
{
	return strdup(hist_column_str(st, col));
}

static int read_pending(sqlite3_stmt *st, struct history_pending *p)
{
	struct history_row row = {0};
	int64_t attempts = sqlite3_column_int64(st, COL_ATTEMPTS);

	hist_read_meta(st, &row);
	p->id = row.id;
	p->start_ns = row.meta.start_ns;
	p->end_ns = row.meta.end_ns;
	p->attempts = attempts < 0 ? 0 : attempts > UINT32_MAX ? UINT32_MAX : (uint32_t)attempts;
	p->type = hist_dup_column(st, COL_TYPE);
	p->app = hist_dup_column(st, COL_APP);
	p->labels = hist_dup_column(st, COL_LABELS);
	if (!p->type || !p->app || !p->labels)
		return -ENOMEM;
	return hist_read_blob(st, &p->pprof, &p->pprof_len);
}

/* The ids of v[0..n) as a JSON array ("[1,2]") for json_each(); NULL with errno set. */
static char *ids_json(const struct history_verdict *v, size_t n)
{
	size_t len = n * 21 + 3, o = 0; /* an id: at most 20 characters and a comma */
	char *s;

	if (n > HISTORY_VERDICTS_MAX) {
		errno = E2BIG;
		return NULL;
	}
	s = malloc(len);
	if (!s)
		return NULL;
	s[o++] = '[';
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(s + o, len - o, "%s%lld", i ? "," : "", (long long)v[i].id);
	snprintf(s + o, len - o, "]");
	return s;
}

int history_next_pending_except(struct history *h, bool newest, const struct history_verdict *skip,
				size_t n, struct history_pending *out)
{
	sqlite3_stmt *st;
	char *ids = NULL;
	int ret, rc;

	if (!out || (n && !skip))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	ret = hist_follow(h); /* the sampler's handle may have moved a damaged file aside */
	if (!ret)
		ret = hist_push_stmt(h, newest ? PUSH_NEWEST : PUSH_OLDEST, false, &st);
	if (ret)
		return ret;
	if (n && !(ids = ids_json(skip, n)))
		return -errno;
	/* NULL: json_each() has no rows, nothing is passed over */
	if (sqlite3_bind_text(st, 1, ids, -1, SQLITE_STATIC) != SQLITE_OK) {
		free(ids);
		return -ENOMEM;
	}
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		ret = read_pending(st, out);
	else
		ret = rc == SQLITE_DONE ? -ENOENT : sqlite_errno(rc);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	free(ids);
	if (ret)
		history_pending_free(out);
	return ret;
}

int history_next_pending(struct history *h, bool newest, struct history_pending *out)
{
	return history_next_pending_except(h, newest, NULL, 0, out);
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
	int ret = hist_step_done(st);

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
	ret = hist_push_stmt(h, PUSH_MARK, true, &st);
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

int hist_batch_ok(const struct history *h, const void *v, size_t n)
{
	if (!h || (n && !v))
		return -EINVAL;
	if (h->read_only)
		return -EROFS;
	return n ? 0 : 1;
}

int hist_begin_transaction(struct history *h)
{
	int rc;

	if (!h->db)
		return -EIO; /* a damaged file that could neither be moved nor opened again */
	rc = sqlite3_exec(h->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	return rc == SQLITE_OK ? 0 : sqlite_errno(rc);
}

int hist_end_transaction(struct history *h, int ret)
{
	int rc = sqlite3_exec(h->db, ret ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL);

	if (!ret && rc != SQLITE_OK)
		ret = sqlite_errno(rc);
	/* a COMMIT that failed may leave the transaction open (busy), or SQLite rolled it back */
	if (ret && !sqlite3_get_autocommit(h->db))
		sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
	return ret;
}

int history_mark_all(struct history *h, const struct history_verdict *v, size_t n)
{
	int ret = hist_batch_ok(h, v, n);

	if (!ret)
		ret = hist_begin_transaction(h);
	if (ret)
		return ret > 0 ? 0 : ret;
	for (size_t i = 0; i < n && !ret; i++) {
		ret = history_mark(h, v[i].id, v[i].state, v[i].message, v[i].at_ns);
		if (ret == -ENOENT)
			ret = 0;
	}
	return hist_end_transaction(h, ret);
}

int history_mark_attempt(struct history *h, int64_t id, const char *message, int64_t now_ns)
{
	sqlite3_stmt *st;
	int ret, rc = SQLITE_OK;

	ret = hist_push_stmt(h, PUSH_ATTEMPT, true, &st);
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
	ret = hist_push_stmt(h, PUSH_EXPIRE, true, &st);
	if (ret)
		return ret;
	rc |= sqlite3_bind_int64(st, 1, cutoff_ns);
	rc |= sqlite3_bind_int64(st, 2, now_ns);
	if (rc != SQLITE_OK) {
		sqlite3_clear_bindings(st);
		return -ENOMEM;
	}
	ret = hist_step_done(st);
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
	ret = hist_push_stmt(h, PUSH_COUNTS, false, &st);
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
	ret = hist_push_stmt(h, PUSH_PENDING, false, &st);
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
	ret = hist_push_stmt(h, PUSH_STATE_SET, true, &st);
	if (ret)
		return ret;
	rc |= sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	rc |= sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
	if (rc != SQLITE_OK) {
		sqlite3_clear_bindings(st);
		return -ENOMEM;
	}
	return hist_step_done(st);
}

int history_state_get(struct history *h, const char *key, char *value, size_t len)
{
	sqlite3_stmt *st;
	int ret, rc;

	if (!key || !value || !len)
		return -EINVAL;
	ret = hist_push_stmt(h, PUSH_STATE_GET, false, &st);
	if (ret)
		return ret;
	if (sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC) != SQLITE_OK) {
		sqlite3_clear_bindings(st);
		return -ENOMEM;
	}
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		snprintf(value, len, "%s", hist_column_str(st, 0));
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

int hist_state_set_int(struct history *h, const char *key, int64_t v)
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
		ret = hist_state_set_int(h, KEY_LAST_SUCCESS, s->last_success_ns);
	if (!ret)
		ret = hist_state_set_int(h, KEY_LAST_ERROR_AT, s->last_error_ns);
	if (!ret)
		ret = hist_state_set_int(h, KEY_LAST_STATUS, s->last_status);
	if (!ret)
		ret = history_state_set(h, KEY_LAST_ERROR, s->last_error);
	if (!ret)
		ret = hist_state_set_int(h, KEY_OUTAGE, s->outage_since_ns);
	return hist_end_transaction(h, ret);
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
