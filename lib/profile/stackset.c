// SPDX-License-Identifier: MIT
/*
 * Folded stacks by frame name. Names are interned once; a stack is a run of
 * name ids in one arena, found again through a hash of its ids. A profile is
 * read location by location: each location's frames are named once per
 * profile, the first time a wanted sample uses it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "stackset.h"
#include "util.h"

/* A stack: frames[off .. off + n) of the arena, its hash and values. */
struct entry {
	size_t off;
	uint32_t n;
	uint32_t hash;
	int64_t value[STACKSET_SLOTS];
};

struct stackset {
	char **names;
	size_t n_names, cap_names;
	struct hashtab name_tab;
	uint32_t *frames; /* the arena of every stack's name ids */
	size_t n_frames, cap_frames;
	struct entry *stacks;
	size_t n_stacks, cap_stacks;
	struct hashtab stack_tab;
	int64_t total[STACKSET_SLOTS];
	uint64_t truncated;
	uint32_t *scratch; /* the stack being added */
	size_t cap_scratch;
};

/* A key while looking a stack up: its ids. */
struct stack_key {
	const uint32_t *ids;
	uint32_t n;
};

/* The frames of each location of one profile, named on first use. */
struct loc_names {
	uint32_t *off; /* start in ids, per location; UINT32_MAX: not yet named */
	uint32_t *n;
	uint32_t *ids; /* root-first name ids of every named location */
	size_t n_ids, cap_ids;
	uint32_t *fn; /* name id per function index; UINT32_MAX: not yet named */
};

struct stackset *stackset_new(void)
{
	return calloc(1, sizeof(struct stackset));
}

void stackset_free(struct stackset *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_names; i++)
		free(s->names[i]);
	free(s->names);
	hashtab_free(&s->name_tab);
	free(s->frames);
	free(s->stacks);
	hashtab_free(&s->stack_tab);
	free(s->scratch);
	free(s);
}

static bool name_match(const void *ctx, size_t idx, const void *key)
{
	const struct stackset *s = ctx;

	return !strcmp(s->names[idx], key);
}

int64_t stackset_find_name(const struct stackset *s, const char *name)
{
	return (int64_t)hashtab_find(&s->name_tab, hash_fold(hash_str(name)), name_match, s, name) -
	       1;
}

/* The id of name, interned when new; -ENOMEM. */
static int64_t intern(struct stackset *s, const char *name)
{
	int64_t id = stackset_find_name(s, name);
	char *copy;
	int ret;

	if (id >= 0)
		return id;
	ret = array_grow((void **)&s->names, &s->cap_names, s->n_names + 1, sizeof(char *), 256);
	if (ret)
		return ret;
	copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	ret = hashtab_add(&s->name_tab, hash_fold(hash_str(name)), s->n_names);
	if (ret) {
		free(copy);
		return ret;
	}
	s->names[s->n_names] = copy;
	return (int64_t)s->n_names++;
}

static bool stack_match(const void *ctx, size_t idx, const void *key)
{
	const struct stackset *s = ctx;
	const struct stack_key *k = key;
	const struct entry *e = &s->stacks[idx];

	return e->n == k->n && !memcmp(&s->frames[e->off], k->ids, k->n * sizeof(uint32_t));
}

static uint32_t hash_ids(const uint32_t *ids, uint32_t n)
{
	uint64_t h = n;

	for (uint32_t i = 0; i < n; i++)
		h = hash_mix(h, ids[i]);
	return hash_fold(h);
}

/* Adds value to the stack of ids in slot, creating it when new. */
static int add_ids(struct stackset *s, const uint32_t *ids, uint32_t n, int64_t value, int slot)
{
	struct stack_key k = {.ids = ids, .n = n};
	uint32_t h = hash_ids(ids, n);
	size_t found = hashtab_find(&s->stack_tab, h, stack_match, s, &k);
	struct entry *e;
	int ret;

	if (!found) {
		ret = array_grow((void **)&s->stacks, &s->cap_stacks, s->n_stacks + 1,
				 sizeof(*s->stacks), 256);
		if (!ret)
			ret = array_grow((void **)&s->frames, &s->cap_frames, s->n_frames + n,
					 sizeof(*s->frames), 4096);
		if (!ret)
			ret = hashtab_add(&s->stack_tab, h, s->n_stacks);
		if (ret)
			return ret;
		memcpy(&s->frames[s->n_frames], ids, n * sizeof(uint32_t));
		s->stacks[s->n_stacks] = (struct entry){.off = s->n_frames, .n = n, .hash = h};
		s->n_frames += n;
		found = ++s->n_stacks;
	}
	e = &s->stacks[found - 1];
	e->value[slot] += value;
	s->total[slot] += value;
	return 0;
}

