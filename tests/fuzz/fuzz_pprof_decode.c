// SPDX-License-Identifier: MIT
/* libFuzzer: pprof_decode on arbitrary bytes; what it accepts must merge into a
 * builder and encode to a profile that decodes again. */
#include <stdlib.h>

#include "pprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A builder with p's sample types, so that the merge is accepted. */
static struct pprof_builder *builder_like(const pprof_profile *p)
{
	struct pprof_meta meta = {.n_sample_types = p->n_sample_type};
	size_t i;

	for (i = 0; i < p->n_sample_type; i++) {
		meta.sample_types[i].type = p->string_table[p->sample_type[i]->type];
		meta.sample_types[i].unit = p->string_table[p->sample_type[i]->unit];
	}
	return pprof_builder_new(&meta);
}

static void reencode(const pprof_profile *p)
{
	const struct pprof_filter f = {.by_pid = true, .pid = 1};
	struct pprof_builder *b = builder_like(p);
	pprof_profile *again;
	uint8_t *buf;
	size_t len;
	char err[256];

	if (!b)
		return;
	if (!pprof_merge(b, p, NULL) && !pprof_merge(b, p, &f) && !pprof_encode(b, &buf, &len)) {
		/* Our own output must always be valid and keep every sample. */
		if (pprof_decode(buf, len, &again, err, sizeof(err)))
			abort();
		if (again->n_sample != pprof_sample_count(b))
			abort();
		pprof_profile_free(again);
		free(buf);
	}
	pprof_builder_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pprof_profile *p;
	char err[256];

	if (pprof_decode(data, size, &p, err, sizeof(err)))
		return 0;
	reencode(p);
	pprof_profile_free(p);
	return 0;
}
