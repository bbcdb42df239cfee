// SPDX-License-Identifier: MIT
/* Merging every stored profile of a selection into one pprof builder, or into folded stacks. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int skip_row(struct merge_state *s, int64_t id)
{
	int64_t *grown;

	if (s->n_skipped == s->cap_skipped) {
		s->cap_skipped = s->cap_skipped ? 2 * s->cap_skipped : 16;
		grown = reallocarray(s->skipped, s->cap_skipped, sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		s->skipped = grown;
	}
	s->skipped[s->n_skipped++] = id;
	return 0;
}

/*
 * Counts a merged profile and widens the span the merge covers. A rollup row
 * starts at its hour; its profile's time says when its first raw row started.
 */
static void merged_one(struct merge_state *s, const struct history_row *row, const pprof_profile *p)
{
	int64_t start = row->meta.start_ns;

	if (row->rollup && p->time_nanos > start && p->time_nanos < row->meta.end_ns)
		start = p->time_nanos;
	if (!s->value_name[0])
		snprintf(s->value_name, sizeof(s->value_name), "%s",
			 pprof_sample_type_name(p, pprof_sample_type_index(p, s->value_type)));
	if (!s->merged || start < s->first_ns)
		s->first_ns = start;
	if (!s->merged || row->meta.end_ns > s->last_ns)
		s->last_ns = row->meta.end_ns;
	s->merged += row->profiles ? row->profiles : 1; /* a rollup stands for many */
}

/* Adds one stored profile to the folded stacks, decoded in the arena. */
static int add_row(struct merge_state *s, const struct history_row *row)
{
	struct pprof_reader *r = NULL;
	pprof_profile *p;
	int ret;

	if (!s->arena)
		s->arena = pprof_arena_new();
	if (!s->arena)
		return -ENOMEM;
	if (!row->pprof)
		return skip_row(s, row->id);
	ret = pprof_decode_arena(s->arena, row->pprof, row->pprof_len, &p, &r, NULL, 0);
	if (!ret)
		ret = stackset_add_read(s->set, p, r, s->filter, s->value_type, s->slot);
	pprof_reader_free(r);
	if (ret == -ENOMEM)
		return ret;
	if (ret == -ENOENT) { /* no such sample type (--sample): not corrupt, said once */
		s->no_value += row->profiles ? row->profiles : 1;
		return 0;
	}
	if (ret) /* not a profile, no such value, ... */
		return skip_row(s, row->id);
	merged_one(s, row, p);
	return 0;
}

/* Merges one stored profile; one that does not decode or fit is skipped, not fatal. */
static int merge_row(const struct history_row *row, void *arg)
{
	struct merge_state *s = arg;
	pprof_profile *p = NULL;
	char err[128];
	int ret;

	s->rows += row->profiles ? row->profiles : 1;
	if (s->set)
		return add_row(s, row);
	if (!row->pprof || pprof_decode(row->pprof, row->pprof_len, &p, err, sizeof(err)))
		return skip_row(s, row->id);
	if (!s->b) {
		s->b = pprof_builder_like(p);
		if (!s->b) {
			ret = errno == E2BIG ? skip_row(s, row->id) : -errno;
			goto out;
		}
	}
	ret = pprof_merge(s->b, p, s->filter);
	if (ret == -EINVAL) /* sample types unlike the first profile's */
		ret = skip_row(s, row->id);
	else if (!ret)
		merged_one(s, row, p);
out:
	pprof_profile_free(p);
	return ret;
}

void report_skipped(const struct merge_state *s)
{
	char ids[MAX_LISTED_IDS * 22 + 8] = "";
	size_t n = s->n_skipped < MAX_LISTED_IDS ? s->n_skipped : MAX_LISTED_IDS;

	if (!s->n_skipped)
		return;
	for (size_t i = 0; i < n; i++)
		snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%s%" PRId64, i ? ", " : "",
			 s->skipped[i]);
	note("skipped %zu corrupt stored profile%s (id%s %s%s)", s->n_skipped,
	     s->n_skipped == 1 ? "" : "s", s->n_skipped == 1 ? "" : "s", ids,
	     s->n_skipped > n ? ", ..." : "");
}

/* Index of the "samples" value, which is what users count; else the first. */
size_t samples_index(const struct pprof_builder *b)
{
	const struct pprof_meta *m = pprof_builder_meta(b);

	for (size_t i = 0; i < m->n_sample_types; i++) {
		if (!strcmp(m->sample_types[i].type, "samples"))
			return i;
	}
	return 0;
}

int merge_selection(struct history *h, const struct selection *sel, struct merge_state *s)
{
	struct history_query q = selection_query(sel);
	int ret;

	s->filter = &sel->filter;
	ret = history_query(h, &q, true, merge_row, s);
	if (ret) {
		note("cannot read %s: %s", history_path(h), history_strerror(ret));
		return ret;
	}
	report_skipped(s);
	return 0;
}

void merge_state_free(struct merge_state *s)
{
	pprof_builder_free(s->b);
	stackset_free(s->set);
	pprof_arena_free(s->arena);
	free(s->skipped);
	*s = (struct merge_state){0};
}

