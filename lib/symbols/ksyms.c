// SPDX-License-Identifier: MIT
/*
 * Kernel text symbols from /proc/kallsyms: 16 bytes per symbol plus one string
 * arena, sorted by address, one symbol kept per address.
 */
#include <errno.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksyms.h"
#include "util.h"

/* KSYM_NAME_LEN is 512 in current kernels; longer lines are not kallsyms. */
#define KSYMS_NAME_MAX 512
/* Module names are at most MODULE_NAME_LEN (56); keep room for "__builtin__*". */
#define KSYMS_MODULE_MAX 128
/* The module index is 16 bits; index 0 is the core kernel. */
#define KSYMS_MAX_MODULES 65535
/* Far more than the ~200k text symbols of a distribution kernel. */
#define KSYMS_MAX_SYMBOLS (8u << 20)
/* The last symbol of a module has no known end: allow this much past it. */
#define KSYMS_MAX_TAIL (256u << 10)
/* Names of a distribution kernel take ~3 MiB; offsets into them are 32-bit. */
#define KSYMS_MAX_ARENA (512u << 20)

struct ksym {
	uint64_t addr;
	uint32_t name;	 /* offset into arena */
	uint16_t module; /* index into modules, 0 for the core kernel */
	char type;	 /* t, T, w or W */
	uint8_t marker;	 /* a section boundary such as _etext, not a function */
};

struct ksyms {
	struct ksym *v;
	size_t n, cap;
	char *arena;
	size_t arena_len, arena_cap;
	uint32_t *modules; /* arena offsets; modules[0] is unused */
	size_t n_modules, modules_cap;
};

/* Copies s[0..len) and a NUL into the arena; its offset in *off. */
static int arena_add(struct ksyms *k, const char *s, size_t len, uint32_t *off)
{
	int err;

	if (k->arena_len + len + 1 > KSYMS_MAX_ARENA)
		return -E2BIG;
	err = array_grow((void **)&k->arena, &k->arena_cap, k->arena_len + len + 1, 1, 64 << 10);
	if (err)
		return err;
	memcpy(k->arena + k->arena_len, s, len);
	k->arena[k->arena_len + len] = '\0';
	*off = (uint32_t)k->arena_len;
	k->arena_len += len + 1;
	return 0;
}

/*
 * The module's index. kallsyms lists a module's symbols together, so only the
 * last few modules are compared (bounded work per line); a miss merely
 * stores the name twice.
 */
static int module_index(struct ksyms *k, const char *name, size_t len, uint16_t *idx)
{
	uint32_t off;
	size_t i;
	int err;

	for (i = k->n_modules; i-- > 1;) {
		const char *m = k->arena + k->modules[i];

		if (strlen(m) == len && !memcmp(m, name, len)) {
			*idx = (uint16_t)i;
			return 0;
		}
		if (k->n_modules - i > 8)
			break;
	}
	if (k->n_modules >= KSYMS_MAX_MODULES)
		return -E2BIG;
	/* Slot 0 stands for the core kernel and is reserved on first use. */
	err = array_grow((void **)&k->modules, &k->modules_cap,
			 (k->n_modules ? k->n_modules : 1) + 1, sizeof(*k->modules), 16);
	if (!err)
		err = arena_add(k, name, len, &off);
	if (err)
		return err;
	if (k->n_modules == 0)
		k->modules[k->n_modules++] = 0;
	k->modules[k->n_modules] = off;
	*idx = (uint16_t)k->n_modules++;
	return 0;
}

/* Section boundaries that kallsyms lists as text symbols but are no function. */
static bool is_marker(const char *name, size_t len)
{
	static const char *const exact[] = {"_stext", "_etext", "_text", "_sinittext",
					    "_einittext"};
	static const char start[] = "_text_start", end[] = "_text_end";
	size_t i;

	for (i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (strlen(exact[i]) == len && !memcmp(exact[i], name, len))
			return true;
	if (len >= sizeof(start) - 1 &&
	    !memcmp(name + len - (sizeof(start) - 1), start, sizeof(start) - 1))
		return true;
	return len >= sizeof(end) - 1 &&
	       !memcmp(name + len - (sizeof(end) - 1), end, sizeof(end) - 1);
}

static bool parse_addr(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	for (; s < end && digits <= 16; s++, digits++) {
		char c = *s;

		if (c >= '0' && c <= '9')
			v = v << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v << 4 | (uint64_t)(c - 'a' + 10);
		else
			break;
	}
	if (digits == 0 || digits > 16)
		return false;
	*p = s;
	*out = v;
	return true;
}

/* Names are non-empty, bounded, and hold no space or NUL. */
static bool valid_name(const char *s, const char *end, size_t max)
{
	size_t len = (size_t)(end - s);

	return len > 0 && len <= max && !memchr(s, ' ', len) && !memchr(s, '\0', len);
}

/*
 * "ffffffff81000000 T _stext" or "ffffffffc0203000 t name\t[module]".
 * Returns 0 (also for lines that are skipped) or a negative errno.
 */
static int add_line(struct ksyms *k, const char *s, const char *end)
{
	const char *name, *name_end, *mod = NULL, *mod_end = NULL;
	struct ksym *e;
	uint64_t addr;
	uint16_t midx = 0;
	char type;
	int err;

	if (!parse_addr(&s, end, &addr) || end - s < 3 || s[0] != ' ' || s[2] != ' ')
		return 0;
	type = s[1];
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return 0;
	name = s + 3;
	name_end = memchr(name, '\t', (size_t)(end - name));
	if (name_end) {
		mod = name_end + 1;
		if (end - mod < 3 || mod[0] != '[' || end[-1] != ']')
			return 0;
		mod++;
		mod_end = end - 1;
	} else {
		name_end = end;
	}
	if (!valid_name(name, name_end, KSYMS_NAME_MAX) ||
	    (mod && !valid_name(mod, mod_end, KSYMS_MODULE_MAX)))
		return 0;
	/* kptr_restrict shows every address as 0: such lines name nothing. */
	if (addr == 0)
		return 0;
	if (k->n >= KSYMS_MAX_SYMBOLS)
		return -E2BIG;
	if (mod) {
		err = module_index(k, mod, (size_t)(mod_end - mod), &midx);
		if (err)
			return err;
	}
	err = array_grow((void **)&k->v, &k->cap, k->n + 1, sizeof(*k->v), 4096);
	if (err)
		return err;
	e = &k->v[k->n];
	e->addr = addr;
	e->module = midx;
	e->type = type;
	e->marker = !mod && is_marker(name, (size_t)(name_end - name));
	err = arena_add(k, name, (size_t)(name_end - name), &e->name);
	if (err)
		return err;
	k->n++;
	return 0;
}

static int sym_rank_bind(char type)
{
	return type == 'T' ? 0 : type == 'W' ? 1 : 2;
}

static size_t leading_underscores(const char *s)
{
	return strspn(s, "_");
}

/*
 * By address; among aliases the best name first: a function over a section
 * marker, fewer leading underscores, global over weak over local, shorter,
 * then alphabetical, so the choice never depends on input order (the same
 * rule as elfsym.c).
 */
static int cmp_ksym(const void *a, const void *b, void *arena)
{
	const struct ksym *x = a, *y = b;
	const char *nx = (const char *)arena + x->name, *ny = (const char *)arena + y->name;
	size_t ux, uy, lx, ly;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->marker != y->marker)
		return x->marker - y->marker;
	ux = leading_underscores(nx);
	uy = leading_underscores(ny);
	if (ux != uy)
		return ux < uy ? -1 : 1;
	if (sym_rank_bind(x->type) != sym_rank_bind(y->type))
		return sym_rank_bind(x->type) - sym_rank_bind(y->type);
	lx = strlen(nx);
	ly = strlen(ny);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(nx, ny);
}

