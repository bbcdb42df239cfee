// SPDX-License-Identifier: MIT
/*
 * libFuzzer: an EMBER_PROC_MAPS record (the mappings the kernel read at a
 * process's exit) through procmaps_parse_exit, then lookups in the result,
 * which must be sorted and apart, each with a whole path or none.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "procmaps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proc_maps m = {0};
	uint64_t end = 0;

	if (procmaps_parse_exit(data, size, &m))
		return 0;
	for (size_t i = 0; i < m.n; i++) {
		const struct proc_map *pm = &m.v[i];

		if (pm->start >= pm->end || pm->start < end || !(pm->perms & PROCMAP_AT_EXIT) ||
		    procmaps_find(&m, pm->start) != pm ||
		    (pm->path && (strlen(pm->path) >= 256 || strchr(pm->path, '\n'))))
			__builtin_trap();
		end = pm->end;
	}
	procmaps_free(&m);
	return 0;
}
