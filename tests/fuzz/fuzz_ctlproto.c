// SPDX-License-Identifier: MIT
/*
 * Fuzzes the control protocol's framing and decoder (emberd reads requests
 * from any local root process, emberctl reads replies). Beyond not crashing:
 * every frame that decodes must encode back to the very same bytes, and a
 * malloc capture that decodes targets one pid for at most its cap.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctlproto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctl_msg m;
	uint8_t *back;
	size_t need, len;
	char err[256];
	long flen = ctl_frame_len(data, size, CTL_MAX_REPLY, &need);

	if (flen <= 0)
		return 0;
	if (ctl_decode(data, (size_t)flen, &m, err, sizeof(err)))
		return 0;
	/* what emberd relies on before it probes a process's allocator */
	if (m.type == CTL_CAPTURE && m.kind == CTL_KIND_MALLOC &&
	    (m.target != CTL_TARGET_PID || m.duration_ms > CTL_MALLOC_DURATION_MAX_MS)) {
		fprintf(stderr, "a malloc capture of %u ms, target %d, was accepted\n",
			m.duration_ms, (int)m.target);
		abort();
	}
	if (m.type == CTL_CAPTURE && m.kind != CTL_KIND_CPU && m.kind != CTL_KIND_MALLOC)
		abort();
	if (ctl_encode(&m, &back, &len) || len != (size_t)flen || memcmp(back, data, len)) {
		fprintf(stderr, "decoded frame of type %d does not encode back\n", (int)m.type);
		abort();
	}
	free(back);
	return 0;
}
