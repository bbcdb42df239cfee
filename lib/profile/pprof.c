// SPDX-License-Identifier: MIT
/*
 * The pprof profile builder: interning and sample folding on open-addressing
 * hash tables. pprof_encode.c writes it out, pprof_decode.c reads pprof back
 * (validated), pprof_merge.c adds a decoded profile to a builder.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "pprof_int.h"
#include "utf8.h"

/* Deepest stack and most inline frames per location we keep; BPF stacks stop at 127. */
#define PPROF_MAX_DEPTH (1u << 16)

/* --- growable arrays ------------------------------------------------ */

/* Makes room in *arr (of *cap elements of sz bytes) for len + n elements. */
int pprof_reserve(void **arr, size_t *cap, size_t len, size_t n, size_t sz)
{
	size_t ncap = *cap ? *cap : 16;
	void *p;

	if (n > SIZE_MAX - len)
		return -ENOMEM;
	if (len + n <= *cap)
		return 0;
	while (ncap < len + n) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / sz)
		return -ENOMEM;
	p = realloc(*arr, ncap * sz);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

/* --- the builder ---------------------------------------------------------------------- */

bool pprof_str_match(const void *ctx, size_t idx, const void *key)
{
	const struct pprof_builder *b = ctx;

	return !strcmp(b->strs[idx], key);
}

static int intern_valid(struct pprof_builder *b, const char *s, uint32_t *idx)
{
	uint32_t h;
	size_t found;
	char *copy;
	int ret;

	if (!s)
		s = "";
	h = hash_fold(hash_str(s));
	found = hashtab_find(&b->str_tab, h, pprof_str_match, b, s);
	if (found) {
		*idx = found - 1;
		return 0;
	}
	ret = RESERVE(b->strs, b->cap_strs, b->n_strs, 1);
	if (ret)
		return ret;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	ret = hashtab_add(&b->str_tab, h, b->n_strs);
	if (ret) {
		free(copy);
		return ret;
	}
	b->strs[b->n_strs] = copy;
	*idx = b->n_strs++;
	return 0;
}

/*
 * Every string of a profile goes through here: invalid UTF-8 is repaired
 * (U+FFFD) because Pyroscope refuses a whole profile for one bad string.
 */
static int intern(struct pprof_builder *b, const char *s, uint32_t *idx)
{
	char *fixed;
	int ret;

	if (!s || utf8_valid(s, strlen(s)))
		return intern_valid(b, s, idx);
	fixed = utf8_dup(s);
	if (!fixed)
		return -ENOMEM;
	ret = intern_valid(b, fixed, idx);
	free(fixed);
	return ret;
}

static int intern_type(struct pprof_builder *b, struct pprof_value_type *vt)
{
	uint32_t t, u;

	if (intern(b, vt->type, &t) || intern(b, vt->unit, &u))
		return -ENOMEM;
	vt->type = b->strs[t];
	vt->unit = b->strs[u];
	return 0;
}

struct pprof_builder *pprof_builder_new(const struct pprof_meta *meta)
{
	struct pprof_builder *b;
	uint32_t empty;
	size_t i;

