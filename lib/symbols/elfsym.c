// SPDX-License-Identifier: MIT
/*
 * Reads what naming a frame needs from one ELF file with libelf: function
 * symbols (.symtab, else .dynsym) and code labels, PT_LOAD segments and the
 * GNU build-id; a stripped program's entry function, bounded by its CFI
 * (libdw). Files are untrusted: every count and offset is checked, names are
 * bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>

#include "elfsym.h"
#include "unwtab.h"
#include "util.h"

/* Bounds on hostile files beyond those of the header. */
#define ELFSYM_MAX_PHDRS 4096  /* program headers looked at; real files have ~15 */
#define ELFSYM_MAX_LOADS 64    /* real files have 2 to 5 PT_LOAD segments */
#define ELFSYM_MAX_NOTES 64    /* note segments or sections searched for a build-id */
#define ELFSYM_MAX_BUILD_ID 64 /* bytes; GNU ld writes 20 (sha1) or 16 (md5) */
/* Bytes of the names ember makes (PLT stubs': ELFSYM_MAX_PLT of them at most). */
#define ELFSYM_MAX_ARENA (256u << 20)
/*
 * The name cache of one file: slots (hot frames of a profile are a few hundred
 * functions of one binary), and the bytes of the names it holds.
 */
#define ELFSYM_NAME_SLOTS 512
#define ELFSYM_NAME_CACHE (64u << 10)
/* PLT relocations read; a large program imports a few thousand functions. */
#define ELFSYM_MAX_PLT (1u << 16)
/*
 * Section bytes read whole, by kind. libelf mallocs a section's claimed size when it
 * is read (ELF_C_READ), bounded only by the file's size, and a sparse file makes any
 * size cheap to claim: a .symtab of 1 GiB over a hole cost 1 GiB. Symbol tables and
 * relocations are read in chunks instead (ELFSYM_CHUNK); the rest must fit these.
 */
#define ELFSYM_MAX_SECTIONS 65536 /* real files have ~40; -ffunction-sections objects more */
#define ELFSYM_MAX_NOTE_BYTES (64u << 10) /* a build-id note is 36 bytes */
#define ELFSYM_MAX_STRTAB (64u << 20)	  /* node 20's .dynstr: 5 MB; as unwtab's CFI bound */
#define ELFSYM_MAX_DYNAMIC (64u << 10)	  /* ELFSYM_MAX_DYN entries of 16 bytes */
#define ELFSYM_MAX_PLT_BYTES (ELFSYM_MAX_PLT * 16u) /* stubs are 16 bytes */
#define ELFSYM_MAX_RELA (ELFSYM_MAX_SYMBOLS)	    /* relocation entries looked at */
#define ELFSYM_CHUNK 2048			    /* entries read and converted at a time */
/* x86-64 relocation types naming a GOT slot a PLT stub jumps through. */
#define ELFSYM_R_GLOB_DAT 6
#define ELFSYM_R_JUMP_SLOT 7
#define ELFSYM_R_IRELATIVE 37

struct elf_load {
	uint64_t offset, filesz, vaddr, memsz;
};

/*
 * One symbol. Its name is not copied: it is the string at name in the file's
 * string table (read again at each lookup that misses the name cache), or in
 * the names ember made (own: PLT stubs, _start). 24 bytes: node 24's 106k kept
 * symbols hold 2.5 MB, where copies of their names held 10 MB more.
 */
struct elf_sym {
	uint64_t addr, end;  /* [addr, end); a symbol without size: its section's end or 0 */
	uint32_t name;	     /* offset into the string table, or into own when own */
	uint32_t len : 13;   /* bytes of the name, version included (<= ELFSYM_MAX_NAME) */
	uint32_t plain : 13; /* bytes before its "@VERSION"; len when it has none */
	uint32_t rank : 2;   /* bind_rank(): global, weak, else; to choose among aliases */
	uint32_t sized : 1;  /* the symbol gave its size */
	uint32_t label : 1;  /* STT_NOTYPE in code: an assembly label */
	uint32_t own : 1;    /* the name is in own, not in the file */
};
_Static_assert(sizeof(struct elf_sym) == 24, "symbols are kept by the million");
_Static_assert(ELFSYM_MAX_NAME < (1u << 13), "a name's length fits elf_sym.len");

/*
 * Names read back, by symbol: a direct-mapped cache, so that a hot frame is
 * read from the file once, not once per process and profile that has it.
 */
struct name_slot {
	uint32_t sym; /* index + 1 of the symbol whose name text holds; 0: empty */
	uint32_t size;
	char *text; /* "plain\0" then, when versioned, "plain@VERSION\0" */
};

struct name_cache {
	struct name_slot *slots;
	size_t n_slots;		/* a power of two */
	size_t bytes;		/* of the texts held */
	size_t max;		/* bound on bytes, past which the cache starts over */
	uint64_t reads, failed; /* names read from the file or image, and reads that failed */
};

struct elf_syms {
	struct elf_sym *v;
	size_t n, cap;
	char *own; /* names ember made: "name@plt", "_start" */
	size_t own_len, own_cap;
	/*
	 * Where the names are read from: the file through fd (a descriptor of the
	 * file that was loaded, never reopened by path, so a file replaced since
	 * is still the one read), or the image mem; the string table is at str_off.
	 */
	int fd;
	const char *mem;
	uint64_t str_off, str_size;
	size_t names_bytes; /* what copies of the kept names would hold */
	struct name_cache *names;
	struct elf_load loads[ELFSYM_MAX_LOADS];
	size_t n_loads;
	enum elf_syms_source source;
	char build_id[2 * ELFSYM_MAX_BUILD_ID + 1];
	char debuglink[ELFSYM_MAX_DEBUGLINK]; /* "" when absent */
	uint32_t debuglink_crc;
};

/*
 * The file being read: through libelf for headers and small sections, and
 * directly (pread, or the image) for what is read in chunks.
 */
struct elf_src {
	Elf *elf;
	int fd; /* -1: the file is the image mem */
	const char *mem;
	size_t size;	  /* the file's */
	size_t max_bytes; /* bound on the symbols kept (elf_syms_memory) */
	size_t shstrndx;  /* SHN_UNDEF when section names cannot be read */
	int cls;	  /* ELFCLASS32 or ELFCLASS64 */
	/* the symbols' string table, read whole by libelf while loading (sorting needs names) */
	const char *strtab;
	size_t strtab_len;
};

/* True when [off, off + size) lies inside a file of file_size bytes. */
static bool in_file(uint64_t off, uint64_t size, size_t file_size)
{
	return off <= file_size && size <= file_size - off;
}

/* A section's data read whole, when it lies in the file and is at most cap bytes. */
static Elf_Data *section_data(const struct elf_src *src, Elf_Scn *scn, const GElf_Shdr *sh,
			      uint64_t cap)
{
	if ((sh->sh_flags & SHF_COMPRESSED) || sh->sh_type == SHT_NOBITS || sh->sh_size > cap ||
	    !in_file(sh->sh_offset, sh->sh_size, src->size))
		return NULL;
	return elf_getdata(scn, NULL);
}

