// SPDX-License-Identifier: MIT
/* Reading the per-CPU metrics arrays the BPF objects keep. */
#include <errno.h>
#include <stdlib.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "percpu.h"

int percpu_array_sum(int fd, uint32_t nkeys, uint64_t *out)
{
	int ncpus = libbpf_num_possible_cpus();
	uint64_t *vals;
	int rc = 0;

	if (ncpus <= 0)
		return ncpus ? ncpus : -ENODEV;
	vals = calloc(ncpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (uint32_t k = 0; k < nkeys && !rc; k++) {
		out[k] = 0;
		if (bpf_map_lookup_elem(fd, &k, vals)) {
			rc = -errno;
			break;
		}
		for (int c = 0; c < ncpus; c++)
			out[k] += vals[c];
	}
	free(vals);
	return rc;
}
