/* SPDX-License-Identifier: MIT */
/* Separate debug files of stripped binaries: by GNU build-id, then by .gnu_debuglink. */
#ifndef EMBER_DEBUGFILE_H
#define EMBER_DEBUGFILE_H

#include <sys/types.h>

#include "elfsym.h"

/* Largest debug file read (its CRC32 is computed over all of it). */
#define DEBUGFILE_MAX_BYTES (2ull << 30)

enum debugfile_via { DEBUGFILE_NONE = 0, DEBUGFILE_BUILD_ID, DEBUGFILE_DEBUGLINK };

/*
 * The .symtab of the debug file of bin, the binary at path as process pid
 * sees it (paths are resolved inside /proc/PID/root, so containers' debug
 * files are found). By build-id under /usr/lib/debug/.build-id (the debug
 * file's build-id must match), then by .gnu_debuglink next to the binary, in
 * its .debug/ and under /usr/lib/debug (the CRC32 must match). NULL when none.
 * Once the process is gone, paths are resolved in our own root instead.
 */
struct elf_syms *debugfile_load(pid_t pid, const char *path, const struct elf_syms *bin,
				enum debugfile_via *via);

/* The same, the debug file's symbols bounded by max_bytes (elf_syms_load_fd_max). */
struct elf_syms *debugfile_load_max(pid_t pid, const char *path, const struct elf_syms *bin,
				    enum debugfile_via *via, size_t max_bytes);

#endif