/* A section's name; NULL when the file's section names are not readable within bounds. */
static const char *section_name(const struct elf_src *src, const GElf_Shdr *sh)
{
	return src->shstrndx != SHN_UNDEF ? elf_strptr(src->elf, src->shstrndx, sh->sh_name) : NULL;
}

/* Whether section ndx is a string table elf_strptr may read whole (it reads it all). */
static bool strtab_ok(const struct elf_src *src, size_t ndx, uint64_t cap)
{
	Elf_Scn *scn = elf_getscn(src->elf, ndx);
	GElf_Shdr sh;

	return scn && gelf_getshdr(scn, &sh) && sh.sh_type == SHT_STRTAB &&
	       !(sh.sh_flags & SHF_COMPRESSED) && sh.sh_size <= cap &&
	       in_file(sh.sh_offset, sh.sh_size, src->size);
}

/* len bytes of the file at off into buf; false when short. */
static bool read_raw(const struct elf_src *src, uint64_t off, void *buf, size_t len)
{
	size_t got = 0;

	if (!in_file(off, len, src->size))
		return false;
	if (src->fd < 0) {
		memcpy(buf, src->mem + off, len);
		return true;
	}
	while (got < len) {
		ssize_t r = pread(src->fd, (char *)buf + got, len - got, (off_t)(off + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

/*
 * Entries [first, first + n) of a table section (symbols, relocations) into buf, in
 * memory form: the table is read a chunk at a time, never whole. False when short.
 */
static bool read_entries(const struct elf_src *src, const GElf_Shdr *sh, Elf_Type type,
			 size_t first, size_t n, void *buf)
{
	size_t ent = gelf_fsize(src->elf, type, 1, EV_CURRENT);
	Elf_Data d = {.d_buf = buf, .d_type = type, .d_size = n * ent, .d_version = EV_CURRENT};
	Elf_Data m = d;

	if (!ent || sh->sh_entsize != ent ||
	    !read_raw(src, sh->sh_offset + first * ent, buf, n * ent))
		return false;
	/* file and memory forms have one size for these types: converted in place */
	return gelf_xlatetom(src->elf, &m, &d, elf_getident(src->elf, NULL)[EI_DATA]) != NULL;
}

/* Entry i of symbols read by read_entries. */
static void sym_at(const struct elf_src *src, const void *buf, size_t i, GElf_Sym *out)
{
	const Elf32_Sym *e;

	if (src->cls == ELFCLASS64) {
		*out = ((const Elf64_Sym *)buf)[i];
		return;
	}
	e = (const Elf32_Sym *)buf + i;
	*out = (GElf_Sym){
		.st_name = e->st_name,
		.st_info = e->st_info,
		.st_other = e->st_other,
		.st_shndx = e->st_shndx,
		.st_value = e->st_value,
		.st_size = e->st_size,
	};
}

/* Entry i of relocations read by read_entries. */
static void rela_at(const struct elf_src *src, const void *buf, size_t i, GElf_Rela *out)
{
	const Elf32_Rela *e;

	if (src->cls == ELFCLASS64) {
		*out = ((const Elf64_Rela *)buf)[i];
		return;
	}
	e = (const Elf32_Rela *)buf + i;
	*out = (GElf_Rela){
		.r_offset = e->r_offset,
		.r_info = GELF_R_INFO(ELF32_R_SYM(e->r_info), ELF32_R_TYPE(e->r_info)),
		.r_addend = e->r_addend,
	};
}

static void read_loads(Elf *elf, struct elf_syms *s, size_t file_size)
{
	size_t i, n;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &n))
		return;
	for (i = 0; i < n && i < ELFSYM_MAX_PHDRS && s->n_loads < ELFSYM_MAX_LOADS; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph))
			break;
		if (ph.p_type != PT_LOAD)
			continue;
		if (!in_file(ph.p_offset, ph.p_filesz, file_size) || ph.p_memsz < ph.p_filesz ||
		    ph.p_vaddr + ph.p_memsz < ph.p_vaddr)
			continue;
		s->loads[s->n_loads++] = (struct elf_load){
			.offset = ph.p_offset,
			.filesz = ph.p_filesz,
			.vaddr = ph.p_vaddr,
			.memsz = ph.p_memsz,
		};
	}
}

/* Looks for NT_GNU_BUILD_ID in one block of notes; true when found. */
static bool build_id_from_notes(Elf_Data *data, struct elf_syms *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t off = 0, next, name_off, desc_off, i;
	const unsigned char *desc;
	GElf_Nhdr nh;

	while ((next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		off = next;
		if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != sizeof(ELF_NOTE_GNU) ||
		    memcmp((const char *)data->d_buf + name_off, ELF_NOTE_GNU,
			   sizeof(ELF_NOTE_GNU)) ||
		    nh.n_descsz == 0 || nh.n_descsz > ELFSYM_MAX_BUILD_ID)
			continue;
		desc = (const unsigned char *)data->d_buf + desc_off;
		for (i = 0; i < nh.n_descsz; i++) {
			s->build_id[2 * i] = hex[desc[i] >> 4];
			s->build_id[2 * i + 1] = hex[desc[i] & 0xf];
		}
		s->build_id[2 * nh.n_descsz] = '\0';
		return true;
	}
	return false;
}

/* The build-id from PT_NOTE segments, or from SHT_NOTE sections when none has it. */
static void read_build_id(const struct elf_src *src, struct elf_syms *s)
{
	Elf *elf = src->elf;
	size_t i, n, seen = 0;
	Elf_Scn *scn = NULL;
	Elf_Data *data;
	GElf_Shdr sh;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &n))
		n = 0;
	for (i = 0; i < n && i < ELFSYM_MAX_PHDRS && seen < ELFSYM_MAX_NOTES; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph))
			break;
		if (ph.p_type != PT_NOTE || ph.p_filesz > ELFSYM_MAX_NOTE_BYTES ||
		    !in_file(ph.p_offset, ph.p_filesz, src->size))
			continue;
		seen++;
		data = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
					    ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (data && build_id_from_notes(data, s))
			return;
	}
	while ((scn = elf_nextscn(elf, scn)) && seen < ELFSYM_MAX_NOTES) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = section_data(src, scn, &sh, ELFSYM_MAX_NOTE_BYTES);
		if (!data)
			continue;
		seen++;
		if (data && build_id_from_notes(data, s))
			return;
	}
}

/*
 * .gnu_debuglink: a NUL-terminated file name padded to 4 bytes, then the CRC32
 * of the debug file in the file's byte order. Names with a '/', "." and ".."
 * are refused: a name is a file beside the binary, never a directory.
 */
