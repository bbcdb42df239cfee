// SPDX-License-Identifier: MIT
/* libFuzzer: kallsyms text through the parser, then lookups at and around symbols. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ksyms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ksyms *k = NULL;
	const char *mod, *name;
	uint64_t addr;
	size_t i;

	if (ksyms_parse((const char *)data, size, &k))
		return 0;
	/* Probe addresses taken from the input itself, 8 bytes at a time. */
	for (i = 0; i + sizeof(addr) <= size && i < 4096; i += sizeof(addr)) {
		memcpy(&addr, data + i, sizeof(addr));
		name = ksyms_lookup(k, addr, &mod);
		if (name && !*name)
			__builtin_trap();
		if (mod)
			(void)strlen(mod);
	}
	ksyms_lookup(k, 0, NULL);
	ksyms_lookup(k, UINT64_MAX, &mod);
	ksyms_count(k);
	ksyms_free(k);
	return 0;
}
