// SPDX-License-Identifier: MIT
/*
 * The unwind table compiler. libdw interprets the CFI (dwarf_cfi_addrframe gives the rule in
 * force at an address and the range it holds for); this file enumerates the FDEs' ranges,
 * walks each range row by row and compiles every rule into a 16-byte struct ember_unwind_row.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#include "unwtab.h"

/* x86-64 DWARF register numbers. */
#define REG_RBX 3
#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16

/*
 * Bound on libdw's work: each dwarf_cfi_addrframe re-runs its FDE's instructions from the
 * start, so a hostile FDE of n one-byte rows costs n^2. Counted in instruction bytes run (plus
 * 16 per lookup); measured: libc 2^21, node 20 2^25, libLLVM-15 (110 MB, 0.6 s) 2^26.3. 2^31
 * leaves 25 times LLVM's need and bounds a hostile file to seconds.
 */
#define UNWTAB_WORK_MAX (1ull << 31)

/*
 * Files are read, not mapped (ELF_C_READ): a file another process truncates while it is read
 * must not raise SIGBUS. What is read is bounded:
 * - .eh_frame and .eh_frame_hdr, each at most UNWTAB_SECTION_MAX (libLLVM-15's is 5 MB);
 * - the DWARF libdw reads to give .debug_frame: dwarf_begin_elf reads and uncompresses every
 *   DWARF section of the file at once (a 512 KB file with a zlib bomb made it allocate
 *   512 MB). Past UNWTAB_DWARF_MAX the file's .debug_frame is left unread, counted;
 *   .eh_frame alone is used.
 */
#define UNWTAB_SECTION_MAX (64ull << 20)
#define UNWTAB_DWARF_MAX (64ull << 20)

/*
 * Code between two FDEs is read for alignment padding (gap_is_padding) up to this long: the
 * most a .p2align 6 leaves (glibc aligns its string functions so); through a window of the
 * file this wide, read once for the gaps in it.
 */
#define UNWTAB_PAD_MAX 63
#define UNWTAB_CODE_WIN (64u << 10)

/* One FDE's address range and the CFI that describes it. */
struct range {
	uint64_t lo, hi;
	uint32_t cost; /* bytes of CIE + FDE instructions libdw runs per lookup */
	bool debug;    /* from .debug_frame */
	bool unsafe;   /* instructions libdw must not run (see insns_safe) */
	/* no FDE: an .init or .fini of crti/crtn's shape (unwtab_crt_shape), these its offsets */
	bool crt;
	uint32_t sub_end, add_end;
};

struct ranges {
	struct range *r;
	size_t n, cap;
};

/* The CIE facts the FDE decoder needs, by section offset. */
struct cie {
	uint64_t off;
	uint32_t len; /* bytes of initial instructions */
	uint8_t enc;  /* DW_EH_PE_* of the FDEs' addresses */
	bool ok;      /* augmentation understood */
	bool safe;    /* initial instructions safe (insns_safe): else its FDEs are unsafe */
	bool z;	      /* FDEs carry augmentation data ('z') */
};

struct cies {
	struct cie *c;
	size_t n, cap;
};

/* Section offsets of a chain's FDEs, ascending. */
struct offs {
	uint64_t *v;
	size_t n, cap;
};

/* Where the file's code is read from, for the padding between FDEs: an fd or an image. */
struct code_src {
	int fd;		      /* pread here, when >= 0 */
	const uint8_t *image; /* else the whole file, len bytes (NULL: no code is read) */
	size_t len;
	uint8_t *win; /* fd: UNWTAB_CODE_WIN bytes, win_len of them read from file offset win_off */
	uint64_t win_off;
	size_t win_len;
};

/* What one compilation carries around. */
struct build {
	Elf *elf;
	struct unwtab *t;
	struct code_src code;
	Dwarf *dw;
	Dwarf_CFI *eh, *debug;
	struct ranges eh_r, debug_r;
	uint64_t work;
	size_t cap;
};

static const char *const err_names[UNWTAB_E_NR] = {
	[UNWTAB_OK] = "ok",
	[UNWTAB_E_NOT_ELF] = "not an ELF file",
	[UNWTAB_E_NOT_X86_64] = "not an x86-64 ELF file",
	[UNWTAB_E_NO_TEXT] = "no executable segment",
	[UNWTAB_E_NO_CFI] = "no CFI (.eh_frame, .debug_frame) covers the code",
	[UNWTAB_E_BAD_CFI] = "unreadable CFI",
	[UNWTAB_E_TOO_BIG] = "unwind table over its bounds",
	[UNWTAB_E_NOMEM] = "out of memory",
};

const char *unwtab_strerror(enum unwtab_err why)
{
	if ((unsigned int)why >= UNWTAB_E_NR)
		return "unknown error";
	return err_names[why];
}

const char *unwtab_cfa_name(unsigned int cfa_kind)
{
	static const char *const names[] = {
		[EMBER_CFA_RSP] = "rsp",   [EMBER_CFA_RBP] = "rbp",	  [EMBER_CFA_PLT] = "plt",
		[EMBER_CFA_END] = "end",   [EMBER_CFA_SIGNAL] = "signal", [EMBER_CFA_FP] = "fp",
		[EMBER_CFA_NONE] = "none", [EMBER_CFA_RBX] = "rbx",
	};

	if (cfa_kind >= sizeof(names) / sizeof(names[0]))
		return "?";
	return names[cfa_kind];
}

static int errno_of(enum unwtab_err why)
{
	switch (why) {
	case UNWTAB_OK:
		return 0;
	case UNWTAB_E_NOT_ELF:
	case UNWTAB_E_NOT_X86_64:
		return -ENOEXEC;
	case UNWTAB_E_NO_TEXT:
	case UNWTAB_E_NO_CFI:
		return -ENOENT;
	case UNWTAB_E_TOO_BIG:
		return -EFBIG;
	case UNWTAB_E_NOMEM:
		return -ENOMEM;
	default:
		return -EINVAL;
	}
}

/* --- growing arrays ------------------------------------------------------------------- */

static bool grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t ncap = *cap ? *cap : 64;
	void *np;

	if (need <= *cap)
		return true;
	while (ncap < need)
		ncap *= 2;
	np = realloc(*p, ncap * size);
	if (!np)
		return false;
	*p = np;
	*cap = ncap;
	return true;
}

/* --- the ELF: machine, executable segments, CFI sections ------------------------------ */

static enum unwtab_err check_elf(Elf *elf)
{
	GElf_Ehdr eh;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		return UNWTAB_E_NOT_ELF;
	/* Big-endian would be read one way here and another by libdw (other_byte_order). */
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_machine != EM_X86_64)
		return UNWTAB_E_NOT_X86_64;
	return UNWTAB_OK;
}