static void read_debuglink(const struct elf_src *src, struct elf_syms *s, bool msb)
{
	Elf_Scn *scn = NULL;
	const unsigned char *p;
	size_t len, crc_off;
	Elf_Data *data;
	const char *name;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(src->elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		name = section_name(src, &sh);
		if (name && !strcmp(name, ".gnu_debuglink"))
			break;
	}
	/* a name of ELFSYM_MAX_DEBUGLINK, its padding and the CRC */
	data = scn ? section_data(src, scn, &sh, ELFSYM_MAX_DEBUGLINK + 8) : NULL;
	if (!data || !data->d_buf)
		return;
	p = data->d_buf;
	len = strnlen((const char *)p, data->d_size);
	crc_off = (len + 4) & ~(size_t)3;
	if (len == 0 || len >= sizeof(s->debuglink) || crc_off + 4 > data->d_size ||
	    memchr(p, '/', len) || (p[0] == '.' && (len == 1 || (len == 2 && p[1] == '.'))))
		return;
	memcpy(s->debuglink, p, len);
	s->debuglink[len] = '\0';
	p += crc_off;
	for (int i = 0; i < 4; i++)
		s->debuglink_crc = s->debuglink_crc << 8 | p[msb ? i : 3 - i];
}

/* .symtab when there is one, else .dynsym; NULL when neither is usable. */
static Elf_Scn *find_symbols(const struct elf_src *f, enum elf_syms_source *src)
{
	Elf_Scn *scn = NULL, *dyn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(f->elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || (sh.sh_flags & SHF_COMPRESSED) ||
		    !in_file(sh.sh_offset, sh.sh_size, f->size) ||
		    !strtab_ok(f, sh.sh_link, ELFSYM_MAX_STRTAB))
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			*src = ELF_SYMS_SYMTAB;
			return scn;
		}
		if (sh.sh_type == SHT_DYNSYM && !dyn)
			dyn = scn;
	}
	*src = dyn ? ELF_SYMS_DYNSYM : ELF_SYMS_NONE;
	return dyn;
}

/*
 * The length of name without its ELF symbol version: glibc's own symbol table
 * has "clock_gettime@@GLIBC_2.17" (the default version) and
 * "clock_gettime@GLIBC_2.2.5" (an older one) for one function.
 */
static size_t unversioned_len(const char *name, size_t len)
{
	const char *at = memchr(name, '@', len);

	return at && at > name && at + 1 < name + len ? (size_t)(at - name) : len;
}

static int bind_rank(uint8_t bind)
{
	return bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
}

/* Name slots of a file of n symbols: a small file has few names to keep. */
static size_t cache_slots(size_t n)
{
	size_t k = 16;

	while (k < n && k < ELFSYM_NAME_SLOTS)
		k *= 2;
	return k;
}

/*
 * What the name cache of a file of n symbols may hold: its slots, and the
 * texts within ELFSYM_NAME_CACHE, or all of them when fewer (a copy of each,
 * as a malloc chunk: 16 bytes more).
 */
static size_t cache_bound(size_t n, size_t names_bytes)
{
	size_t texts = names_bytes + 16 * n;

	return sizeof(struct name_cache) + cache_slots(n) * sizeof(struct name_slot) +
	       (texts < ELFSYM_NAME_CACHE ? texts : ELFSYM_NAME_CACHE);
}

/*
 * Adds a symbol: its name is at str_name in the string table, or, with
 * str_name < 0, made by ember and copied into own. A versioned name's plain
 * part names it, the full text is its versioned name. limit bounds a symbol
 * without size (its section's end; 0: unknown).
 */
static int add_symbol(const struct elf_src *src, struct elf_syms *s, const char *name,
		      int64_t str_name, uint64_t addr, uint64_t size, uint64_t limit, uint8_t bind,
		      bool strip_version)
{
	size_t len = strnlen(name, ELFSYM_MAX_NAME + 1), plain, own = 0, names;
	struct elf_sym *e;
	int err;

	if (len == 0 || len > ELFSYM_MAX_NAME)
		return 0;
	plain = strip_version ? unversioned_len(name, len) : len;
	if (str_name < 0)
		own = len + 1;
	names = s->names_bytes + plain + 1 + (plain < len ? len + 1 : 0);
	/* what is kept once finish_symbols() trims the arrays; growing may take twice */
	if (s->own_len + own > ELFSYM_MAX_ARENA || sizeof(*s) + (s->n + 1) * sizeof(*s->v) +
								   s->own_len + own +
								   cache_bound(s->n + 1, names) >
							   src->max_bytes)
		return -E2BIG;
	err = array_grow((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v), 256);
	if (!err && own)
		err = array_grow((void **)&s->own, &s->own_cap, s->own_len + own, 1, 256);
	if (err)
		return err;
	e = &s->v[s->n++];
	*e = (struct elf_sym){
		.addr = addr,
		.sized = size != 0,
		.len = (uint32_t)len,
		.plain = (uint32_t)plain,
		.rank = (uint32_t)bind_rank(bind),
		.own = own != 0,
	};
	if (size == 0)
		e->end = limit > addr ? limit : 0; /* finish_symbols() gives it an end */
	else
		e->end = addr + size > addr ? addr + size : UINT64_MAX;
	if (own) {
		memcpy(s->own + s->own_len, name, len + 1);
		e->name = (uint32_t)s->own_len;
		s->own_len += own;
	} else {
		e->name = (uint32_t)str_name;
	}
	s->names_bytes = names;
	return 0;
}

/* The header of section index ndx in *sh, when it is one loaded in memory. */
static bool alloc_section(Elf *elf, size_t ndx, GElf_Shdr *sh)
{
	Elf_Scn *scn;

	if (ndx == SHN_UNDEF || ndx >= SHN_LORESERVE)
		return false;
	scn = elf_getscn(elf, ndx);
	return scn && gelf_getshdr(scn, sh) && (sh->sh_flags & SHF_ALLOC);
}

/* Whether section index ndx holds code (a label there is an assembly function's name). */
static bool code_section(Elf *elf, size_t ndx)
{
	GElf_Shdr sh;

	return alloc_section(elf, ndx, &sh) && (sh.sh_flags & SHF_EXECINSTR);
}

/* The end of section index ndx when addr lies in it, else 0. */
static uint64_t section_end(Elf *elf, size_t ndx, uint64_t addr)
{
	GElf_Shdr sh;

	if (!alloc_section(elf, ndx, &sh) || addr < sh.sh_addr || addr - sh.sh_addr >= sh.sh_size)
		return 0;
	return sh.sh_addr + sh.sh_size;
}

/* The string at off of the symbols' string table; NULL when it does not end inside it. */
static const char *strtab_name(const struct elf_src *src, uint64_t off)
{
	const char *p;

	if (!src->strtab || off >= src->strtab_len)
		return NULL;
	p = src->strtab + off;
	return memchr(p, '\0', src->strtab_len - off) ? p : NULL;
}