int stackset_add(struct stackset *s, const char *const *names, size_t n, int64_t value, int slot)
{
	int64_t id;
	int ret;

	if (slot < 0 || slot >= STACKSET_SLOTS)
		return -EINVAL;
	if (n > STACKSET_MAX_DEPTH) {
		n = STACKSET_MAX_DEPTH;
		s->truncated++;
	}
	ret = array_grow((void **)&s->scratch, &s->cap_scratch, n + 1, sizeof(uint32_t), 128);
	if (ret)
		return ret;
	for (size_t i = 0; i < n; i++) {
		id = intern(s, names[i]);
		if (id < 0)
			return (int)id;
		s->scratch[i] = (uint32_t)id;
	}
	return add_ids(s, s->scratch, (uint32_t)n, value, slot);
}

/* The name of one line's function: its name, else its system name, else "[unknown]". */
static const char *line_name(const pprof_profile *p, const struct pprof_reader *r,
			     const Perftools__Profiles__Line *line)
{
	const Perftools__Profiles__Function *fn = pprof_reader_function(r, line->function_id);
	const char *name = fn ? p->string_table[fn->name] : "";

	if (!*name && fn)
		name = p->string_table[fn->system_name];
	return *name ? name : "[unknown]";
}

/* Names location i's frames (root first: its lines are innermost first). */
static int name_location(struct stackset *s, struct loc_names *ln, const pprof_profile *p,
			 const struct pprof_reader *r, size_t i)
{
	const Perftools__Profiles__Location *l = p->location[i];
	size_t n = l->n_line ? l->n_line : 1;
	char buf[PPROF_UNNAMED_MAX];
	int64_t id;
	int ret;

	ret = array_grow((void **)&ln->ids, &ln->cap_ids, ln->n_ids + n, sizeof(uint32_t), 1024);
	if (ret)
		return ret;
	if (!l->n_line) {
		pprof_unnamed_frame(p,
				    l->mapping_id ? pprof_reader_mapping(r, l->mapping_id) : NULL,
				    l->address, buf, sizeof(buf));
		id = intern(s, buf);
		if (id < 0)
			return (int)id;
		ln->ids[ln->n_ids] = (uint32_t)id;
	}
	for (size_t j = 0; j < l->n_line; j++) {
		const Perftools__Profiles__Line *line = l->line[l->n_line - 1 - j];
		int64_t fi = pprof_reader_function_index(r, line->function_id);

		/* a function is named once per profile, however many locations it has */
		if (fi >= 0 && ln->fn[fi] != UINT32_MAX) {
			ln->ids[ln->n_ids + j] = ln->fn[fi];
			continue;
		}
		id = intern(s, line_name(p, r, line));
		if (id < 0)
			return (int)id;
		ln->ids[ln->n_ids + j] = (uint32_t)id;
		if (fi >= 0)
			ln->fn[fi] = (uint32_t)id;
	}
	ln->off[i] = (uint32_t)ln->n_ids;
	ln->n[i] = (uint32_t)n;
	ln->n_ids += n;
	return 0;
}

