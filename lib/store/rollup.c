// SPDX-License-Identifier: MIT
/* Building rollups: one series' raw profiles of one period merged into one local row. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pprof.h"
#include "rollup.h"

/* Distinct pids are compacted (sorted, deduplicated) when this many are collected. */
#define PIDS_COMPACT 65536

/* A rollup being built: the merged profile and what its row records. */
struct build {
	struct pprof_builder *b;
	int64_t start_ns, end_ns; /* the merged rows' span */
	uint64_t samples;
	uint32_t profiles, skipped;
	uint32_t max_processes;	   /* the rows' own counts, when samples carry no pid */
	const atomic_bool *cancel; /* stops the build between rows */
	int64_t *pids;		   /* "pid" labels seen; sorted and unique up to n_sorted */
	size_t n_pids, cap_pids;
};

void rollup_result_free(struct rollup_result *r)
{
	if (r)
		history_series_free(&r->series);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sorts and deduplicates the pids collected so far. */
static void compact_pids(struct build *bd)
{
	size_t n = 0;

	qsort(bd->pids, bd->n_pids, sizeof(*bd->pids), cmp_i64);
	for (size_t i = 0; i < bd->n_pids; i++) {
		if (!n || bd->pids[n - 1] != bd->pids[i])
			bd->pids[n++] = bd->pids[i];
	}
	bd->n_pids = n;
}

static int add_pid(struct build *bd, int64_t pid)
{
	int64_t *grown;

	if (bd->n_pids == bd->cap_pids) {
		if (bd->n_pids >= PIDS_COMPACT) {
			compact_pids(bd);
			if (bd->n_pids < bd->cap_pids / 2)
				goto add;
		}
		bd->cap_pids = bd->cap_pids ? 2 * bd->cap_pids : 1024;
		grown = reallocarray(bd->pids, bd->cap_pids, sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		bd->pids = grown;
	}
add:
	bd->pids[bd->n_pids++] = pid;
	return 0;
}

/* The numeric "pid" label of every sample of p. */
static int collect_pids(struct build *bd, const pprof_profile *p)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];

		for (size_t j = 0; !ret && j < s->n_label; j++) {
			const Perftools__Profiles__Label *l = s->label[j];

			if (!l->str && !strcmp(p->string_table[l->key], "pid"))
				ret = add_pid(bd, l->num);
		}
	}
	return ret;
}

/* Merges one raw row; one that does not decode or merge is counted and skipped. */
static int merge_row(const struct history_row *row, void *arg)
{
	struct build *bd = arg;
	pprof_profile *p = NULL;
	int ret = 0;

	if (bd->cancel && atomic_load(bd->cancel))
		return -ECANCELED;
	if (!row->pprof || pprof_decode(row->pprof, row->pprof_len, &p, NULL, 0)) {
		bd->skipped++;
		return 0;
	}
	if (!bd->b)
		bd->b = pprof_builder_like(p);
	if (!bd->b) {
		ret = p->n_sample_type > PPROF_MAX_SAMPLE_TYPES ? 0 : -ENOMEM;
		bd->skipped++;
		goto out;
	}
	ret = pprof_merge(bd->b, p, NULL);
	if (ret == -EINVAL || ret == -E2BIG) { /* sample types unlike the first row's, ... */
		bd->skipped++;
		ret = 0;
		goto out;
	}
	if (!ret)
		ret = collect_pids(bd, p);
	if (ret)
		goto out;
	bd->profiles++;
	bd->samples += row->meta.samples;
	if (bd->profiles == 1 || row->meta.start_ns < bd->start_ns)
		bd->start_ns = row->meta.start_ns;
	if (row->meta.end_ns > bd->end_ns)
		bd->end_ns = row->meta.end_ns;
	if (row->meta.processes > bd->max_processes)
		bd->max_processes = row->meta.processes;
out:
	pprof_profile_free(p);
	return ret;
}

/* Encodes and stores what bd merged. */
static int store(struct history *h, const struct history_series *s, int64_t period_start,
		 struct build *bd)
{
	struct history_meta m = {
		.start_ns = period_start,
		.end_ns = bd->end_ns > period_start ? bd->end_ns : period_start,
		.type = s->type,
		.app = s->app,
		.labels = s->labels,
		.samples = bd->samples,
	};
	uint8_t *buf = NULL;
	size_t len = 0;
	int ret;

	compact_pids(bd);
	/* the rows' own span: the row starts at the period, the profile says when data does */
	pprof_builder_set_time(bd->b, bd->start_ns, bd->end_ns - bd->start_ns);
	m.processes = bd->n_pids ? (bd->n_pids > UINT32_MAX ? UINT32_MAX : (uint32_t)bd->n_pids) :
				   bd->max_processes;
	ret = pprof_encode(bd->b, &buf, &len);
	if (!ret)
		ret = history_put_rollup(h, &m, bd->profiles, buf, len, NULL);
	free(buf);
	return ret;
}

int history_rollup_hour(struct history *h, const struct history_series *s, int64_t period_start,
			const atomic_bool *cancel, struct rollup_result *r)
{
	struct build bd = {.cancel = cancel};
	int ret;

	if (!h || !s || !r)
		return -EINVAL;
	r->period_start = period_start;
	r->stored = false;
	ret = history_period_rows(h, s, period_start, merge_row, &bd);
	r->profiles = bd.profiles;
	r->skipped = bd.skipped;
	r->samples = bd.samples;
	if (!ret && bd.profiles) {
		ret = store(h, s, period_start, &bd);
		r->stored = !ret;
	}
	pprof_builder_free(bd.b);
	free(bd.pids);
	return ret;
}

int history_rollup_next(struct history *h, int64_t before_ns, struct rollup_cursor *c,
			const atomic_bool *cancel, struct rollup_result *r)
{
	int64_t start;
	int ret;

	if (!h || !c || !r)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	ret = history_rollup_todo(h, c->from, before_ns, c->skip, &r->series, &start);
	if (ret == -ENOENT && before_ns > c->from) {
		/* every whole period before it is done, or cannot be */
		c->from = before_ns;
		c->skip = 0;
	}
	if (ret)
		return ret;
	if (start > c->from) {
		/* the ones skipped were of an earlier period: nothing older is missing */
		c->from = start;
		c->skip = 0;
	}
	ret = history_rollup_hour(h, &r->series, start, cancel, r);
	/* none of its rows merges: it stays missing, at the head of the order */
	if (!ret && !r->stored)
		c->skip++;
	if (ret)
		rollup_result_free(r);
	return ret;
}
