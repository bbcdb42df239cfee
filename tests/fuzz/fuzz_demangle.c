// SPDX-License-Identifier: MIT
/*
 * libFuzzer: each line of the input as a symbol name from a binary (anyone's), through
 * demangle() and the demangle cache as the symbolizer uses them. A result is bounded by
 * DEMANGLE_MAX_OUT, the cache gives the same answer twice and holds no more than its
 * bound plus the one entry that crossed it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The largest an entry may charge: its name, its result and their bookkeeping. */
#define ENTRY_MAX (DEMANGLE_MAX_IN + DEMANGLE_MAX_OUT + 256)

static void one_name(struct demangle_cache *c, const char *name)
{
	char *plain = demangle(name);
	const char *cached = demangle_cache_get(c, name), *again;

	if (plain && (strlen(plain) > DEMANGLE_MAX_OUT || !demangle_is_mangled(name)))
		__builtin_trap();
	/* the cache says what demangle says, unless it was full */
	if (cached && (!plain || strcmp(cached, plain)))
		__builtin_trap();
	again = demangle_cache_get(c, name);
	if (cached && again != cached)
		__builtin_trap();
	if (demangle_cache_bytes(c) > demangle_cache_max(c) + ENTRY_MAX)
		__builtin_trap();
	free(plain);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	struct demangle_cache *c = demangle_cache_new(16 << 10);

	if (!text || !c) {
		free(text);
		demangle_cache_free(c);
		return 0;
	}
	memcpy(text, data, size);
	text[size] = '\0';
	for (char *line = text, *nl; line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		one_name(c, line);
		demangle_cache_trim(c);
	}
	free(text);
	demangle_cache_free(c);
	return 0;
}
