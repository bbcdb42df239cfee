// SPDX-License-Identifier: MIT
/*
 * Encoding a builder as a pprof Profile message: the protobuf-c view of its
 * tables, packed and gzip-compressed as pprof is served.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "compress.h"
#include "hashtab.h"
#include "pprof_int.h"

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
	int64_t comments[PPROF_MAX_COMMENTS]; /* string indexes */
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
	size_t found = hashtab_find(&b->str_tab, hash_fold(hash_str(s)), pprof_str_match, b, s);

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
	if (m->default_sample_type)
		p->default_sample_type = str_index(b, m->default_sample_type);
	p->time_nanos = m->time_nanos;
	p->duration_nanos = m->duration_nanos;
	for (i = 0; i < b->n_comments; i++)
		e->comments[i] = b->comments[i];
	p->n_comment = b->n_comments;
	p->comment = b->n_comments ? e->comments : NULL;
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
