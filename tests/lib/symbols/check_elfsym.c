// SPDX-License-Identifier: MIT
/*
 * elfsym against the fixture binaries, with binutils (nm, readelf) as the
 * independent reader of the expected answers; and hostile, broken buffers.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfsym.h"
#include "nm.h"
#include "suites.h"

#define FX(name) FIXTURE_DIR "/" name

/* The entry point readelf -h gives, or 0. */
static uint64_t readelf_entry(const char *file)
{
	unsigned long long entry = 0;
	char cmd[1024], line[1024];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -h '%s'", file);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p))
		sscanf(line, " Entry point address: %llx", &entry);
	pclose(p);
	return entry;
}

/* The build-id as readelf -n prints it, or "". */
static void readelf_build_id(const char *file, char *out, size_t len)
{
	char cmd[1024], line[1024], *id;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s'", file);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	out[0] = '\0';
	while (fgets(line, sizeof(line), p)) {
		id = strstr(line, "Build ID: ");
		if (id)
			snprintf(out, len, "%.*s", (int)strcspn(id + 10, "\n"), id + 10);
	}
	pclose(p);
}

static struct elf_syms *load_file(const char *path)
{
	struct elf_syms *s;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	s = elf_syms_load_fd(fd);
	close(fd);
	ck_assert_msg(s != NULL, "%s: %s", path, strerror(errno));
	return s;
}

/* Address addr is unnamed, or named other than name. */
static void check_not_named(const struct elf_syms *s, uint64_t addr, const char *name)
{
	const char *got = elf_syms_lookup(s, addr);

	ck_assert_msg(got == NULL || strcmp(got, name) != 0, "%#lx is named %s",
		      (unsigned long)addr, name);
}

/* name is found at its nm address, one byte in, and not just before it. */
static void check_named(const struct elf_syms *s, const char *nm_file, bool dynamic,
			const char *name)
{
	uint64_t addr = nm_symbol(nm_file, name, dynamic, NULL);

	ck_assert_msg(addr != 0, "nm finds no %s in %s", name, nm_file);
	ck_assert_str_eq(elf_syms_lookup(s, addr), name);
	ck_assert_str_eq(elf_syms_lookup(s, addr + 1), name);
	check_not_named(s, addr - 1, name);
}

static void check_build_id(const struct elf_syms *s, const char *file)
{
	char want[256];

	readelf_build_id(file, want, sizeof(want));
	ck_assert_uint_eq(strlen(want), 40);
	ck_assert_str_eq(elf_syms_build_id(s), want);
}

START_TEST(test_pie)
{
	struct elf_syms *s = load_file(FX("fx_pie"));

	ck_assert_int_eq(elf_syms_source(s), ELF_SYMS_SYMTAB);
	check_named(s, FX("fx_pie"), false, "pie_hot_function");
	check_named(s, FX("fx_pie"), false, "pie_cold_function");
	check_named(s, FX("fx_pie"), false, "main");
	check_build_id(s, FX("fx_pie"));
	ck_assert_ptr_null(elf_syms_lookup(s, 0));
	ck_assert_uint_gt(elf_syms_count(s), 3);
	ck_assert_uint_gt(elf_syms_memory(s), elf_syms_count(s));
	elf_syms_free(s);
}
END_TEST

START_TEST(test_shlib)
{
	struct elf_syms *s = load_file(FX("libfx_shlib.so"));

	ck_assert_int_eq(elf_syms_source(s), ELF_SYMS_SYMTAB);
	check_named(s, FX("libfx_shlib.so"), false, "shlib_hot_function");
	check_named(s, FX("libfx_shlib.so"), false, "shlib_cold_function");
	check_build_id(s, FX("libfx_shlib.so"));
	elf_syms_free(s);
}
END_TEST