	if (!meta || !meta->n_sample_types || meta->n_sample_types > PPROF_MAX_SAMPLE_TYPES) {
		errno = EINVAL;
		return NULL;
	}
	for (i = 0; i < meta->n_sample_types; i++) {
		if (!meta->sample_types[i].type || !meta->sample_types[i].unit) {
			errno = EINVAL;
			return NULL;
		}
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->meta = *meta;
	/* string_table[0] must be "": interned first. */
	if (intern(b, "", &empty) || intern_type(b, &b->meta.period_type))
		goto err_free;
	if (meta->default_sample_type) {
		uint32_t d;

		if (intern(b, meta->default_sample_type, &d))
			goto err_free;
		b->meta.default_sample_type = b->strs[d];
	}
	b->meta.comment = NULL; /* the caller's: kept as the builder's own comment */
	if (meta->comment && pprof_add_comment(b, meta->comment))
		goto err_free;
	for (i = 0; i < meta->n_sample_types; i++) {
		if (intern_type(b, &b->meta.sample_types[i]))
			goto err_free;
	}
	return b;

err_free:
	pprof_builder_free(b);
	errno = ENOMEM;
	return NULL;
}

int pprof_add_comment(struct pprof_builder *b, const char *s)
{
	uint32_t c;

	if (intern(b, s, &c))
		return -ENOMEM;
	for (size_t i = 0; i < b->n_comments; i++)
		if (b->comments[i] == c)
			return 0;
	if (b->n_comments < PPROF_MAX_COMMENTS)
		b->comments[b->n_comments++] = c;
	return 0;
}

void pprof_builder_free(struct pprof_builder *b)
{
	size_t i;

	if (!b)
		return;
	for (i = 0; i < b->n_strs; i++)
		free(b->strs[i]);
	free(b->strs);
	hashtab_free(&b->str_tab);
	free(b->maps);
	hashtab_free(&b->map_tab);
	free(b->funcs);
	hashtab_free(&b->func_tab);
	free(b->locs);
	hashtab_free(&b->loc_tab);
	free(b->samples);
	hashtab_free(&b->sample_tab);
	free(b->values);
	free(b->ids);
	free(b->labels);
	free(b);
}

const struct pprof_meta *pprof_builder_meta(const struct pprof_builder *b)
{
	return &b->meta;
}

void pprof_builder_set_time(struct pprof_builder *b, int64_t time_nanos, int64_t duration_nanos)
{
	b->meta.time_nanos = time_nanos;
	b->meta.duration_nanos = duration_nanos;
}

static bool mapping_match(const void *ctx, size_t idx, const void *key)
{
	const struct pprof_builder *b = ctx;
	const struct mapping *m = &b->maps[idx], *k = key;

	return m->start == k->start && m->limit == k->limit && m->offset == k->offset &&
	       m->file == k->file && m->build_id == k->build_id &&
	       m->has_functions == k->has_functions;
}

uint64_t pprof_mapping(struct pprof_builder *b, const struct pprof_mapping_desc *m)
{
	struct mapping k = {.start = m->start,
			    .limit = m->limit,
			    .offset = m->offset,
			    .has_functions = m->has_functions};
	uint64_t h;
	size_t found;
	int ret;

	ret = intern(b, m->file, &k.file);
	if (!ret)
		ret = intern(b, m->build_id, &k.build_id);
	if (ret)
		goto err;
	h = hash_mix(hash_mix(hash_mix(hash_mix(hash_mix(k.start, k.limit), k.offset), k.file),
			      k.build_id),
		     k.has_functions);
	found = hashtab_find(&b->map_tab, hash_fold(h), mapping_match, b, &k);
	if (found)
		return found;
	ret = RESERVE(b->maps, b->cap_maps, b->n_maps, 1);
	if (!ret)
		ret = hashtab_add(&b->map_tab, hash_fold(h), b->n_maps);
	if (ret)
		goto err;
	b->maps[b->n_maps++] = k;
	return b->n_maps;
err:
	errno = -ret;
	return 0;
}

static bool function_match(const void *ctx, size_t idx, const void *key)
{
	const struct pprof_builder *b = ctx;
	const struct function *f = &b->funcs[idx], *k = key;

	return f->name == k->name && f->system_name == k->system_name &&
	       f->filename == k->filename && f->start_line == k->start_line;
}

uint64_t pprof_function(struct pprof_builder *b, const char *name, const char *system_name,
			const char *filename)
{
	return pprof_function_at(b, name, system_name, filename, 0);
}

/* system_name defaults to name: readers want both set (profile.proto). */
uint64_t pprof_function_at(struct pprof_builder *b, const char *name, const char *system_name,
			   const char *filename, int64_t start_line)
{
	struct function k = {.start_line = start_line > 0 ? start_line : 0};
	size_t found;
	uint32_t h;
	int ret;

	ret = intern(b, name, &k.name);
	if (!ret)
		ret = intern(b, system_name ? system_name : name, &k.system_name);
	if (!ret)
		ret = intern(b, filename, &k.filename);
	if (ret)
		goto err;
	/* seeded: hash_mix(name, system_name) is 0 whenever the two are the same string */
	h = hash_fold(hash_mix(hash_mix(hash_mix(hash_mix(0, k.name), k.system_name), k.filename),
			       (uint64_t)k.start_line));
	found = hashtab_find(&b->func_tab, h, function_match, b, &k);
	if (found)
		return found;
	ret = RESERVE(b->funcs, b->cap_funcs, b->n_funcs, 1);
	if (!ret)
		ret = hashtab_add(&b->func_tab, h, b->n_funcs);
	if (ret)
		goto err;
	b->funcs[b->n_funcs++] = k;
	return b->n_funcs;
err:
	errno = -ret;
	return 0;
}

struct location_key {
	uint64_t mapping_id, address;
	const uint64_t *funcs;
	const int64_t *lines; /* NULL when all are 0 */
	size_t n_funcs;
};

static bool lines_match(const struct pprof_builder *b, const struct location *l,
			const int64_t *lines, size_t n)
{
	for (size_t j = 0; j < n; j++)
		if (location_line(b, l, j) != (lines && lines[j] > 0 ? lines[j] : 0))
			return false;
	return true;
}

static bool location_match(const void *ctx, size_t idx, const void *key)
{
	const struct pprof_builder *b = ctx;
	const struct location *l = &b->locs[idx];
	const struct location_key *k = key;

	return l->mapping_id == k->mapping_id && l->address == k->address &&
	       l->n_funcs == k->n_funcs &&
	       (!k->n_funcs ||
		!memcmp(b->ids + l->funcs, k->funcs, k->n_funcs * sizeof(*k->funcs))) &&
	       lines_match(b, l, k->lines, k->n_funcs);
}

static uint64_t hash_ids(uint64_t h, const uint64_t *ids, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		h = hash_mix(h, ids[i]);
	return hash_mix(h, n);
}

/* Appends n ids to the pool; their offset goes to *off. */
static int push_ids(struct pprof_builder *b, const uint64_t *ids, size_t n, size_t *off)
{
	int ret = RESERVE(b->ids, b->cap_ids, b->n_ids, n);

	if (ret)
		return ret;
	if (n)
		memcpy(b->ids + b->n_ids, ids, n * sizeof(*ids));
	*off = b->n_ids;
	b->n_ids += n;
	return 0;
}

uint64_t pprof_location(struct pprof_builder *b, uint64_t mapping_id, uint64_t address,
			const uint64_t *function_ids, size_t n_funcs)
{
	return pprof_location_lines(b, mapping_id, address, function_ids, NULL, n_funcs);
}

/* Stores the line numbers when one is known; a location without any keeps none. */
static int push_lines(struct pprof_builder *b, struct location *l, const int64_t *lines, size_t n)
{
	size_t j;
	int ret;

	for (j = 0; lines && j < n && lines[j] <= 0; j++)
		;
	if (!lines || j == n)
		return 0;
	ret = RESERVE(b->ids, b->cap_ids, b->n_ids, n);
	if (ret)
		return ret;
	l->lines = b->n_ids;
	l->has_lines = true;
	for (j = 0; j < n; j++)
		b->ids[b->n_ids++] = lines[j] > 0 ? (uint64_t)lines[j] : 0;
	return 0;
}

uint64_t pprof_location_lines(struct pprof_builder *b, uint64_t mapping_id, uint64_t address,
			      const uint64_t *function_ids, const int64_t *lines, size_t n_funcs)
{
	struct location_key k = {mapping_id, address, function_ids, lines, n_funcs};
	struct location l = {.mapping_id = mapping_id, .address = address, .n_funcs = n_funcs};
	size_t found, i;
	uint64_t h;
	int ret = -E2BIG;

	if (n_funcs > PPROF_MAX_DEPTH)
		goto err;
	ret = -EINVAL;
	if (mapping_id > b->n_maps || (n_funcs && !function_ids))
		goto err;
	for (i = 0; i < n_funcs; i++) {
		if (!function_ids[i] || function_ids[i] > b->n_funcs)
			goto err;
	}
	h = hash_ids(hash_mix(hash_mix(0, mapping_id), address), function_ids, n_funcs);
	for (i = 0; lines && i < n_funcs; i++)
		if (lines[i] > 0)
			h = hash_mix(h, (uint64_t)lines[i] ^ i);
	found = hashtab_find(&b->loc_tab, hash_fold(h), location_match, b, &k);
	if (found)
		return found;
	ret = RESERVE(b->locs, b->cap_locs, b->n_locs, 1);
	if (!ret)
		ret = push_ids(b, function_ids, n_funcs, &l.funcs);
	if (!ret)
		ret = push_lines(b, &l, lines, n_funcs);
	if (!ret)
		ret = hashtab_add(&b->loc_tab, hash_fold(h), b->n_locs);
	if (ret)
		goto err;
	b->locs[b->n_locs++] = l;
	if (mapping_id && !n_funcs)
		b->maps[mapping_id - 1].unnamed = true;
	return b->n_locs;
err:
	errno = -ret;
	return 0;
}

struct sample_key {
	const uint64_t *locs;
	size_t n_locs;
	const struct ilabel *labels;
	size_t n_labels;
};

static int label_cmp(const void *pa, const void *pb)
{
	const struct ilabel *a = pa, *b = pb;

	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	if (a->str != b->str)
		return a->str < b->str ? -1 : 1;
	if (a->num != b->num)
		return a->num < b->num ? -1 : 1;
	if (a->unit != b->unit)
		return a->unit < b->unit ? -1 : 1;
	return 0;
}

static bool sample_match(const void *ctx, size_t idx, const void *key)
{
	const struct pprof_builder *b = ctx;
	const struct sample *s = &b->samples[idx];
	const struct sample_key *k = key;
	size_t i;

	if (s->n_locs != k->n_locs || s->n_labels != k->n_labels ||
	    (k->n_locs && memcmp(b->ids + s->locs, k->locs, k->n_locs * sizeof(*k->locs))))
		return false;
	for (i = 0; i < k->n_labels; i++) {
		if (label_cmp(&b->labels[s->labels + i], &k->labels[i]))
			return false;
	}
	return true;
}

/* Interns labels into out[], sorted so that their order does not split samples. */
static int intern_labels(struct pprof_builder *b, const struct pprof_label *labels, size_t n,
			 struct ilabel *out)
{
	size_t i;

