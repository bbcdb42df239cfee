// SPDX-License-Identifier: MIT
/*
 * Merging a decoded profile into a builder, with a filter (pids, time range,
 * labels), interning each mapping, function and location once.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "pprof_int.h"

/* --- merge ---------------------------------------------------------------------------- */

/* Builder ids of a decoded profile's entries, filled as samples reach them (0 = not yet). */
struct merge {
	struct pprof_builder *b;
	const pprof_profile *p;
	struct pindex ix;
	uint64_t *map_ids, *func_ids, *loc_ids;
	uint64_t *scratch; /* function or location ids being translated */
	size_t cap_scratch;
	bool drop_labels;  /* from the filter */
	bool name_unnamed; /* from the filter */
	int64_t *lines;	   /* the line numbers of a location being translated */
	size_t cap_lines;
};

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

/* Location i, which has no Line, with one naming it as emberctl does (pprof_filter). */
static uint64_t merge_unnamed(struct merge *m, size_t i, uint64_t map_id)
{
	const Perftools__Profiles__Location *l = m->p->location[i];
	const Perftools__Profiles__Mapping *pm = NULL;
	char name[PPROF_UNNAMED_MAX];
	uint64_t func;

	if (l->mapping_id)
		pm = m->p->mapping[pprof_idmap_get(&m->ix.maps, l->mapping_id) - 1];
	pprof_unnamed_frame(m->p, pm, l->address, name, sizeof(name));
	func = pprof_function(m->b, name, name, "");
	if (!func)
		return 0;
	m->loc_ids[i] = pprof_location(m->b, map_id, l->address, &func, 1);
	/* the name is ours, not a symbol's: the mapping is not sent as symbolized */
	if (m->loc_ids[i] && map_id)
		m->b->maps[map_id - 1].unnamed = true;
	return m->loc_ids[i];
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
		map_id = merge_mapping(m, pprof_idmap_get(&m->ix.maps, l->mapping_id) - 1);
		if (!map_id)
			return 0;
	}
	if (!l->n_line && m->name_unnamed)
		return merge_unnamed(m, i, map_id);
	ret = RESERVE(m->scratch, m->cap_scratch, 0, l->n_line);
	if (!ret)
		ret = RESERVE(m->lines, m->cap_lines, 0, l->n_line);
	if (ret) {
		errno = -ret;
		return 0;
	}
	for (j = 0; j < l->n_line; j++) {
		m->scratch[j] = merge_function(
			m, pprof_idmap_get(&m->ix.funcs, l->line[j]->function_id) - 1);
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
		if (!merge_location(m, pprof_idmap_get(&m->ix.locs, s->location_id[i]) - 1))
			return errno ? -errno : -ENOMEM;
	}
	for (i = 0; i < s->n_location_id; i++)
		m->scratch[i] = m->loc_ids[pprof_idmap_get(&m->ix.locs, s->location_id[i]) - 1];
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
	struct merge m = {.b = b,
			  .p = p,
			  .drop_labels = f && f->drop_labels,
			  .name_unnamed = f && f->name_unnamed};
	size_t i;
	int ret;

	/* Validated again so that hand-built profiles cannot index out of bounds. */
	ret = pprof_validate(p, &m.ix, NULL, 0);
	if (ret)
		return ret;
	if (!same_types(b, p)) {
		pprof_pindex_free(&m.ix);
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
	for (i = 0; !ret && i < p->n_comment; i++)
		if (p->comment[i] > 0 && (size_t)p->comment[i] < p->n_string_table)
			ret = pprof_add_comment(b, p->string_table[p->comment[i]]);
	if (!ret)
		merge_time(b, p);
	free(m.map_ids);
	free(m.func_ids);
	free(m.loc_ids);
	free(m.scratch);
	free(m.lines);
	pprof_pindex_free(&m.ix);
	return ret;
}
