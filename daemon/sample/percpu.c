// SPDX-License-Identifier: MIT
/* Reading the per-CPU metrics arrays the BPF objects keep. */
#include <errno.h>
#include <stdlib.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "percpu.h"

/* One element at a time: kernels before 5.6 have no batch lookup. */
static int lookup_each(int fd, uint32_t nkeys, int ncpus, uint64_t *vals)
{
	for (uint32_t k = 0; k < nkeys; k++)
		if (bpf_map_lookup_elem(fd, &k, vals + (size_t)k * ncpus))
			return -errno;
	return 0;
}

/*
 * Every element in one system call: the report reads three such arrays per
 * interval, and a lookup per metric was most of its cost.
 */
static int lookup_all(int fd, uint32_t nkeys, uint64_t *vals, uint32_t *keys)
{
	uint32_t out, count = nkeys;
	int rc;

	rc = bpf_map_lookup_batch(fd, NULL, &out, keys, vals, &count, NULL);
	if (rc && errno != ENOENT)
		return -errno;
	if (count != nkeys) /* an array yields every index: a short read is an old kernel's */
		return -EINVAL;
	for (uint32_t k = 0; k < nkeys; k++)
		if (keys[k] != k)
			return -EINVAL;
	return 0;
}

int percpu_array_sum(int fd, uint32_t nkeys, uint64_t *out)
{
	int ncpus = libbpf_num_possible_cpus();
	uint64_t *vals;
	uint32_t *keys;
	int rc;

	if (ncpus <= 0)
		return ncpus ? ncpus : -ENODEV;
	vals = calloc((size_t)nkeys * ncpus, sizeof(*vals));
	keys = calloc(nkeys, sizeof(*keys));
	rc = vals && keys ? 0 : -ENOMEM;
	if (!rc && lookup_all(fd, nkeys, vals, keys))
		rc = lookup_each(fd, nkeys, ncpus, vals);
	for (uint32_t k = 0; !rc && k < nkeys; k++) {
		out[k] = 0;
		for (int c = 0; c < ncpus; c++)
			out[k] += vals[(size_t)k * ncpus + c];
	}
	free(keys);
	free(vals);
	return rc;
}
