// SPDX-License-Identifier: MIT
/* libFuzzer: arbitrary bytes as an ELF image, then every query on the result. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "elfsym.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_syms *s = elf_syms_load_mem(data, size);
	uint64_t off, vaddr;
	const char *name;

	if (!s)
		return 0;
	for (off = 0; off < size && off < (1u << 16); off += 64) {
		if (elf_syms_offset_to_vaddr(s, off, &vaddr)) {
			name = elf_syms_lookup(s, vaddr);
			if (name && strlen(name) > ELFSYM_MAX_NAME)
				__builtin_trap();
		}
		elf_syms_lookup(s, off);
	}
	elf_syms_lookup(s, UINT64_MAX);
	if (strlen(elf_syms_build_id(s)) > 128)
		__builtin_trap();
	elf_syms_source(s);
	elf_syms_count(s);
	elf_syms_memory(s);
	elf_syms_free(s);
	return 0;
}
