// SPDX-License-Identifier: MIT
/*
 * Finding a runtime in a binary, and naming its frames from a process's
 * memory, cached per process (runtime.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "hashtab.h"
#include "python.h"
#include "v8.h"
#include "runtime.h"

/* A dynamic symbol table larger than this is no runtime's: not read. */
#define DYNSYM_MAX_BYTES (64u << 20)

/* The CPython symbols found in one binary's dynamic symbol table (ELF vaddrs). */
struct py_syms {
	uint64_t runtime, eval, eval_size, code_type, version;
	bool has_version;
};

static void py_sym(const char *name, const GElf_Sym *sym, struct py_syms *p)
{
	if (!strcmp(name, "_PyRuntime")) {
		p->runtime = sym->st_value;
	} else if (!strcmp(name, "_PyEval_EvalFrameDefault")) {
		p->eval = sym->st_value;
		p->eval_size = sym->st_size;
	} else if (!strcmp(name, "PyCode_Type")) {
		p->code_type = sym->st_value;
	} else if (!strcmp(name, "Py_Version")) {
		p->version = sym->st_value;
		/* an int in 3.11's headers, an unsigned long in its binaries: the low word */
		p->has_version = sym->st_size == 4 || sym->st_size == 8;
	}
}

/* Reads the 4-byte value at ELF vaddr from the PROGBITS section holding it. */
static bool read_u32_at(Elf *elf, int fd, uint64_t vaddr, uint32_t *v)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || vaddr < sh.sh_addr ||
		    vaddr - sh.sh_addr > sh.sh_size || sh.sh_size - (vaddr - sh.sh_addr) < 4)
			continue;
		return pread(fd, v, 4, (off_t)(sh.sh_offset + (vaddr - sh.sh_addr))) == 4;
	}
	return false;
}

/* The CPython symbols of elf's .dynsym into *p: false when it has none. */
static bool py_scan(Elf *elf, struct py_syms *p)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	memset(p, 0, sizeof(*p));
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		if (sh.sh_size > DYNSYM_MAX_BYTES || sh.sh_entsize != sizeof(Elf64_Sym))
			return false;
		d = elf_getdata(scn, NULL);
		if (!d)
			return false;
		n = d->d_size / sizeof(Elf64_Sym);
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) || !sym.st_value || sym.st_name == 0)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (name)
				py_sym(name, &sym, p);
		}
		break;
	}
	return p->runtime && p->eval && p->eval_size && p->code_type;
}

/* The layout of rt's CPython (3.minor), or NULL: another major, or a minor without one. */
static const struct py_layout *py_layout_of(const struct ember_rt_proc *rt)
{
	return rt->version >> 16 == 3 ? py_layout((rt->version >> 8) & 0xff) : NULL;
}

static bool py_detect(Elf *elf, int fd, struct ember_rt_proc *out)
{
	const struct py_layout *l;
	struct py_syms p;
	uint32_t v = 0;

	if (!py_scan(elf, &p))
		return false;
	memset(out, 0, sizeof(*out));
	out->kind = EMBER_RT_PYTHON;
	/* Py_Version (3.11 on): PY_VERSION_HEX, 0xMMmmuu.. */
	if (p.has_version && read_u32_at(elf, fd, p.version, &v))
		out->version = (v >> 24) << 16 | ((v >> 16) & 0xff) << 8 | ((v >> 8) & 0xff);
	out->text[0] = p.eval;
	out->text[1] = p.eval + p.eval_size;
	out->addr[0] = p.runtime;
	out->addr[1] = p.code_type;
	l = py_layout_of(out);
	if (!l) {
		out->flags |= EMBER_RT_F_UNSUPPORTED;
		return true;
	}
	for (int i = 0; i < EMBER_RT_OFF_MAX; i++)
		out->off[i] = i < EMBER_PY_OFF_NR ? l->walk[i] : EMBER_RT_OFF_NONE;
	return true;
}

bool rt_detect(Elf *elf, int fd, struct ember_rt_proc *out)
{
	memset(out, 0, sizeof(*out));
	return elf && (py_detect(elf, fd, out) || v8_detect(elf, out));
}

void rt_relocate(struct ember_rt_proc *rt, uint64_t bias)
{
	ember_rt_relocate(rt, bias);
}

bool rt_code_vaddr(Elf *elf, uint64_t *out)
{
	GElf_Ehdr eh;
	GElf_Phdr ph;
	size_t n = 0;
	bool found = false;

	if (!gelf_getehdr(elf, &eh) || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) ||
	    elf_getphdrnum(elf, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (!found || ph.p_vaddr < *out)
			*out = ph.p_vaddr;
		found = true;
	}
	return found;
}

