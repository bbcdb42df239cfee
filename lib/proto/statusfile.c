// SPDX-License-Identifier: MIT
/*
 * The status file's text form: one table of keys drives both the formatter and
 * the parser, so that what emberd writes is what emberctl reads.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counters.h"
#include "statusfile.h"
#include "utf8.h"

/* How a key's value is written. */
enum sf_type {
	SF_U64, /* one unsigned decimal */
	SF_I64, /* one signed decimal */
	SF_U32,
	SF_LONG,
	SF_BOOL,  /* 0 or 1 */
	SF_COUNT, /* struct status_count: "INTERVAL TOTAL" */
	SF_STR,	  /* the rest of the line */
};

/* One "key value" line of the file. */
struct sf_key {
	const char *key;
	enum sf_type type;
	size_t off, size; /* where in struct ember_status, and a string's room */
};

#define K(name, t, field)                                         \
	{                                                         \
		name, t, offsetof(struct ember_status, field),    \
			sizeof(((struct ember_status *)0)->field) \
	}

static const struct sf_key keys[] = {
	K("version", SF_STR, version),
	K("state", SF_STR, state),
	K("pid", SF_I64, pid),
	K("start_ns", SF_I64, start_ns),
	K("updated_ns", SF_I64, updated_ns),
	K("hz", SF_U32, hz),
	K("interval_ns", SF_I64, interval_ns),
	K("intervals", SF_U64, intervals),
	K("processes_tracked", SF_U64, processes_tracked),
	K("processes_seen", SF_U64, processes_seen),
	K("processes_unread", SF_U64, processes_unread),
	K("processes_at_exit", SF_U64, processes_at_exit),
	K("processes_late", SF_U64, processes_late),
	K("proc_wakeups", SF_U64, proc_wakeups),
	K("proc_exec_only_wakeups", SF_U64, proc_exec_only_wakeups),
	K("samples", SF_COUNT, samples),
	K("stacks", SF_COUNT, stacks),
	K("processes", SF_COUNT, processes),
	K("profiles", SF_COUNT, profiles),
	K("apps", SF_U64, apps),
	K("bpf_samples", SF_COUNT, bpf_samples),
	K("history_bytes", SF_U64, history_bytes),
	K("collector.configured", SF_BOOL, collector.configured),
	K("collector.url", SF_STR, collector.url),
	K("collector.outage", SF_BOOL, collector.outage),
	K("collector.outage_since_ns", SF_I64, collector.outage_since_ns),
	K("collector.last_success_ns", SF_I64, collector.last_success_ns),
	K("collector.last_status", SF_LONG, collector.last_status),
	K("collector.last_error", SF_STR, collector.last_error),
	K("collector.pending", SF_U64, collector.pending),
	K("collector.sent", SF_U64, collector.sent),
	K("collector.rejected", SF_U64, collector.rejected),
	K("collector.expired", SF_U64, collector.expired),
	K("collector.retries", SF_U64, collector.retries),
	/* since format 1 without a version change: older readers skip unknown keys */
	K("collector.labels_dropped", SF_U64, collector.labels_dropped),
	K("collector.samples_merged", SF_U64, collector.samples_merged),
	K("collector.profiles_folded", SF_U64, collector.profiles_folded),
	K("collector.stacks_folded", SF_U64, collector.stacks_folded),
	K("collector.unmarked", SF_U64, collector.unmarked),
	K("store.failing", SF_BOOL, store.failing),
	K("store.failing_since_ns", SF_I64, store.failing_since_ns),
	K("store.failed", SF_U64, store.failed),
	K("store.last_error_ns", SF_I64, store.last_error_ns),
	K("store.last_error", SF_STR, store.last_error),
	K("store.backlog", SF_U64, store.backlog),
	K("store.backlog_bytes", SF_U64, store.backlog_bytes),
	K("store.backlog_cap", SF_U64, store.backlog_cap),
	K("store.dropped", SF_U64, store.dropped),
	K("store.pruned", SF_U64, store.pruned),
	K("store.pruned_bytes", SF_U64, store.pruned_bytes),
	K("store.damaged", SF_U64, store.damaged),
	K("store.damaged_moved_to", SF_STR, store.damaged_moved_to),
	K("cpu_user_ns", SF_I64, cpu_user_ns),
	K("cpu_system_ns", SF_I64, cpu_system_ns),
	K("memory.limit", SF_U64, mem.limit),
	K("memory.rss", SF_U64, mem.rss),
	K("memory.rss_peak", SF_U64, mem.rss_peak),
	K("memory.bpf_map_bytes", SF_U64, mem.bpf_map_bytes),
	K("memory.over", SF_BOOL, mem.over),
	K("memory.shrink_events", SF_U64, mem.shrink_events),
	K("memory.shrink_runs", SF_U64, mem.shrink_runs),
	K("memory.last_shrink_ns", SF_I64, mem.last_shrink_ns),
	K("memory.last_freed", SF_U64, mem.last_freed),
	K("memory.freed_total", SF_U64, mem.freed_total),
	K("memory.sqlite", SF_U64, mem.sqlite),
	K("memory.heap_used", SF_U64, mem.heap_used),
	K("intervals_late", SF_U64, intervals_late),
	K("late_last_ns", SF_I64, late_last_ns),
	K("late_last_end_ns", SF_I64, late_last_end_ns),
	K("allocs.procs", SF_U64, allocs.procs),
	K("allocs.files", SF_U64, allocs.files),
	K("budget.ns_per_s", SF_I64, budget.ns_per_s),
	K("budget.wall_ns", SF_I64, budget.wall_ns),
	K("budget.self_ns", SF_I64, budget.self_ns),
	K("budget.bpf_ns", SF_I64, budget.bpf_ns),
	K("budget.offcpu_bpf_ns", SF_I64, budget.offcpu_bpf_ns),
	K("budget.bpf_measured", SF_BOOL, budget.bpf_measured),
	K("budget.offcpu_duty_shift", SF_U32, budget.offcpu_duty_shift),
	K("budget.lowered", SF_U64, budget.lowered),
	K("budget.restored", SF_U64, budget.restored),
	K("budget.over", SF_BOOL, budget.over),
};