static enum unwtab_err read_segs(Elf *elf, struct unwtab *t)
{
	size_t i, n;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &n))
		return UNWTAB_E_NO_TEXT;
	for (i = 0; i < n && t->nsegs < UNWTAB_MAX_SEGS; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (!ph.p_memsz || ph.p_vaddr + ph.p_memsz < ph.p_vaddr)
			continue;
		t->segs[t->nsegs++] =
			(struct unwtab_seg){ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz};
	}
	return t->nsegs ? UNWTAB_OK : UNWTAB_E_NO_TEXT;
}

/* The segment holding all of [lo, hi), or NULL. */
static const struct unwtab_seg *seg_of(const struct unwtab *t, uint64_t lo, uint64_t hi)
{
	size_t i;

	for (i = 0; i < t->nsegs; i++)
		if (lo >= t->segs[i].vaddr && hi - t->segs[i].vaddr <= t->segs[i].memsz)
			return &t->segs[i];
	return NULL;
}

/* The CFI sections libdw reads (dwarf_getcfi_elf, dwarf_begin_elf), NULL where none. */
struct cfi_scns {
	Elf_Data *eh, *hdr;
	Elf_Scn *debug;
	uint64_t eh_addr, hdr_addr;
	Elf_Scn *crt[2]; /* .init and .fini, which crti.o and crtn.o give no CFI */
};

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

/*
 * The bytes dwarf_begin_elf holds for one section: a DWARF one's (a name with "debug", or
 * .gdb_index) as read, plus its size once uncompressed (ELF SHF_COMPRESSED, GNU .zdebug),
 * taken from its header alone.
 */
static uint64_t dwarf_size(Elf *elf, const GElf_Shdr *sh, const char *name)
{
	const uint8_t *h;
	uint64_t n = 0;
	Elf_Data *d;
	int i;

	if (!strstr(name, "debug") && strcmp(name, ".gdb_index"))
		return 0;
	if (sh->sh_size < sizeof(Elf64_Chdr) || sh->sh_size > UNWTAB_DWARF_MAX ||
	    !(d = elf_getdata_rawchunk(elf, (int64_t)sh->sh_offset, sizeof(Elf64_Chdr),
				       ELF_T_BYTE)))
		return sh->sh_size;
	h = d->d_buf;
	if (sh->sh_flags & SHF_COMPRESSED) /* Elf64_Chdr, little-endian: ch_size at 8 */
		for (i = 15; i >= 8; i--)
			n = n << 8 | h[i];
	else if (!strncmp(name, ".zdebug", 7) && !memcmp(h, "ZLIB", 4)) /* then big-endian */
		for (i = 4; i < 12; i++)
			n = n << 8 | h[i];
	return add_sat(sh->sh_size, n);
}

/*
 * The data of the one section of a name libdw looks for, NULL when empty: libdw takes the
 * first or the last of several, and reads an .eh_frame compressed or not as it lies, so any
 * of that would make this file check other bytes than libdw runs: refused.
 */
/* What dwarf_begin_elf would read and inflate of the file, saturated. */
static uint64_t dwarf_bytes(Elf *elf)
{
	Elf_Scn *scn = NULL;
	uint64_t n = 0;
	const char *name;
	GElf_Shdr sh;
	size_t shstr;

	if (elf_getshdrstrndx(elf, &shstr))
		return 0;
	while (n <= UNWTAB_DWARF_MAX && (scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS &&
		    (name = elf_strptr(elf, shstr, sh.sh_name)))
			n = add_sat(n, dwarf_size(elf, &sh, name));
	return n;
}

static enum unwtab_err eh_scn(Elf_Scn *scn, const GElf_Shdr *sh, bool *seen, Elf_Data **d,
			      uint64_t *addr)
{
	if (*seen || (sh->sh_flags & SHF_COMPRESSED))
		return UNWTAB_E_BAD_CFI;
	if (sh->sh_size > UNWTAB_SECTION_MAX)
		return UNWTAB_E_TOO_BIG;
	*seen = true;
	*d = elf_rawdata(scn, NULL);
	if (*d && !(*d)->d_buf)
		*d = NULL;
	*addr = sh->sh_addr;
	return UNWTAB_OK;
}

/*
 * .eh_frame, .eh_frame_hdr and .debug_frame, as libdw finds them. .debug_frame is used only
 * when it is the one section naming it (libdw also reads .zdebug_frame and DWO or LTO
 * copies, and its choice among them is its own).
 */
static enum unwtab_err find_scns(Elf *elf, struct cfi_scns *s)
{
	Elf_Scn *scn = NULL, *debug = NULL;
	unsigned int ndebug = 0;
	bool eh = false, hdr = false;
	enum unwtab_err why = UNWTAB_OK;
	const char *name;
	GElf_Shdr sh;
	size_t shstr;

	memset(s, 0, sizeof(*s));
	if (elf_getshdrstrndx(elf, &shstr))
		return UNWTAB_OK;
	while (!why && (scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstr, sh.sh_name);
		if (!name)
			continue;
		if (!strcmp(name, ".eh_frame"))
			why = eh_scn(scn, &sh, &eh, &s->eh, &s->eh_addr);
		else if (!strcmp(name, ".eh_frame_hdr"))
			why = eh_scn(scn, &sh, &hdr, &s->hdr, &s->hdr_addr);
		else if (strstr(name, "debug_frame")) {
			ndebug++;
			debug = strcmp(name, ".debug_frame") ? NULL : scn;
		} else if (!strcmp(name, ".init") || !strcmp(name, ".fini")) {
			s->crt[name[1] == 'f'] = scn;
		}
	}
	if (ndebug == 1)
		s->debug = debug;
	return why;
}

/*
 * Largest DWARF register number a CFI instruction may name. libdw grows each frame state to
 * the largest register named: DW_CFA_offset_extended of register 2^32 makes it allocate and
 * clear 64 GiB (found by fuzz_unwtab). x86-64 numbers stop at 130 (the mask registers).
 */
#define UNWTAB_MAX_REG 255

/* --- FDE enumeration: the pointer encodings of the CIE's 'R' augmentation ------------- */

static bool uleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned int shift = 0;

	*v = 0;
	while (*p < end) {
		uint8_t b = *(*p)++;

		if (shift < 64)
			*v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

static bool sleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned int shift = 0;
	uint8_t b = 0;

	*v = 0;
	while (*p < end) {
		b = *(*p)++;
		if (shift < 64)
			*v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				*v |= ~0ull << shift;
			return true;
		}
	}
	return false;
}

/* Little-endian n-byte value, sign-extended if sign. */
static bool fixed(const uint8_t **p, const uint8_t *end, unsigned int n, bool sign, uint64_t *v)
{
	unsigned int i;

	if ((size_t)(end - *p) < n)
		return false;
	*v = 0;
	for (i = 0; i < n; i++)
		*v |= (uint64_t)(*p)[i] << (8 * i);
	if (sign && n < 8 && ((*v >> (8 * n - 1)) & 1))
		*v |= ~0ull << (8 * n);
	*p += n;
	return true;
}