/* While loading: the text of e's name (NUL-terminated after its version). */
static const char *load_text(const struct elf_src *src, const struct elf_syms *s,
			     const struct elf_sym *e)
{
	return e->own ? s->own + e->name : src->strtab + e->name;
}

/* Symbol sym of the table read (names in src->strtab): added when it names code. */
static int add_elf_symbol(const struct elf_src *src, struct elf_syms *s, const GElf_Sym *sym,
			  bool thumb)
{
	int type = GELF_ST_TYPE(sym->st_info), err;
	const char *name;
	uint64_t addr, limit;
	size_t n = s->n;
	bool label;

	/* assembly without .type (ld.so's _start): a label in code, not data's */
	label = type == STT_NOTYPE && code_section(src->elf, sym->st_shndx);
	if ((type != STT_FUNC && type != STT_GNU_IFUNC && !label) || sym->st_value == 0 ||
	    sym->st_shndx == SHN_UNDEF)
		return 0;
	name = strtab_name(src, sym->st_name);
	addr = thumb ? sym->st_value & ~1ull : sym->st_value;
	limit = sym->st_size ? 0 : section_end(src->elf, sym->st_shndx, addr);
	/*
	 * Labels that name no function: ARM's mapping symbols ($x, $d), tools'
	 * markers (.annobin_*), and a section's end (_etext).
	 */
	if (!name || (label && (name[0] == '$' || name[0] == '.' || !limit)))
		return 0;
	/* A symbol without size (_init, hand-written assembly) ends with its section
	 * at the latest: it must not name the PLT that follows .init. */
	err = add_symbol(src, s, name, sym->st_name, addr, sym->st_size, limit,
			 GELF_ST_BIND(sym->st_info), true);
	if (!err && s->n > n)
		s->v[n].label = label;
	return err;
}

/*
 * The string table of the symbols (sh: their section) into src, read whole by
 * libelf (find_symbols() bounded it), and where it lies in the file into s:
 * names are read from there again at lookups. False when it cannot be read.
 */
static bool read_strtab(struct elf_src *src, struct elf_syms *s, const GElf_Shdr *sh)
{
	Elf_Scn *scn = elf_getscn(src->elf, sh->sh_link);
	GElf_Shdr str;
	Elf_Data *data;

	if (!scn || !gelf_getshdr(scn, &str) || str.sh_size > UINT32_MAX)
		return false;
	data = section_data(src, scn, &str, ELFSYM_MAX_STRTAB);
	if (!data || !data->d_buf || data->d_size != str.sh_size)
		return false;
	src->strtab = data->d_buf;
	src->strtab_len = data->d_size;
	s->str_off = str.sh_offset;
	s->str_size = str.sh_size;
	return true;
}

/*
 * The symbol table, ELFSYM_CHUNK entries at a time: its claimed size is no
 * allocation, and at most ELFSYM_MAX_SYMBOLS entries are looked at.
 */
static int read_symbols(struct elf_src *src, struct elf_syms *s, bool thumb)
{
	enum elf_syms_source kind;
	Elf_Scn *scn = find_symbols(src, &kind);
	size_t i, j, n, count, entsize = gelf_fsize(src->elf, ELF_T_SYM, 1, EV_CURRENT);
	GElf_Shdr sh;
	GElf_Sym sym;
	void *buf;
	int err = 0;

	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_entsize != entsize || entsize == 0 ||
	    !read_strtab(src, s, &sh))
		return 0;
	count = sh.sh_size / entsize;
	if (count > ELFSYM_MAX_SYMBOLS)
		count = ELFSYM_MAX_SYMBOLS;
	buf = malloc(ELFSYM_CHUNK * sizeof(GElf_Sym));
	if (!buf)
		return -ENOMEM;
	s->source = kind;
	for (i = 0; i < count && !err; i += n) {
		n = count - i < ELFSYM_CHUNK ? count - i : ELFSYM_CHUNK;
		if (!read_entries(src, &sh, ELF_T_SYM, i, n, buf))
			break;
		for (j = 0; j < n && !err; j++) {
			sym_at(src, buf, j, &sym);
			err = add_elf_symbol(src, s, &sym, thumb);
		}
	}
	free(buf);
	return err;
}

/* --- PLT stubs ------------------------------------------------------------------------ */

/*
 * A GOT slot and the function a relocation binds it to: a symbol, or for an
 * IRELATIVE one (libc calling its own memcpy) the IFUNC resolver that picks it.
 */
struct got_slot {
	uint64_t addr;
	const char *name;  /* in the string table of the relocations' symbols, or NULL */
	uint64_t resolver; /* when name is NULL: the resolver's address, or 0 */
};

/* What naming PLT stubs needs: the slots by address, and .rela.plt's in its order. */
struct plt_relocs {
	struct got_slot *slots; /* sorted by addr */
	size_t n, cap;
	struct got_slot *jump; /* .rela.plt's entry i: what a lazy stub's push selects */
	size_t n_jump, cap_jump;
};