/* Stripped to .dynsym: names still come from the dynamic table. */
START_TEST(test_dynsym)
{
	struct elf_syms *s = load_file(FX("fx_dynsym"));
	struct elf_syms *full = load_file(FX("fx_dynsym_full"));

	ck_assert_int_eq(elf_syms_source(s), ELF_SYMS_DYNSYM);
	ck_assert_int_eq(elf_syms_source(full), ELF_SYMS_SYMTAB);
	check_named(s, FX("fx_dynsym_full"), false, "pie_hot_function");
	check_named(s, FX("fx_dynsym_full"), false, "shlib_hot_function");
	check_named(s, FX("fx_dynsym"), true, "shlib_cold_function");
	check_build_id(s, FX("fx_dynsym_full"));
	ck_assert_str_eq(elf_syms_build_id(s), elf_syms_build_id(full));
	ck_assert_uint_lt(elf_syms_count(s), elf_syms_count(full));
	elf_syms_free(s);
	elf_syms_free(full);
}
END_TEST

/*
 * A stripped program's entry function is _start, over the extent its CFI gives
 * (crt1's: nm -S of the unstripped twin); a library's entry (libc.so.6 prints
 * its version from __libc_main) is not.
 */
START_TEST(test_entry_stripped)
{
	struct elf_syms *s = load_file(FX("fx_stripped"));
	uint64_t size = 0, addr = nm_symbol(FX("fx_stripped_full"), "_start", false, &size);
	void *fn = dlsym(RTLD_DEFAULT, "getpid");
	Dl_info info;

	ck_assert_uint_ne(addr, 0);
	ck_assert_uint_gt(size, 0);
	ck_assert_uint_eq(readelf_entry(FX("fx_stripped")), addr);
	ck_assert_str_eq(elf_syms_lookup(s, addr), "_start");
	ck_assert_str_eq(elf_syms_lookup(s, addr + size - 1), "_start");
	check_not_named(s, addr + size, "_start");
	elf_syms_free(s);

	ck_assert(fn && dladdr(fn, &info) && info.dli_fname);
	s = load_file(info.dli_fname);
	addr = readelf_entry(info.dli_fname);
	ck_assert_uint_ne(addr, 0);
	check_not_named(s, addr, "_start");
	elf_syms_free(s);
}
END_TEST

/*
 * Labels name assembly functions (ld.so's _start has no .type), except inside
 * a function (its loop's head belongs to it) and a tool's markers.
 */
START_TEST(test_labels)
{
	struct elf_syms *s = load_file(FX("fx_labels"));
	uint64_t inner = nm_symbol(FX("fx_labels"), "fx_inner_label", false, NULL);
	uint64_t marker = nm_symbol(FX("fx_labels"), ".annobin_fx_marker", false, NULL);

	check_named(s, FX("fx_labels"), false, "fx_label_func");
	check_named(s, FX("fx_labels"), false, "fx_sized_asm");
	ck_assert_uint_ne(inner, 0);
	ck_assert_str_eq(elf_syms_lookup(s, inner), "fx_sized_asm");
	ck_assert_uint_ne(marker, 0);
	check_not_named(s, marker, ".annobin_fx_marker");
	elf_syms_free(s);
}
END_TEST

/* Every PT_LOAD that readelf lists maps file offsets to addresses. */
START_TEST(test_offset_to_vaddr)
{
	unsigned long long off, va, pa, fsz, msz, end = 0;
	struct elf_syms *s = load_file(FX("fx_pie"));
	char line[512];
	uint64_t got;
	int loads = 0;
	FILE *p;

	p = popen("readelf -lW '" FX("fx_pie") "'", "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p)) {
		if (sscanf(line, " LOAD %llx %llx %llx %llx %llx", &off, &va, &pa, &fsz, &msz) != 5)
			continue;
		loads++;
		ck_assert(elf_syms_offset_to_vaddr(s, off, &got));
		ck_assert_uint_eq(got, va);
		ck_assert(elf_syms_offset_to_vaddr(s, off + fsz - 1, &got));
		ck_assert_uint_eq(got, va + fsz - 1);
		if (off + fsz > end)
			end = off + fsz;
	}
	pclose(p);
	ck_assert_int_ge(loads, 2);
	ck_assert(!elf_syms_offset_to_vaddr(s, end, &got));
	ck_assert(!elf_syms_offset_to_vaddr(s, UINT64_MAX, &got));
	elf_syms_free(s);
}
END_TEST

