/* SPDX-License-Identifier: MIT */
/* Kernel addresses named by the kernel itself, through bpf/ksym.bpf.c. */
#ifndef EMBER_KSYMBPF_H
#define EMBER_KSYMBPF_H

#include <stddef.h>
#include <stdint.h>

struct ksymbpf;

/* Loads the program: 0 or a negative errno (kernels before 5.14 cannot run it). */
int ksymbpf_open(struct ksymbpf **out);
/* A symbolizer_kernel_namer: arg is the struct ksymbpf. */
int ksymbpf_name(void *arg, uint64_t addr, char *buf, size_t len);
void ksymbpf_close(struct ksymbpf *k);

#endif
