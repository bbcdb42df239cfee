/* SPDX-License-Identifier: MIT */
/*
 * pprof profiles: a builder that interns strings, mappings, functions and
 * locations (ids = index + 1) and folds identical samples; a validating decoder
 * for profiles from outside (files, history, network); and a merge of decoded
 * profiles into a builder.
 */
#ifndef EMBER_PPROF_H
#define EMBER_PPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile pprof_profile;

#define PPROF_MAX_SAMPLE_TYPES 8
#define PPROF_MAX_LABELS 16

struct pprof_value_type {
	const char *type; /* e.g. "samples", "cpu" */
	const char *unit; /* e.g. "count", "nanoseconds" */
};

struct pprof_meta {
	struct pprof_value_type sample_types[PPROF_MAX_SAMPLE_TYPES];
	size_t n_sample_types;
	struct pprof_value_type period_type;
	int64_t period;
	int64_t time_nanos;
	int64_t duration_nanos;
	const char *default_sample_type; /* NULL: none (readers take the last type) */
	const char *comment;		 /* a line for the reader (Profile.comment); NULL: none */
};

/*
 * A mapping as the symbolizer sees it; interned by all of its fields. Its locations'
 * addresses are runtime ones in [start, limit): the file offset of one is
 * address - start + offset, which a later symbolizer looks up in the file of build_id.
 */
struct pprof_mapping_desc {
	uint64_t start, limit, offset;
	const char *file;
	const char *build_id; /* "" or NULL when none */
	/*
	 * Whether the caller names this mapping's frames. The encoded flag is set only if,
	 * in addition, every location of the mapping has a function: readers (Pyroscope's
	 * Normalize) take it to mean the addresses are no longer needed and drop them, so
	 * an unnamed frame of such a mapping would vanish from their flame graphs.
	 */
	bool has_functions;
};

/* A sample label: a string one when str != NULL, else numeric (num, num_unit). */
struct pprof_label {
	const char *key;
	const char *str;
	int64_t num;
	const char *num_unit; /* NULL for none */
};

struct pprof_builder;

/* Distinct comments a builder keeps (a merge adds its profiles'); past it they are left out. */
#define PPROF_MAX_COMMENTS 8

struct pprof_builder *pprof_builder_new(const struct pprof_meta *meta);
void pprof_builder_free(struct pprof_builder *b);
/* A builder with p's sample types and period: what merging p (and its kind) needs.
 * NULL with errno set: E2BIG for more than PPROF_MAX_SAMPLE_TYPES, ENOMEM. */
struct pprof_builder *pprof_builder_like(const pprof_profile *p);
const struct pprof_meta *pprof_builder_meta(const struct pprof_builder *b);
/* Adds a comment (Profile.comment), once however often added. 0 or -ENOMEM. */
int pprof_add_comment(struct pprof_builder *b, const char *s);
void pprof_builder_set_time(struct pprof_builder *b, int64_t time_nanos, int64_t duration_nanos);

/* Interning; each returns an id >= 1, or 0 with errno set (ENOMEM). */
uint64_t pprof_mapping(struct pprof_builder *b, const struct pprof_mapping_desc *m);
uint64_t pprof_function(struct pprof_builder *b, const char *name, const char *system_name,
			const char *filename);
/* The same with the line the function starts at in filename (0 when unknown). */
uint64_t pprof_function_at(struct pprof_builder *b, const char *name, const char *system_name,
			   const char *filename, int64_t start_line);
/* A location of mapping_id (0 = none) at address, with one Line per function
 * (innermost first; n_funcs may be 0 for an unnamed frame). */
uint64_t pprof_location(struct pprof_builder *b, uint64_t mapping_id, uint64_t address,
			const uint64_t *function_ids, size_t n_funcs);
/* The same with each Line's line number (lines[i] for function_ids[i]; 0 or a
 * NULL lines when unknown). */
uint64_t pprof_location_lines(struct pprof_builder *b, uint64_t mapping_id, uint64_t address,
			      const uint64_t *function_ids, const int64_t *lines, size_t n_funcs);

/* Adds values (one per sample type) to the sample with these locations (leaf
 * first) and labels, creating it when new. 0 or negative errno. */
int pprof_add_sample(struct pprof_builder *b, const uint64_t *location_ids, size_t n_locs,
		     const int64_t *values, const struct pprof_label *labels, size_t n_labels);

size_t pprof_sample_count(const struct pprof_builder *b); /* distinct samples */
int64_t pprof_value_total(const struct pprof_builder *b, size_t type_index);