/* libc's aliases (getpid and __getpid share an address): the plain name wins. */
START_TEST(test_libc_aliases)
{
	void *fn = dlsym(RTLD_DEFAULT, "getpid");
	struct elf_syms *s;
	Dl_info info;
	uint64_t addr;

	ck_assert(fn && dladdr(fn, &info) && info.dli_fname);
	s = load_file(info.dli_fname);
	addr = nm_symbol(info.dli_fname, "getpid", true, NULL);
	ck_assert_uint_ne(addr, 0);
	ck_assert_str_eq(elf_syms_lookup(s, addr), "getpid");
	ck_assert_uint_eq(strlen(elf_syms_build_id(s)), 40);
	elf_syms_free(s);
}
END_TEST

START_TEST(test_not_elf)
{
	int fd = open(FIXTURE_SRC_DIR "/pie_main.c", O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	errno = 0;
	ck_assert_ptr_null(elf_syms_load_fd(fd));
	ck_assert_int_eq(errno, ENOEXEC);
	close(fd);
	fd = open(FIXTURE_DIR, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
	ck_assert_ptr_null(elf_syms_load_fd(fd));
	close(fd);
	ck_assert_ptr_null(elf_syms_load_fd(-1));
	ck_assert_ptr_null(elf_syms_load_mem("", 0));
	ck_assert_ptr_null(elf_syms_load_mem("\177ELF", 4));
	elf_syms_free(NULL);
}
END_TEST

static void *read_all(const char *path, size_t *len)
{
	struct stat st;
	void *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

/* Whatever comes back from a broken image must be usable; NULL is fine. */
static void poke(const void *buf, size_t len)
{
	struct elf_syms *s = elf_syms_load_mem(buf, len);
	uint64_t va;

	if (!s)
		return;
	elf_syms_lookup(s, 0x1280);
	elf_syms_offset_to_vaddr(s, 0x1000, &va);
	ck_assert_uint_le(strlen(elf_syms_build_id(s)), 128);
	elf_syms_free(s);
}

START_TEST(test_truncated_and_garbage)
{
	size_t len, cut, i;
	unsigned char *img = read_all(FX("fx_pie"), &len), *copy = malloc(len);
	struct elf_syms *s = elf_syms_load_mem(img, len);
	uint32_t x = 12345;

	ck_assert_ptr_nonnull(s);
	check_named(s, FX("fx_pie"), false, "pie_hot_function");
	elf_syms_free(s);
	for (cut = 0; cut < len; cut += cut < 128 ? 1 : 97)
		poke(img, cut);
	/* Corrupt a few bytes at a time, deterministically. */
	ck_assert_ptr_nonnull(copy);
	for (i = 0; i < 2000; i++) {
		int k;

		memcpy(copy, img, len);
		for (k = 0; k < 8; k++) {
			x = x * 1103515245u + 12345u;
			copy[(x >> 8) % (i % 2 ? 256 : len)] = (unsigned char)(x >> 24);
		}
		poke(copy, len);
	}
	for (i = 0; i < len; i++)
		copy[i] = (unsigned char)(i * 31);
	memcpy(copy, img, 64);
	poke(copy, len);
	free(copy);
	free(img);
}
END_TEST

/* Two versions of one function: both named fx_vfn, each keeps its versioned text. */
START_TEST(test_versioned)
{
	struct elf_syms *s = load_file(FX("libfx_versioned.so"));
	uint64_t old_fn = nm_symbol(FX("libfx_versioned.so"), "fx_versioned_old", false, NULL);
	uint64_t new_fn = nm_symbol(FX("libfx_versioned.so"), "fx_versioned_new", false, NULL);
	const char *v;

	ck_assert(old_fn && new_fn);
	ck_assert_str_eq(elf_syms_lookup_versioned(s, new_fn + 1, &v), "fx_vfn");
	ck_assert_str_eq(v, "fx_vfn@@FX_2");
	ck_assert_str_eq(elf_syms_lookup_versioned(s, old_fn, &v), "fx_vfn");
	ck_assert_str_eq(v, "fx_vfn@FX_1");
	ck_assert_str_eq(elf_syms_lookup(s, new_fn), "fx_vfn");
	/* A name without a version has none to give. */
	elf_syms_free(s);
	s = load_file(FX("fx_pie"));
	ck_assert_str_eq(
		elf_syms_lookup_versioned(s, nm_symbol(FX("fx_pie"), "main", false, NULL), &v),
		"main");
	ck_assert_ptr_null(v);
	elf_syms_free(s);
}
END_TEST

/* [start, end) of each PLT section of file, as readelf -S gives them; the count. */
static size_t plt_sections(const char *file, uint64_t start[3], uint64_t end[3])
{
	char cmd[1024], line[1024], name[64];
	unsigned long long addr, off, size;
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -S -W '%s' 2>/dev/null", file);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p)) {
		char *b = strchr(line, ']');

		if (b && n < 3 &&
		    sscanf(b + 1, " %63s %*s %llx %llx %llx", name, &addr, &off, &size) == 4 &&
		    (!strcmp(name, ".plt") || !strcmp(name, ".plt.sec") ||
		     !strcmp(name, ".plt.got"))) {
			start[n] = addr;
			end[n++] = addr + size;
		}
	}
	pclose(p);
	return n;
}

/* No byte of a PLT is named after the symbol before it (was: _init): a stub or nothing. */
static void check_plt_unpolluted(const struct elf_syms *s, const char *file)
{
	uint64_t start[3], end[3];
	size_t n = plt_sections(file, start, end);

	ck_assert_uint_gt(n, 0);
	for (size_t i = 0; i < n; i++)
		for (uint64_t a = start[i]; a < end[i]; a++) {
			const char *name = elf_syms_lookup(s, a);

			ck_assert_msg(!name || (strlen(name) > 4 &&
						!strcmp(name + strlen(name) - 4, "@plt")),
				      "%s: 0x%llx in a PLT named %s", file, (unsigned long long)a,
				      name);
		}
}

/* Every stub objdump names from the relocations is named so, all through its 8 bytes. */
static void check_plt_stubs(const char *file)
{
	struct elf_syms *s = load_file(file);
	char cmd[1024], line[1024], name[512];
	unsigned long long addr;
	bool saw_strlen = false, saw_puts = false, saw_got = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "objdump -d -j .plt -j .plt.sec -j .plt.got '%s'", file);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p)) {
		/* PLT0 is labelled as an offset from the first stub ("puts@plt-0x10"). */
		if (sscanf(line, "%llx <%511[^>]>:", &addr, name) != 2 || strlen(name) < 4 ||
		    strcmp(name + strlen(name) - 4, "@plt"))
			continue;
		ck_assert_str_eq(elf_syms_lookup(s, addr), name);
		ck_assert_str_eq(elf_syms_lookup(s, addr + 7), name);
		saw_strlen |= !strcmp(name, "strlen@plt");
		saw_puts |= !strcmp(name, "puts@plt");
		saw_got |= !strcmp(name, "__cxa_finalize@plt"); /* .plt.got: a GLOB_DAT slot */
	}
	pclose(p);
	ck_assert_msg(saw_strlen && saw_puts && saw_got, "%s: objdump names the stubs", file);
	check_plt_unpolluted(s, file);
	elf_syms_free(s);
}