	for (i = 0; i < n; i++) {
		out[i] = (struct ilabel){.num = labels[i].str ? 0 : labels[i].num};
		if (!labels[i].key)
			return -EINVAL;
		if (intern(b, labels[i].key, &out[i].key) ||
		    intern(b, labels[i].str, &out[i].str) ||
		    intern(b, labels[i].str ? NULL : labels[i].num_unit, &out[i].unit))
			return -ENOMEM;
	}
	qsort(out, n, sizeof(*out), label_cmp);
	return 0;
}

static uint64_t hash_labels(uint64_t h, const struct ilabel *labels, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		h = hash_mix(hash_mix(hash_mix(hash_mix(h, labels[i].key), labels[i].str),
				      (uint64_t)labels[i].num),
			     labels[i].unit);
	return h;
}

static int new_sample(struct pprof_builder *b, const struct sample_key *k, uint32_t h)
{
	size_t nt = b->meta.n_sample_types;
	struct sample s = {.n_locs = k->n_locs, .n_labels = k->n_labels};
	int ret;

	ret = RESERVE(b->samples, b->cap_samples, b->n_samples, 1);
	if (!ret)
		ret = RESERVE(b->values, b->cap_values, b->n_samples * nt, nt);
	if (!ret)
		ret = RESERVE(b->labels, b->cap_labels, b->n_labels, k->n_labels);
	if (!ret)
		ret = push_ids(b, k->locs, k->n_locs, &s.locs);
	if (!ret)
		ret = hashtab_add(&b->sample_tab, h, b->n_samples);
	if (ret)
		return ret;
	if (k->n_labels)
		memcpy(b->labels + b->n_labels, k->labels, k->n_labels * sizeof(*k->labels));
	s.labels = b->n_labels;
	b->n_labels += k->n_labels;
	memset(b->values + b->n_samples * nt, 0, nt * sizeof(*b->values));
	b->samples[b->n_samples++] = s;
	return 0;
}

int pprof_add_sample(struct pprof_builder *b, const uint64_t *location_ids, size_t n_locs,
		     const int64_t *values, const struct pprof_label *labels, size_t n_labels)
{
	struct ilabel il[PPROF_MAX_LABELS];
	struct sample_key k = {location_ids, n_locs, il, n_labels};
	size_t nt = b->meta.n_sample_types, found, i;
	int64_t *sum;
	uint32_t h;
	int ret;

	if (n_locs > PPROF_MAX_DEPTH || n_labels > PPROF_MAX_LABELS)
		return -E2BIG;
	if (!values || (n_locs && !location_ids) || (n_labels && !labels))
		return -EINVAL;
	for (i = 0; i < n_locs; i++) {
		if (!location_ids[i] || location_ids[i] > b->n_locs)
			return -EINVAL;
	}
	ret = intern_labels(b, labels, n_labels, il);
	if (ret)
		return ret;
	h = hash_fold(hash_labels(hash_ids(0, location_ids, n_locs), il, n_labels));
	found = hashtab_find(&b->sample_tab, h, sample_match, b, &k);
	if (!found) {
		ret = new_sample(b, &k, h);
		if (ret)
			return ret;
		found = b->n_samples;
	}
	sum = b->values + (found - 1) * nt;
	for (i = 0; i < nt; i++)
		sum[i] = add_sat(sum[i], values[i]);
	return 0;
}

size_t pprof_sample_count(const struct pprof_builder *b)
{
	return b->n_samples;
}

int64_t pprof_value_total(const struct pprof_builder *b, size_t type_index)
{
	size_t nt = b->meta.n_sample_types, i;
	int64_t total = 0;

	if (type_index >= nt)
		return 0;
	for (i = 0; i < b->n_samples; i++)
		total = add_sat(total, b->values[i * nt + type_index]);
	return total;
}