/* Serializes to an uncompressed profile.proto message. 0 or negative errno. */
int pprof_encode(const struct pprof_builder *b, uint8_t **out, size_t *out_len);

/*
 * Decodes a profile (gzip or not, at most EMBER_MAX_PROFILE_BYTES once
 * decompressed) and checks what readers rely on: string_table[0] == "", every
 * string index in range, ids non-zero and unique, every referenced id exists,
 * one value per sample type. On failure returns a negative errno and writes a
 * one-line reason into err.
 */
int pprof_decode(const uint8_t *buf, size_t len, pprof_profile **out, char *err, size_t errlen);
void pprof_profile_free(pprof_profile *p);

/*
 * Memory for decoding one profile after another without a malloc and free per
 * message: what emberctl's merges use. A profile decoded into an arena lives
 * until the next decode into it (or pprof_arena_free), and is not freed alone.
 */
struct pprof_arena;
struct pprof_reader;

struct pprof_arena *pprof_arena_new(void);
void pprof_arena_free(struct pprof_arena *a);
/*
 * pprof_decode() into a (emptied first), and a reader of the result from the
 * same validation; the reader is freed with pprof_reader_free(), before the
 * arena's next decode.
 */
int pprof_decode_arena(struct pprof_arena *a, const uint8_t *buf, size_t len, pprof_profile **out,
		       struct pprof_reader **reader, char *err, size_t errlen);

/*
 * A decoded profile indexed for reading: location, function and mapping by id.
 * Built on a validated profile, so every id a sample or location names exists
 * and every string index is in range.
 */
/* Validates p as pprof_decode() does and indexes its ids. 0 or a negative errno. */
int pprof_reader_new(const pprof_profile *p, struct pprof_reader **out);
void pprof_reader_free(struct pprof_reader *r);
/* The index in p->location of location id, or -1 when no such id. */
int64_t pprof_reader_location_index(const struct pprof_reader *r, uint64_t id);
/* The index in p->function of function id, or -1 when no such id. */
int64_t pprof_reader_function_index(const struct pprof_reader *r, uint64_t id);
/* NULL when no such id. */
const Perftools__Profiles__Function *pprof_reader_function(const struct pprof_reader *r,
							   uint64_t id);
const Perftools__Profiles__Mapping *pprof_reader_mapping(const struct pprof_reader *r, uint64_t id);
/*
 * Index of the sample type named type ("samples", "cpu"), or -1. type NULL is
 * the profile's default: its default_sample_type if it names one, else
 * "samples" (ember's profiles before it set one), else the last type (as go
 * tool pprof).
 */
int pprof_sample_type_index(const pprof_profile *p, const char *type);
/* The name of sample type i (an index from pprof_sample_type_index), or "". */
const char *pprof_sample_type_name(const pprof_profile *p, int i);

/* Room for a name from pprof_unnamed_frame(), NUL included: a longer one is cut there. */
#define PPROF_UNNAMED_MAX 512

/*
 * The name of a frame whose location has no Line, the one name every ember output gives
 * it (emberctl's views, and the Line a push adds for it): "FILE+0xOFFSET", FILE the base
 * name of its mapping m's file and OFFSET the address's offset in that file, or
 * "0xADDRESS" when m is NULL, has no file or does not hold the address. p is the profile
 * whose string table m's file name indexes.
 */
void pprof_unnamed_frame(const pprof_profile *p, const Perftools__Profiles__Mapping *m,
			 uint64_t address, char *buf, size_t len);

/* Which samples of a profile to merge. */
struct pprof_filter {
	bool by_pid;
	int64_t pid;	  /* keep samples whose numeric label "pid" equals this */
	bool drop_labels; /* merge without sample labels: what differed only by them sums */
	/*
	 * Give each location without Lines one, of a function named by pprof_unnamed_frame():
	 * Pyroscope draws Lines only, and would leave the frame out. Its mapping is still
	 * sent without has_functions, so that readers keep its address.
	 */
	bool name_unnamed;
};

/* Whether sample s of p passes f (NULL passes everything). */
bool pprof_sample_wanted(const pprof_profile *p, const Perftools__Profiles__Sample *s,
			 const struct pprof_filter *f);

/*
 * Adds every sample of p (passing f, which may be NULL) into b: mappings,
 * functions and locations are re-interned by content and identical samples
 * summed. The builder's time range grows to cover p. -EINVAL when p's sample
 * types differ from the builder's.
 */
int pprof_merge(struct pprof_builder *b, const pprof_profile *p, const struct pprof_filter *f);

#endif
