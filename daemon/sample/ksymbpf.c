// SPDX-License-Identifier: MIT
/*
 * Loads bpf/ksym.bpf.c and runs it to name kernel addresses: about 1 ms to
 * load and a few microseconds per address, where reading and parsing
 * /proc/kallsyms costs some 60 ms of CPU and several MiB. The only file that
 * includes the ksym skeleton.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpfload.h"
#include "ember/ksym.h"
#include "ksymbpf.h"

#include "ksym.skel.h"

struct ksymbpf {
	struct ksym_bpf *skel;
	int prog_fd;
};

int ksymbpf_open(struct ksymbpf **out)
{
	struct ksymbpf *k = calloc(1, sizeof(*k));
	int rc;

	if (!k)
		return -ENOMEM;
	k->skel = ksym_bpf__open();
	if (!k->skel) {
		rc = -errno;
		free(k);
		return rc ? rc : -EINVAL;
	}
	rc = ksym_bpf__load(k->skel);
	if (rc) {
		ksym_bpf__destroy(k->skel);
		free(k);
		return rc;
	}
	bpfload_report(k->skel->obj, "ksym");
	k->prog_fd = bpf_program__fd(k->skel->progs.ember_ksym_names);
	*out = k;
	return 0;
}

/*
 * One address per run: the symbolizer caches every answer, so after the first
 * intervals it asks only for addresses it has never seen.
 */
int ksymbpf_name(void *arg, uint64_t addr, char *buf, size_t len)
{
	struct ksymbpf *k = arg;
	struct ember_ksym_batch *b = &k->skel->bss->batch;
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	int n;

	if (!len)
		return -EINVAL;
	b->n = 1;
	b->addr[0] = addr;
	b->len[0] = 0;
	if (bpf_prog_test_run_opts(k->prog_fd, &opts))
		return -errno;
	n = b->len[0];
	if (n < 0)
		return n;
	b->name[0][EMBER_KSYM_NAME_LEN - 1] = '\0';
	/* "%ps" prints an address it cannot name as 0x...; a name cut short is no name */
	if (n <= 1 || n > EMBER_KSYM_NAME_LEN || !strncmp(b->name[0], "0x", 2) ||
	    strlen(b->name[0]) + 1 > len) {
		buf[0] = '\0';
		return 0;
	}
	memcpy(buf, b->name[0], strlen(b->name[0]) + 1);
	return 1;
}

void ksymbpf_close(struct ksymbpf *k)
{
	if (!k)
		return;
	ksym_bpf__destroy(k->skel);
	bpfload_closed();
	free(k);
}