bool rt_read_pid(void *arg, void *dst, size_t len, uint64_t addr)
{
	pid_t pid = (pid_t)(intptr_t)arg;
	struct iovec local = {dst, len}, remote = {(void *)(uintptr_t)addr, len};

	return len && process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

size_t rt_readv_pid(void *arg, const struct rt_piece *p, size_t n)
{
	pid_t pid = (pid_t)(intptr_t)arg;
	struct iovec local[RT_READV_MAX], remote[RT_READV_MAX];
	ssize_t got;
	size_t whole = 0;

	n = n < RT_READV_MAX ? n : RT_READV_MAX;
	for (size_t i = 0; i < n; i++) {
		local[i] = (struct iovec){p[i].dst, p[i].len};
		remote[i] = (struct iovec){(void *)(uintptr_t)p[i].addr, p[i].len};
	}
	got = n ? process_vm_readv(pid, local, n, remote, n, 0) : 0;
	/* the kernel stops at the first piece it cannot read: those before it are whole */
	for (size_t i = 0; i < n && got >= (ssize_t)p[i].len; i++) {
		got -= (ssize_t)p[i].len;
		whole++;
	}
	return whole;
}

/* --- names of one process's frames ------------------------------------------------------------- */

/* Objects named at once in one process: beyond, the cache starts over. */
#define RT_CACHE_MAX 16384
/*
 * Bytes of names and location tables kept for one process: beyond, the cache starts
 * over. The count alone let a process whose code objects share one table of
 * PY_LINETABLE_MAX bytes make it keep 16 GiB (check_python).
 */
#define RT_CACHE_TABLE_BYTES (16u << 20)

/* A slot: small, so that the table of slots costs 24 bytes an object, not a name's room. */
struct rt_entry {
	uint64_t obj; /* 0: free; a Python code object, or a V8 frame's whole word (tagged) */
	union {
		struct py_code *code;	/* Python: its names, or NULL: reading it failed */
		struct rt_named *named; /* V8: its names when last read */
	};
	int64_t read_ns; /* Python: when the object there was last read or checked (mono_ns()) */
};

/* One function of struct rt_named: its lines, its strings in the block. */
struct rt_named_fn {
	uint32_t line, start_line;
	char *function, *file;
};

/*
 * A V8 frame's names as last read, in one block: its function's, then those
 * inlined into it (struct rt_name's inlined[], innermost first), then their
 * strings.
 */
struct rt_named {
	size_t bytes; /* of the block */
	uint32_t n;   /* of fn[]: 1 + the inlined */
	struct rt_named_fn fn[];
};

struct rt_cache {
	struct rt_entry *v;
	size_t n, cap;
	size_t bytes;
	struct rt_shared *sh; /* rt_cache_share(): names of img's own objects */
	struct rt_image img;
};

/* --- names shared between the processes of one binary and user ------------------------------- */

/* Names shared at once: beyond either, the table starts over. */
#define RT_SHARED_MAX 8192
#define RT_SHARED_BYTES (8u << 20)

struct shared_key {
	struct file_key file;
	uint32_t uid;
	uint64_t vaddr;
};

struct shared_entry {
	struct shared_key key;
	struct py_code *code;
};

struct rt_shared {
	struct shared_entry *v; /* in the order added */
	size_t n, cap, bytes;
	struct hashtab index; /* of v, by key */
	uint64_t hits;
};

struct rt_shared *rt_shared_new(void)
{
	return calloc(1, sizeof(struct rt_shared));
}

static void shared_clear(struct rt_shared *sh)
{
	for (size_t i = 0; i < sh->n; i++) {
		py_code_release(sh->v[i].code);
		free(sh->v[i].code);
	}
	free(sh->v);
	hashtab_free(&sh->index);
	sh->v = NULL;
	sh->n = sh->cap = sh->bytes = 0;
}

void rt_shared_free(struct rt_shared *sh)
{
	if (!sh)
		return;
	shared_clear(sh);
	free(sh);
}

size_t rt_shared_bytes(const struct rt_shared *sh)
{
	if (!sh)
		return 0;
	return sh->bytes + sh->cap * sizeof(struct shared_entry) +
	       (sh->index.slots ? (sh->index.mask + 1) * sizeof(struct hashtab_slot) : 0);
}

uint64_t rt_shared_hits(const struct rt_shared *sh)
{
	return sh ? sh->hits : 0;
}

static uint32_t shared_hash(const struct shared_key *k)
{
	return hash_fold(hash_mix(
		hash_mix(hash_mix(hash_mix(0, k->file.dev), k->file.ino), k->vaddr), k->uid));
}

/* hashtab_match_fn: whether entry idx of the table (ctx) is key's. */
static bool shared_match(const void *ctx, size_t idx, const void *key)
{
	const struct shared_key *a = &((const struct rt_shared *)ctx)->v[idx].key, *b = key;

	return !file_key_cmp(&a->file, &b->file) && a->uid == b->uid && a->vaddr == b->vaddr;
}

/* A copy of src into *dst (its own table): 0 or -ENOMEM. */
static int code_dup(struct py_code *dst, const struct py_code *src)
{
	*dst = *src;
	dst->linetable = malloc(src->linetable_len ? src->linetable_len : 1);
	if (!dst->linetable)
		return -ENOMEM;
	memcpy(dst->linetable, src->linetable, src->linetable_len);
	return 0;
}

static const struct py_code *shared_get(const struct rt_shared *sh, const struct shared_key *k)
{
	size_t i = hashtab_find(&sh->index, shared_hash(k), shared_match, sh, k);

	return i ? sh->v[i - 1].code : NULL;
}

/* Keeps a copy of pc under k (best effort: out of memory, it is not shared). */
static void shared_put(struct rt_shared *sh, const struct shared_key *k, const struct py_code *pc)
{
	struct py_code *copy;

	if (sh->n >= RT_SHARED_MAX || sh->bytes >= RT_SHARED_BYTES)
		shared_clear(sh);
	if (shared_get(sh, k))
		return; /* there already */
	if (sh->n == sh->cap) {
		size_t cap = sh->cap ? 2 * sh->cap : 64;
		struct shared_entry *v = realloc(sh->v, cap * sizeof(*v));

		if (!v)
			return;
		sh->v = v;
		sh->cap = cap;
	}
	copy = malloc(sizeof(*copy));
	if (!copy || code_dup(copy, pc)) {
		free(copy);
		return;
	}
	if (hashtab_add(&sh->index, shared_hash(k), sh->n)) {
		py_code_release(copy);
		free(copy);
		return;
	}
	sh->v[sh->n++] = (struct shared_entry){.key = *k, .code = copy};
	sh->bytes += sizeof(*copy) + copy->linetable_len;
}

void rt_cache_share(struct rt_cache *c, struct rt_shared *sh, const struct rt_image *img)
{
	c->sh = sh;
	c->img = *img;
}

/*
 * The code object at obj into *pc: a copy of the name another process of the
 * user read when obj is c's binary's own, else read (and shared when so).
 */
static int code_read(struct rt_cache *c, const struct rt_mem *mem, const struct py_layout *l,
		     uint64_t code_type, uint64_t obj, struct py_code *pc)
{
	bool own = c->sh && obj >= c->img.lo && obj < c->img.hi;
	struct shared_key k = {0};
	const struct py_code *had;
	int rc;

	if (own) {
		k = (struct shared_key){
			.file = c->img.file, .uid = c->img.uid, .vaddr = obj - c->img.bias};
		had = shared_get(c->sh, &k);
		if (had) {
			rc = code_dup(pc, had);
			c->sh->hits += !rc;
			return rc;
		}
	}
	rc = py_code_read(mem, l, code_type, obj, pc);
	if (!rc && own)
		shared_put(c->sh, &k, pc);
	return rc;
}

struct rt_cache *rt_cache_new(void)
{
	return calloc(1, sizeof(struct rt_cache));
}

static void entries_free(struct rt_cache *c)
{
	for (size_t i = 0; i < c->cap; i++) {
		if (EMBER_RT_IS_WORD(c->v[i].obj)) {
			free(c->v[i].named);
		} else if (c->v[i].code) {
			py_code_release(c->v[i].code);
			free(c->v[i].code);
		}
	}
	free(c->v);
	c->v = NULL;
	c->n = c->cap = c->bytes = 0;
}

void rt_cache_free(struct rt_cache *c)
{
	if (!c)
		return;
	entries_free(c);
	free(c);
}

size_t rt_cache_bytes(const struct rt_cache *c)
{
	return c ? c->bytes + c->cap * sizeof(struct rt_entry) : 0; /* bytes: tables and names */
}

static size_t slot_of(const struct rt_cache *c, uint64_t obj)
{
	size_t i = (size_t)((obj >> 3) * 0x9e3779b97f4a7c15ULL >> 20) & (c->cap - 1);

	while (c->v[i].obj && c->v[i].obj != obj)
		i = (i + 1) & (c->cap - 1);
	return i;
}

/* The entry of obj, new (obj 0 in it, for the caller to fill) or found; NULL on ENOMEM. */
static struct rt_entry *entry_for(struct rt_cache *c, uint64_t obj)
{
	size_t i;

	if (c->n >= RT_CACHE_MAX || c->bytes >= RT_CACHE_TABLE_BYTES)
		entries_free(c);
	if (2 * (c->n + 1) > c->cap) {
		struct rt_cache bigger = {.cap = c->cap ? 2 * c->cap : 256};

		bigger.v = calloc(bigger.cap, sizeof(*bigger.v));
		if (!bigger.v)
			return NULL;
		for (size_t j = 0; j < c->cap; j++)
			if (c->v[j].obj)
				bigger.v[slot_of(&bigger, c->v[j].obj)] = c->v[j];
		free(c->v);
		c->v = bigger.v;
		c->cap = bigger.cap;
	}
	i = slot_of(c, obj);
	return &c->v[i];
}

/* Reads the code object of e into it, for the first time or again (it was another's). */
static void entry_read(struct rt_cache *c, const struct rt_mem *mem, const struct py_layout *l,
		       const struct ember_rt_proc *rt, struct rt_entry *e)
{
	struct py_code *pc = malloc(sizeof(*pc));

	e->read_ns = mono_ns();
	if (e->code) {
		c->bytes -= sizeof(*e->code) + e->code->linetable_len;
		py_code_release(e->code);
		free(e->code);
		e->code = NULL;
	}
	if (!pc)
		return; /* named unreadable; read again at its next check */
	if (code_read(c, mem, l, rt->addr[1], e->obj, pc)) {
		free(pc); /* remembered as unreadable: not read again before its next check */
		return;
	}
	e->code = pc;
	c->bytes += sizeof(*pc) + pc->linetable_len;
}

static int py_name(struct rt_cache *c, const struct rt_mem *mem, const struct ember_rt_proc *rt,
		   uint64_t word, struct rt_name *out)
{
	const struct py_layout *l = py_layout_of(rt);
	uint64_t obj = EMBER_RT_WORD_PTR(word);
	uint32_t idx = EMBER_RT_WORD_AUX(word);
	struct rt_entry *e;
	struct py_code *pc;

	if (!obj || !l) {
		if (!obj && idx)
			snprintf(out->function, sizeof(out->function),
				 "[python %u.%u: not supported]", idx >> 8, idx & 0xff);
		else
			snprintf(out->function, sizeof(out->function),
				 "[python < 3.11: not supported]");
		return -ENOENT;
	}
	e = entry_for(c, obj);
	if (!e)
		return -ENOMEM;
	if (!e->obj) {
		e->obj = obj;
		c->n++;
		entry_read(c, mem, l, rt, e);
	}
	pc = e->code;
	if (!pc) {
		snprintf(out->function, sizeof(out->function), "[python code 0x%" PRIx64 "]", obj);
		return -ENOENT;
	}
	snprintf(out->function, sizeof(out->function), "%s", pc->qualname);
	snprintf(out->file, sizeof(out->file), "%s", pc->filename);
	out->start_line = pc->firstlineno > 0 ? (uint32_t)pc->firstlineno : 0;
	out->line = idx == EMBER_RT_AUX_MAX ?
			    0 :
			    py_line_at(pc->linetable, pc->linetable_len, pc->firstlineno, idx);
	return 0;
}

/* Function i of n: its own (0), else inlined[i - 1]. */
static struct rt_named_fn name_fn(const struct rt_name *n, uint32_t i)
{
	const struct rt_fn *f = i ? &n->inlined[i - 1] : NULL;

	return f ? (struct rt_named_fn){f->line, f->start_line, (char *)f->function,
					(char *)f->file} :
		   (struct rt_named_fn){n->line, n->start_line, (char *)n->function,
					(char *)n->file};
}

/* A copy of n's names, or NULL on ENOMEM. */
static struct rt_named *named_new(const struct rt_name *n)
{
	uint32_t count = 1 + (n->n_inlined < RT_INLINED_MAX ? n->n_inlined : RT_INLINED_MAX);
	size_t bytes = sizeof(struct rt_named) + count * sizeof(struct rt_named_fn);
	struct rt_named *nm;
	char *p;

	for (uint32_t i = 0; i < count; i++) {
		struct rt_named_fn f = name_fn(n, i);

		bytes += strlen(f.function) + strlen(f.file) + 2;
	}
	nm = malloc(bytes);
	if (!nm)
		return NULL;
	nm->bytes = bytes;
	nm->n = count;
	p = (char *)&nm->fn[count];
	for (uint32_t i = 0; i < count; i++) {
		struct rt_named_fn f = name_fn(n, i);
		size_t fl = strlen(f.function) + 1, sl = strlen(f.file) + 1;

		nm->fn[i] = (struct rt_named_fn){f.line, f.start_line, p, p + fl};
		memcpy(p, f.function, fl);
		memcpy(p + fl, f.file, sl);
		p += fl + sl;
	}
	return nm;
}

static bool named_same(const struct rt_named *nm, const struct rt_name *n)
{
	if (nm->n != 1 + n->n_inlined)
		return false;
	for (uint32_t i = 0; i < nm->n; i++) {
		struct rt_named_fn f = name_fn(n, i);

		if (nm->fn[i].line != f.line || nm->fn[i].start_line != f.start_line ||
		    strcmp(nm->fn[i].function, f.function) || strcmp(nm->fn[i].file, f.file))
			return false;
	}
	return true;
}

/* n from what nm holds. */
static void named_copy(const struct rt_named *nm, struct rt_name *n)
{
	memset(n, 0, sizeof(*n));
	snprintf(n->function, sizeof(n->function), "%s", nm->fn[0].function);
	snprintf(n->file, sizeof(n->file), "%s", nm->fn[0].file);
	n->line = nm->fn[0].line;
	n->start_line = nm->fn[0].start_line;
	for (uint32_t i = 1; i < nm->n && i <= RT_INLINED_MAX; i++) {
		struct rt_fn *f = &n->inlined[n->n_inlined++];

		snprintf(f->function, sizeof(f->function), "%s", nm->fn[i].function);
		snprintf(f->file, sizeof(f->file), "%s", nm->fn[i].file);
		f->line = nm->fn[i].line;
		f->start_line = nm->fn[i].start_line;
	}
}

/*
 * A V8 frame: read now (objects move and die: the word names what is there
 * while the process runs), remembered by its word; when it cannot be read
 * now (the process exited after the sample), what it named when last read.
 */
static int v8_cached(struct rt_cache *c, const struct rt_mem *mem, const struct ember_rt_proc *rt,
		     uint64_t word, struct rt_name *out)
{
	int rc = v8_name(mem, rt, word, out);
	struct rt_entry *e = entry_for(c, word);
	struct rt_named *nm;

	if (!e)
		return rc;
	if (rc) {
		if (!e->obj)
			return rc;
		named_copy(e->named, out);
		return 0;
	}
	if (e->obj && named_same(e->named, out))
		return 0;
	nm = named_new(out);
	if (!nm)
		return 0;
	if (e->obj) {
		c->bytes -= e->named->bytes;
		free(e->named);
	} else {
		e->obj = word;
		c->n++;
	}
	e->named = nm;
	c->bytes += nm->bytes;
	return 0;
}

enum rt_check rt_cache_check(struct rt_cache *c, const struct rt_mem *mem,
			     const struct ember_rt_proc *rt, uint64_t word, int64_t sampled_ns)
{
	const struct py_layout *l = py_layout_of(rt);
	uint64_t obj = EMBER_RT_WORD_PTR(word), key;
	struct rt_entry *e;

	if (EMBER_RT_WORD_KIND(word) != EMBER_RT_PYTHON || rt->kind != EMBER_RT_PYTHON || !obj ||
	    !l || !c->cap)
		return RT_CHECK_NONE;
	/* the binary's own objects never move (and are shared by address) */
	if (c->sh && obj >= c->img.lo && obj < c->img.hi)
		return RT_CHECK_NONE;
	e = &c->v[slot_of(c, obj)];
	if (e->obj != obj || sampled_ns < e->read_ns)
		return RT_CHECK_NONE; /* not named yet (read when it is), or read after the sample */
	if (e->code) {
		int rc = py_code_head(mem, l, rt->addr[1], obj, &key);

		/*
		 * the process gone, or no code object there now: freed since the
		 * sample (a module's body once imported), what it was is what it named
		 */
		if (rc)
			return RT_CHECK_NONE;
		if (key == e->code->head) {
			e->read_ns = mono_ns();
			return RT_CHECK_SAME;
		}
	}
	entry_read(c, mem, l, rt, e);
	return RT_CHECK_READ;
}

uint64_t rt_cache_to_read(struct rt_cache *c, const struct ember_rt_proc *rt, uint64_t word,
			  int64_t sampled_ns)
{
	uint64_t obj = EMBER_RT_WORD_PTR(word);
	const struct rt_entry *e;

	if (EMBER_RT_WORD_KIND(word) != EMBER_RT_PYTHON || rt->kind != EMBER_RT_PYTHON || !obj ||
	    !py_layout_of(rt) || (c->sh && obj >= c->img.lo && obj < c->img.hi))
		return 0;
	if (!c->cap)
		return obj;
	e = &c->v[slot_of(c, obj)];
	if (e->obj != obj)
		return obj;					      /* named when first seen */
	return sampled_ns >= 0 && sampled_ns >= e->read_ns ? obj : 0; /* a check */
}

size_t rt_read_pieces(const struct rt_mem *mem, const struct rt_piece *p, size_t n, bool *read)
{
	size_t calls = 0;

	for (size_t at = 0; at < n; calls++) {
		size_t np = n - at < RT_READV_MAX ? n - at : RT_READV_MAX, whole;

		if (!mem->readv) {
			read[at] = mem->read(mem->arg, p[at].dst, p[at].len, p[at].addr);
			at++;
			continue;
		}
		whole = mem->readv(mem->arg, p + at, np);
		for (size_t k = 0; k < np; k++)
			read[at + k] = k < whole;
		/* the one that failed stays unread; those after it in the next call */
		at += whole < np ? whole + 1 : np;
	}
	return calls;
}

size_t rt_prefetch_fill(struct rt_prefetch *pf, const struct rt_mem *under, const uint64_t *addrs,
			size_t n)
{
	struct rt_piece p[RT_PREFETCH_MAX];

	pf->under = *under;
	pf->n = 0;
	for (size_t i = 0; i < n && pf->n < RT_PREFETCH_MAX && under->readv; i++) {
		size_t k = 0;

		while (k < pf->n && pf->addr[k] != addrs[i])
			k++;
		if (k == pf->n && addrs[i])
			pf->addr[pf->n++] = addrs[i];
	}
	for (size_t k = 0; k < pf->n; k++)
		p[k] = (struct rt_piece){pf->bytes[k], RT_PREFETCH_BLOCK, pf->addr[k]};
	/* one that failed is read as asked, later */
	return rt_read_pieces(under, p, pf->n, pf->read);
}

static bool prefetch_read(void *arg, void *dst, size_t len, uint64_t addr)
{
	struct rt_prefetch *pf = arg;

	for (size_t k = 0; k < pf->n; k++)
		if (pf->read[k] && addr >= pf->addr[k] && len <= RT_PREFETCH_BLOCK &&
		    addr - pf->addr[k] <= RT_PREFETCH_BLOCK - len) {
			memcpy(dst, pf->bytes[k] + (addr - pf->addr[k]), len);
			return true;
		}
	return pf->under.read(pf->under.arg, dst, len, addr);
}

static size_t prefetch_readv(void *arg, const struct rt_piece *p, size_t n)
{
	struct rt_prefetch *pf = arg;

	return pf->under.readv(pf->under.arg, p, n);
}

struct rt_mem rt_prefetch_mem(struct rt_prefetch *pf)
{
	return (struct rt_mem){prefetch_read, pf, pf->under.readv ? prefetch_readv : NULL};
}

int rt_cache_name(struct rt_cache *c, const struct rt_mem *mem, const struct ember_rt_proc *rt,
		  uint64_t word, struct rt_name *out)
{
	memset(out, 0, sizeof(*out));
	switch (EMBER_RT_WORD_KIND(word)) {
	case EMBER_RT_PYTHON:
		/* a version without a layout: the word says all, the process may be gone */
		if (rt->kind == EMBER_RT_PYTHON || !EMBER_RT_WORD_PTR(word))
			return py_name(c, mem, rt, word, out);
		break;
	case EMBER_RT_V8:
	case EMBER_RT_WORD_V8_BASELINE:
	case EMBER_RT_WORD_V8_OSR:
		if (rt->kind == EMBER_RT_V8)
			return v8_cached(c, mem, rt, word, out);
		break;
	default:
		break;
	}
	snprintf(out->function, sizeof(out->function), "[runtime frame 0x%" PRIx64 "]",
		 (uint64_t)EMBER_RT_WORD_PTR(word));
	return -ENOENT;
}