START_TEST(test_plt_lazy)
{
#ifdef __x86_64__
	check_plt_stubs(FX("fx_plt_lazy"));
#endif
}
END_TEST

/* -z now with IBT: the calls go to .plt.sec; .plt's lazy stubs are named by their push. */
START_TEST(test_plt_ibt)
{
#ifdef __x86_64__
	struct elf_syms *s;
	uint64_t start[3], end[3];
	size_t n;

	check_plt_stubs(FX("fx_plt_ibt"));
	s = load_file(FX("fx_plt_ibt"));
	n = plt_sections(FX("fx_plt_ibt"), start, end);
	ck_assert_uint_eq(n, 3);
	ck_assert_ptr_null(elf_syms_lookup(s, start[0])); /* PLT0 calls no one function */
	/* Lazy stub i (after PLT0) and .plt.sec stub i serve .rela.plt's entry i. */
	ck_assert_str_eq(elf_syms_lookup(s, start[0] + 16), elf_syms_lookup(s, start[2]));
	ck_assert_str_eq(elf_syms_lookup(s, start[0] + 32), elf_syms_lookup(s, start[2] + 16));
	elf_syms_free(s);
#endif
}
END_TEST

/* A debug file's PLT is empty (NOBITS): its addresses are no one's, not _init's. */
START_TEST(test_plt_debug_file)
{
	struct elf_syms *s = load_file(FX("fx_debuglink.debug"));
	uint64_t start[3], end[3];
	size_t n = plt_sections(FX("fx_debuglink.debug"), start, end);

	ck_assert_uint_gt(n, 0);
	for (size_t i = 0; i < n; i++)
		for (uint64_t a = start[i]; a < end[i]; a++)
			ck_assert_ptr_null(elf_syms_lookup(s, a));
	elf_syms_free(s);
}
END_TEST

