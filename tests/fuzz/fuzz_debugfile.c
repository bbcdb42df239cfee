// SPDX-License-Identifier: MIT
/*
 * libFuzzer: a stripped binary and its debug file, both hostile, in a fresh directory under
 * /tmp where its .gnu_debuglink would find the debug file. Input: a flags byte (IN_DOT_DEBUG,
 * FIX_CRC), the binary's length (u32, little-endian), the binary, then the debug file.
 */
#include <dlfcn.h>
#include <elf.h>
#include <endian.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <zlib.h>

#include "debugfile.h"
#include "elfsym.h"

/* Flag: the debug file goes in .debug/, not beside the binary (debugfile.c looks in both). */
#define IN_DOT_DEBUG 0x01
/*
 * Flag: the CRC32 after the first "bin.debug" name in the binary is made the debug file's, as
 * whoever writes both can: mutations of the debug file are parsed, not refused by the CRC.
 */
#define FIX_CRC 0x02
#define DEBUG_NAME "bin.debug"
/* The name as .gnu_debuglink holds it: NUL-terminated, padded to 4 bytes, then the CRC32. */
#define DEBUG_LINK "bin.debug\0\0\0"
/* A small share, as a symbolizer near its bound gives: the E2BIG paths are taken too. */
#define MAX_BYTES (1u << 20)
/* The system's debug files, which the binary's build-id may name. */
#define BUILD_ID_DIR "usr/lib/debug/.build-id/"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* While debugfile_load_max runs: what each openat2 opened is checked against the debug file. */
static bool checking;
static struct stat debug_st;

/*
 * A file debugfile.c opened (O_PATH, before it is checked): its own debug file, or one under
 * BUILD_ID_DIR. Anything else is outside the directory, reached through the debuglink's name
 * (elfsym refuses a '/', "." and "..").
 */
static void check_opened(int fd, const char *path)
{
	struct stat st;

	if (!strncmp(path, BUILD_ID_DIR, strlen(BUILD_ID_DIR)))
		return;
	if (fstat(fd, &st))
		__builtin_trap();
	if (st.st_dev == debug_st.st_dev && st.st_ino == debug_st.st_ino)
		return;
	fprintf(stderr, "fuzz_debugfile: opened /%s, not the debug file\n", path);
	__builtin_trap();
}

/*
 * debugfile.c opens through syscall(SYS_openat2): this definition takes the place of libc's
 * (found with dlsym), sees what each openat2 opened, and passes the descriptor on. Like libc's,
 * it forwards six arguments whatever the call passed: those past the caller's are read from
 * its stack frame, where ASan would see a read out of bounds.
 */
__attribute__((no_sanitize("address"))) long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	long a[6], ret;
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	if (!real)
		__builtin_trap();
	ret = real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (checking && nr == SYS_openat2 && ret >= 0)
		check_opened((int)ret, (const char *)a[1]);
	return ret;
}