static int cmp_slot(const void *a, const void *b)
{
	const struct got_slot *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static const struct got_slot *slot_at(const struct plt_relocs *r, uint64_t addr)
{
	size_t lo = sorted_upper_bound(r->slots, r->n, sizeof(*r->slots),
				       offsetof(struct got_slot, addr), addr);

	return lo && r->slots[lo - 1].addr == addr ? &r->slots[lo - 1] : NULL;
}

/* The index + 1 of the symbol containing vaddr among the first n (sorted) ones, or 0. */
static size_t find_symbol(const struct elf_syms *s, size_t n, uint64_t vaddr)
{
	size_t lo =
		sorted_upper_bound(s->v, n, sizeof(*s->v), offsetof(struct elf_sym, addr), vaddr);

	return lo && vaddr < s->v[lo - 1].end ? lo : 0;
}

/* The name of a relocation's symbol, from the symbol table its section links to. */
static const char *reloc_symbol(const struct elf_src *src, const GElf_Shdr *rel_sh,
				const GElf_Rela *r)
{
	Elf_Scn *symscn = elf_getscn(src->elf, rel_sh->sh_link);
	size_t ndx = GELF_R_SYM(r->r_info);
	GElf_Sym sym, raw[1];
	GElf_Shdr sh;

	if (!ndx || !symscn || !gelf_getshdr(symscn, &sh) || sh.sh_type != SHT_DYNSYM ||
	    !sh.sh_entsize || ndx >= sh.sh_size / sh.sh_entsize ||
	    !strtab_ok(src, sh.sh_link, ELFSYM_MAX_STRTAB) ||
	    !read_entries(src, &sh, ELF_T_SYM, ndx, 1, raw))
		return NULL;
	sym_at(src, raw, 0, &sym);
	if (GELF_ST_TYPE(sym.st_info) == STT_SECTION)
		return NULL;
	return elf_strptr(src->elf, sh.sh_link, sym.st_name);
}

/* The slot one relocation fills, when it names a function: false for other types. */
static bool reloc_slot(const struct elf_src *src, const GElf_Shdr *sh, const GElf_Rela *rela,
		       bool is_plt, struct got_slot *out)
{
	uint32_t type = (uint32_t)GELF_R_TYPE(rela->r_info);

	*out = (struct got_slot){.addr = rela->r_offset};
	if (is_plt && type == ELFSYM_R_IRELATIVE)
		out->resolver = (uint64_t)rela->r_addend;
	else if (type == (is_plt ? ELFSYM_R_JUMP_SLOT : ELFSYM_R_GLOB_DAT))
		out->name = reloc_symbol(src, sh, rela);
	if (out->name && !*out->name)
		out->name = NULL;
	return out->name || out->resolver;
}

/* One relocation into r: every .rela.plt entry keeps its place, named ones are slots. */
static int add_reloc(const struct elf_src *src, const GElf_Shdr *sh, const GElf_Rela *rela,
		     bool is_plt, struct plt_relocs *r)
{
	struct got_slot slot;
	bool named = reloc_slot(src, sh, rela, is_plt, &slot);
	int err;

	if (is_plt) {
		/* a lazy stub pushes its index */
		err = array_grow((void **)&r->jump, &r->cap_jump, r->n_jump + 1, sizeof(*r->jump),
				 64);
		if (err)
			return err;
		r->jump[r->n_jump++] = slot;
	}
	if (!named)
		return 0;
	err = array_grow((void **)&r->slots, &r->cap, r->n + 1, sizeof(*r->slots), 64);
	if (err)
		return err;
	r->slots[r->n++] = slot;
	return 0;
}

/* Whether r holds all the relocations looked at. */
static bool relocs_full(const struct plt_relocs *r)
{
	return r->n >= ELFSYM_MAX_PLT || r->n_jump >= ELFSYM_MAX_PLT;
}

/*
 * JUMP_SLOT and IRELATIVE relocations (.rela.plt), GLOB_DAT ones (.rela.dyn, for
 * .plt.got), read ELFSYM_CHUNK at a time: .rela.dyn is large in large libraries.
 */
static int read_relocs(const struct elf_src *src, const GElf_Shdr *sh, bool is_plt,
		       struct plt_relocs *r)
{
	size_t i, j, n, count, ent = gelf_fsize(src->elf, ELF_T_RELA, 1, EV_CURRENT);
	GElf_Rela rela;
	void *buf;
	int err = 0;

	if (!ent || sh->sh_entsize != ent)
		return 0;
	count = sh->sh_size / ent;
	if (count > ELFSYM_MAX_RELA)
		count = ELFSYM_MAX_RELA;
	buf = malloc(ELFSYM_CHUNK * sizeof(GElf_Rela));
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < count && !err && !relocs_full(r); i += n) {
		n = count - i < ELFSYM_CHUNK ? count - i : ELFSYM_CHUNK;
		if (!read_entries(src, sh, ELF_T_RELA, i, n, buf))
			break;
		for (j = 0; j < n && !err && !relocs_full(r); j++) {
			rela_at(src, buf, j, &rela);
			err = add_reloc(src, sh, &rela, is_plt, r);
		}
	}
	free(buf);
	return err;
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * Decodes one x86-64 stub at vaddr: [endbr64] [bnd] jmp *slot(%rip) jumps
 * through that GOT slot; [endbr64] push $i (a lazy .plt entry) binds the i-th
 * of .rela.plt. NULL for anything else (PLT0, padding).
 */
static const struct got_slot *stub_slot(const struct plt_relocs *r, const unsigned char *p,
					size_t len, uint64_t vaddr)
{
	static const unsigned char endbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
	size_t i = 0;

	if (len >= sizeof(endbr64) && !memcmp(p, endbr64, sizeof(endbr64)))
		i += sizeof(endbr64);
	if (i < len && p[i] == 0xf2) /* bnd prefix (MPX-era PLTs) */
		i++;
	if (i + 6 <= len && p[i] == 0xff && p[i + 1] == 0x25)
		return slot_at(r, vaddr + i + 6 + (uint64_t)(int64_t)(int32_t)le32(p + i + 2));
	if (i + 5 <= len && p[i] == 0x68) {
		uint32_t idx = le32(p + i + 1);

		return idx < r->n_jump ? &r->jump[idx] : NULL;
	}
	return NULL;
}

/*
 * "name@plt" into buf for the function a slot binds; an IRELATIVE slot is
 * named after the IFUNC symbol at its resolver (the first n_sorted symbols).
 */
static bool stub_name(const struct elf_src *src, const struct elf_syms *s, size_t n_sorted,
		      const struct got_slot *slot, char *buf, size_t len)
{
	const char *fn = slot ? slot->name : NULL;
	int plain = fn ? (int)strnlen(fn, ELFSYM_MAX_NAME + 1) : 0;
	size_t i;

	if (slot && !fn && slot->resolver) {
		i = find_symbol(s, n_sorted, slot->resolver);
		if (i && s->v[i - 1].addr == slot->resolver) {
			fn = load_text(src, s, &s->v[i - 1]);
			plain = (int)s->v[i - 1].plain;
		}
	}
	return fn && (size_t)snprintf(buf, len, "%.*s@plt", plain, fn) < len;
}

/* Names each stub of one PLT section "name@plt"; the count added, or -errno. */
static int name_stubs(const struct elf_src *src, struct elf_syms *s, size_t n_sorted, Elf_Scn *scn,
		      const GElf_Shdr *sh, const struct plt_relocs *r)
{
	uint64_t ent = sh->sh_entsize == 8 || sh->sh_entsize == 16 ? sh->sh_entsize : 16;
	Elf_Data *data = section_data(src, scn, sh, ELFSYM_MAX_PLT_BYTES);
	char name[ELFSYM_MAX_NAME + 1];
	uint64_t off;
	int err, added = 0;

	if (!data || !data->d_buf || data->d_size > sh->sh_size)
		return 0;
	for (off = 0; off + ent <= data->d_size && off / ent < ELFSYM_MAX_PLT; off += ent) {
		const struct got_slot *slot = stub_slot(r, (const unsigned char *)data->d_buf + off,
							ent, sh->sh_addr + off);

		if (!stub_name(src, s, n_sorted, slot, name, sizeof(name)))
			continue;
		err = add_symbol(src, s, name, -1, sh->sh_addr + off, ent, 0, STB_LOCAL, false);
		if (err)
			return err;
		added++;
	}
	return added;
}

/*
 * x86-64 PLTs: .plt (lazy stubs after PLT0), .plt.sec (the stubs called when
 * IBT splits them out) and .plt.got (functions whose address is also taken).
 * Runs on sorted symbols, and appends the stubs: the count added, or -errno.
 * Other machines' stubs stay unnamed: their section bounds the symbol before.
 */
static int read_plt(const struct elf_src *src, struct elf_syms *s, const GElf_Ehdr *eh)
{
	struct plt_relocs r = {0};
	size_t n_sorted = s->n;
	Elf_Scn *scn = NULL;
	const char *name;
	GElf_Shdr sh;
	int ret = 0, added = 0;

	if (eh->e_machine != EM_X86_64)
		return 0;
	while (!ret && (scn = elf_nextscn(src->elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA ||
		    (sh.sh_flags & SHF_COMPRESSED) || !in_file(sh.sh_offset, sh.sh_size, src->size))
			continue;
		name = section_name(src, &sh);
		if (name && (!strcmp(name, ".rela.plt") || !strcmp(name, ".rela.dyn")))
			ret = read_relocs(src, &sh, !strcmp(name, ".rela.plt"), &r);
	}
	if (r.n > 1)
		qsort(r.slots, r.n, sizeof(*r.slots), cmp_slot);
	while (ret >= 0 && (r.n || r.n_jump) && (scn = elf_nextscn(src->elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		name = section_name(src, &sh);
		if (name && (!strcmp(name, ".plt") || !strcmp(name, ".plt.sec") ||
			     !strcmp(name, ".plt.got"))) {
			ret = name_stubs(src, s, n_sorted, scn, &sh, &r);
			added += ret > 0 ? ret : 0;
		}
	}
	free(r.slots);
	free(r.jump);
	return ret < 0 ? ret : added;
}

/* What sorting symbols reads their names from. */
struct sort_ctx {
	const struct elf_src *src;
	const struct elf_syms *s;
};

/* Among versions of one name (x and y: their texts): the default one (name@@V) first. */
static int cmp_version(const struct elf_sym *x, const char *nx, const struct elf_sym *y,
		       const char *ny)
{
	bool vx = x->plain < x->len, vy = y->plain < y->len, dx, dy;

	if (!vx || !vy)
		return !vx - !vy;
	dx = strstr(nx, "@@") != NULL;
	dy = strstr(ny, "@@") != NULL;
	if (dx != dy)
		return dx ? -1 : 1;
	return strcmp(nx, ny);
}

/*
 * By address; among aliases at one address the name kept is the first of: a
 * function's over a label's, fewer leading underscores (glibc exports getpid
 * as a weak alias of the global __getpid: users know the public name), global
 * over weak over local, shorter, then alphabetical, then its default version,
 * so the choice never depends on table order.
 */
static int cmp_sym(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *ctx = arg;
	const struct elf_sym *x = a, *y = b;
	const char *nx, *ny;
	size_t ux, uy;
	int c;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->label != y->label)
		return x->label - y->label;
	nx = load_text(ctx->src, ctx->s, x);
	ny = load_text(ctx->src, ctx->s, y);
	/* a plain name ends at its '@', which is no '_' */
	ux = strspn(nx, "_");
	uy = strspn(ny, "_");
	if (ux != uy)
		return ux < uy ? -1 : 1;
	if (x->rank != y->rank)
		return (int)x->rank - (int)y->rank;
	if (x->plain != y->plain)
		return x->plain < y->plain ? -1 : 1;
	c = memcmp(nx, ny, x->plain);
	return c ? c : cmp_version(x, nx, y, ny);
}

/* Folds alias a into the symbol k kept at the same address: the furthest end. */
static void merge_alias(struct elf_sym *k, const struct elf_sym *a)
{
	if (a->sized) {
		if (!k->sized || a->end > k->end)
			k->end = a->end;
		k->sized = 1;
	} else if (!k->sized && a->end > k->end) {
		k->end = a->end;
	}
}

static const struct elf_load *load_of_vaddr(const struct elf_syms *s, uint64_t vaddr)
{
	size_t i;

	for (i = 0; i < s->n_loads; i++)
		if (vaddr >= s->loads[i].vaddr && vaddr - s->loads[i].vaddr < s->loads[i].memsz)
			return &s->loads[i];
	return NULL;
}

/*
 * Sorts, keeps one symbol per address (its end the furthest of the aliases'),
 * drops labels inside a function (a loop's, a second entry's: the function
 * names them) and ends a symbol without size at the next symbol or its
 * segment's end.
 */
static void finish_symbols(const struct elf_src *src, struct elf_syms *s)
{
	uint64_t covered = 0; /* the furthest end of the sized symbols kept so far */
	struct sort_ctx ctx = {.src = src, .s = s};
	size_t i, w = 0;
	void *p;

	if (s->n > 1)
		qsort_r(s->v, s->n, sizeof(*s->v), cmp_sym, &ctx);
	for (i = 0; i < s->n; i++) {
		if (w > 0 && s->v[w - 1].addr == s->v[i].addr)
			merge_alias(&s->v[w - 1], &s->v[i]);
		else if (s->v[i].label && s->v[i].addr < covered)
			continue;
		else
			s->v[w++] = s->v[i];
		if (s->v[w - 1].sized && s->v[w - 1].end > covered)
			covered = s->v[w - 1].end;
	}
	s->n = w;
	for (i = 0; i < s->n; i++) {
		const struct elf_load *l;
		uint64_t end;

		if (s->v[i].sized)
			continue;
		end = i + 1 < s->n ? s->v[i + 1].addr : UINT64_MAX;
		l = load_of_vaddr(s, s->v[i].addr);
		if (l && l->vaddr + l->memsz < end)
			end = l->vaddr + l->memsz;
		if (s->v[i].end && s->v[i].end < end)
			end = s->v[i].end; /* its section's end */
		/* Last symbol, outside any segment: only its first byte is known. */
		s->v[i].end = end == UINT64_MAX ? s->v[i].addr + 1 : end;
	}
	p = realloc(s->v, (s->n ? s->n : 1) * sizeof(*s->v));
	if (p)
		s->v = p;
	s->cap = s->n;
	p = realloc(s->own, s->own_len ? s->own_len : 1);
	if (p)
		s->own = p;
	s->own_cap = s->own_len;
	/* what the name cache is bounded by: the names kept, not the aliases dropped */
	s->names_bytes = 0;
	for (i = 0; i < s->n; i++) {
		const struct elf_sym *e = &s->v[i];

		s->names_bytes += e->plain + 1 + (e->plain < e->len ? e->len + 1 : 0);
	}
}

/* --- a stripped program's entry function ---------------------------------------------- */

/* Dynamic entries read for DT_FLAGS_1; real files have ~30. */
#define ELFSYM_MAX_DYN 4096
/* Bytes of an entry function: crt1's _start has 34 (x86-64), 64 (aarch64). */
#define ELFSYM_MAX_ENTRY 4096

/*
 * Whether the file is a program, not a library: ET_EXEC, or ET_DYN marked
 * DF_1_PIE. A library's entry (libc.so.6's, which prints its version) is no
 * _start; ld.so's is named where its debug file is installed (libc6-dbg).
 */
static bool is_program(const struct elf_src *src, const GElf_Ehdr *eh)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Dyn dyn;

	if (eh->e_type == ET_EXEC)
		return true;
	if (eh->e_type != ET_DYN)
		return false;
	while ((scn = elf_nextscn(src->elf, scn))) {
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC)
			continue;
		data = section_data(src, scn, &sh, ELFSYM_MAX_DYNAMIC);
		for (int i = 0; data && i < ELFSYM_MAX_DYN && gelf_getdyn(data, i, &dyn); i++) {
			if (dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag == DT_FLAGS_1)
				return (dyn.d_un.d_val & DF_1_PIE) != 0;
		}
		return false;
	}
	return false;
}

/*
 * Names a program's entry function _start where no symbol covers it (stripped:
 * crt1's _start is the root of every main thread's stack). Its extent is the
 * FDE that starts at the entry (crt1's _start has one: it marks the outermost
 * frame); none, or one that starts elsewhere: not named. The FDE is found as
 * the unwind table compiler finds it, without running its instructions:
 * libdw's interpreter (dwarf_cfi_addrframe) grows its state to the largest
 * register a rule names, 2 GiB for a register of 2^28. 1 when added, 0 when
 * not, < 0 on error. s is sorted.
 */
static int name_entry(const struct elf_src *src, struct elf_syms *s, const GElf_Ehdr *eh)
{
	uint64_t start, end;
	size_t n = s->n;
	int err;

	if (!eh->e_entry || find_symbol(s, s->n, eh->e_entry) || !load_of_vaddr(s, eh->e_entry) ||
	    !is_program(src, eh))
		return 0;
	if (unwtab_fde_at(src->elf, eh->e_entry, &start, &end) || start != eh->e_entry ||
	    end - start > ELFSYM_MAX_ENTRY)
		return 0;
	err = add_symbol(src, s, "_start", -1, start, end - start, 0, STB_GLOBAL, false);
	return err ? err : s->n > n;
}

/*
 * What reading names back needs: the name cache, and the file (a descriptor of
 * its own, the caller's being the caller's to close) or the image they are
 * in, when any name is in it. 0 or -1 with errno set.
 */
static int keep_source(const struct elf_src *src, struct elf_syms *s)
{
	bool in_file = false;

	for (size_t i = 0; i < s->n && !in_file; i++)
		in_file = !s->v[i].own;
	s->names = calloc(1, sizeof(*s->names));
	if (!s->names)
		return -1;
	s->names->n_slots = cache_slots(s->n);
	s->names->max = ELFSYM_NAME_CACHE;
	s->names->slots = calloc(s->names->n_slots, sizeof(*s->names->slots));
	if (!s->names->slots)
		return -1;
	if (!in_file)
		return 0;
	if (src->fd < 0) {
		s->mem = src->mem;
		return 0;
	}
	s->fd = fcntl(src->fd, F_DUPFD_CLOEXEC, 0);
	return s->fd < 0 ? -1 : 0;
}

static struct elf_syms *load_elf(struct elf_src *src)
{
	struct elf_syms *s;
	GElf_Ehdr eh;
	int err;

	if (elf_kind(src->elf) != ELF_K_ELF || !gelf_getehdr(src->elf, &eh)) {
		errno = ENOEXEC;
		return NULL;
	}
	src->cls = eh.e_ident[EI_CLASS];
	/* elf_strptr reads the whole table of section names */
	if (elf_getshdrstrndx(src->elf, &src->shstrndx) ||
	    !strtab_ok(src, src->shstrndx, ELFSYM_MAX_NOTE_BYTES))
		src->shstrndx = SHN_UNDEF;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->fd = -1;
	read_loads(src->elf, s, src->size);
	read_build_id(src, s);
	read_debuglink(src, s, eh.e_ident[EI_DATA] == ELFDATA2MSB);
	/* The low bit of an ARM function address selects Thumb mode. */
	err = read_symbols(src, s, eh.e_machine == EM_ARM);
	if (!err) {
		finish_symbols(src, s);
		err = name_entry(src, s, &eh);
	}
	if (err > 0)
		finish_symbols(src, s);
	if (err >= 0) {
		/* PLT stubs are named from the sorted symbols, then sorted in. */
		err = read_plt(src, s, &eh);
	}
	if (err < 0) {
		elf_syms_free(s);
		errno = -err;
		return NULL;
	}
	if (err > 0)
		finish_symbols(src, s);
	if (keep_source(src, s)) {
		elf_syms_free(s);
		return NULL;
	}
	return s;
}

/* A header field of n bytes at off, in the file's byte order. */
static uint64_t hdr_field(const unsigned char *h, size_t off, size_t n, bool msb)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v = v << 8 | h[msb ? off + i : off + n - 1 - i];
	return v;
}

