/* SPDX-License-Identifier: MIT */
/*
 * What pprof's files share (pprof.c builds, pprof_encode.c, pprof_decode.c,
 * pprof_merge.c): the builder's tables and a decoded profile's id maps.
 */
#ifndef EMBER_PPROF_INT_H
#define EMBER_PPROF_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashtab.h"
#include "pprof.h"

/* Deepest stack and most inline frames per location we keep; BPF stacks stop at 127. */
#define PPROF_MAX_DEPTH (1u << 16)

struct mapping {
	uint64_t start, limit, offset;
	uint32_t file, build_id; /* string indexes */
	bool has_functions;
	/*
	 * A location of this mapping has no function, or only the name a merge gave it
	 * (pprof_filter.name_unnamed): has_functions cannot be sent, or Pyroscope clears
	 * the mapping's addresses and the frame vanishes or loses its address.
	 */
	bool unnamed;
};

struct function {
	uint32_t name, system_name, filename; /* string indexes */
	int64_t start_line;		      /* 0 when unknown */
};

struct location {
	uint64_t mapping_id, address;
	size_t funcs; /* offset of the function ids in ids[] */
	size_t n_funcs;
	size_t lines;	/* offset of their line numbers in ids[], when has_lines */
	bool has_lines; /* else every line number is 0 (unknown) */
};

/* A label with interned strings; str == 0 makes it numeric. */
struct ilabel {
	int64_t num;
	uint32_t key, str, unit;
};

struct sample {
	size_t locs, n_locs;	 /* location ids in ids[] */
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
	uint32_t comments[PPROF_MAX_COMMENTS]; /* distinct, as string indexes */
	size_t n_comments;
};

/* Line j of a location, 0 when it has none. */
static inline int64_t location_line(const struct pprof_builder *b, const struct location *l,
				    size_t j)
{
	return l->has_lines ? (int64_t)b->ids[l->lines + j] : 0;
}

/* a + b, saturated at the int64_t bounds. */
static inline int64_t add_sat(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* Makes room in *arr (of *cap elements of sz bytes) for len + n elements. */
int pprof_reserve(void **arr, size_t *cap, size_t len, size_t n, size_t sz);
#define RESERVE(arr, cap, len, n) pprof_reserve((void **)&(arr), &(cap), (len), (n), sizeof(*(arr)))

/* The builder's string table's hashtab predicate (pprof.c). */
bool pprof_str_match(const void *ctx, size_t idx, const void *key);

/* --- a decoded profile (pprof_decode.c) --- */

/* Maps the ids of one table of a profile to their indexes. */
struct idmap {
	uint64_t *ids;
	size_t n;
	bool seq; /* ids[i] == i + 1: no table needed */
	struct hashtab t;
};

/* Id maps of a profile's mappings, functions and locations. */
struct pindex {
	struct idmap maps, funcs, locs;
};

/* Index + 1 of id, or 0 when absent. */
size_t pprof_idmap_get(const struct idmap *m, uint64_t id);
void pprof_pindex_free(struct pindex *ix);
/* Checks p; on success *ix holds its id maps, for the caller to free. */
int pprof_validate(const pprof_profile *p, struct pindex *ix, char *err, size_t errlen);

/* String i of a validated profile. */
static inline const char *pstr(const pprof_profile *p, int64_t i)
{
	return p->string_table[i];
}

#endif