static int write_file(const char *path, const uint8_t *buf, size_t len)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	if (fd < 0)
		return -1;
	if (write(fd, buf, len) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The CRC32 after DEBUG_LINK in bin, in bin's byte order: the debug file's. */
static void fix_crc(uint8_t *bin, size_t len, const uint8_t *debug, size_t debug_len)
{
	uint32_t crc = (uint32_t)crc32(crc32(0, Z_NULL, 0), debug, (uInt)debug_len);
	uint8_t *p = memmem(bin, len, DEBUG_LINK, sizeof(DEBUG_LINK) - 1);
	bool msb = len > EI_DATA && bin[EI_DATA] == ELFDATA2MSB;

	if (!p || (size_t)(p - bin) + sizeof(DEBUG_LINK) - 1 + 4 > len)
		return;
	p += sizeof(DEBUG_LINK) - 1;
	for (int i = 0; i < 4; i++)
		p[msb ? 3 - i : i] = (uint8_t)(crc >> (8 * i));
}

/* Every query on the debug file's symbols; names bounded as elfsym promises. */
static void query(const struct elf_syms *s, size_t file_size)
{
	const char *name, *versioned;
	uint64_t lo, hi, vaddr;

	if (elf_syms_memory(s) > MAX_BYTES || elf_syms_count(s) > ELFSYM_MAX_SYMBOLS)
		__builtin_trap();
	if (elf_syms_span(s, &lo, &hi)) {
		if (lo >= hi)
			__builtin_trap();
		for (uint64_t i = 0, step = (hi - lo) / 64 + 1; i < 64; i++)
			elf_syms_lookup(s, lo + i * step);
	}
	for (uint64_t off = 0; off < file_size && off < (1u << 16); off += 64) {
		if (elf_syms_offset_to_vaddr(s, off, &vaddr) &&
		    elf_syms_name(s, vaddr, &name, &versioned) == 1 &&
		    (strlen(name) > ELFSYM_MAX_NAME ||
		     (versioned && strlen(versioned) > ELFSYM_MAX_NAME)))
			__builtin_trap();
		elf_syms_lookup(s, off);
	}
	elf_syms_lookup(s, UINT64_MAX);
	if (strlen(elf_syms_build_id(s)) > 128)
		__builtin_trap();
}

/*
 * The properties: via is DEBUGFILE_NONE iff nothing was returned; a debug file found by
 * debuglink is ours with the CRC32 the binary names, one found by build-id has the binary's
 * build-id, and either has a .symtab; ours, named with the right CRC32 and with a .symtab
 * elfsym loads within MAX_BYTES, is found.
 */
static void check(const char *dir, const char *debug_path, const struct elf_syms *bin,
		  const uint8_t *debug, size_t debug_len)
{
	char bin_path[64];
	enum debugfile_via via = DEBUGFILE_BUILD_ID; /* set by debugfile_load_max, NONE or not */
	struct elf_syms *dbg, *own;
	const char *link;
	uint32_t crc = 0;
	bool ours;
	int fd;

	link = elf_syms_debuglink(bin, &crc);
	if (link && (!*link || strchr(link, '/') || strlen(link) >= ELFSYM_MAX_DEBUGLINK))
		__builtin_trap();
	ours = link && !strcmp(link, DEBUG_NAME) &&
	       crc == (uint32_t)crc32(crc32(0, Z_NULL, 0), debug, (uInt)debug_len);
	snprintf(bin_path, sizeof(bin_path), "%s/bin", dir);
	checking = true;
	dbg = debugfile_load_max(getpid(), bin_path, bin, &via, MAX_BYTES);
	checking = false;
	if ((via == DEBUGFILE_NONE) != !dbg)
		__builtin_trap();
	if (!dbg) {
		if (!ours)
			return;
		/* named and matching: missed only if elfsym refuses it too */
		fd = open(debug_path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			__builtin_trap();
		own = elf_syms_load_fd_max(fd, MAX_BYTES);
		close(fd);
		if (own && elf_syms_source(own) == ELF_SYMS_SYMTAB)
			__builtin_trap();
		elf_syms_free(own);
		return;
	}
	if (elf_syms_source(dbg) != ELF_SYMS_SYMTAB)
		__builtin_trap();
	if (via == DEBUGFILE_DEBUGLINK && !ours)
		__builtin_trap();
	if (via == DEBUGFILE_BUILD_ID &&
	    (!*elf_syms_build_id(bin) || strcmp(elf_syms_build_id(dbg), elf_syms_build_id(bin))))
		__builtin_trap();
	query(dbg, via == DEBUGFILE_DEBUGLINK ? debug_len : 0);
	elf_syms_free(dbg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char dir[] = "/tmp/fuzz_debugfile.XXXXXX", path[64], sub[64], debug_path[80];
	const uint8_t *debug;
	size_t bin_len, debug_len;
	struct elf_syms *bin;
	uint8_t *image;
	uint32_t len;
	int fd, dfd;

	if (size < 5)
		return 0;
	memcpy(&len, data + 1, 4);
	len = le32toh(len);
	bin_len = len < size - 5 ? len : size - 5;
	debug = data + 5 + bin_len;
	debug_len = size - 5 - bin_len;
	image = malloc(bin_len + 1);
	if (!image)
		return 0;
	memcpy(image, data + 5, bin_len);
	if (data[0] & FIX_CRC)
		fix_crc(image, bin_len, debug, debug_len);
	if (!mkdtemp(dir))
		goto out_image;
	snprintf(path, sizeof(path), "%s/bin", dir);
	snprintf(sub, sizeof(sub), "%s/.debug", dir);
	snprintf(debug_path, sizeof(debug_path), "%s/" DEBUG_NAME,
		 data[0] & IN_DOT_DEBUG ? sub : dir);
	if (data[0] & IN_DOT_DEBUG && mkdir(sub, 0700))
		goto out_dir;
	fd = write_file(path, image, bin_len);
	if (fd < 0)
		goto out_files;
	dfd = write_file(debug_path, debug, debug_len);
	if (dfd < 0 || fstat(dfd, &debug_st))
		goto out_fd;
	/* the binary as the symbolizer loads it: from its descriptor, within its share */
	bin = elf_syms_load_fd_max(fd, MAX_BYTES);
	if (bin) {
		check(dir, debug_path, bin, debug, debug_len);
		elf_syms_free(bin);
	}
out_fd:
	if (dfd >= 0)
		close(dfd);
	close(fd);
out_files:
	unlink(debug_path);
	unlink(path);
	rmdir(sub);
out_dir:
	rmdir(dir);
out_image:
	free(image);
	return 0;
}
