// SPDX-License-Identifier: MIT
/*
 * libFuzzer: perf map text through the parser, fed in two pieces as a growing
 * file is, then lookups at every parsed start and around it.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perf_map *m = perfmap_new();
	size_t split = size ? data[0] % (size + 1) : 0, used, off;
	const char *text = (const char *)data;
	uint64_t addr = 0;

	if (!m)
		return 0;
	/* The first piece stops anywhere, as a read of a file being written does. */
	if (perfmap_parse(m, text, split, &used) || used > split)
		__builtin_trap();
	off = used;
	if (perfmap_parse(m, text + off, size - off, &used) || used > size - off)
		__builtin_trap();
	perfmap_count(m);
	for (size_t i = 0; i + 8 <= size && i < 256; i += 8) {
		const char *name;

		memcpy(&addr, data + i, 8);
		name = perfmap_lookup(m, addr);
		if (name && !*name)
			__builtin_trap();
	}
	perfmap_lookup(m, 0);
	perfmap_lookup(m, UINT64_MAX);
	perfmap_free(m);
	return 0;
}