#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

static const char *const cache_names[STATUS_CACHE_NR] = {
	[STATUS_CACHE_BINARIES] = "binaries",
	[STATUS_CACHE_PERF_MAPS] = "perf_maps",
	[STATUS_CACHE_NAMES] = "names",
	[STATUS_CACHE_PROCESSES] = "processes",
	[STATUS_CACHE_UNWIND_TABLES] = "unwind_tables",
	[STATUS_CACHE_UNWIND_PROCS] = "unwind_processes",
	[STATUS_CACHE_PROCESS_MAPS] = "process_maps",
};

/* The name of slot i of group g: the counter table's (counters.c). */
static const char *group_name(enum counter_group g, unsigned int i)
{
	const struct counter *c = counter_of(g, i);

	return c ? c->key : "?";
}

const char *statusfile_drop_name(enum status_drop d)
{
	return group_name(COUNTER_DROP, d);
}

const char *statusfile_skip_name(enum status_skip s)
{
	return group_name(COUNTER_SKIP, s);
}

const char *statusfile_cache_name(enum status_cache c)
{
	return c < STATUS_CACHE_NR ? cache_names[c] : "?";
}

const char *statusfile_unwind_name(enum status_unwind u)
{
	return group_name(COUNTER_UNWIND, u);
}

const char *statusfile_offcpu_name(enum status_offcpu o)
{
	return group_name(COUNTER_OFFCPU, o);
}

bool statusfile_offcpu_loss(enum status_offcpu o)
{
	const struct counter *c = counter_of(COUNTER_OFFCPU, o);

	return c && c->loss;
}

/* --- formatting ----------------------------------------------------------------- */

/* An append-only buffer that remembers running out of room. */
struct out {
	char *buf;
	size_t len, off;
	bool full;
};

static void __attribute__((format(printf, 2, 3))) put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->off, o->len - o->off, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->off) {
		o->full = true;
		return;
	}
	o->off += (size_t)n;
}

/*
 * A string value on one line: control characters would split or hide lines,
 * and invalid UTF-8 (a server's message, a thread name) becomes U+FFFD, cut to
 * what the reader's field holds.
 */
