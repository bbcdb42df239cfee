// SPDX-License-Identifier: MIT
/*
 * Finds and loads the separate debug file of a stripped binary, the way gdb
 * does, but inside the process's own root: symlinks there (the .build-id tree
 * is often made of them) are resolved with that root as "/".
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "debugfile.h"
#include "mapfile.h"

#define DEBUG_DIR "usr/lib/debug"
/* Bytes read at a time for the CRC. */
#define CRC_CHUNK (1u << 20)

/*
 * Opens path (relative) inside root, symlinks confined to it; a regular file
 * (checked before it is opened for reading: a link to a device opens nothing),
 * size bounded. Without openat2 (ENOSYS, or EPERM from a seccomp filter) nothing is
 * opened: a plain openat would follow an absolute symlink out of the root.
 */
static int open_in_root(int root, const char *path)
{
	struct stat st;
	int fd = mapfile_open_regular_at(root, path, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, &st);

	if (fd >= 0 && (unsigned long long)st.st_size > DEBUGFILE_MAX_BYTES) {
		close(fd);
		return -EFBIG;
	}
	return fd;
}

static bool crc_matches(int fd, uint32_t want)
{
	unsigned char *buf = malloc(CRC_CHUNK);
	uLong crc = crc32(0, Z_NULL, 0);
	off_t off = 0;
	ssize_t r;

	if (!buf)
		return false;
	while ((r = pread(fd, buf, CRC_CHUNK, off)) > 0) {
		crc = crc32(crc, buf, (uInt)r);
		off += r;
	}
	free(buf);
	return r == 0 && (uint32_t)crc == want;
}

/*
 * Symbols of the file at path in root when it has a .symtab; NULL otherwise.
 * With crc, the file's CRC32 must be *crc before it is parsed: a file beside a
 * binary is anyone's, and parsing is what costs.
 */
static struct elf_syms *load_symtab(int root, const char *path, const uint32_t *crc,
				    size_t max_bytes)
{
	struct elf_syms *syms = NULL;
	int fd = open_in_root(root, path);

	if (fd < 0)
		return NULL;
	if (!crc || crc_matches(fd, *crc))
		syms = elf_syms_load_fd_max(fd, max_bytes);
	if (syms && elf_syms_source(syms) != ELF_SYMS_SYMTAB) {
		elf_syms_free(syms);
		syms = NULL;
	}
	close(fd);
	return syms;
}

static struct elf_syms *by_build_id(int root, const struct elf_syms *bin, size_t max_bytes)
{
	const char *id = elf_syms_build_id(bin);
	struct elf_syms *syms;
	char path[256];

	if (strlen(id) < 4)
		return NULL;
	snprintf(path, sizeof(path), DEBUG_DIR "/.build-id/%.2s/%s.debug", id, id + 2);
	syms = load_symtab(root, path, NULL, max_bytes);
	if (syms && strcmp(elf_syms_build_id(syms), id)) {
		elf_syms_free(syms);
		syms = NULL;
	}
	return syms;
}

static struct elf_syms *by_debuglink(int root, const char *path, const struct elf_syms *bin,
				     size_t max_bytes)
{
	static const char *const forms[] = {"%.*s/%s", "%.*s/.debug/%s", DEBUG_DIR "%.*s/%s"};
	const char *slash = strrchr(path, '/'), *name;
	struct elf_syms *syms;
	char cand[4096 + 512];
	uint32_t crc;
	int dir_len;

	name = elf_syms_debuglink(bin, &crc);
	if (!name || path[0] != '/' || !slash || slash - path > 4096)
		return NULL;
	dir_len = (int)(slash - path);
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		/* Relative to root: the process's "/" is root itself. */
		if ((size_t)snprintf(cand, sizeof(cand), forms[i], dir_len, path, name) >=
		    sizeof(cand))
			continue;
		if (!strcmp(cand, path))
			continue;
		syms = load_symtab(root, cand[0] == '/' ? cand + 1 : cand, &crc, max_bytes);
		if (syms)
			return syms;
	}
	return NULL;
}

struct elf_syms *debugfile_load(pid_t pid, const char *path, const struct elf_syms *bin,
				enum debugfile_via *via)
{
	return debugfile_load_max(pid, path, bin, via, ELFSYM_MAX_MEMORY);
}

struct elf_syms *debugfile_load_max(pid_t pid, const char *path, const struct elf_syms *bin,
				    enum debugfile_via *via, size_t max_bytes)
{
	struct elf_syms *syms;
	char root_path[64];
	int root;

	*via = DEBUGFILE_NONE;
	snprintf(root_path, sizeof(root_path), "/proc/%d/root", (int)pid);
	root = open(root_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	/*
	 * The process is gone: look in our own root. The build-id or CRC check
	 * keeps a same-named file of another binary from being used.
	 */
	if (root < 0)
		root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return NULL;
	syms = by_build_id(root, bin, max_bytes);
	if (syms) {
		*via = DEBUGFILE_BUILD_ID;
	} else {
		syms = by_debuglink(root, path, bin, max_bytes);
		if (syms)
			*via = DEBUGFILE_DEBUGLINK;
	}
	close(root);
	return syms;
}
