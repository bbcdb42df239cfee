// SPDX-License-Identifier: MIT
/*
 * libFuzzer: one input as a status file. Whatever parses must format again
 * and parse back to the same struct (strings stay terminated, counts bounded).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "statusfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char buf[STATUSFILE_MAX_BYTES];
	static struct ember_status st, again;
	struct statusfile_errors errs;
	int n;

	if (statusfile_parse((const char *)data, size, &st, &errs))
		return 0;
	if (st.n_maps > STATUSFILE_MAX_MAPS ||
	    strnlen(errs.first, sizeof(errs.first)) == sizeof(errs.first) ||
	    strnlen(st.version, sizeof(st.version)) == sizeof(st.version) ||
	    strnlen(st.collector.url, sizeof(st.collector.url)) == sizeof(st.collector.url))
		__builtin_trap();
	if (errs.n && !errs.first[0])
		__builtin_trap();
	n = statusfile_format(&st, buf, sizeof(buf));
	if (n < 0)
		__builtin_trap(); /* a parsed file always fits when written again */
	if (statusfile_parse(buf, (size_t)n, &again, &errs) || errs.n)
		__builtin_trap();
	if (memcmp(&st, &again, sizeof(st)))
		__builtin_trap();
	return 0;
}