static void put_str(struct out *o, const char *key, const char *s, size_t room)
{
	char raw[STATUSFILE_MAX_LINE], clean[STATUSFILE_MAX_LINE];
	size_t i, n = strnlen(s, room);

	if (n >= sizeof(raw))
		n = sizeof(raw) - 1;
	for (i = 0; i < n; i++)
		raw[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	utf8_sanitize(raw, n, clean, room < sizeof(clean) ? room : sizeof(clean), 0);
	put(o, "%s %s\n", key, clean);
}

static void put_key(struct out *o, const struct ember_status *st, const struct sf_key *k)
{
	const char *p = (const char *)st + k->off;
	const struct status_count *c = (const void *)p;

	switch (k->type) {
	case SF_U64:
		put(o, "%s %" PRIu64 "\n", k->key, *(const uint64_t *)p);
		break;
	case SF_I64:
		put(o, "%s %" PRId64 "\n", k->key, *(const int64_t *)p);
		break;
	case SF_U32:
		put(o, "%s %" PRIu32 "\n", k->key, *(const uint32_t *)p);
		break;
	case SF_LONG:
		put(o, "%s %ld\n", k->key, *(const long *)p);
		break;
	case SF_BOOL:
		put(o, "%s %d\n", k->key, *(const bool *)p ? 1 : 0);
		break;
	case SF_COUNT:
		put(o, "%s %" PRIu64 " %" PRIu64 "\n", k->key, c->interval, c->total);
		break;
	case SF_STR:
		put_str(o, k->key, p, k->size);
		break;
	}
}

/* An application's name as one word of a line, whatever the daemon was given. */
static const char *app_word(const char *name, char app[STATUSFILE_APP_NAME])
{
	snprintf(app, STATUSFILE_APP_NAME, "%s", name);
	for (char *c = app; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f)
			*c = '_';
	return app[0] ? app : "_";
}

/* "runq APP NS WAITS" */
static void put_runq(struct out *o, const struct status_runq *r)
{
	char app[STATUSFILE_APP_NAME];

	put(o, "runq %s %" PRIu64 " %" PRIu64 "\n", app_word(r->app, app), r->ns, r->waits);
}

/* "startup APP BYTES" */
static void put_startup(struct out *o, const struct status_startup *r)
{
	char app[STATUSFILE_APP_NAME];

	put(o, "startup %s %" PRIu64 "\n", app_word(r->app, app), r->bytes);
}

/* The counter table's: plain totals as "KEY V", the groups' as "WORD NAME I T". */
static void put_counters(struct out *o, const struct ember_status *st)
{
	for (size_t i = 0; i < counters_nr; i++)
		if (counters[i].group == COUNTER_TOTAL)
			put(o, "%s %" PRIu64 "\n", counters[i].key,
			    counter_value(st, &counters[i]).total);
	for (int g = 0; g < COUNTER_TOTAL; g++)
		for (unsigned int i = 0; i < counter_group_size(g); i++) {
			const struct counter *c = counter_of(g, i);
			struct status_count v;

			if (!c)
				continue;
			v = counter_value(st, c);
			put(o, "%s %s %" PRIu64 " %" PRIu64 "\n", counter_group_word(g), c->key,
			    v.interval, v.total);
		}
}

int statusfile_format(const struct ember_status *st, char *buf, size_t len)
{
	struct out o = {.buf = buf, .len = len};
	size_t i;

	if (!len)
		return -ENOSPC;
	buf[0] = '\0';
	put(&o, "%s %d\n", STATUSFILE_MAGIC, STATUSFILE_VERSION);
	for (i = 0; i < N_KEYS; i++)
		put_key(&o, st, &keys[i]);
	put_counters(&o, st);
	for (i = 0; i < STATUS_CACHE_NR; i++)
		put(&o, "cache %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
		    cache_names[i], st->caches[i].entries, st->caches[i].bytes, st->caches[i].cap,
		    st->caches[i].full);
	for (i = 0; i < st->n_maps && i < STATUSFILE_MAX_MAPS; i++) {
		char name[STATUSFILE_MAP_NAME];

		/* names are validated on the way in too: keep the file parseable */
		snprintf(name, sizeof(name), "%s", st->maps[i].name);
		for (char *c = name; *c; c++)
			if (!(*c == '_' || *c == '.' || (*c >= '0' && *c <= '9') ||
			      (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
				*c = '_';
		put(&o, "bpf_map %s %" PRIu64 " %" PRIu64 "\n", name[0] ? name : "_",
		    st->maps[i].max_entries, st->maps[i].bytes);
	}
	for (i = 0; i < st->n_runq && i < STATUSFILE_MAX_RUNQ; i++)
		put_runq(&o, &st->runq[i]);
	for (i = 0; i < st->n_startup && i < STATUSFILE_MAX_RUNQ; i++)
		put_startup(&o, &st->startup[i]);
	return o.full ? -ENOSPC : (int)o.off;
}

/* --- parsing -------------------------------------------------------------------- */

static void __attribute__((format(printf, 3, 4)))
bad(struct statusfile_errors *errs, unsigned int line, const char *fmt, ...)
{
	char msg[128];
	va_list ap;

	if (errs->n++)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(errs->first, sizeof(errs->first), "line %u: %s", line, msg);
}

/* A whole unsigned decimal word: no sign, no spaces, no overflow. */
static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return !errno && !*end;
}

static bool parse_i64(const char *s, int64_t *out)
{
	char *end;

	if (!((*s >= '0' && *s <= '9') || (*s == '-' && s[1] >= '0' && s[1] <= '9')))
		return false;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return !errno && !*end;
}

/* Splits value into n space-separated words (in place); false when the count differs. */
static bool split_words(char *value, char **w, size_t n)
{
	size_t i = 0;
	char *save = NULL, *tok;

	for (tok = strtok_r(value, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		if (i == n)
			return false;
		w[i++] = tok;
	}
	return i == n;
}

static bool parse_count(char *value, struct status_count *c)
{
	char *w[2];

	return split_words(value, w, 2) && parse_u64(w[0], &c->interval) &&
	       parse_u64(w[1], &c->total);
}

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

static bool set_key(struct ember_status *st, const struct sf_key *k, char *value)
{
	char *p = (char *)st + k->off;
	uint64_t u;
	int64_t i;

	switch (k->type) {
	case SF_U64:
		return parse_u64(value, (uint64_t *)p);
	case SF_I64:
		return parse_i64(value, (int64_t *)p);
	case SF_U32:
		if (!parse_u64(value, &u) || u > UINT32_MAX)
			return false;
		*(uint32_t *)p = (uint32_t)u;
		return true;
	case SF_LONG:
		if (!parse_i64(value, &i))
			return false;
		*(long *)p = (long)i;
		return true;
	case SF_BOOL:
		if (strcmp(value, "0") && strcmp(value, "1"))
			return false;
		*(bool *)p = value[0] == '1';
		return true;
	case SF_COUNT:
		return parse_count(value, (struct status_count *)p);
	case SF_STR:
		/* the writer turns control characters into '?': one never comes back */
		if (strlen(value) >= k->size || has_control(value))
			return false;
		memset(p, 0, k->size); /* no trace of an earlier, longer value */
		/* a file from elsewhere may hold invalid UTF-8: what we show is repaired */
		utf8_sanitize(value, strlen(value), p, k->size, 0);
		return true;
	}
	return false;
}

static int name_index(const char *const *names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return (int)i;
	return -1;
}

/* "drop CAUSE I T", "skip REASON I T": unknown names are a newer writer's, ignored. */
/* "WORD NAME I T" of a group of the counter table; an unknown NAME is a newer writer's. */
static bool set_group_count(struct ember_status *st, enum counter_group g, char *value)
{
	const struct counter *k;
	struct status_count c;
	char *w[3];

	if (!split_words(value, w, 3) || !parse_u64(w[1], &c.interval) ||
	    !parse_u64(w[2], &c.total))
		return false;
	k = counter_named(g, w[0]);
	if (k && counter_count(st, k))
		*counter_count(st, k) = c;
	return true;
}

/* "KEY V" of a plain total of the counter table; false when KEY is none. */
static bool set_total(struct ember_status *st, const char *key, const char *value, bool *ok)
{
	const struct counter *k = counter_named(COUNTER_TOTAL, key);

	if (!k)
		return false;
	*ok = parse_u64(value, counter_total(st, k));
	return true;
}

static bool set_cache(struct ember_status *st, char *value)
{
	struct status_cache_use c;
	char *w[5];
	int i;

	if (!split_words(value, w, 5) || !parse_u64(w[1], &c.entries) ||
	    !parse_u64(w[2], &c.bytes) || !parse_u64(w[3], &c.cap) || !parse_u64(w[4], &c.full))
		return false;
	i = name_index(cache_names, STATUS_CACHE_NR, w[0]);
	if (i >= 0)
		st->caches[i] = c;
	return true;
}

static bool map_name_ok(const char *s)
{
	size_t n = strlen(s);

	return n && n < STATUSFILE_MAP_NAME &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") == n;
}

static bool set_map(struct ember_status *st, char *value)
{
	struct status_map m = {};
	char *w[3];

	if (!split_words(value, w, 3) || !map_name_ok(w[0]) || !parse_u64(w[1], &m.max_entries) ||
	    !parse_u64(w[2], &m.bytes))
		return false;
	if (st->n_maps == STATUSFILE_MAX_MAPS)
		return true; /* more than we list: the total still counts them */
	memcpy(m.name, w[0], strlen(w[0]) + 1);
	st->maps[st->n_maps++] = m;
	return true;
}

static bool set_runq(struct ember_status *st, char *value)
{
	struct status_runq r = {};
	char *w[3];

	if (!split_words(value, w, 3) || !parse_u64(w[1], &r.ns) || !parse_u64(w[2], &r.waits) ||
	    has_control(w[0]))
		return false;
	if (st->n_runq == STATUSFILE_MAX_RUNQ)
		return true; /* a newer writer's longer list */
	utf8_sanitize(w[0], strlen(w[0]), r.app, sizeof(r.app), 0);
	st->runq[st->n_runq++] = r;
	return true;
}

static bool set_startup(struct ember_status *st, char *value)
{
	struct status_startup r = {};
	char *w[2];

	if (!split_words(value, w, 2) || !parse_u64(w[1], &r.bytes) || has_control(w[0]))
		return false;
	if (st->n_startup == STATUSFILE_MAX_RUNQ)
		return true; /* a newer writer's longer list */
	utf8_sanitize(w[0], strlen(w[0]), r.app, sizeof(r.app), 0);
	st->startup[st->n_startup++] = r;
	return true;
}

/* One line (terminated, without its newline). */
static void parse_line(struct ember_status *st, char *line, unsigned int no,
		       struct statusfile_errors *errs)
{
	char *value = strchr(line, ' ');
	bool ok = true;
	size_t i;
	int g;

	if (!line[0])
		return;
	if (!value) {
		bad(errs, no, "no value");
		return;
	}
	*value++ = '\0';
	for (g = 0; g < COUNTER_TOTAL && strcmp(line, counter_group_word(g)); g++)
		;
	if (g < COUNTER_TOTAL) {
		ok = set_group_count(st, g, value);
	} else if (!strcmp(line, "cache")) {
		ok = set_cache(st, value);
	} else if (!strcmp(line, "bpf_map")) {
		ok = set_map(st, value);
	} else if (!strcmp(line, "runq")) {
		ok = set_runq(st, value);
	} else if (!strcmp(line, "startup")) {
		ok = set_startup(st, value);
	} else if (!set_total(st, line, value, &ok)) {
		for (i = 0; i < N_KEYS && strcmp(keys[i].key, line); i++)
			;
		if (i < N_KEYS)
			ok = set_key(st, &keys[i], value);
	}
	if (!ok)
		bad(errs, no, "bad value for '%.40s'", line);
}

static int parse_header(const char *line, struct ember_status *st)
{
	const char *v;
	uint64_t ver;

	if (strncmp(line, STATUSFILE_MAGIC " ", sizeof(STATUSFILE_MAGIC)))
		return -EINVAL;
	v = line + sizeof(STATUSFILE_MAGIC);
	if (!parse_u64(v, &ver))
		return -EINVAL;
	if (ver != STATUSFILE_VERSION)
		return -EPROTONOSUPPORT;
	st->format = (unsigned int)ver;
	return 0;
}

int statusfile_parse(const char *text, size_t len, struct ember_status *st,
		     struct statusfile_errors *errs)
{
	char line[STATUSFILE_MAX_LINE + 1];
	unsigned int no = 0;
	size_t pos = 0;
	int rc = 0;

	memset(st, 0, sizeof(*st));
	memset(errs, 0, sizeof(*errs));
	if (len > STATUSFILE_MAX_BYTES)
		return -EFBIG;
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;

		no++;
		if (n > STATUSFILE_MAX_LINE || memchr(text + pos, '\0', n)) {
			if (no == 1)
				return -EINVAL;
			bad(errs, no, n > STATUSFILE_MAX_LINE ? "line too long" : "NUL byte");
		} else {
			memcpy(line, text + pos, n);
			line[n] = '\0';
			if (no == 1) {
				rc = parse_header(line, st);
				if (rc)
					return rc;
			} else {
				parse_line(st, line, no, errs);
			}
		}
		pos += n + (nl ? 1 : 0);
	}
	return no ? 0 : -EINVAL;
}