/* Sorts, keeps the best symbol per address and gives back unused memory. */
static int finish(struct ksyms *k)
{
	size_t i, w = 0;
	void *p;

	if (k->n == 0)
		return -ENOENT;
	qsort_r(k->v, k->n, sizeof(*k->v), cmp_ksym, k->arena);
	for (i = 0; i < k->n; i++)
		if (w == 0 || k->v[w - 1].addr != k->v[i].addr)
			k->v[w++] = k->v[i];
	k->n = w;
	p = realloc(k->v, k->n * sizeof(*k->v));
	if (p)
		k->v = p;
	p = realloc(k->arena, k->arena_len);
	if (p)
		k->arena = p;
	return 0;
}

static void ksyms_destroy(struct ksyms *k)
{
	if (!k)
		return;
	free(k->v);
	free(k->arena);
	free(k->modules);
	free(k);
}

int ksyms_parse(const char *text, size_t len, struct ksyms **out)
{
	const char *p = text, *end = text + len;
	struct ksyms *k = calloc(1, sizeof(*k));
	int err = 0;

	if (!k)
		return -ENOMEM;
	while (p < end && !err) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;

		err = add_line(k, p, eol);
		p = eol + 1;
	}
	if (!err)
		err = finish(k);
	if (err) {
		ksyms_destroy(k);
		return err;
	}
	*out = k;
	return 0;
}

int ksyms_load(struct ksyms **out)
{
	struct ksyms *k;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	FILE *f;
	int err = 0;

	/* Stream it: the text is several MiB, the table is much smaller. */
	f = fopen("/proc/kallsyms", "re");
	if (!f)
		return -errno;
	k = calloc(1, sizeof(*k));
	if (!k) {
		fclose(f);
		return -ENOMEM;
	}
	while (!err && (len = getline(&line, &cap, f)) > 0) {
		if (line[len - 1] == '\n')
			len--;
		err = add_line(k, line, line + len);
	}
	if (!err && ferror(f))
		err = -EIO;
	free(line);
	fclose(f);
	if (!err)
		err = finish(k);
	if (err) {
		ksyms_destroy(k);
		return err;
	}
	*out = k;
	return 0;
}

/* The end of symbol i: the next symbol, or a bounded tail for a module's last. */
static uint64_t sym_end(const struct ksyms *k, size_t i)
{
	const struct ksym *e = &k->v[i];
	uint64_t tail = e->addr + KSYMS_MAX_TAIL < e->addr ? UINT64_MAX : e->addr + KSYMS_MAX_TAIL;

	if (i + 1 < k->n && k->v[i + 1].module == e->module)
		return k->v[i + 1].addr;
	if (i + 1 < k->n && k->v[i + 1].addr < tail)
		return k->v[i + 1].addr;
	return tail;
}

const char *ksyms_lookup(const struct ksyms *k, uint64_t addr, const char **module)
{
	size_t lo;
	const struct ksym *e;

	if (module)
		*module = NULL;
	if (!k)
		return NULL;
	lo = sorted_upper_bound(k->v, k->n, sizeof(*k->v), offsetof(struct ksym, addr), addr);
	if (lo == 0)
		return NULL;
	e = &k->v[lo - 1];
	/* Past _etext, _einittext and the like lies no function we know of. */
	if (e->marker || addr >= sym_end(k, lo - 1))
		return NULL;
	if (module && e->module)
		*module = k->arena + k->modules[e->module];
	return k->arena + e->name;
}

size_t ksyms_count(const struct ksyms *k)
{
	return k ? k->n : 0;
}

void ksyms_free(struct ksyms *k)
{
	ksyms_destroy(k);
}