/* The IFUNC symbols of a file as nm -D lists them ("ADDR NAME" lines), read once. */
static char *nm_ifuncs(const char *file)
{
	char cmd[1024], *text = NULL;
	size_t len = 0;
	FILE *p, *out = open_memstream(&text, &len);

	snprintf(cmd, sizeof(cmd), "nm -D --defined-only '%s' | awk '$2 == \"i\" { print $1, $3 }'",
		 file);
	p = popen(cmd, "r");
	ck_assert(p && out);
	for (int c; (c = fgetc(p)) != EOF;)
		fputc(c, out);
	pclose(p);
	fclose(out);
	return text;
}

/* Whether got is "NAME@plt" for one of the IFUNCs at addr (aliases: memcpy, __memcpy). */
static bool ifunc_at(const char *ifuncs, uint64_t addr, const char *got)
{
	char want[300], line[300];

	for (const char *l = ifuncs; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0)) {
		unsigned long long a;
		char sym[256];

		snprintf(line, sizeof(line), "%.*s", (int)strcspn(l, "\n"), l);
		if (sscanf(line, "%llx %255[^@]", &a, sym) != 2 || a != addr)
			continue;
		snprintf(want, sizeof(want), "%s@plt", sym);
		if (!strcmp(want, got))
			return true;
	}
	return false;
}

/*
 * libc's own PLT: calls to exported functions (realloc@plt) and, through
 * IRELATIVE slots, to its IFUNCs (objdump: "*ABS*+0x9f550@plt"), named after
 * the IFUNC symbol at the resolver address (strnlen@plt).
 */
START_TEST(test_plt_libc)
{
#ifdef __x86_64__
	char cmd[1024], line[1024], name[512];
	unsigned long long addr, resolver;
	const char *got;
	char *ifuncs_text;
	size_t named = 0, ifuncs = 0;
	struct elf_syms *s;
	Dl_info info;
	FILE *p;

	ck_assert(dladdr(dlsym(RTLD_DEFAULT, "getpid"), &info) && info.dli_fname);
	s = load_file(info.dli_fname);
	ifuncs_text = nm_ifuncs(info.dli_fname);
	snprintf(cmd, sizeof(cmd), "objdump -d -j .plt -j .plt.sec -j .plt.got '%s'",
		 info.dli_fname);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p)) {
		if (sscanf(line, "%llx <%511[^>]>:", &addr, name) != 2 || strlen(name) < 4 ||
		    strcmp(name + strlen(name) - 4, "@plt"))
			continue;
		got = elf_syms_lookup(s, addr + 3);
		ck_assert_msg(got != NULL, "%s at 0x%llx unnamed", name, addr);
		if (sscanf(name, "*ABS*+%llx@plt", &resolver) == 1) {
			ck_assert_msg(ifunc_at(ifuncs_text, resolver, got),
				      "%s named %s: no IFUNC of that name at 0x%llx", name, got,
				      resolver);
			ifuncs++;
		} else {
			ck_assert_str_eq(got, name);
		}
		named++;
	}
	pclose(p);
	ck_assert_uint_gt(named, 0);
	printf("libc: %zu PLT stubs named, %zu of them IFUNCs\n", named, ifuncs);
	check_plt_unpolluted(s, info.dli_fname);
	free(ifuncs_text);
	elf_syms_free(s);