int explain_nothing(const struct selection *sel, const struct merge_state *s)
{
	const char *type = sel->type ? sel->type : "stored";
	char window[128];

	format_window(sel, window, sizeof(window));
	if (!s->rows)
		note("no %s profiles%s%s %s", type, sel->app ? " of app " : "",
		     sel->app ? sel->app : "", window);
	else if (!s->merged && s->set && s->no_value == s->rows)
		note("the %" PRIu64 " %s profiles %s record no \"%s\" values (see --sample)",
		     s->rows, type, window, s->value_type ? s->value_type : "default");
	else if (!s->merged)
		note("none of the %" PRIu64 " %s profiles %s could be read", s->rows, type, window);
	else if (sel->filter.by_pid)
		note("no samples of pid %" PRId64 " in the %" PRIu64 " %s profiles %s",
		     sel->filter.pid, s->merged, type, window);
	else
		note("the %" PRIu64 " %s profiles %s hold no samples", s->merged, type, window);
	return EXIT_RUNTIME;
}

/* One reader of a parallel merge: its own connection, stacks and arena, and a share of the rows. */
struct merge_worker {
	pthread_t thread;
	const char *data_dir;
	struct history_query q;
	struct merge_state s;
	int ret;
};

static void *merge_worker_run(void *arg)
{
	struct merge_worker *w = arg;
	struct history *h = history_open(w->data_dir, true, NULL);

	if (!h) {
		w->ret = errno ? -errno : -EIO;
		return NULL;
	}
	w->ret = history_query(h, &w->q, true, merge_row, &w->s);
	history_close(h); /* damage: every shard reads every id, the caller's handle says it */
	return NULL;
}

/*
 * Readers for a merge: one per CPU this process may run on (taskset and
 * cpusets count), at most MERGE_MAX_JOBS; 1 without a data_dir.
 */
#define MERGE_MAX_JOBS 8

static unsigned merge_jobs(const struct merge_state *s)
{
	cpu_set_t cpus;
	int n;

	if (!s->data_dir || sched_getaffinity(0, sizeof(cpus), &cpus))
		return 1;
	n = CPU_COUNT(&cpus);
	if (n < 2)
		return 1;
	return n > MERGE_MAX_JOBS ? MERGE_MAX_JOBS : (unsigned)n;
}

/* Folds what worker w read into s: its stacks, counts, span and skipped rows. */
static int merge_worker_fold(struct merge_state *s, struct merge_worker *w)
{
	int ret = stackset_merge(s->set, w->s.set);

	for (size_t i = 0; !ret && i < w->s.n_skipped; i++)
		ret = skip_row(s, w->s.skipped[i]);
	s->rows += w->s.rows;
	s->no_value += w->s.no_value;
	if (w->s.merged && (!s->merged || w->s.first_ns < s->first_ns))
		s->first_ns = w->s.first_ns;
	if (w->s.merged && (!s->merged || w->s.last_ns > s->last_ns))
		s->last_ns = w->s.last_ns;
	if (!s->value_name[0])
		memcpy(s->value_name, w->s.value_name, sizeof(s->value_name));
	s->merged += w->s.merged;
	return ret;
}

static int cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Rows split by id over jobs readers, each on its own connection, this thread
 * being reader 0: decoding is what costs, and it is independent per profile.
 */
static int merge_parallel(struct history *h, const struct selection *sel, struct merge_state *s,
			  unsigned jobs)
{
	struct merge_worker *w = calloc(jobs, sizeof(*w));
	struct history_query q = selection_query(sel);
	unsigned started = 0;
	int ret = 0;

	if (!w)
		return -ENOMEM;
	s->filter = &sel->filter;
	for (unsigned i = 1; i < jobs && !ret; i++) {
		w[i] = (struct merge_worker){.data_dir = s->data_dir, .q = q};
		w[i].q.n_shards = jobs;
		w[i].q.shard = i;
		w[i].s = (struct merge_state){.filter = &sel->filter,
					      .set = stackset_new(),
					      .value_type = s->value_type,
					      .slot = s->slot};
		if (!w[i].s.set)
			ret = -ENOMEM;
		else
			ret = -pthread_create(&w[i].thread, NULL, merge_worker_run, &w[i]);
		if (ret)
			stackset_free(w[i].s.set);
		else
			started = i;
	}
	q.n_shards = jobs;
	q.shard = 0;
	if (!ret)
		ret = history_query(h, &q, true, merge_row, s);
	for (unsigned i = 1; i <= started; i++) {
		pthread_join(w[i].thread, NULL);
		if (!ret)
			ret = w[i].ret;
		if (!ret)
			ret = merge_worker_fold(s, &w[i]);
		merge_state_free(&w[i].s);
	}
	free(w);
	if (s->n_skipped)
		qsort(s->skipped, s->n_skipped, sizeof(*s->skipped), cmp_id);
	return ret;
}

int merge_stacks(struct history *h, const struct selection *sel, struct merge_state *s)
{
	unsigned jobs = merge_jobs(s);
	int ret;

	if (!s->set)
		s->set = stackset_new();
	if (!s->set) {
		note("out of memory");
		return EXIT_RUNTIME;
	}
	if (check_type(h, sel))
		return EXIT_RUNTIME;
	s->rows = s->merged = s->no_value = 0;
	if (jobs > 1) {
		ret = merge_parallel(h, sel, s, jobs);
		if (ret) {
			note("cannot read %s: %s", history_path(h), history_strerror(ret));
			return EXIT_RUNTIME;
		}
		report_skipped(s);
	} else if (merge_selection(h, sel, s)) {
		return EXIT_RUNTIME;
	}
	if (!stackset_total(s->set, s->slot))
		return explain_nothing(sel, s);
	return 0;
}
