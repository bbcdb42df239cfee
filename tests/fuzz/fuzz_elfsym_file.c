// SPDX-License-Identifier: MIT
/*
 * libFuzzer: arbitrary bytes as an ELF file read from its fd (ELF_C_READ, where libelf
 * mallocs what it reads; from memory it copies nothing), followed by a hole the first
 * byte sizes (up to 1 GiB): sections may claim bytes that cost nothing on disk, as a
 * sparse file's do. libFuzzer's -rss_limit_mb catches an allocation of what they claim.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elfsym.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_syms *s;
	uint64_t vaddr;
	off_t hole;
	int fd;

	if (size < 1)
		return 0;
	hole = (off_t)data[0] << 22; /* 0 to 1 GiB in 4 MiB steps */
	fd = memfd_create("fuzz_elfsym_file", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data + 1, size - 1) != (ssize_t)(size - 1) ||
	    ftruncate(fd, (off_t)(size - 1) + hole)) {
		close(fd);
		return 0;
	}
	/* half the default share of a 24 MiB cache, as the symbolizer gives */
	s = elf_syms_load_fd_max(fd, 12u << 20);
	close(fd);
	if (!s)
		return 0;
	if (elf_syms_memory(s) > (12u << 20))
		__builtin_trap();
	for (uint64_t off = 0; off < size && off < (1u << 16); off += 64)
		if (elf_syms_offset_to_vaddr(s, off, &vaddr))
			elf_syms_lookup(s, vaddr);
	elf_syms_free(s);
	return 0;
}