#endif
}
END_TEST

/* --- names read back from the file ------------------------------------------------------ */

/* Section name's header in an ELF64 little-endian image (the fixtures'), or NULL. */
static Elf64_Shdr *image_section(unsigned char *img, size_t len, const char *name)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Shdr *sh, *names;

	ck_assert_uint_ge(len, sizeof(*eh));
	ck_assert_int_eq(eh->e_ident[EI_CLASS], ELFCLASS64);
	ck_assert_uint_le(eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(*sh), len);
	sh = (Elf64_Shdr *)(img + eh->e_shoff);
	names = &sh[eh->e_shstrndx];
	for (size_t i = 0; i < eh->e_shnum; i++)
		if (!strcmp((const char *)img + names->sh_offset + sh[i].sh_name, name))
			return &sh[i];
	return NULL;
}

/* The .symtab entry of the symbol name in the image. */
static Elf64_Sym *image_symbol(unsigned char *img, size_t len, const char *name)
{
	Elf64_Shdr *symtab = image_section(img, len, ".symtab");
	Elf64_Shdr *strtab = image_section(img, len, ".strtab");
	Elf64_Sym *v;

	ck_assert_ptr_nonnull(symtab);
	ck_assert_ptr_nonnull(strtab);
	v = (Elf64_Sym *)(img + symtab->sh_offset);
	for (size_t i = 0; i < symtab->sh_size / sizeof(*v); i++)
		if (v[i].st_name < strtab->sh_size &&
		    !strcmp((const char *)img + strtab->sh_offset + v[i].st_name, name))
			return &v[i];
	ck_abort_msg("no symbol %s", name);
	return NULL;
}

