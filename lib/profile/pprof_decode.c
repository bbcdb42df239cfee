// SPDX-License-Identifier: MIT
/*
 * Decoding pprof (gzip or not) into protobuf-c messages, validated so that
 * every id and string index a reader follows is in range; the readers' indexes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compress.h"
#include "hashtab.h"
#include "pprof_int.h"

/* --- decoding and validation ---------------------------------------------------------- */

static bool id_match(const void *ctx, size_t idx, const void *key)
{
	const struct idmap *m = ctx;

	return m->ids[idx] == *(const uint64_t *)key;
}

/* Index + 1 of id, or 0 when absent. */
size_t pprof_idmap_get(const struct idmap *m, uint64_t id)
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
		if (pprof_idmap_get(m, ids[i]))
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

void pprof_pindex_free(struct pindex *ix)
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
		pprof_pindex_free(ix);
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
		pprof_pindex_free(ix);
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

		if (l->mapping_id && !pprof_idmap_get(&ix->maps, l->mapping_id)) {
			fail(err, errlen, "location[%zu]: no mapping id %llu", i,
			     (unsigned long long)l->mapping_id);
			return false;
		}
		for (j = 0; j < l->n_line; j++) {
			if (!pprof_idmap_get(&ix->funcs, l->line[j]->function_id)) {
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
		if (!pprof_idmap_get(&ix->locs, s->location_id[j])) {
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
int pprof_validate(const pprof_profile *p, struct pindex *ix, char *err, size_t errlen)
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
		pprof_pindex_free(ix);
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
	struct arena_chunk *chunks; /* newest first */
	size_t total;		    /* bytes of every chunk */
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
	ret = pprof_validate(p, ix, err, errlen);
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
		pprof_pindex_free(&ix);
	return ret;
}

void pprof_profile_free(pprof_profile *p)
{
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
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
	ret = pprof_validate(p, &r->ix, NULL, 0);
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
	pprof_pindex_free(&r->ix);
	free(r);
}

int64_t pprof_reader_location_index(const struct pprof_reader *r, uint64_t id)
{
	return (int64_t)pprof_idmap_get(&r->ix.locs, id) - 1;
}

int64_t pprof_reader_function_index(const struct pprof_reader *r, uint64_t id)
{
	return (int64_t)pprof_idmap_get(&r->ix.funcs, id) - 1;
}

const Perftools__Profiles__Function *pprof_reader_function(const struct pprof_reader *r,
							   uint64_t id)
{
	size_t i = pprof_idmap_get(&r->ix.funcs, id);

	return i ? r->p->function[i - 1] : NULL;
}

const Perftools__Profiles__Mapping *pprof_reader_mapping(const struct pprof_reader *r, uint64_t id)
{
	size_t i = pprof_idmap_get(&r->ix.maps, id);

	return i ? r->p->mapping[i - 1] : NULL;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

void pprof_unnamed_frame(const pprof_profile *p, const Perftools__Profiles__Mapping *m,
			 uint64_t address, char *buf, size_t len)
{
	const char *file = m ? pstr(p, m->filename) : "";

	if (*file && address >= m->memory_start)
		snprintf(buf, len, "%s+0x%" PRIx64, base_name(file),
			 address - m->memory_start + m->file_offset);
	else
		snprintf(buf, len, "0x%" PRIx64, address);
}

int pprof_sample_type_index(const pprof_profile *p, const char *type)
{
	if (!type) {
		int i = p->default_sample_type ?
				pprof_sample_type_index(p, pstr(p, p->default_sample_type)) :
				-1;

		if (i < 0)
			i = pprof_sample_type_index(p, "samples");
		return i >= 0 ? i : (int)p->n_sample_type - 1;
	}
	for (size_t i = 0; i < p->n_sample_type; i++) {
		if (!strcmp(pstr(p, p->sample_type[i]->type), type))
			return (int)i;
	}
	return -1;
}

const char *pprof_sample_type_name(const pprof_profile *p, int i)
{
	return i >= 0 && (size_t)i < p->n_sample_type ? pstr(p, p->sample_type[i]->type) : "";
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
	if (p->default_sample_type)
		meta.default_sample_type = pstr(p, p->default_sample_type);
	if (p->period_type) {
		meta.period_type.type = pstr(p, p->period_type->type);
		meta.period_type.unit = pstr(p, p->period_type->unit);
	}
	return pprof_builder_new(&meta);
}