/*
 * Whether the ELF header's counts are within bounds, read before libelf sees
 * the file: elf_begin sizes its section array by the header's count and reads
 * all section headers at the first gelf_getshdr. Extended numbering (a count
 * in section 0) is refused: real programs do not need it. Not an ELF file:
 * true, elf_begin refuses it.
 */
static bool header_ok(const struct elf_src *src)
{
	unsigned char h[64];
	bool c64, msb;
	uint64_t shnum, phnum, shentsize, phentsize, shoff;

	if (!read_raw(src, 0, h, 52) || memcmp(h, ELFMAG, SELFMAG))
		return true;
	c64 = h[EI_CLASS] == ELFCLASS64;
	msb = h[EI_DATA] == ELFDATA2MSB;
	if (c64 && !read_raw(src, 0, h, 64))
		return false;
	shoff = hdr_field(h, c64 ? 40 : 32, c64 ? 8 : 4, msb);
	phentsize = hdr_field(h, c64 ? 54 : 42, 2, msb);
	phnum = hdr_field(h, c64 ? 56 : 44, 2, msb);
	shentsize = hdr_field(h, c64 ? 58 : 46, 2, msb);
	shnum = hdr_field(h, c64 ? 60 : 48, 2, msb);
	if ((shoff && (!shnum || shnum > ELFSYM_MAX_SECTIONS)) || phnum == PN_XNUM ||
	    phnum > ELFSYM_MAX_PHDRS)
		return false;
	return (!shnum || in_file(shoff, shnum * shentsize, src->size)) && (!phnum || phentsize);
}