/* A copy of image into a new file of the scratch directory; its path into path. */
static void write_file(char *path, size_t len, const void *img, size_t img_len)
{
	int fd;

	snprintf(path, len, "/tmp/ember_names_XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, img, img_len), (ssize_t)img_len);
	close(fd);
}

/* The symbols of file path, loaded through a descriptor closed at once. */
static struct elf_syms *load_path(const char *path)
{
	return load_file(path);
}

START_TEST(test_names_read_back)
{
	static const char *const fns[] = {"pie_hot_function", "pie_cold_function", "main"};
	struct elf_syms *s = load_file(FX("fx_pie"));
	uint64_t addr[3], reads, failed, reads0;
	const char *name, *v;

	for (size_t i = 0; i < 3; i++)
		addr[i] = nm_symbol(FX("fx_pie"), fns[i], false, NULL);
	elf_syms_name_stats(s, &reads0, &failed);
	/* each name where nm puts it, whichever was read before */
	for (int round = 0; round < 3; round++)
		for (size_t i = 0; i < 3; i++) {
			ck_assert_int_eq(elf_syms_name(s, addr[i] + 1, &name, &v), 1);
			ck_assert_str_eq(name, fns[i]);
			ck_assert_ptr_null(v);
		}
	/* read from the file once each, then from the cache */
	elf_syms_name_stats(s, &reads, &failed);
	ck_assert_uint_eq(reads - reads0, 3);
	ck_assert_uint_eq(failed, 0);
	ck_assert_int_eq(elf_syms_name(s, 0, &name, &v), 0);
	ck_assert_ptr_null(name);
	elf_syms_free(s);
}
END_TEST

/* Whether the name of group's address (names: its nm aliases, NUL-separated) is one of them. */
static bool named_one_of(const struct elf_syms *s, uint64_t addr, const char *names, size_t len)
{
	const char *got = elf_syms_lookup(s, addr);

	for (size_t i = 0; got && i < len; i += strlen(names + i) + 1)
		if (!strcmp(got, names + i))
			return true;
	return false;
}

/*
 * Every function nm lists in a larger binary (the test runner itself: its
 * thousands of symbols outnumber the cache's slots) is named as nm names it,
 * or as one of its aliases.
 */
START_TEST(test_names_many)
{
	char self[4096], cmd[4200], line[4096 + 64], name[4096], group[1 << 16], type;
	unsigned long long a, prev = 0;
	size_t checked = 0, group_len = 0;
	struct elf_syms *s;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	FILE *p;

	ck_assert_int_gt(n, 0);
	self[n] = '\0';
	s = load_path(self);
	snprintf(cmd, sizeof(cmd), "nm --defined-only -n '%s'", self);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	for (;;) {
		bool more = fgets(line, sizeof(line), p) != NULL;

		if (more && (sscanf(line, "%llx %c %4095s", &a, &type, name) != 3 ||
			     (type != 'T' && type != 't') || strchr(name, '@') ||
			     strchr(name, '.') || name[0] == '$'))
			continue;
		if (group_len && (!more || a != prev)) {
			ck_assert_msg(named_one_of(s, prev, group, group_len), "%#llx: %s, nm: %s",
				      prev, elf_syms_lookup(s, prev), group);
			checked++;
			group_len = 0;
		}
		if (!more)
			break;
		if (group_len + strlen(name) + 1 <= sizeof(group)) {
			memcpy(group + group_len, name, strlen(name) + 1);
			group_len += strlen(name) + 1;
		}
		prev = a;
	}
	pclose(p);
	ck_assert_uint_gt(checked, 1000);
	elf_syms_free(s);
}
END_TEST

/*
 * A name that runs past the end of its string table (the table cut one byte
 * short of the last name's NUL) and a name offset past the table: those
 * symbols stay unnamed, read from the image or a file; the others are named.
 */
START_TEST(test_names_hostile_offsets)
{
	size_t len;
	unsigned char *img = read_all(FX("fx_pie"), &len);
	Elf64_Shdr *strtab = image_section(img, len, ".strtab");
	Elf64_Sym *hot = image_symbol(img, len, "pie_hot_function");
	Elf64_Sym *cold = image_symbol(img, len, "pie_cold_function");
	uint64_t hot_addr = hot->st_value, cold_addr = cold->st_value, last;
	char path[64];
	struct elf_syms *s;

	/* the cold function's name becomes the last one, cut short; the hot one's is out of range */
	last = strtab->sh_size - 1;
	while (last > 0 && img[strtab->sh_offset + last - 1])
		last--;
	memcpy(img + strtab->sh_offset + last, "cold", 4);
	img[strtab->sh_offset + last + 4] = 'x';
	ck_assert_uint_ge(strtab->sh_size - last, 5);
	strtab->sh_size = last + 4;
	cold->st_name = (uint32_t)last;
	hot->st_name = 0xfffffff0u;
	for (int from_file = 0; from_file < 2; from_file++) {
		if (from_file) {
			write_file(path, sizeof(path), img, len);
			s = load_path(path);
			unlink(path);
		} else {
			s = elf_syms_load_mem(img, len);
		}
		ck_assert_ptr_nonnull(s);
		check_not_named(s, hot_addr, "pie_hot_function");
		check_not_named(s, cold_addr, "cold");
		check_not_named(s, cold_addr, "coldx");
		check_named(s, FX("fx_pie"), false, "main");
		elf_syms_free(s);
	}
	free(img);
}
END_TEST

/*
 * The file changes after loading: replaced by another at its path (the names
 * are still the loaded file's, through the descriptor kept), then its names
 * overwritten, then truncated before its string table. A name that cannot be
 * read back is unnamed and counted; one read before stays cached.
 */
START_TEST(test_names_file_changed)
{
	size_t len;
	unsigned char *img = read_all(FX("fx_pie"), &len);
	Elf64_Shdr *strtab = image_section(img, len, ".strtab");
	Elf64_Sym *cold = image_symbol(img, len, "pie_cold_function");
	uint64_t main_addr = nm_symbol(FX("fx_pie"), "main", false, NULL);
	uint64_t hot_addr = nm_symbol(FX("fx_pie"), "pie_hot_function", false, NULL);
	uint64_t cold_addr = nm_symbol(FX("fx_pie"), "pie_cold_function", false, NULL);
	uint64_t str_off = strtab->sh_offset, cold_name = str_off + cold->st_name;
	uint64_t reads, failed;
	const char *name;
	char path[64];
	struct elf_syms *s;
	int fd;

	write_file(path, sizeof(path), img, len);
	s = load_path(path);
	ck_assert_str_eq(elf_syms_lookup(s, main_addr), "main");
	/* another file at the path: not what is read */
	ck_assert_int_eq(unlink(path), 0);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "not an ELF file", 15), 15);
	close(fd);
	ck_assert_str_eq(elf_syms_lookup(s, hot_addr), "pie_hot_function");
	elf_syms_free(s);
	unlink(path);

	write_file(path, sizeof(path), img, len);
	s = load_path(path);
	ck_assert_str_eq(elf_syms_lookup(s, main_addr), "main");
	fd = open(path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	/* a NUL inside the cold function's name: no longer the name loaded */
	ck_assert_int_eq(pwrite(fd, "", 1, (off_t)cold_name + 3), 1);
	ck_assert_int_eq(elf_syms_name(s, cold_addr, &name, NULL), -EBADMSG);
	ck_assert_ptr_null(name);
	/* cut before the string table: every name not cached is unreadable */
	ck_assert_int_eq(ftruncate(fd, (off_t)str_off), 0);
	close(fd);
	ck_assert_int_lt(elf_syms_name(s, hot_addr, &name, NULL), 0);
	ck_assert_ptr_null(elf_syms_lookup(s, hot_addr));
	ck_assert_str_eq(elf_syms_lookup(s, main_addr), "main");
	elf_syms_name_stats(s, &reads, &failed);
	ck_assert_uint_eq(failed, 3);
	elf_syms_free(s);
	unlink(path);
	free(img);
}
END_TEST

