// SPDX-License-Identifier: MIT
/*
 * pprof profile builder (interning and sample folding on open-addressing hash
 * tables), encoder and validating decoder on protobuf-c, and merge.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compress.h"
#include "hashtab.h"
#include "pprof.h"
#include "utf8.h"

/* Deepest stack and most inline frames per location we keep; BPF stacks stop at 127. */
#define PPROF_MAX_DEPTH (1u << 16)

/* --- growable arrays ------------------------------------------------ */

/* Makes room in *arr (of *cap elements of sz bytes) for len + n elements. */
static int reserve(void **arr, size_t *cap, size_t len, size_t n, size_t sz)
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

#define RESERVE(arr, cap, len, n) reserve((void **)&(arr), &(cap), (len), (n), sizeof(*(arr)))


/* --- the builder ---------------------------------------------------------------------- */

struct mapping {
	uint64_t start, limit, offset;
	uint32_t file, build_id; /* string indexes */
	bool has_functions;
	/*
	 * A location of this mapping has no function: has_functions cannot be sent,
	 * or Pyroscope clears the mapping's addresses and the frame vanishes.
	 */
	bool unnamed;
};

struct function {
	uint32_t name, system_name, filename; /* string indexes */
	int64_t start_line;	/* 0 when unknown */
};

struct location {
	uint64_t mapping_id, address;
	size_t funcs; /* offset of the function ids in ids[] */
	size_t n_funcs;
	size_t lines; /* offset of their line numbers in ids[], when has_lines */
	bool has_lines; /* else every line number is 0 (unknown) */
};

/* A label with interned strings; str == 0 makes it numeric. */
struct ilabel {
	int64_t num;
	uint32_t key, str, unit;
};

struct sample {
	size_t locs, n_locs; /* location ids in ids[] */
	size_t labels, n_labels; /* in labels[] */
};

struct pprof_builder {
	struct pprof_meta meta; /* strings point into strs[] */
	char **strs;
	size_t n_strs, cap_strs;
	struct hashtab str_tab;
	struct mapping *maps;
	size_t n_maps, cap_maps;
	struct hashtab map_tab;
	struct function *funcs;
	size_t n_funcs, cap_funcs;
	struct hashtab func_tab;
	struct location *locs;
	size_t n_locs, cap_locs;
	struct hashtab loc_tab;
	struct sample *samples;
	size_t n_samples, cap_samples;
	struct hashtab sample_tab;
	int64_t *values; /* n_samples * meta.n_sample_types */
	size_t cap_values;
	uint64_t *ids; /* pool: functions of locations, locations of samples */
	size_t n_ids, cap_ids;
	struct ilabel *labels; /* pool: labels of samples */
	size_t n_labels, cap_labels;
};

static bool str_match(const void *ctx, size_t idx, const void *key)
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
	found = hashtab_find(&b->str_tab, h, str_match, b, s);
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
	h = hash_mix(hash_mix(hash_mix(hash_mix(hash_mix(k.start, k.limit), k.offset), k.file), k.build_id),
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
	struct function k = { .start_line = start_line > 0 ? start_line : 0 };
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

/* Line j of a location, 0 when it has none. */
static int64_t location_line(const struct pprof_builder *b, const struct location *l, size_t j)
{
	return l->has_lines ? (int64_t)b->ids[l->lines + j] : 0;
}

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
		h = hash_mix(hash_mix(hash_mix(hash_mix(h, labels[i].key), labels[i].str), (uint64_t)labels[i].num),
			labels[i].unit);
	return h;
}