static struct elf_syms *load(struct elf_src *src, Elf *elf)
{
	struct elf_syms *s;

	if (!elf) {
		errno = ENOEXEC;
		return NULL;
	}
	src->elf = elf;
	s = load_elf(src);
	elf_end(elf);
	return s;
}

struct elf_syms *elf_syms_load_fd_max(int fd, size_t max_bytes)
{
	struct elf_src src = {.fd = fd, .max_bytes = max_bytes};
	struct stat st;

	if (fstat(fd, &st))
		return NULL;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		return NULL;
	}
	src.size = (size_t)st.st_size;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = ENOSYS;
		return NULL;
	}
	if (!header_ok(&src)) {
		errno = E2BIG;
		return NULL;
	}
	/* ELF_C_READ, not mmap: a file truncated under us must not SIGBUS. */
	return load(&src, elf_begin(fd, ELF_C_READ, NULL));
}

struct elf_syms *elf_syms_load_fd(int fd)
{
	return elf_syms_load_fd_max(fd, ELFSYM_MAX_MEMORY);
}

struct elf_syms *elf_syms_load_mem(const void *buf, size_t len)
{
	struct elf_src src = {.fd = -1, .mem = buf, .size = len, .max_bytes = ELFSYM_MAX_MEMORY};

	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = ENOSYS;
		return NULL;
	}
	if (!header_ok(&src)) {
		errno = E2BIG;
		return NULL;
	}
	/* libelf only reads the image (foreign byte order is converted in copies). */
	return load(&src, elf_memory((char *)buf, len));
}

