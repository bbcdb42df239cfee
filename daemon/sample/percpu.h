/* SPDX-License-Identifier: MIT */
/* Reading the per-CPU metrics arrays the BPF objects keep. */
#ifndef EMBER_PERCPU_H
#define EMBER_PERCPU_H

#include <stdint.h>

/* Sums entries 0..nkeys-1 of a BPF_MAP_TYPE_PERCPU_ARRAY of u64 over every
 * possible CPU into out. 0 or -errno. */
int percpu_array_sum(int fd, uint32_t nkeys, uint64_t *out);

#endif
