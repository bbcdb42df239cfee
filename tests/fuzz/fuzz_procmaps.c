// SPDX-License-Identifier: MIT
/* libFuzzer: /proc/PID/maps text through the parser, then lookups in the result. */
#include <stddef.h>
#include <stdint.h>

#include "procmaps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proc_maps m = {0};
	size_t i;

	if (procmaps_parse((const char *)data, size, &m))
		return 0;
	for (i = 0; i < m.n; i++) {
		const struct proc_map *pm = procmaps_find(&m, m.v[i].start);

		if (!pm || pm->start > m.v[i].start || m.v[i].start >= pm->end)
			__builtin_trap();
		procmaps_find(&m, m.v[i].end);
	}
	procmaps_find(&m, 0);
	procmaps_find(&m, UINT64_MAX);
	procmaps_free(&m);
	return 0;
}