/* One value in the format (low nibble) of enc; the application (pc-relative) is the caller's. */
static bool read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t *v)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return fixed(p, end, 8, false, v);
	case DW_EH_PE_uleb128:
		return uleb(p, end, v);
	case DW_EH_PE_sleb128:
		return sleb(p, end, v);
	case DW_EH_PE_udata2:
		return fixed(p, end, 2, false, v);
	case DW_EH_PE_sdata2:
		return fixed(p, end, 2, true, v);
	case DW_EH_PE_udata4:
		return fixed(p, end, 4, false, v);
	case DW_EH_PE_sdata4:
		return fixed(p, end, 4, true, v);
	default:
		return false;
	}
}

static bool reg_ok(const uint8_t **p, const uint8_t *end)
{
	uint64_t reg;

	return uleb(p, end, &reg) && reg <= UNWTAB_MAX_REG;
}

/* Skips a DW_FORM_block operand (an expression): a ULEB128 length and the bytes. */
static bool skip_block(const uint8_t **p, const uint8_t *end)
{
	uint64_t len;

	if (!uleb(p, end, &len) || len > (uint64_t)(end - *p))
		return false;
	*p += len;
	return true;
}

/*
 * Whether libdw may run the CFI instructions [p, end): every register they name is at most
 * UNWTAB_MAX_REG. This only steps over operands; libdw interprets. An opcode unknown here is
 * left to libdw, which refuses it without reading further.
 */
static bool insns_safe(const uint8_t *p, const uint8_t *end, uint8_t enc)
{
	uint64_t v;

	while (p < end) {
		uint8_t op = *p++;
		bool ok;

		switch (op & 0xc0) {
		case DW_CFA_advance_loc:
		case DW_CFA_restore:
			continue;
		case DW_CFA_offset:
			if (!uleb(&p, end, &v))
				return false;
			continue;
		}
		switch (op) {
		case DW_CFA_nop:
		case DW_CFA_remember_state:
		case DW_CFA_restore_state:
			ok = true;
			break;
		case DW_CFA_set_loc:
			ok = read_encoded(&p, end, enc, &v);
			break;
		case DW_CFA_advance_loc1:
			ok = fixed(&p, end, 1, false, &v);
			break;
		case DW_CFA_advance_loc2:
			ok = fixed(&p, end, 2, false, &v);
			break;
		case DW_CFA_advance_loc4:
			ok = fixed(&p, end, 4, false, &v);
			break;
		case DW_CFA_def_cfa_offset:
		case DW_CFA_GNU_args_size:
			ok = uleb(&p, end, &v);
			break;
		case DW_CFA_def_cfa_offset_sf:
			ok = sleb(&p, end, &v);
			break;
		case DW_CFA_restore_extended:
		case DW_CFA_undefined:
		case DW_CFA_same_value:
		case DW_CFA_def_cfa_register:
			ok = reg_ok(&p, end);
			break;
		case DW_CFA_offset_extended:
		case DW_CFA_register:
		case DW_CFA_def_cfa:
		case DW_CFA_val_offset:
		case DW_CFA_GNU_negative_offset_extended:
			/* DW_CFA_register's second operand is a register too: bounded as well. */
			ok = reg_ok(&p, end) &&
			     (op == DW_CFA_register ? reg_ok(&p, end) : uleb(&p, end, &v));
			break;
		case DW_CFA_offset_extended_sf:
		case DW_CFA_def_cfa_sf:
		case DW_CFA_val_offset_sf:
			ok = reg_ok(&p, end) && sleb(&p, end, &v);
			break;
		case DW_CFA_def_cfa_expression:
			ok = skip_block(&p, end);
			break;
		case DW_CFA_expression:
		case DW_CFA_val_expression:
			ok = reg_ok(&p, end) && skip_block(&p, end);
			break;
		default:
			return true;
		}
		if (!ok)
			return false;
	}
	return true;
}

/*
 * The FDE pointer encoding from a CIE's augmentation ("zR", "zPLR", "zRS", ...), read as libdw
 * reads it (cie.c): an empty string (.debug_frame) means absolute 8-byte addresses, an
 * unknown letter after 'z' is passed over without data. What cannot be parsed within the
 * CIE's augmentation data is not ok.
 */
static void parse_cie(const Dwarf_CIE *c, struct cie *out)
{
	const char *a = c->augmentation;
	const uint8_t *p = c->augmentation_data;
	const uint8_t *end = p ? p + c->augmentation_data_size : NULL;
	uint64_t skip;

	out->enc = DW_EH_PE_absptr;
	out->ok = a && (!a[0] || (a[0] == 'z' && p));
	out->len = (uint32_t)(c->initial_instructions_end - c->initial_instructions);
	out->z = out->ok && a[0] == 'z';
	if (!out->ok || !a[0])
		goto insns;
	for (a++; *a; a++) {
		switch (*a) {
		case 'R':
			if (p >= end)
				goto bad;
			out->enc = *p++;
			break;
		case 'L':
			if (p++ >= end)
				goto bad;
			break;
		case 'P':
			if (p >= end)
				goto bad;
			skip = *p++;
			if (!read_encoded(&p, end, (uint8_t)skip, &skip))
				goto bad;
			break;
		default:
			/* 'S' (a signal frame: see the FDE's rows), 'B', 'G' and unknown ones. */
			break;
		}
	}
insns:
	out->safe = insns_safe(c->initial_instructions, c->initial_instructions_end, out->enc);
	return;
bad:
	out->ok = false;
	out->safe = false;
}

static const struct cie *cie_find(const struct cies *cs, uint64_t off)
{
	size_t lo = 0, hi = cs->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cs->c[mid].off == off)
			return &cs->c[mid];
		if (cs->c[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/*
 * The range [lo, hi) an FDE covers: false if it cannot be decoded as libdw decodes it
 * (pc-relative only in .eh_frame, where libdw counts from the section's address); an empty
 * range (hi <= lo) is one libdw passes over too.
 */
static bool fde_range(const Dwarf_FDE *f, const struct cie *c, uint64_t field_vaddr, bool eh,
		      struct range *r)
{
	const uint8_t *p = f->start, *end = f->end;
	uint64_t lo, len;

	if (!c->ok || c->enc == DW_EH_PE_omit || (c->enc & DW_EH_PE_indirect))
		return false;
	if (!read_encoded(&p, end, c->enc, &lo) || !read_encoded(&p, end, c->enc & 0x0f, &len))
		return false;
	switch (c->enc & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		if (!eh)
			return false;
		lo += field_vaddr;
		break;
	default:
		return false;
	}
	r->lo = lo;
	r->hi = lo + len;
	r->cost = c->len + (uint32_t)(f->end - f->start);
	r->unsafe = !c->safe || (c->z && !skip_block(&p, end)) || !insns_safe(p, end, c->enc);
	return true;
}

/* Ranges by start, the longer first at an equal start. */
static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->hi != y->hi)
		return x->hi > y->hi ? -1 : 1;
	return 0;
}

