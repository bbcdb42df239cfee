// SPDX-License-Identifier: MIT
/*
 * Fits a stored profile to a collector's limits: labels out, identical samples
 * merged, unnamed frames named, then the least significant stacks folded into
 * "[truncated]".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pushfit.h"

/* Each retry of the fold aims this much under the byte limit (percent). */
#define FIT_AIM_PCT 95
/* Encodings tried before keeping no stack at all; each shrinks the kept set. */
#define FIT_MAX_TRIES 12

/* A sample and how much it matters: its largest share of any sample type's total. */
struct ranked {
	Perftools__Profiles__Sample *s;
	double weight;
	size_t index; /* ties keep the stored order */
};

static int cmp_ranked(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static int64_t add_sat(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static void sum_values(const pprof_profile *p, size_t from, int64_t *sums)
{
	for (size_t t = 0; t < p->n_sample_type; t++)
		sums[t] = 0;
	for (size_t i = from; i < p->n_sample; i++)
		for (size_t t = 0; t < p->n_sample_type; t++)
			sums[t] = add_sat(sums[t], p->sample[i]->value[t]);
}

/* Orders p's samples most significant first (p's sample array is permuted). */
static int rank_samples(pprof_profile *p, const int64_t *total)
{
	struct ranked *r = calloc(p->n_sample ? p->n_sample : 1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_sample; i++) {
		r[i].s = p->sample[i];
		r[i].index = i;
		for (size_t t = 0; t < p->n_sample_type; t++) {
			double w = total[t] > 0 ? (double)r[i].s->value[t] / (double)total[t] : 0;

			if (w > r[i].weight)
				r[i].weight = w;
		}
	}
	qsort(r, p->n_sample, sizeof(*r), cmp_ranked);
	for (size_t i = 0; i < p->n_sample; i++)
		p->sample[i] = r[i].s;
	free(r);
	return 0;
}

/* The first keep samples of p, and one [truncated] sample worth the rest, encoded. */
static int encode_kept(pprof_profile *p, size_t keep, const int64_t *folded, uint8_t **out,
		       size_t *out_len)
{
	struct pprof_builder *b = pprof_builder_like(p);
	size_t n = p->n_sample;
	uint64_t f, loc;
	int ret;

	if (!b)
		return -errno;
	p->n_sample = keep;
	ret = pprof_merge(b, p, NULL);
	p->n_sample = n;
	if (!ret && keep < n) {
		f = pprof_function(b, PUSHFIT_TRUNCATED, PUSHFIT_TRUNCATED, "");
		loc = f ? pprof_location(b, 0, 0, &f, 1) : 0;
		ret = loc ? pprof_add_sample(b, &loc, 1, folded, NULL, 0) : -ENOMEM;
	}
	if (!ret)
		ret = pprof_encode(b, out, out_len);
	pprof_builder_free(b);
	return ret;
}

/*
 * Folds the tail of p (distinct stacks, labels gone) until the rest fits:
 * start from max_samples - 1 kept (one sample is the [truncated] frame), then
 * shrink in proportion to how far the encoding is over max_bytes.
 */
static int fold(pprof_profile *p, const struct pushfit_limits *lim, uint8_t **out, size_t *out_len,
		struct pushfit_stats *st)
{
	size_t keep = p->n_sample, next;
	int ret;

	ret = rank_samples(p, st->total);
	if (ret)
		return ret;
	if (lim->max_samples < 1)
		keep = 0;
	else if (keep > lim->max_samples - 1)
		keep = lim->max_samples - 1;
	for (int tries = 1;; tries++) {
		sum_values(p, keep, st->folded);
		ret = encode_kept(p, keep, st->folded, out, out_len);
		if (ret || *out_len <= lim->max_bytes || keep == 0)
			break;
		free(*out);
		*out = NULL;
		next = (size_t)((double)keep * (double)lim->max_bytes / (double)*out_len *
				FIT_AIM_PCT / 100);
		keep = tries >= FIT_MAX_TRIES ? 0 : next < keep ? next : keep - 1;
	}
	if (!ret) {
		st->stacks_folded = p->n_sample - keep;
		if (keep == p->n_sample)
			memset(st->folded, 0, sizeof(st->folded));
	}
	return ret;
}

/*
 * Decodes, merges into a label-free builder (naming the unnamed frames, unless the
 * server does) and encodes: the first step, which loses no frame and no value.
 */
static int strip_labels(const uint8_t *in, size_t len, const struct pushfit_limits *lim,
			uint8_t **out, size_t *out_len, struct pushfit_stats *st, char *err,
			size_t errlen)
{
	const struct pprof_filter f = {.drop_labels = true,
				       .name_unnamed = !lim->server_symbolization};
	struct pprof_builder *b;
	pprof_profile *p = NULL;
	int ret;

	ret = pprof_decode(in, len, &p, err, errlen);
	if (ret)
		return ret;
	st->samples_in = p->n_sample;
	st->n_values = p->n_sample_type;
	b = pprof_builder_like(p);
	if (!b) {
		ret = -errno;
		snprintf(err, errlen, "%zu sample types: more than ember handles",
			 p->n_sample_type);
		pprof_profile_free(p);
		return ret;
	}
	/* Normalize keeps time_nanos and duration: so do we */
	pprof_builder_set_time(b, p->time_nanos, p->duration_nanos);
	ret = pprof_merge(b, p, &f);
	if (!ret) {
		st->samples_merged = p->n_sample - pprof_sample_count(b);
		sum_values(p, 0, st->total);
		ret = pprof_encode(b, out, out_len);
	}
	if (ret)
		snprintf(err, errlen, "cannot rebuild the profile: %s", strerror(-ret));
	pprof_builder_free(b);
	pprof_profile_free(p);
	return ret;
}

int pushfit(const uint8_t *in, size_t len, const struct pushfit_limits *lim, uint8_t **out,
	    size_t *out_len, struct pushfit_stats *st, char *err, size_t errlen)
{
	pprof_profile *p = NULL;
	uint8_t *merged;
	size_t merged_len;
	int ret;

	memset(st, 0, sizeof(*st));
	st->bytes_in = len;
	*out = NULL;
	ret = strip_labels(in, len, lim, &merged, &merged_len, st, err, errlen);
	if (ret)
		return ret;
	if (st->samples_in - st->samples_merged <= lim->max_samples &&
	    merged_len <= lim->max_bytes) {
		*out = merged;
		*out_len = st->bytes_out = merged_len;
		return 0;
	}
	ret = pprof_decode(merged, merged_len, &p, err, errlen);
	free(merged);
	if (ret)
		return ret;
	ret = fold(p, lim, out, out_len, st);
	pprof_profile_free(p);
	if (ret) {
		snprintf(err, errlen, "cannot fold the profile: %s", strerror(-ret));
		return ret;
	}
	st->bytes_out = *out_len;
	return 0;
}
