/* SPDX-License-Identifier: MIT */
/* Function symbols, load segments and build-id of one ELF file (libelf). */
#ifndef EMBER_ELFSYM_H
#define EMBER_ELFSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bounds on hostile files: symbols kept per file, bytes per symbol name. */
#define ELFSYM_MAX_SYMBOLS (4u << 20)
#define ELFSYM_MAX_NAME 4096
/* Bound on what one file's symbols hold (elf_syms_memory) when the caller gives none. */
#define ELFSYM_MAX_MEMORY (256u << 20)
/* Bytes of a .gnu_debuglink file name. */
#define ELFSYM_MAX_DEBUGLINK 256

enum elf_syms_source { ELF_SYMS_NONE = 0, ELF_SYMS_SYMTAB, ELF_SYMS_DYNSYM };

struct elf_syms;

/*
 * Loads from an open fd or from memory. NULL with errno set. Names are not
 * copied: a lookup reads them back (a few hundred are cached), from a
 * descriptor of the file that the symbols keep (a dup of fd, which stays the
 * caller's to close; never reopened by path) or from the image, which must
 * outlive them. Lookups change that cache: one thread at a time.
 */
struct elf_syms *elf_syms_load_fd(int fd);
/*
 * The same, refused (E2BIG) when the symbols kept would hold more than
 * max_bytes: a cache gives no file more than its share.
 */
struct elf_syms *elf_syms_load_fd_max(int fd, size_t max_bytes);
struct elf_syms *elf_syms_load_mem(const void *buf, size_t len);
void elf_syms_free(struct elf_syms *s);

/* The span of its PT_LOAD segments' vaddrs, [*lo, *hi): false when it has none. */
bool elf_syms_span(const struct elf_syms *s, uint64_t *lo, uint64_t *hi);
/* Converts a file offset (from /proc/PID/maps) to the ELF virtual address. */
bool elf_syms_offset_to_vaddr(const struct elf_syms *s, uint64_t file_off, uint64_t *vaddr);
/*
 * The name of the function containing the ELF virtual address into *name,
 * and the name with its version into *versioned (NULL when it has none; may
 * be NULL). Names are without their ELF symbol version (clock_gettime, not
 * clock_gettime@@GLIBC_2.17); a PLT stub is named after the function it calls
 * (memcpy@plt). 1 when named, 0 when no function holds vaddr, -errno when its
 * name could not be read back (the file changed or was truncated since: not
 * what was loaded). Names stay valid until the next lookup in s.
 */
int elf_syms_name(const struct elf_syms *s, uint64_t vaddr, const char **name,
		  const char **versioned);
/* The same, NULL when unnamed for either reason. */
const char *elf_syms_lookup(const struct elf_syms *s, uint64_t vaddr);
/* The same, and the name with its version in *versioned (NULL when it had none). */
const char *elf_syms_lookup_versioned(const struct elf_syms *s, uint64_t vaddr,
				      const char **versioned);
/* GNU build-id as lower-case hex, "" when absent. */
const char *elf_syms_build_id(const struct elf_syms *s);
enum elf_syms_source elf_syms_source(const struct elf_syms *s);
size_t elf_syms_count(const struct elf_syms *s);
/* Approximate heap bytes held, the name cache's bound included. */
size_t elf_syms_memory(const struct elf_syms *s);
/* Names read back from the file or image so far, and reads that failed. */
void elf_syms_name_stats(const struct elf_syms *s, uint64_t *reads, uint64_t *failed);
/*
 * The file name in .gnu_debuglink (a plain name, no '/') and the CRC32 of the
 * debug file it names, or NULL when the file has none.
 */
const char *elf_syms_debuglink(const struct elf_syms *s, uint32_t *crc);

#endif