/*
 * What a file's symbols are charged is what they hold: no copy of the names,
 * so much less than the names' bytes for a binary with long ones.
 */
START_TEST(test_names_not_held)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	struct elf_syms *s;
	struct stat st;
	int fd;

	ck_assert_int_gt(n, 0);
	self[n] = '\0';
	fd = open(self, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	s = elf_syms_load_fd(fd);
	ck_assert_ptr_nonnull(s);
	/* a dup of the descriptor is kept; the caller's is the caller's */
	ck_assert_int_eq(close(fd), 0);
	ck_assert_int_eq(fstat(fd, &st), -1);
	ck_assert_ptr_nonnull(elf_syms_lookup(s, nm_symbol(self, "main", false, NULL)));
	/* 24 bytes a symbol, and the bounded cache */
	ck_assert_uint_le(elf_syms_memory(s), 24 * elf_syms_count(s) + (160u << 10));
	elf_syms_free(s);
}
END_TEST

Suite *elfsym_suite(void)
{
	Suite *s = suite_create("elfsym");
	TCase *tc = tcase_create("core"), *plt = tcase_create("plt");
	TCase *names = tcase_create("names");

	tcase_add_test(tc, test_pie);
	tcase_add_test(tc, test_shlib);
	tcase_add_test(tc, test_dynsym);
	tcase_add_test(tc, test_entry_stripped);
	tcase_add_test(tc, test_labels);
	tcase_add_test(tc, test_offset_to_vaddr);
	tcase_add_test(tc, test_libc_aliases);
	tcase_add_test(tc, test_versioned);
	tcase_add_test(tc, test_not_elf);
	tcase_add_test(tc, test_truncated_and_garbage);
	suite_add_tcase(s, tc);
	/* Each asks objdump, readelf or nm: a bound for a busy machine, not a speed test. */
	tcase_set_timeout(plt, 60);
	tcase_add_test(plt, test_plt_lazy);
	tcase_add_test(plt, test_plt_ibt);
	tcase_add_test(plt, test_plt_debug_file);
	tcase_add_test(plt, test_plt_libc);
	suite_add_tcase(s, plt);
	tcase_set_timeout(names, 60);
	tcase_add_test(names, test_names_read_back);
	tcase_add_test(names, test_names_many);
	tcase_add_test(names, test_names_hostile_offsets);
	tcase_add_test(names, test_names_file_changed);
	tcase_add_test(names, test_names_not_held);
	suite_add_tcase(s, names);
	return s;
}