static void names_clear(struct name_cache *c)
{
	for (size_t i = 0; i < c->n_slots; i++) {
		free(c->slots[i].text);
		c->slots[i] = (struct name_slot){0};
	}
	c->bytes = 0;
}

void elf_syms_free(struct elf_syms *s)
{
	if (!s)
		return;
	if (s->names) {
		names_clear(s->names);
		free(s->names->slots);
		free(s->names);
	}
	if (s->fd >= 0)
		close(s->fd);
	free(s->v);
	free(s->own);
	free(s);
}

bool elf_syms_span(const struct elf_syms *s, uint64_t *lo, uint64_t *hi)
{
	*lo = UINT64_MAX;
	*hi = 0;
	for (size_t i = 0; i < s->n_loads; i++) {
		const struct elf_load *l = &s->loads[i];

		if (l->vaddr < *lo)
			*lo = l->vaddr;
		if (l->memsz <= UINT64_MAX - l->vaddr && l->vaddr + l->memsz > *hi)
			*hi = l->vaddr + l->memsz;
	}
	return *lo < *hi;
}

bool elf_syms_offset_to_vaddr(const struct elf_syms *s, uint64_t file_off, uint64_t *vaddr)
{
	size_t i;

	for (i = 0; i < s->n_loads; i++) {
		const struct elf_load *l = &s->loads[i];

		if (file_off >= l->offset && file_off - l->offset < l->filesz) {
			*vaddr = l->vaddr + (file_off - l->offset);
			return true;
		}
	}
	return false;
}

const char *elf_syms_lookup(const struct elf_syms *s, uint64_t vaddr)
{
	return elf_syms_lookup_versioned(s, vaddr, NULL);
}

/*
 * The text of e's name, len + 1 bytes, into buf: from own, the image, or the
 * file (one pread of at most ELFSYM_MAX_NAME + 1 bytes). It must still be what
 * was loaded: NUL-terminated at its length and nowhere before (a file changed
 * or truncated since reads short or otherwise). 0 or -errno.
 */
static int read_text(const struct elf_syms *s, const struct elf_sym *e, char *buf)
{
	size_t len = e->len + 1, got = 0;

	if (e->own) {
		memcpy(buf, s->own + e->name, len);
	} else if ((uint64_t)e->name + len > s->str_size) {
		return -ERANGE;
	} else if (s->mem) {
		memcpy(buf, s->mem + s->str_off + e->name, len);
	} else if (s->fd < 0) {
		return -EBADF;
	} else {
		while (got < len) {
			ssize_t r = pread(s->fd, buf + got, len - got,
					  (off_t)(s->str_off + e->name + got));

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				return r < 0 ? -errno : -EIO;
			got += (size_t)r;
		}
	}
	if (buf[e->len] != '\0' || memchr(buf, '\0', e->len) ||
	    (e->plain < e->len && buf[e->plain] != '@'))
		return -EBADMSG;
	return 0;
}

/*
 * Symbol i's name as "plain\0" and, when versioned, "plain@VERSION\0" after
 * it: from the cache, else read and cached (the cache starts over when it
 * would hold more than its bound). NULL with errno set when it cannot be read.
 */
static const char *symbol_text(const struct elf_syms *s, size_t i)
{
	struct name_cache *c = s->names;
	struct name_slot *slot = &c->slots[i & (c->n_slots - 1)];
	const struct elf_sym *e = &s->v[i];
	bool versioned = e->plain < e->len;
	size_t size = e->plain + 1 + (versioned ? e->len + 1 : 0);
	char *text;
	int err;

	if (slot->sym == i + 1)
		return slot->text;
	text = malloc(size);
	if (!text)
		return NULL;
	/* the full text where it stays, then its plain part before it */
	err = read_text(s, e, versioned ? text + e->plain + 1 : text);
	if (!e->own)
		c->reads++;
	if (err) {
		c->failed += !e->own;
		free(text);
		errno = -err;
		return NULL;
	}
	if (versioned) {
		memcpy(text, text + e->plain + 1, e->plain);
		text[e->plain] = '\0';
	}
	c->bytes -= slot->text ? slot->size + 16 : 0;
	free(slot->text);
	*slot = (struct name_slot){0};
	if (c->bytes + size + 16 > c->max)
		names_clear(c);
	*slot = (struct name_slot){.sym = (uint32_t)(i + 1), .size = (uint32_t)size, .text = text};
	c->bytes += size + 16;
	return text;
}

int elf_syms_name(const struct elf_syms *s, uint64_t vaddr, const char **name,
		  const char **versioned)
{
	size_t lo = find_symbol(s, s->n, vaddr);
	const char *text;

	*name = NULL;
	if (versioned)
		*versioned = NULL;
	if (!lo)
		return 0;
	text = symbol_text(s, lo - 1);
	if (!text)
		return -errno;
	*name = text;
	if (versioned && s->v[lo - 1].plain < s->v[lo - 1].len)
		*versioned = text + s->v[lo - 1].plain + 1;
	return 1;
}

const char *elf_syms_lookup_versioned(const struct elf_syms *s, uint64_t vaddr,
				      const char **versioned)
{
	const char *name;

	elf_syms_name(s, vaddr, &name, versioned);
	return name;
}

void elf_syms_name_stats(const struct elf_syms *s, uint64_t *reads, uint64_t *failed)
{
	*reads = s->names->reads;
	*failed = s->names->failed;
}

const char *elf_syms_build_id(const struct elf_syms *s)
{
	return s->build_id;
}

enum elf_syms_source elf_syms_source(const struct elf_syms *s)
{
	return s->source;
}

size_t elf_syms_count(const struct elf_syms *s)
{
	return s->n;
}

const char *elf_syms_debuglink(const struct elf_syms *s, uint32_t *crc)
{
	if (!s->debuglink[0])
		return NULL;
	*crc = s->debuglink_crc;
	return s->debuglink;
}

size_t elf_syms_memory(const struct elf_syms *s)
{
	return sizeof(*s) + s->cap * sizeof(*s->v) + s->own_cap + cache_bound(s->n, s->names_bytes);
}
