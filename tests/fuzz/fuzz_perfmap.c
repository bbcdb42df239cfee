// SPDX-License-Identifier: MIT
/*
 * libFuzzer: perf map text through the parser, fed in two pieces as a growing
 * file is, then lookups at every parsed start and around it; and the input
 * as one runtime's name through the splitter, whose parts must lie inside it.
 * The map parses under a limit the input's second byte sets, as the cache gives
 * each process a share: what it holds never goes over it, and what it says it
 * holds (perfmap_memory, what the cache charges) covers what it took from the heap.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sanitizer/allocator_interface.h>

#include "perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_split(const char *name, size_t len)
{
	struct perfmap_split sp;

	if (!perfmap_split_name(name, len, &sp))
		return;
	if (sp.func_off > len || sp.func_len > len - sp.func_off || sp.file_off > len ||
	    sp.file_len > len - sp.file_off)
		__builtin_trap();
	/* The function comes before its file, and neither runs into the other. */
	if (sp.file_len && sp.func_off + sp.func_len > sp.file_off)
		__builtin_trap();
}

static void check_name(const struct perfmap_name *n)
{
	if (!n->raw || !*n->raw || !n->function || !*n->function || !n->file)
		__builtin_trap();
	if (strlen(n->function) > PERFMAP_MAX_LINE || strlen(n->file) > PERFMAP_MAX_LINE)
		__builtin_trap();
}

/* Heap a map may hold beyond what perfmap_memory counts: its own struct. */
#define MAP_SLACK 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t heap_before = __sanitizer_get_current_allocated_bytes();
	struct perf_map *m = perfmap_new();
	size_t split = size ? data[0] % (size + 1) : 0, used, off;
	size_t limit = size > 1 ? (size_t)data[1] << 10 : 0; /* 0: none, up to 255 KiB */
	int rc;
	const char *text = (const char *)data;
	struct perfmap_name n;
	uint64_t addr = 0;

	check_split(text, size);
	if (!m)
		return 0;
	perfmap_set_limit(m, limit);
	/* The first piece stops anywhere, as a read of a file being written does. */
	rc = perfmap_parse(m, text, split, &used);
	if ((rc && rc != -ENOSPC) || used > split)
		__builtin_trap();
	off = used;
	/* a map at its limit takes nothing more */
	if (!rc) {
		rc = perfmap_parse(m, text + off, size - off, &used);
		if ((rc && rc != -ENOSPC) || used > size - off)
			__builtin_trap();
	}
	if (limit && perfmap_memory(m) > limit)
		__builtin_trap();
	/* the cache charges perfmap_memory: it must be what the map holds (issue 47 item 4) */
	if (__sanitizer_get_current_allocated_bytes() - heap_before > perfmap_memory(m) + MAP_SLACK)
		__builtin_trap();
	perfmap_count(m);
	for (size_t i = 0; i + 8 <= size && i < 256; i += 8) {
		memcpy(&addr, data + i, 8);
		if (perfmap_lookup(m, addr, &n))
			check_name(&n);
	}
	if (perfmap_lookup(m, 0, &n))
		check_name(&n);
	if (perfmap_lookup(m, UINT64_MAX, &n))
		check_name(&n);
	perfmap_free(m);
	return 0;
}
