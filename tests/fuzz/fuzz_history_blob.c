// SPDX-License-Identifier: MIT
/* libFuzzer: a history blob as read back from disk, zstd then pprof, both bounded. */
#include <stdlib.h>

#include "compress.h"
#include "pprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pprof_profile *p;
	uint8_t *raw;
	size_t len;
	char err[256];

	if (zstd_decompress_buf(data, size, EMBER_MAX_PROFILE_BYTES, &raw, &len))
		return 0;
	if (len > EMBER_MAX_PROFILE_BYTES)
		abort();
	if (!pprof_decode(raw, len, &p, err, sizeof(err)))
		pprof_profile_free(p);
	free(raw);
	return 0;
}