static int64_t add_sat(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
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

/* --- encoding ------------------------------------------------------------------------- */

/* The protobuf-c view of a builder: message arrays and the pointer arrays to them. */
struct enc {
	Perftools__Profiles__ValueType *vt, **vtp, period;
	Perftools__Profiles__Mapping *maps, **mapp;
	Perftools__Profiles__Function *funcs, **funcp;
	Perftools__Profiles__Location *locs, **locp;
	Perftools__Profiles__Line *lines, **linep;
	Perftools__Profiles__Sample *samples, **samplep;
	Perftools__Profiles__Label *labels, **labelp;
};

/* n copies of the initialized message tmpl (sz bytes), and an array pointing at each. */
static void *msgs_new(size_t n, size_t sz, const void *tmpl, void ***ptrs)
{
	char *m = calloc(n ? n : 1, sz);
	size_t i;

	*ptrs = calloc(n ? n : 1, sizeof(**ptrs));
	if (!m || !*ptrs) {
		free(m);
		free(*ptrs);
		*ptrs = NULL;
		return NULL;
	}
	for (i = 0; i < n; i++) {
		memcpy(m + i * sz, tmpl, sz);
		(*ptrs)[i] = m + i * sz;
	}
	return m;
}

#define MSGS_NEW(arr, ptrs, n, tmpl) \
	((arr) = msgs_new((n), sizeof(*(arr)), &(tmpl), (void ***)&(ptrs)))

static void enc_free(struct enc *e)
{
	free(e->vt);
	free(e->vtp);
	free(e->maps);
	free(e->mapp);
	free(e->funcs);
	free(e->funcp);
	free(e->locs);
	free(e->locp);
	free(e->lines);
	free(e->linep);
	free(e->samples);
	free(e->samplep);
	free(e->labels);
	free(e->labelp);
}

static const Perftools__Profiles__ValueType vt_init = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
static const Perftools__Profiles__Mapping map_init = PERFTOOLS__PROFILES__MAPPING__INIT;
static const Perftools__Profiles__Function func_init = PERFTOOLS__PROFILES__FUNCTION__INIT;
static const Perftools__Profiles__Location loc_init = PERFTOOLS__PROFILES__LOCATION__INIT;
static const Perftools__Profiles__Line line_init = PERFTOOLS__PROFILES__LINE__INIT;
static const Perftools__Profiles__Sample sample_init = PERFTOOLS__PROFILES__SAMPLE__INIT;
static const Perftools__Profiles__Label label_init = PERFTOOLS__PROFILES__LABEL__INIT;

static int enc_alloc(struct enc *e, const struct pprof_builder *b)
{
	size_t n_lines = 0, i;

	for (i = 0; i < b->n_locs; i++)
		n_lines += b->locs[i].n_funcs;
	e->period = vt_init;
	if (!MSGS_NEW(e->vt, e->vtp, b->meta.n_sample_types, vt_init) ||
	    !MSGS_NEW(e->maps, e->mapp, b->n_maps, map_init) ||
	    !MSGS_NEW(e->funcs, e->funcp, b->n_funcs, func_init) ||
	    !MSGS_NEW(e->locs, e->locp, b->n_locs, loc_init) ||
	    !MSGS_NEW(e->lines, e->linep, n_lines, line_init) ||
	    !MSGS_NEW(e->samples, e->samplep, b->n_samples, sample_init) ||
	    !MSGS_NEW(e->labels, e->labelp, b->n_labels, label_init))
		return -ENOMEM;
	return 0;
}

static uint32_t str_index(const struct pprof_builder *b, const char *s)
{
	size_t found = hashtab_find(&b->str_tab, hash_fold(hash_str(s)), str_match, b, s);

	return found ? found - 1 : 0;
}

static void enc_header(struct enc *e, const struct pprof_builder *b, pprof_profile *p)
{
	const struct pprof_meta *m = &b->meta;
	size_t i;

	for (i = 0; i < m->n_sample_types; i++) {
		e->vt[i].type = str_index(b, m->sample_types[i].type);
		e->vt[i].unit = str_index(b, m->sample_types[i].unit);
	}
	p->n_sample_type = m->n_sample_types;
	p->sample_type = e->vtp;
	e->period.type = str_index(b, m->period_type.type);
	e->period.unit = str_index(b, m->period_type.unit);
	if (e->period.type || e->period.unit)
		p->period_type = &e->period;
	p->period = m->period;
	p->time_nanos = m->time_nanos;
	p->duration_nanos = m->duration_nanos;
	p->n_string_table = b->n_strs;
	p->string_table = b->strs;
}

static void enc_tables(struct enc *e, const struct pprof_builder *b, pprof_profile *p)
{
	size_t i, j, line = 0;

	for (i = 0; i < b->n_maps; i++) {
		e->maps[i].id = i + 1;
		e->maps[i].memory_start = b->maps[i].start;
		e->maps[i].memory_limit = b->maps[i].limit;
		e->maps[i].file_offset = b->maps[i].offset;
		e->maps[i].filename = b->maps[i].file;
		e->maps[i].build_id = b->maps[i].build_id;
		/* The flag promises that every location is named (pprof.h). */
		e->maps[i].has_functions = b->maps[i].has_functions && !b->maps[i].unnamed;
	}
	for (i = 0; i < b->n_funcs; i++) {
		e->funcs[i].id = i + 1;
		e->funcs[i].name = b->funcs[i].name;
		e->funcs[i].system_name = b->funcs[i].system_name;
		e->funcs[i].filename = b->funcs[i].filename;
		e->funcs[i].start_line = b->funcs[i].start_line;
	}
	for (i = 0; i < b->n_locs; i++) {
		e->locs[i].id = i + 1;
		e->locs[i].mapping_id = b->locs[i].mapping_id;
		e->locs[i].address = b->locs[i].address;
		e->locs[i].n_line = b->locs[i].n_funcs;
		e->locs[i].line = e->linep + line;
		for (j = 0; j < b->locs[i].n_funcs; j++) {
			e->lines[line].function_id = b->ids[b->locs[i].funcs + j];
			e->lines[line++].line = location_line(b, &b->locs[i], j);
		}
	}
	p->n_mapping = b->n_maps;
	p->mapping = e->mapp;
	p->n_function = b->n_funcs;
	p->function = e->funcp;
	p->n_location = b->n_locs;
	p->location = e->locp;
}

static void enc_samples(struct enc *e, const struct pprof_builder *b, pprof_profile *p)
{
	size_t nt = b->meta.n_sample_types, i, j;

	for (i = 0; i < b->n_samples; i++) {
		const struct sample *s = &b->samples[i];

		e->samples[i].n_location_id = s->n_locs;
		e->samples[i].location_id = s->n_locs ? b->ids + s->locs : NULL;
		e->samples[i].n_value = nt;
		e->samples[i].value = b->values + i * nt;
		e->samples[i].n_label = s->n_labels;
		e->samples[i].label = e->labelp + s->labels;
		for (j = 0; j < s->n_labels; j++) {
			const struct ilabel *l = &b->labels[s->labels + j];
			Perftools__Profiles__Label *out = &e->labels[s->labels + j];

			out->key = l->key;
			out->str = l->str;
			out->num = l->num;
			out->num_unit = l->unit;
		}
	}
	p->n_sample = b->n_samples;
	p->sample = e->samplep;
}

int pprof_encode(const struct pprof_builder *b, uint8_t **out, size_t *out_len)
{
	pprof_profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	struct enc e = {0};
	size_t len;
	uint8_t *buf;
	int ret;

	ret = enc_alloc(&e, b);
	if (ret)
		goto out;
	enc_header(&e, b, &p);
	enc_tables(&e, b, &p);
	enc_samples(&e, b, &p);
	len = perftools__profiles__profile__get_packed_size(&p);
	buf = malloc(len ? len : 1);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	*out_len = perftools__profiles__profile__pack(&p, buf);
	*out = buf;
out:
	enc_free(&e);
	return ret;
}

/* --- decoding and validation ---------------------------------------------------------- */

/* Maps the ids of one table of a profile to their indexes. */
struct idmap {
	uint64_t *ids;
	size_t n;
	bool seq; /* ids[i] == i + 1: no table needed */
	struct hashtab t;
};

static bool id_match(const void *ctx, size_t idx, const void *key)
{
	const struct idmap *m = ctx;

	return m->ids[idx] == *(const uint64_t *)key;
}

/* Index + 1 of id, or 0 when absent. */
static size_t idmap_get(const struct idmap *m, uint64_t id)
{
	if (m->seq)
		return id && id <= m->n ? id : 0;
	return hashtab_find(&m->t, hash_fold(hash_mix(0, id)), id_match, m, &id);
}

/* Indexes the n ids in m->ids; -EINVAL on an id 0, -EEXIST on a repeat, at *bad. */
static int idmap_init(struct idmap *m, size_t n, size_t *bad)
{
	const uint64_t *ids = m->ids;
	size_t i;
	int ret;

	m->n = n;
	m->seq = true;
	for (i = 0; i < n && m->seq; i++)
		m->seq = ids[i] == i + 1;
	if (m->seq)
		return 0;
	for (i = 0; i < n; i++) {
		*bad = i;
		if (!ids[i])
			return -EINVAL;
		if (idmap_get(m, ids[i]))
			return -EEXIST;
		ret = hashtab_add(&m->t, hash_fold(hash_mix(0, ids[i])), i);
		if (ret)
			return ret;
	}
	return 0;
}

static void idmap_free(struct idmap *m)
{
	free(m->ids);
	hashtab_free(&m->t);
}

/* Id maps of a profile's mappings, functions and locations. */
struct pindex {
	struct idmap maps, funcs, locs;
};

static void pindex_free(struct pindex *ix)
{
	idmap_free(&ix->maps);
	idmap_free(&ix->funcs);
	idmap_free(&ix->locs);
}

static void __attribute__((format(printf, 3, 4)))
fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Copies the ids of n messages of arr into m->ids. */
#define COPY_IDS(m, arr, n)                           \
	do {                                          \
		size_t i_;                            \
		for (i_ = 0; i_ < (n); i_++)          \
			(m)->ids[i_] = (arr)[i_]->id; \
	} while (0)

static int idmap_check(struct idmap *m, size_t n, const char *what, char *err, size_t errlen)
{
	size_t bad = 0;
	int ret = idmap_init(m, n, &bad);

	if (ret == -EINVAL)
		fail(err, errlen, "%s[%zu] has id 0", what, bad);
	else if (ret == -EEXIST)
		fail(err, errlen, "duplicate %s id %llu", what, (unsigned long long)m->ids[bad]);
	else if (ret)
		fail(err, errlen, "out of memory");
	return ret == -EINVAL || ret == -EEXIST ? -EBADMSG : ret;
}

static int pindex_init(struct pindex *ix, const pprof_profile *p, char *err, size_t errlen)
{
	int ret;

	*ix = (struct pindex){0};
	ix->maps.ids = malloc((p->n_mapping + 1) * sizeof(uint64_t));
	ix->funcs.ids = malloc((p->n_function + 1) * sizeof(uint64_t));
	ix->locs.ids = malloc((p->n_location + 1) * sizeof(uint64_t));
	if (!ix->maps.ids || !ix->funcs.ids || !ix->locs.ids) {
		fail(err, errlen, "out of memory");
		pindex_free(ix);
		return -ENOMEM;
	}
	COPY_IDS(&ix->maps, p->mapping, p->n_mapping);
	COPY_IDS(&ix->funcs, p->function, p->n_function);
	COPY_IDS(&ix->locs, p->location, p->n_location);
	ret = idmap_check(&ix->maps, p->n_mapping, "mapping", err, errlen);
	if (!ret)
		ret = idmap_check(&ix->funcs, p->n_function, "function", err, errlen);
	if (!ret)
		ret = idmap_check(&ix->locs, p->n_location, "location", err, errlen);
	if (ret)
		pindex_free(ix);
	return ret;
}

static bool str_ok(const pprof_profile *p, int64_t i)
{
	return i >= 0 && (uint64_t)i < p->n_string_table;
}

static bool vt_ok(const pprof_profile *p, const Perftools__Profiles__ValueType *vt)
{
	return str_ok(p, vt->type) && str_ok(p, vt->unit);
}

static bool check_header(const pprof_profile *p, char *err, size_t errlen)
{
	size_t i;

	if (!p->n_string_table || p->string_table[0][0]) {
		fail(err, errlen, "string_table[0] is not \"\"");
		return false;
	}
	if (p->n_sample_type > PPROF_MAX_SAMPLE_TYPES || (!p->n_sample_type && p->n_sample)) {
		fail(err, errlen, "%zu sample types", p->n_sample_type);
		return false;
	}
	for (i = 0; i < p->n_sample_type; i++) {
		if (!vt_ok(p, p->sample_type[i])) {
			fail(err, errlen, "sample_type[%zu]: string index out of range", i);
			return false;
		}
	}
	if ((p->period_type && !vt_ok(p, p->period_type)) || !str_ok(p, p->drop_frames) ||
	    !str_ok(p, p->keep_frames) || !str_ok(p, p->default_sample_type) ||
	    !str_ok(p, p->doc_url)) {
		fail(err, errlen, "header: string index out of range");
		return false;
	}
	for (i = 0; i < p->n_comment; i++) {
		if (!str_ok(p, p->comment[i])) {
			fail(err, errlen, "comment[%zu]: string index out of range", i);
			return false;
		}
	}
	return true;
}

static bool check_tables(const pprof_profile *p, const struct pindex *ix, char *err, size_t errlen)
{
	size_t i, j;

	for (i = 0; i < p->n_mapping; i++) {
		if (!str_ok(p, p->mapping[i]->filename) || !str_ok(p, p->mapping[i]->build_id)) {
			fail(err, errlen, "mapping[%zu]: string index out of range", i);
			return false;
		}
	}
	for (i = 0; i < p->n_function; i++) {
		const Perftools__Profiles__Function *f = p->function[i];

		if (!str_ok(p, f->name) || !str_ok(p, f->system_name) || !str_ok(p, f->filename)) {
			fail(err, errlen, "function[%zu]: string index out of range", i);
			return false;
		}
	}
	for (i = 0; i < p->n_location; i++) {
		const Perftools__Profiles__Location *l = p->location[i];

		if (l->mapping_id && !idmap_get(&ix->maps, l->mapping_id)) {
			fail(err, errlen, "location[%zu]: no mapping id %llu", i,
			     (unsigned long long)l->mapping_id);
			return false;
		}
		for (j = 0; j < l->n_line; j++) {
			if (!idmap_get(&ix->funcs, l->line[j]->function_id)) {
				fail(err, errlen, "location[%zu]: no function id %llu", i,
				     (unsigned long long)l->line[j]->function_id);
				return false;
			}
		}
	}
	return true;
}

static bool check_sample(const pprof_profile *p, const struct pindex *ix, size_t i, char *err,
			 size_t errlen)
{
	const Perftools__Profiles__Sample *s = p->sample[i];
	size_t j;

	if (s->n_value != p->n_sample_type) {
		fail(err, errlen, "sample[%zu]: %zu values for %zu sample types", i, s->n_value,
		     p->n_sample_type);
		return false;
	}
	for (j = 0; j < s->n_location_id; j++) {
		if (!idmap_get(&ix->locs, s->location_id[j])) {
			fail(err, errlen, "sample[%zu]: no location id %llu", i,
			     (unsigned long long)s->location_id[j]);
			return false;
		}
	}
	for (j = 0; j < s->n_label; j++) {
		const Perftools__Profiles__Label *l = s->label[j];

		if (!str_ok(p, l->key) || !str_ok(p, l->str) || !str_ok(p, l->num_unit)) {
			fail(err, errlen, "sample[%zu] label[%zu]: string index out of range", i,
			     j);
			return false;
		}
	}
	return true;
}

/* Checks p; on success *ix holds its id maps, for the caller to free. */
static int validate(const pprof_profile *p, struct pindex *ix, char *err, size_t errlen)
{
	bool ok;
	size_t i;
	int ret;

	if (!check_header(p, err, errlen))
		return -EBADMSG;
	ret = pindex_init(ix, p, err, errlen);
	if (ret)
		return ret;
	ok = check_tables(p, ix, err, errlen);
	for (i = 0; ok && i < p->n_sample; i++)
		ok = check_sample(p, ix, i, err, errlen);
	if (!ok)
		pindex_free(ix);
	return ok ? 0 : -EBADMSG;
}

/* One block of an arena; data follows. */
struct arena_chunk {
	struct arena_chunk *next;
	size_t size, used;
	max_align_t data[];
};

/* Where a decoded profile's many small objects go: freed all at once. */
struct pprof_arena {
	struct arena_chunk *chunks;	/* newest first */
	size_t total;			/* bytes of every chunk */
	ProtobufCAllocator alloc;
};

#define ARENA_FIRST_CHUNK (1u << 20)

static void *arena_alloc(void *data, size_t size)
{
	struct pprof_arena *a = data;
	struct arena_chunk *c = a->chunks;
	size_t need = (size + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1), n;

	if (!c || c->size - c->used < need) {
		n = a->total > ARENA_FIRST_CHUNK ? a->total : ARENA_FIRST_CHUNK;
		if (n < need)
			n = need;
		c = malloc(sizeof(*c) + n);
		if (!c)
			return NULL;
		*c = (struct arena_chunk){.next = a->chunks, .size = n};
		a->chunks = c;
		a->total += n;
	}
	c->used += need;
	return (char *)c->data + c->used - need;
}

static void arena_free_one(void *data, void *ptr)
{
	(void)data;
	(void)ptr; /* freed with the arena's next reset */
}

struct pprof_arena *pprof_arena_new(void)
{
	struct pprof_arena *a = calloc(1, sizeof(*a));

	if (a)
		a->alloc = (ProtobufCAllocator){arena_alloc, arena_free_one, a};
	return a;
}

/* Empties a: keeps one chunk as large as all were, so the next profile fits in it. */
static void arena_reset(struct pprof_arena *a)
{
	struct arena_chunk *c, *next;
	size_t total = a->total;

	if (a->chunks && !a->chunks->next) {
		a->chunks->used = 0;
		return;
	}
	for (c = a->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	a->chunks = NULL;
	a->total = 0;
	if (total) {
		c = malloc(sizeof(*c) + total);
		if (c) {
			*c = (struct arena_chunk){.size = total};
			a->chunks = c;
			a->total = total;
		}
	}
}

void pprof_arena_free(struct pprof_arena *a)
{
	struct arena_chunk *c, *next;

	if (!a)
		return;
	for (c = a->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	free(a);
}

/* The body of pprof_decode(): unpacks with alloc (NULL: malloc) and validates into ix. */
static int decode(const uint8_t *buf, size_t len, ProtobufCAllocator *alloc, pprof_profile **out,
		  struct pindex *ix, char *err, size_t errlen)
{
	uint8_t *raw = NULL;
	pprof_profile *p;
	int ret;

	fail(err, errlen, "%s", "");
	if (is_gzip(buf, len)) {
		ret = gzip_decompress(buf, len, EMBER_MAX_PROFILE_BYTES, &raw, &len);
		if (ret) {
			fail(err, errlen, "gzip: %s", strerror(-ret));
			return ret;
		}
		buf = raw;
	} else if (len > EMBER_MAX_PROFILE_BYTES) {
		fail(err, errlen, "profile larger than %u bytes", EMBER_MAX_PROFILE_BYTES);
		return -EFBIG;
	}
	p = perftools__profiles__profile__unpack(alloc, len, buf);
	free(raw);
	if (!p) {
		fail(err, errlen, "not a profile.proto message");
		return -EBADMSG;
	}
	ret = validate(p, ix, err, errlen);
	if (ret) {
		perftools__profiles__profile__free_unpacked(p, alloc);
		return ret;
	}
	*out = p;
	return 0;
}

int pprof_decode(const uint8_t *buf, size_t len, pprof_profile **out, char *err, size_t errlen)
{
	struct pindex ix;
	int ret = decode(buf, len, NULL, out, &ix, err, errlen);

	if (!ret)
		pindex_free(&ix);
	return ret;
}

void pprof_profile_free(pprof_profile *p)
{
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
}

/* --- merge ---------------------------------------------------------------------------- */

/* Builder ids of a decoded profile's entries, filled as samples reach them (0 = not yet). */
struct merge {
	struct pprof_builder *b;
	const pprof_profile *p;
	struct pindex ix;
	uint64_t *map_ids, *func_ids, *loc_ids;
	uint64_t *scratch; /* function or location ids being translated */
	size_t cap_scratch;
	bool drop_labels; /* from the filter */
	int64_t *lines; /* the line numbers of a location being translated */
	size_t cap_lines;
};

static const char *pstr(const pprof_profile *p, int64_t i)
{
	return p->string_table[i];
}

static bool same_types(const struct pprof_builder *b, const pprof_profile *p)
{
	size_t i;

	if (p->n_sample_type != b->meta.n_sample_types)
		return false;
	for (i = 0; i < p->n_sample_type; i++) {
		if (strcmp(pstr(p, p->sample_type[i]->type), b->meta.sample_types[i].type) ||
		    strcmp(pstr(p, p->sample_type[i]->unit), b->meta.sample_types[i].unit))
			return false;
	}
	return true;
}

static uint64_t merge_mapping(struct merge *m, size_t i)
{
	const Perftools__Profiles__Mapping *pm = m->p->mapping[i];
	struct pprof_mapping_desc d = {
		.start = pm->memory_start,
		.limit = pm->memory_limit,
		.offset = pm->file_offset,
		.file = pstr(m->p, pm->filename),
		.build_id = pstr(m->p, pm->build_id),
		.has_functions = pm->has_functions,
	};

	if (!m->map_ids[i])
		m->map_ids[i] = pprof_mapping(m->b, &d);
	return m->map_ids[i];
}

static uint64_t merge_function(struct merge *m, size_t i)
{
	const Perftools__Profiles__Function *f = m->p->function[i];

	if (!m->func_ids[i])
		m->func_ids[i] =
			pprof_function_at(m->b, pstr(m->p, f->name), pstr(m->p, f->system_name),
					  pstr(m->p, f->filename), f->start_line);
	return m->func_ids[i];
}

static uint64_t merge_location(struct merge *m, size_t i)
{
	const Perftools__Profiles__Location *l = m->p->location[i];
	uint64_t map_id = 0;
	size_t j;
	int ret;

	if (m->loc_ids[i])
		return m->loc_ids[i];
	if (l->mapping_id) {
		map_id = merge_mapping(m, idmap_get(&m->ix.maps, l->mapping_id) - 1);
		if (!map_id)
			return 0;
	}
	ret = RESERVE(m->scratch, m->cap_scratch, 0, l->n_line);
	if (!ret)
		ret = RESERVE(m->lines, m->cap_lines, 0, l->n_line);
	if (ret) {
		errno = -ret;
		return 0;
	}
	for (j = 0; j < l->n_line; j++) {
		m->scratch[j] =
			merge_function(m, idmap_get(&m->ix.funcs, l->line[j]->function_id) - 1);
		if (!m->scratch[j])
			return 0;
		m->lines[j] = l->line[j]->line;
	}
	m->loc_ids[i] =
		pprof_location_lines(m->b, map_id, l->address, m->scratch, m->lines, l->n_line);
	return m->loc_ids[i];
}

bool pprof_sample_wanted(const pprof_profile *p, const Perftools__Profiles__Sample *s,
			 const struct pprof_filter *f)
{
	size_t i;

	if (!f || !f->by_pid)
		return true;
	for (i = 0; i < s->n_label; i++) {
		const Perftools__Profiles__Label *l = s->label[i];

		if (!l->str && l->num == f->pid && !strcmp(pstr(p, l->key), "pid"))
			return true;
	}
	return false;
}

static int merge_sample(struct merge *m, const Perftools__Profiles__Sample *s)
{
	struct pprof_label labels[PPROF_MAX_LABELS];
	size_t i;
	int ret;

	if (s->n_label > PPROF_MAX_LABELS)
		return -E2BIG;
	for (i = 0; i < s->n_label; i++) {
		const Perftools__Profiles__Label *l = s->label[i];

		labels[i] = (struct pprof_label){
			.key = pstr(m->p, l->key),
			.str = l->str ? pstr(m->p, l->str) : NULL,
			.num = l->num,
			.num_unit = l->num_unit ? pstr(m->p, l->num_unit) : NULL,
		};
	}
	ret = RESERVE(m->scratch, m->cap_scratch, 0, s->n_location_id);
	if (ret)
		return ret;
	/* Locations first: translating one may reuse the scratch for its functions. */
	for (i = 0; i < s->n_location_id; i++) {
		if (!merge_location(m, idmap_get(&m->ix.locs, s->location_id[i]) - 1))
			return errno ? -errno : -ENOMEM;
	}
	for (i = 0; i < s->n_location_id; i++)
		m->scratch[i] = m->loc_ids[idmap_get(&m->ix.locs, s->location_id[i]) - 1];
	return pprof_add_sample(m->b, m->scratch, s->n_location_id, s->value, labels,
				m->drop_labels ? 0 : s->n_label);
}

/* Grows the builder's [time, time + duration) to cover p's; time 0 means unknown. */
static void merge_time(struct pprof_builder *b, const pprof_profile *p)
{
	int64_t start = p->time_nanos, end = add_sat(p->time_nanos, p->duration_nanos);
	int64_t b_end = add_sat(b->meta.time_nanos, b->meta.duration_nanos);

	if (!p->time_nanos)
		return;
	if (b->meta.time_nanos) {
		start = start < b->meta.time_nanos ? start : b->meta.time_nanos;
		end = end > b_end ? end : b_end;
	}
	b->meta.time_nanos = start;
	b->meta.duration_nanos = add_sat(end, start == INT64_MIN ? 0 : -start);
}

int pprof_merge(struct pprof_builder *b, const pprof_profile *p, const struct pprof_filter *f)
{
	struct merge m = {.b = b, .p = p, .drop_labels = f && f->drop_labels};
	size_t i;
	int ret;

	/* Validated again so that hand-built profiles cannot index out of bounds. */
	ret = validate(p, &m.ix, NULL, 0);
	if (ret)
		return ret;
	if (!same_types(b, p)) {
		pindex_free(&m.ix);
		return -EINVAL;
	}
	m.map_ids = calloc(p->n_mapping + 1, sizeof(*m.map_ids));
	m.func_ids = calloc(p->n_function + 1, sizeof(*m.func_ids));
	m.loc_ids = calloc(p->n_location + 1, sizeof(*m.loc_ids));
	ret = m.map_ids && m.func_ids && m.loc_ids ? 0 : -ENOMEM;
	for (i = 0; !ret && i < p->n_sample; i++) {
		if (pprof_sample_wanted(p, p->sample[i], f))
			ret = merge_sample(&m, p->sample[i]);
	}
	if (!ret)
		merge_time(b, p);
	free(m.map_ids);
	free(m.func_ids);
	free(m.loc_ids);
	free(m.scratch);
	free(m.lines);
	pindex_free(&m.ix);
	return ret;
}

/* --- reading ---------------------------------------------------------------------------- */

struct pprof_reader {
	const pprof_profile *p;
	struct pindex ix;
};

int pprof_reader_new(const pprof_profile *p, struct pprof_reader **out)
{
	struct pprof_reader *r = calloc(1, sizeof(*r));
	int ret;

	if (!r)
		return -ENOMEM;
	r->p = p;
	ret = validate(p, &r->ix, NULL, 0);
	if (ret) {
		free(r);
		return ret;
	}
	*out = r;
	return 0;
}

int pprof_decode_arena(struct pprof_arena *a, const uint8_t *buf, size_t len, pprof_profile **out,
		       struct pprof_reader **reader, char *err, size_t errlen)
{
	struct pprof_reader *r = calloc(1, sizeof(*r));
	int ret;

	arena_reset(a);
	if (!r)
		return -ENOMEM;
	ret = decode(buf, len, &a->alloc, out, &r->ix, err, errlen);
	if (ret) {
		free(r);
		return ret;
	}
	r->p = *out;
	*reader = r;
	return 0;
}

void pprof_reader_free(struct pprof_reader *r)
{
	if (!r)
		return;
	pindex_free(&r->ix);
	free(r);
}

int64_t pprof_reader_location_index(const struct pprof_reader *r, uint64_t id)
{
	return (int64_t)idmap_get(&r->ix.locs, id) - 1;
}

int64_t pprof_reader_function_index(const struct pprof_reader *r, uint64_t id)
{
	return (int64_t)idmap_get(&r->ix.funcs, id) - 1;
}

const Perftools__Profiles__Function *pprof_reader_function(const struct pprof_reader *r,
							   uint64_t id)
{
	size_t i = idmap_get(&r->ix.funcs, id);

	return i ? r->p->function[i - 1] : NULL;
}

const Perftools__Profiles__Mapping *pprof_reader_mapping(const struct pprof_reader *r,
							 uint64_t id)
{
	size_t i = idmap_get(&r->ix.maps, id);

	return i ? r->p->mapping[i - 1] : NULL;
}

int pprof_sample_type_index(const pprof_profile *p, const char *type)
{
	for (size_t i = 0; i < p->n_sample_type; i++) {
		if (!strcmp(pstr(p, p->sample_type[i]->type), type))
			return (int)i;
	}
	return -1;
}

struct pprof_builder *pprof_builder_like(const pprof_profile *p)
{
	struct pprof_meta meta = {.n_sample_types = p->n_sample_type, .period = p->period};

	if (p->n_sample_type > PPROF_MAX_SAMPLE_TYPES) {
		errno = E2BIG;
		return NULL;
	}
	for (size_t i = 0; i < p->n_sample_type; i++) {
		meta.sample_types[i].type = pstr(p, p->sample_type[i]->type);
		meta.sample_types[i].unit = pstr(p, p->sample_type[i]->unit);
	}
	if (p->period_type) {
		meta.period_type.type = pstr(p, p->period_type->type);
		meta.period_type.unit = pstr(p, p->period_type->unit);
	}
	return pprof_builder_new(&meta);
}