/*
 * Whether an unsafe FDE overlaps another (any decoded ranges of one section, sorted here).
 * libdw picks the FDE for an address by itself (its sorted table, .eh_frame_hdr's): where
 * ranges overlap it may run the unsafe one's instructions for the other's addresses, which
 * insns_safe exists to prevent (a register of 2^28 had it allocate 2 GiB). Compilers never
 * emit overlapping FDEs: such a section is refused whole.
 */
static bool unsafe_overlap(struct ranges *all)
{
	uint64_t end = 0;
	bool unsafe = false; /* the first of the cluster of overlapping ranges that ends at end */

	if (all->n)
		qsort(all->r, all->n, sizeof(*all->r), range_cmp);
	for (size_t i = 0; i < all->n; i++) {
		const struct range *r = &all->r[i];

		if (i && r->lo < end) {
			if (unsafe || r->unsafe)
				return true;
			end = r->hi > end ? r->hi : end;
		} else {
			end = r->hi;
			unsafe = r->unsafe;
		}
	}
	return false;
}

/* Appends r to rr. */
static bool append(struct ranges *rr, const struct range *r)
{
	if (!grow((void **)&rr->r, &rr->cap, rr->n + 1, sizeof(*rr->r)))
		return false;
	rr->r[rr->n++] = *r;
	return true;
}

/*
 * One FDE (its CIE c, NULL when no CIE before it is at its CIE pointer): into all once
 * decoded, and into rr too when inside an executable segment; an empty one is dropped,
 * counted. One that cannot be decoded refuses the section: libdw would read it otherwise
 * (a CIE at any offset it is pointed to, other encodings), and may then run instructions
 * never checked for any address.
 */
static enum unwtab_err add_fde(struct build *b, const Dwarf_FDE *f, const struct cie *c,
			       uint64_t field_vaddr, bool debug, struct ranges *all,
			       struct ranges *rr)
{
	struct range r = {.debug = debug};

	if (!c || !fde_range(f, c, field_vaddr, !debug, &r))
		return UNWTAB_E_BAD_CFI;
	if (r.hi <= r.lo) {
		b->t->st.fdes_dropped++;
		return UNWTAB_OK;
	}
	if (!append(all, &r))
		return UNWTAB_E_NOMEM;
	if (!seg_of(b->t, r.lo, r.hi)) {
		b->t->st.fdes_dropped++;
		return UNWTAB_OK;
	}
	return append(rr, &r) ? UNWTAB_OK : UNWTAB_E_NOMEM;
}

/*
 * Every FDE of one CFI section (at vaddr) into rr, keeping those inside an executable
 * segment, and each one's offset into fdes (if not NULL). A section libdw cannot walk to
 * its end is refused: its FDE list would be silently partial.
 */
static enum unwtab_err enumerate(struct build *b, Elf_Data *d, uint64_t vaddr, bool eh,
				 struct ranges *rr, struct offs *fdes)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(b->elf, NULL);
	struct cies cs = {0};
	struct ranges all = {0}; /* every FDE decoded, inside the text or not */
	enum unwtab_err why = UNWTAB_OK;
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry e;
	int rc;

	while ((rc = dwarf_next_cfi(ident, d, eh, off, &next, &e)) == 0) {
		if (next <= off) {
			why = UNWTAB_E_BAD_CFI;
			break;
		}
		if (e.CIE_id == LIBDW_CIE_ID) {
			if (!grow((void **)&cs.c, &cs.cap, cs.n + 1, sizeof(*cs.c))) {
				why = UNWTAB_E_NOMEM;
				break;
			}
			cs.c[cs.n].off = off;
			parse_cie(&e.cie, &cs.c[cs.n++]);
		} else {
			if (fdes &&
			    !grow((void **)&fdes->v, &fdes->cap, fdes->n + 1, sizeof(*fdes->v))) {
				why = UNWTAB_E_NOMEM;
				break;
			}
			if (fdes)
				fdes->v[fdes->n++] = off;
			why = add_fde(b, &e.fde, cie_find(&cs, e.fde.CIE_pointer),
				      vaddr + (uint64_t)(e.fde.start - (const uint8_t *)d->d_buf),
				      !eh, &all, rr);
			if (why)
				break;
		}
		off = next;
	}
	if (rc < 0 && why == UNWTAB_OK)
		why = UNWTAB_E_BAD_CFI;
	if (why == UNWTAB_OK && unsafe_overlap(&all))
		why = UNWTAB_E_BAD_CFI;
	free(all.r);
	free(cs.c);
	return why;
}

