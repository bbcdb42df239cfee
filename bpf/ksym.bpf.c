// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Kernel symbol names on demand: the daemon runs this program (BPF_PROG_RUN)
 * on a batch of addresses and the kernel names each one through its own
 * kallsyms table ("%ps"), a binary search per address, instead of the daemon
 * reading ~5 MiB of /proc/kallsyms text at start-up and keeping it parsed.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "ember/ksym.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Written by the daemon before each run, read back after it. */
struct ember_ksym_batch batch = {};

SEC("syscall")
int ember_ksym_names(void *ctx)
{
	static const char fmt[] = "%ps";

	/* bound: the batch's size */
	for (__u32 i = 0; i < EMBER_KSYM_BATCH; i++) {
		__u64 addr;

		if (i >= batch.n)
			break;
		addr = batch.addr[i];
		batch.len[i] =
			bpf_snprintf(batch.name[i], EMBER_KSYM_NAME_LEN, fmt, &addr, sizeof(addr));
	}
	return 0;
}
