/* SPDX-License-Identifier: MIT */
/*
 * ABI between bpf/ksym.bpf.c and daemon/sample/ksymbpf.c: a batch of kernel addresses
 * that the kernel names itself (bpf_snprintf "%ps"), so that the daemon never
 * has to read and parse the whole of /proc/kallsyms.
 */
#ifndef EMBER_KSYM_H
#define EMBER_KSYM_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Addresses named per run of the program (one bpf() call). */
#define EMBER_KSYM_BATCH 32
/* KSYM_NAME_LEN of the kernel: no symbol name is longer. */
#define EMBER_KSYM_NAME_LEN 512

/* The program's .bss: the daemon fills n and addr, the program len and name. */
struct ember_ksym_batch {
	__u32 n;		      /* addresses to name, at most EMBER_KSYM_BATCH */
	__u32 pad;		      /* explicit padding, always 0 */
	__u64 addr[EMBER_KSYM_BATCH]; /* kernel addresses */
	__s32 len[EMBER_KSYM_BATCH];  /* bpf_snprintf()'s result: bytes with the NUL, or -errno */
	char name[EMBER_KSYM_BATCH][EMBER_KSYM_NAME_LEN]; /* "func", "func [module]" or "0x..." */
};
_Static_assert(sizeof(struct ember_ksym_batch) ==
		       8 + 12 * EMBER_KSYM_BATCH + EMBER_KSYM_BATCH * EMBER_KSYM_NAME_LEN,
	       "ember_ksym_batch is ABI");

#endif /* EMBER_KSYM_H */