static bool off_known(const struct offs *o, uint64_t off)
{
	size_t lo = 0, hi = o->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (o->v[mid] == off)
			return true;
		if (o->v[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/*
 * .eh_frame_hdr's search table, which libdw reads to find an address's FDE when it has one
 * (dwarf_getcfi_elf.c, fde.c): libdw parses whatever lies at the offset an entry names, so
 * every entry must name an FDE of the chain, whose instructions enumerate checked. Linkers
 * write one layout (version 1, a pc-relative sdata4 pointer to .eh_frame, a udata4 count,
 * datarel sdata4 pairs); a table libdw would read in any other is refused.
 */
static enum unwtab_err check_hdr(const struct cfi_scns *s, const struct offs *fdes)
{
	const uint8_t *h = s->hdr->d_buf, *end = h + s->hdr->d_size, *p = h + 4;
	uint64_t ptr, n, loc, fde;

	if (s->hdr->d_size < 4 || h[0] != 1 || h[1] == DW_EH_PE_omit)
		return UNWTAB_OK; /* libdw reads no CFI from the file */
	if (h[1] != (DW_EH_PE_pcrel | DW_EH_PE_sdata4) || !fixed(&p, end, 4, true, &ptr))
		return UNWTAB_E_BAD_CFI;
	if (s->hdr_addr + 4 + ptr != s->eh_addr || h[2] == DW_EH_PE_omit)
		return UNWTAB_OK; /* libdw sets the table aside */
	if (h[2] != DW_EH_PE_udata4 || !fixed(&p, end, 4, false, &n))
		return UNWTAB_E_BAD_CFI;
	if (!n)
		return UNWTAB_OK;
	if (h[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4) || n > (uint64_t)(end - p) / 8)
		return UNWTAB_E_BAD_CFI;
	while (n--) {
		if (!fixed(&p, end, 4, true, &loc) || !fixed(&p, end, 4, true, &fde) ||
		    !off_known(fdes, s->hdr_addr + fde - s->eh_addr))
			return UNWTAB_E_BAD_CFI;
	}
	return UNWTAB_OK;
}

/* --- overlaps: sorted, disjoint ranges; .eh_frame wins over .debug_frame --------------- */

/*
 * Sorts and makes disjoint: an FDE starting inside an earlier one is clipped to start where
 * that one ends, and dropped if nothing remains (compilers never emit overlapping FDEs).
 */
static void disjoin(struct ranges *rr, uint32_t *dropped)
{
	size_t i, n = 0;
	uint64_t end = 0;

	if (rr->n)
		qsort(rr->r, rr->n, sizeof(*rr->r), range_cmp);
	for (i = 0; i < rr->n; i++) {
		struct range r = rr->r[i];

		if (n && r.lo < end)
			r.lo = end;
		if (r.lo >= r.hi) {
			(*dropped)++;
			continue;
		}
		end = r.hi;
		rr->r[n++] = r;
	}
	rr->n = n;
}

/* Index of the first of the n ranges r ending after addr. */
static size_t first_after(const struct range *r, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r[mid].hi <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Appends to eh the parts of one .debug_frame range that eh's first neh ranges leave free. */
static enum unwtab_err subtract(struct ranges *eh, size_t neh, struct range r, bool *kept)
{
	size_t j = first_after(eh->r, neh, r.lo);
	uint64_t cut;

	while (r.lo < r.hi) {
		cut = j < neh && eh->r[j].lo < r.hi ? eh->r[j].lo : r.hi;
		if (cut > r.lo) {
			struct range part = r;

			part.hi = cut;
			if (!append(eh, &part))
				return UNWTAB_E_NOMEM;
			*kept = true;
		}
		if (cut == r.hi)
			break;
		if (eh->r[j].hi > r.lo)
			r.lo = eh->r[j].hi;
		j++;
	}
	return UNWTAB_OK;
}

/* The parts of .debug_frame's ranges that .eh_frame leaves uncovered, merged into eh. */
static enum unwtab_err merge_debug(struct ranges *eh, const struct ranges *dbg, uint32_t *dropped)
{
	size_t neh = eh->n, i;
	enum unwtab_err why;
	bool kept;

	for (i = 0; i < dbg->n; i++) {
		kept = false;
		if ((why = subtract(eh, neh, dbg->r[i], &kept)))
			return why;
		if (!kept)
			(*dropped)++;
	}
	if (eh->n)
		qsort(eh->r, eh->n, sizeof(*eh->r), range_cmp);
	return UNWTAB_OK;
}

/* --- compiling one rule ---------------------------------------------------------------- */

static bool fits_s32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

/* The PLT's CFA: rsp + 8 + ((rip & 15) >= threshold ? 8 : 0), as ld writes it. */
static bool plt_expr(const Dwarf_Op *o, size_t n, int32_t *threshold)
{
	static const uint8_t atoms[9] = {DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and, 0,
					 DW_OP_ge,    DW_OP_lit3,   DW_OP_shl,	 DW_OP_plus};
	size_t i;

	if (n != 9 || o[0].number != 8 || o[1].number != 0)
		return false;
	for (i = 0; i < 9; i++)
		if (i != 4 && o[i].atom != atoms[i])
			return false;
	if (o[4].atom != DW_OP_lit10 && o[4].atom != DW_OP_lit11)
		return false;
	*threshold = o[4].atom - DW_OP_lit0;
	return true;
}

/* The CFA rule into r, false if the walk cannot evaluate it. */
static bool cfa_rule(Dwarf_Frame *f, struct ember_unwind_row *r)
{
	Dwarf_Op *o;
	size_t n;
	int64_t reg, off;
	int32_t threshold;

	if (dwarf_frame_cfa(f, &o, &n) || !n)
		return false;
	if (plt_expr(o, n, &threshold)) {
		r->cfa_kind = EMBER_CFA_PLT;
		r->cfa_off = threshold;
		return true;
	}
	if (n != 1)
		return false;
	if (o[0].atom == DW_OP_bregx) {
		reg = (int64_t)o[0].number;
		off = (int64_t)o[0].number2;
	} else if (o[0].atom == DW_OP_breg3 || o[0].atom == DW_OP_breg6 ||
		   o[0].atom == DW_OP_breg7) {
		reg = o[0].atom - DW_OP_breg0;
		off = (int64_t)o[0].number;
	} else {
		return false;
	}
	if ((reg != REG_RSP && reg != REG_RBP && reg != REG_RBX) || !fits_s32(off))
		return false;
	r->cfa_kind = reg == REG_RSP ? EMBER_CFA_RSP :
		      reg == REG_RBP ? EMBER_CFA_RBP :
				       EMBER_CFA_RBX;
	r->cfa_off = (int32_t)off;
	return true;
}

/* Where a register is saved: "offset(N)" (at CFA + N) gives true and N. */
static bool saved_at_cfa(const Dwarf_Op *o, size_t n, int64_t *off)
{
	if (n < 1 || n > 2 || o[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (n == 1) {
		*off = 0;
		return true;
	}
	if (o[1].atom != DW_OP_plus_uconst)
		return false;
	*off = (int64_t)o[1].number;
	return true;
}

enum reg_rule { RULE_UNDEFINED, RULE_SAME, RULE_CFA, RULE_OTHER };

static enum reg_rule reg_rule(Dwarf_Frame *f, int reg, int64_t *off)
{
	Dwarf_Op mem[3], *o;
	size_t n;

	if (dwarf_frame_register(f, reg, mem, &o, &n))
		return RULE_OTHER;
	if (!n)
		return o ? RULE_UNDEFINED : RULE_SAME;
	return saved_at_cfa(o, n, off) ? RULE_CFA : RULE_OTHER;
}

/*
 * Where frame f finds its caller's reg (rbp or rbx): unchanged (also where
 * undefined) or saved at CFA + *off. False for any other rule.
 */
static bool saved_rule(Dwarf_Frame *f, int reg, __u8 *kind, __s16 *off)
{
	int64_t o;

	switch (reg_rule(f, reg, &o)) {
	case RULE_UNDEFINED:
	case RULE_SAME:
		*kind = EMBER_RBP_SAME;
		*off = 0;
		return true;
	case RULE_CFA:
		if (o < INT16_MIN || o > INT16_MAX)
			return false;
		*kind = EMBER_RBP_CFA;
		*off = (int16_t)o;
		return true;
	default:
		return false;
	}
}

/* The row for the rule of frame f (its pc is the caller's). */
static struct ember_unwind_row compile(Dwarf_Frame *f)
{
	struct ember_unwind_row r = {.cfa_kind = EMBER_CFA_FP};
	bool signal = false;
	int64_t off;
	int ra;

	ra = dwarf_frame_info(f, NULL, NULL, &signal);
	if (signal) {
		r.cfa_kind = EMBER_CFA_SIGNAL;
		return r;
	}
	if (ra != REG_RA)
		return r;
	switch (reg_rule(f, REG_RA, &off)) {
	case RULE_UNDEFINED:
		r.cfa_kind = EMBER_CFA_END;
		return r;
	case RULE_CFA:
		if (off == -8)
			break;
		return r;
	default:
		return r;
	}
	if (!cfa_rule(f, &r) || !saved_rule(f, REG_RBP, &r.rbp_kind, &r.rbp_off))
		goto fp;
	/* a rule for rbx the walk cannot follow spoils only an rbx-based CFA further out */
	if (!saved_rule(f, REG_RBX, &r.rbx_kind, &r.rbx_off)) {
		r.rbx_kind = EMBER_RBP_LOST;
		r.rbx_off = 0;
	}
	return r;
fp:
	return (struct ember_unwind_row){.cfa_kind = EMBER_CFA_FP};
}

/* --- rows -------------------------------------------------------------------------------- */

static bool same_rule(const struct ember_unwind_row *a, const struct ember_unwind_row *b)
{
	return a->cfa_kind == b->cfa_kind && a->rbp_kind == b->rbp_kind &&
	       a->rbp_off == b->rbp_off && a->cfa_off == b->cfa_off && a->rbx_kind == b->rbx_kind &&
	       a->rbx_off == b->rbx_off;
}

/* Appends the rule r from vaddr on, merged into an equal neighbour or one at the same pc. */
static enum unwtab_err push(struct build *b, uint64_t vaddr, struct ember_unwind_row r)
{
	struct unwtab *t = b->t;
	struct ember_unwind_row *last = t->nrows ? &t->rows[t->nrows - 1] : NULL;

	r.pc = (uint32_t)(vaddr - t->base);
	if (last && last->pc == r.pc) {
		*last = r;
		if (t->nrows > 1 && same_rule(&t->rows[t->nrows - 2], last))
			t->nrows--;
		return UNWTAB_OK;
	}
	if (last && same_rule(last, &r))
		return UNWTAB_OK;
	if (t->nrows >= EMBER_UNWIND_ROWS_PER_TABLE_MAX)
		return UNWTAB_E_TOO_BIG;
	if (!grow((void **)&t->rows, &b->cap, t->nrows + 1, sizeof(*t->rows)))
		return UNWTAB_E_NOMEM;
	t->rows[t->nrows++] = r;
	return UNWTAB_OK;
}

/* Every row of one FDE range. Instructions libdw refuses become one EMBER_CFA_FP row. */
static enum unwtab_err walk_crt(struct build *b, const struct range *rg)
{
	const struct ember_unwind_row entry = {.cfa_kind = EMBER_CFA_RSP, .cfa_off = 8},
				      body = {.cfa_kind = EMBER_CFA_RSP, .cfa_off = 16};
	enum unwtab_err why;

	b->t->st.crt++;
	if ((why = push(b, rg->lo, entry)) || (why = push(b, rg->lo + rg->sub_end, body)))
		return why;
	return push(b, rg->lo + rg->add_end, entry);
}

static enum unwtab_err walk_range(struct build *b, const struct range *rg)
{
	Dwarf_CFI *cfi = rg->debug ? b->debug : b->eh;
	uint64_t addr = rg->lo;
	enum unwtab_err why;
	Dwarf_Addr start, end;
	Dwarf_Frame *f;

	if (rg->crt)
		return walk_crt(b, rg);
	if (rg->unsafe) {
		b->t->st.fdes_bad++;
		return push(b, addr, (struct ember_unwind_row){.cfa_kind = EMBER_CFA_FP});
	}
	while (addr < rg->hi) {
		b->work += rg->cost + 16;
		if (b->work > UNWTAB_WORK_MAX)
			return UNWTAB_E_TOO_BIG;
		if (dwarf_cfi_addrframe(cfi, addr, &f)) {
			b->t->st.fdes_bad++;
			return push(b, addr, (struct ember_unwind_row){.cfa_kind = EMBER_CFA_FP});
		}
		if (dwarf_frame_info(f, &start, &end, NULL) < 0 || start > addr || end <= addr) {
			free(f);
			b->t->st.fdes_bad++;
			return push(b, addr, (struct ember_unwind_row){.cfa_kind = EMBER_CFA_FP});
		}
		why = push(b, addr, compile(f));
		free(f);
		if (why)
			return why;
		addr = end < rg->hi ? end : rg->hi;
	}
	return UNWTAB_OK;
}

/*
 * n bytes of the file at offset off, or NULL where they cannot be read: from the image, or
 * the fd through the window (one pread for the gaps of UNWTAB_CODE_WIN bytes of code).
 */
static const uint8_t *code_at(struct code_src *c, uint64_t off, size_t n)
{
	ssize_t got;

	if (c->image)
		return off <= c->len && n <= c->len - off ? c->image + off : NULL;
	if (c->fd < 0 || n > UNWTAB_CODE_WIN)
		return NULL;
	if (c->win && off >= c->win_off && off - c->win_off <= c->win_len &&
	    n <= c->win_len - (off - c->win_off))
		return c->win + (off - c->win_off);
	if (!c->win && !(c->win = malloc(UNWTAB_CODE_WIN)))
		return NULL;
	got = pread(c->fd, c->win, UNWTAB_CODE_WIN, (off_t)off);
	c->win_off = off;
	c->win_len = got > 0 ? (size_t)got : 0;
	return n <= c->win_len ? c->win : NULL;
}

size_t unwtab_pad_len(const uint8_t *p, size_t n)
{
	size_t i = 0, len;
	uint8_t modrm, mod, rm;

	if (n > 15)
		n = 15; /* an x86 instruction's longest */
	while (i < n && (p[i] == 0x66 || p[i] == 0x2e))
		i++; /* operand-size and cs prefixes: gas's longer nops */
	if (i < n && p[i] == 0x90)
		return i + 1; /* nop, xchg %ax,%ax */
	if (n - i < 3 || p[i] != 0x0f || p[i + 1] != 0x1f || ((p[i + 2] >> 3) & 7))
		return 0; /* 0f 1f /0: nopl/nopw with a memory operand */
	modrm = p[i + 2];
	mod = modrm >> 6;
	rm = modrm & 7;
	len = i + 3;
	if (mod != 3 && rm == 4) { /* a SIB byte; with no base, a disp32 */
		if (len >= n)
			return 0;
		len += mod == 0 && (p[len] & 7) == 5 ? 5 : 1;
	} else if (mod == 0 && rm == 5) {
		len += 4; /* rip + disp32 */
	}
	len += mod == 1 ? 1 : mod == 2 ? 4 : 0;
	return len <= n ? len : 0;
}

/* Whether [lo, hi), between two FDEs, is nothing but alignment padding (nops). */
static bool gap_is_padding(struct build *b, uint64_t lo, uint64_t hi)
{
	const struct unwtab_seg *s = seg_of(b->t, lo, hi);
	const uint8_t *p;
	size_t n = hi - lo, i, len;

	if (hi - lo > UNWTAB_PAD_MAX || !s || hi - s->vaddr > s->filesz)
		return false;
	if (!(p = code_at(&b->code, s->offset + (lo - s->vaddr), n)))
		return false;
	for (i = 0; i < n; i += len)
		if (!(len = unwtab_pad_len(p + i, n - i)))
			return false;
	return true;
}

static enum unwtab_err walk_all(struct build *b, const struct ranges *rr)
{
	const struct ember_unwind_row none = {.cfa_kind = EMBER_CFA_NONE};
	struct unwtab *t = b->t;
	uint64_t prev = t->base;
	enum unwtab_err why;
	size_t i;

	for (i = 0; i < rr->n; i++) {
		/*
		 * padding after an FDE is run only by falling through from its code, into
		 * the next (glibc's __memcpy_chk into memmove): the rule at the FDE's end
		 * holds there; elsewhere, no rule (frame pointers)
		 */
		if (i && rr->r[i].lo > prev && gap_is_padding(b, prev, rr->r[i].lo))
			t->st.pads++;
		else if (rr->r[i].lo > prev && (why = push(b, prev, none)))
			return why;
		if ((why = walk_range(b, &rr->r[i])))
			return why;
		prev = rr->r[i].hi;
		t->st.fdes += !rr->r[i].crt;
		t->st.from_debug_frame += rr->r[i].debug;
	}
	return push(b, prev, none);
}

static void count_rows(struct unwtab *t)
{
	size_t i;

	t->st.rows = (uint32_t)t->nrows;
	for (i = 0; i < t->nrows; i++) {
		switch (t->rows[i].cfa_kind) {
		case EMBER_CFA_FP:
			t->st.rows_fp++;
			break;
		case EMBER_CFA_PLT:
			t->st.rows_plt++;
			break;
		case EMBER_CFA_END:
			t->st.rows_end++;
			break;
		case EMBER_CFA_SIGNAL:
			t->st.rows_signal++;
			break;
		case EMBER_CFA_NONE:
			t->st.gaps++;
			break;
		}
	}
}

/* Gives back what doubling the array over-allocated: tables are cached for long. */
static void shrink(struct unwtab *t)
{
	void *p = realloc(t->rows, t->nrows * sizeof(*t->rows));

	if (p)
		t->rows = p;
}

/* --- entry points ------------------------------------------------------------------------ */

/*
 * .debug_frame's data, NULL when none or unread: libdw opens the file's DWARF only when what
 * it would read and inflate stays under UNWTAB_DWARF_MAX.
 */
static Elf_Data *debug_frame(struct build *b, const struct cfi_scns *s, uint64_t *vaddr)
{
	GElf_Shdr sh;

	if (!s->debug)
		return NULL;
	if (dwarf_bytes(b->elf) > UNWTAB_DWARF_MAX) {
		b->t->st.debug_frame_unread = 1;
		return NULL;
	}
	b->dw = dwarf_begin_elf(b->elf, DWARF_C_READ, NULL);
	b->debug = b->dw ? dwarf_getcfi(b->dw) : NULL;
	/* libdw has uncompressed it, or left it: then it reads no CFI from it either. */
	if (!b->debug || !gelf_getshdr(s->debug, &sh) || (sh.sh_flags & SHF_COMPRESSED))
		return NULL;
	*vaddr = sh.sh_addr;
	return elf_getdata(s->debug, NULL);
}

/*
 * The instructions crti.o and crtn.o put between _init's (and _fini's) sub
 * and add: none moves rsp. Their length at p, or 0 for anything else.
 */
static size_t crt_insn(const uint8_t *p, size_t n)
{
	if (n >= 7 && p[0] == 0x48 && p[1] == 0x8b && p[2] == 0x05)
		return 7; /* mov X(%rip),%rax: the weak __gmon_start__ */
	if (n >= 3 && p[0] == 0x48 && p[1] == 0x85 && p[2] == 0xc0)
		return 3; /* test %rax,%rax */
	if (n >= 2 && p[0] == 0x74)
		return 2; /* je over the call */
	if (n >= 2 && p[0] == 0xff && p[1] == 0xd0)
		return 2; /* call *%rax */
	if (n >= 5 && p[0] == 0xe8)
		return 5; /* call rel32: code a library adds to .init */
	if (n >= 1 && p[0] == 0x90)
		return 1; /* nop */
	return 0;
}

bool unwtab_crt_shape(const uint8_t *p, size_t n, uint32_t *sub_end, uint32_t *add_end)
{
	static const uint8_t endbr64[] = {0xf3, 0x0f, 0x1e, 0xfa},
			     sub8[] = {0x48, 0x83, 0xec, 0x08},
			     add8_ret[] = {0x48, 0x83, 0xc4, 0x08, 0xc3};
	size_t i = 0, len;

	if (n > UNWTAB_CRT_MAX)
		return false;
	if (n >= sizeof(endbr64) && !memcmp(p, endbr64, sizeof(endbr64)))
		i = sizeof(endbr64);
	if (n - i < sizeof(sub8) || memcmp(p + i, sub8, sizeof(sub8)))
		return false;
	*sub_end = (uint32_t)(i += sizeof(sub8));
	while (n - i > sizeof(add8_ret)) {
		if (!(len = crt_insn(p + i, n - i)))
			return false;
		i += len;
	}
	if (n - i != sizeof(add8_ret) || memcmp(p + i, add8_ret, sizeof(add8_ret)))
		return false;
	*add_end = (uint32_t)(n - 1);
	return true;
}

/* Whether [lo, hi) overlaps a range of rr (sorted, disjoint). */
static bool covered(const struct ranges *rr, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < rr->n; i++)
		if (rr->r[i].lo < hi && lo < rr->r[i].hi)
			return true;
	return false;
}

/*
 * .init and .fini where no FDE covers them (crti.o and crtn.o have no CFI) and
 * their code has crti/crtn's shape: a range each, with those rules. A page
 * fault on _init's first instruction (its library's first code run) is
 * common in short processes; without rules there, its callers were lost.
 */
static enum unwtab_err add_crt(struct build *b, const struct cfi_scns *s)
{
	struct range r = {.crt = true};
	Elf_Data *d;
	GElf_Shdr sh;
	bool added = false;

	for (size_t i = 0; i < 2; i++) {
		if (!s->crt[i] || !gelf_getshdr(s->crt[i], &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || !sh.sh_size || sh.sh_size > UNWTAB_CRT_MAX)
			continue;
		d = elf_getdata(s->crt[i], NULL);
		r.lo = sh.sh_addr;
		r.hi = sh.sh_addr + sh.sh_size;
		if (!d || !d->d_buf || d->d_size != sh.sh_size || r.hi < r.lo ||
		    !seg_of(b->t, r.lo, r.hi) || covered(&b->eh_r, r.lo, r.hi) ||
		    !unwtab_crt_shape(d->d_buf, d->d_size, &r.sub_end, &r.add_end))
			continue;
		if (!append(&b->eh_r, &r))
			return UNWTAB_E_NOMEM;
		added = true;
	}
	if (added)
		qsort(b->eh_r.r, b->eh_r.n, sizeof(*b->eh_r.r), range_cmp);
	return UNWTAB_OK;
}

/* The CFI sections into ranges: sorted, disjoint, inside the text. */
static enum unwtab_err collect(struct build *b)
{
	struct offs fdes = {0};
	struct cfi_scns s;
	enum unwtab_err why;
	uint64_t vaddr = 0;
	Elf_Data *d;

	if ((why = find_scns(b->elf, &s)))
		return why;
	/* Without the section, libdw would read the file from PT_GNU_EH_FRAME to its end. */
	b->eh = s.eh ? dwarf_getcfi_elf(b->elf) : NULL;
	if (b->eh) {
		why = enumerate(b, s.eh, s.eh_addr, true, &b->eh_r, &fdes);
		if (!why && s.hdr)
			why = check_hdr(&s, &fdes);
		free(fdes.v);
		if (why)
			return why;
	}
	disjoin(&b->eh_r, &b->t->st.fdes_dropped);
	if ((d = debug_frame(b, &s, &vaddr))) {
		if ((why = enumerate(b, d, vaddr, false, &b->debug_r, NULL)))
			return why;
		disjoin(&b->debug_r, &b->t->st.fdes_dropped);
		if ((why = merge_debug(&b->eh_r, &b->debug_r, &b->t->st.fdes_dropped)))
			return why;
	}
	if (!b->eh_r.n)
		return UNWTAB_E_NO_CFI;
	return add_crt(b, &s);
}

/* The table spans from the start of the segment holding the first FDE to the last FDE's end. */
static enum unwtab_err span(struct build *b)
{
	const struct ranges *rr = &b->eh_r;
	const struct unwtab_seg *s = seg_of(b->t, rr->r[0].lo, rr->r[0].hi);

	b->t->base = s->vaddr;
	b->t->end = rr->r[rr->n - 1].hi;
	if (b->t->end - b->t->base > UINT32_MAX)
		return UNWTAB_E_TOO_BIG;
	return UNWTAB_OK;
}

/* Compiles elf's table; the padding between its FDEs is read from code. */
static int build_elf(Elf *elf, struct code_src code, struct unwtab *out, enum unwtab_err *why)
{
	struct build b = {.elf = elf, .t = out, .code = code};
	enum unwtab_err err;

	memset(out, 0, sizeof(*out));
	err = check_elf(elf);
	if (!err)
		err = read_segs(elf, out);
	if (!err)
		err = collect(&b);
	if (!err)
		err = span(&b);
	if (!err)
		err = walk_all(&b, &b.eh_r);
	if (b.eh)
		dwarf_cfi_end(b.eh);
	if (b.dw)
		dwarf_end(b.dw);
	free(b.eh_r.r);
	free(b.debug_r.r);
	free(b.code.win);
	if (err) {
		free(out->rows);
		memset(out, 0, sizeof(*out));
	} else {
		shrink(out);
		count_rows(out);
	}
	if (why)
		*why = err;
	return errno_of(err);
}

static int build_and_end(Elf *elf, struct code_src code, struct unwtab *out, enum unwtab_err *why)
{
	int rc;

	if (!elf) {
		memset(out, 0, sizeof(*out));
		if (why)
			*why = UNWTAB_E_NOT_ELF;
		return errno_of(UNWTAB_E_NOT_ELF);
	}
	rc = build_elf(elf, code, out, why);
	elf_end(elf);
	return rc;
}

int unwtab_build_fd(int fd, struct unwtab *out, enum unwtab_err *why)
{
	struct code_src code = {.fd = fd};

	if (elf_version(EV_CURRENT) == EV_NONE)
		return build_and_end(NULL, code, out, why);
	/* Read, not mapped: see UNWTAB_SECTION_MAX. */
	return build_and_end(elf_begin(fd, ELF_C_READ, NULL), code, out, why);
}

int unwtab_build_mem(const void *image, size_t len, struct unwtab *out, enum unwtab_err *why)
{
	struct code_src code = {.fd = -1, .image = image, .len = len};

	if (elf_version(EV_CURRENT) == EV_NONE)
		return build_and_end(NULL, code, out, why);
	/* libelf only reads an image opened this way: the cast drops const for its API. */
	return build_and_end(elf_memory((char *)image, len), code, out, why);
}

/* Whether the FDE e (in .eh_frame data d at vaddr) covers pc: its range in *r. */
static bool fde_covers(const Dwarf_CFI_Entry *e, const struct cies *cs, const Elf_Data *d,
		       uint64_t vaddr, uint64_t pc, struct range *r)
{
	uint64_t field = vaddr + (uint64_t)(e->fde.start - (const uint8_t *)d->d_buf);
	const struct cie *c = cie_find(cs, e->fde.CIE_pointer);

	return c && fde_range(&e->fde, c, field, true, r) && r->lo <= pc && pc < r->hi;
}

int unwtab_fde_at(Elf *elf, uint64_t pc, uint64_t *lo, uint64_t *hi)
{
	const unsigned char *ident;
	struct cfi_scns scns;
	struct cies cs = {0};
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry e;
	struct range r;
	int rc = -ENOENT;

	if (check_elf(elf) || find_scns(elf, &scns) || !scns.eh)
		return -ENOENT;
	ident = (const unsigned char *)elf_getident(elf, NULL);
	while (rc == -ENOENT && !dwarf_next_cfi(ident, scns.eh, true, off, &next, &e) &&
	       next > off) {
		if (e.CIE_id != LIBDW_CIE_ID) {
			if (fde_covers(&e, &cs, scns.eh, scns.eh_addr, pc, &r)) {
				*lo = r.lo;
				*hi = r.hi;
				rc = 0;
			}
		} else if (grow((void **)&cs.c, &cs.cap, cs.n + 1, sizeof(*cs.c))) {
			cs.c[cs.n].off = off;
			parse_cie(&e.cie, &cs.c[cs.n++]);
		} else {
			rc = -ENOMEM;
		}
		off = next;
	}
	free(cs.c);
	return rc;
}

void unwtab_free(struct unwtab *t)
{
	if (!t)
		return;
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

const struct ember_unwind_row *unwtab_find(const struct unwtab *t, uint64_t vaddr)
{
	size_t lo = 0, hi;
	uint64_t pc;

	if (!t || !t->nrows || vaddr < t->base || vaddr >= t->end)
		return NULL;
	pc = vaddr - t->base;
	hi = t->nrows;
	/* The last row with row.pc <= pc; rows[0].pc is 0. */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= pc)
			lo = mid;
		else
			hi = mid;
	}
	return &t->rows[lo];
}