/* Adds one sample: its locations are leaf first, the stack root first. */
static int add_sample(struct stackset *s, struct loc_names *ln, const pprof_profile *p,
		      const struct pprof_reader *r, const Perftools__Profiles__Sample *smp,
		      int64_t value, int slot)
{
	uint32_t depth = 0;
	int ret;

	for (size_t k = smp->n_location_id; k-- > 0;) {
		int64_t i = pprof_reader_location_index(r, smp->location_id[k]);

		if (i < 0)
			return -EBADMSG;
		if (ln->off[i] == UINT32_MAX) {
			ret = name_location(s, ln, p, r, (size_t)i);
			if (ret)
				return ret;
		}
		ret = array_grow((void **)&s->scratch, &s->cap_scratch, depth + ln->n[i] + 1,
				 sizeof(uint32_t), 128);
		if (ret)
			return ret;
		memcpy(&s->scratch[depth], &ln->ids[ln->off[i]], ln->n[i] * sizeof(uint32_t));
		depth += ln->n[i];
		if (depth > STACKSET_MAX_DEPTH) {
			depth = STACKSET_MAX_DEPTH;
			s->truncated++;
			break;
		}
	}
	return add_ids(s, s->scratch, depth, value, slot);
}

int stackset_add_read(struct stackset *s, const pprof_profile *p, const struct pprof_reader *r,
		      const struct pprof_filter *f, const char *value_type, int slot)
{
	struct loc_names ln = {0};
	int vi, ret;

	if (slot < 0 || slot >= STACKSET_SLOTS)
		return -EINVAL;
	vi = pprof_sample_type_index(p, value_type);
	if (vi < 0)
		return -ENOENT;
	ln.off = malloc((p->n_location + 1) * sizeof(uint32_t));
	ln.n = malloc((p->n_location + 1) * sizeof(uint32_t));
	ln.fn = malloc((p->n_function + 1) * sizeof(uint32_t));
	ret = ln.off && ln.n && ln.fn ? 0 : -ENOMEM;
	if (!ret) {
		memset(ln.off, 0xff, (p->n_location + 1) * sizeof(uint32_t));
		memset(ln.fn, 0xff, (p->n_function + 1) * sizeof(uint32_t));
	}
	for (size_t i = 0; !ret && i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *smp = p->sample[i];

		if (!smp->value[vi] || !pprof_sample_wanted(p, smp, f))
			continue;
		ret = add_sample(s, &ln, p, r, smp, smp->value[vi], slot);
	}
	free(ln.off);
	free(ln.n);
	free(ln.fn);
	free(ln.ids);
	return ret;
}

int stackset_add_profile(struct stackset *s, const pprof_profile *p, const struct pprof_filter *f,
			 const char *value_type, int slot)
{
	struct pprof_reader *r;
	int ret;

	if (slot < 0 || slot >= STACKSET_SLOTS)
		return -EINVAL;
	if (pprof_sample_type_index(p, value_type) < 0)
		return -ENOENT;
	ret = pprof_reader_new(p, &r);
	if (ret)
		return ret;
	ret = stackset_add_read(s, p, r, f, value_type, slot);
	pprof_reader_free(r);
	return ret;
}

size_t stackset_len(const struct stackset *s)
{
	return s->n_stacks;
}

void stackset_get(const struct stackset *s, size_t i, struct stackset_stack *out)
{
	const struct entry *e = &s->stacks[i];

	out->frames = &s->frames[e->off];
	out->n = e->n;
	memcpy(out->value, e->value, sizeof(out->value));
}

const char *stackset_name(const struct stackset *s, uint32_t id)
{
	return id < s->n_names ? s->names[id] : "?";
}

size_t stackset_names(const struct stackset *s)
{
	return s->n_names;
}

int64_t stackset_total(const struct stackset *s, int slot)
{
	return slot >= 0 && slot < STACKSET_SLOTS ? s->total[slot] : 0;
}

uint64_t stackset_truncated(const struct stackset *s)
{
	return s->truncated;
}

int stackset_merge(struct stackset *dst, const struct stackset *src)
{
	const char *names[STACKSET_MAX_DEPTH];
	struct stackset_stack st;
	int ret;

	for (size_t i = 0; i < src->n_stacks; i++) {
		stackset_get(src, i, &st);
		for (uint32_t j = 0; j < st.n; j++)
			names[j] = src->names[st.frames[j]];
		for (int slot = 0; slot < STACKSET_SLOTS; slot++) {
			if (!st.value[slot])
				continue;
			ret = stackset_add(dst, names, st.n, st.value[slot], slot);
			if (ret)
				return ret;
		}
	}
	dst->truncated += src->truncated;
	return 0;
}
