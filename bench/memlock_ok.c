// SPDX-License-Identifier: MIT
// memlock_ok: runs a command under a seccomp filter that lets its attempts to set
// RLIMIT_MEMLOCK succeed without changing the limit (bench/peer.sh, for the
// OpenTelemetry eBPF profiler).
//
// Why this is sound: since Linux 5.11 the memory of BPF maps and programs is
// charged to the memory cgroup of the process that creates them, not to
// RLIMIT_MEMLOCK (kernel commit "bpf: switch to memcg-based memory accounting"),
// so the limit no longer bounds what a BPF loader can load. Loaders written for
// older kernels still raise it: the peer's rlimit.MaximizeMemlock sets it to
// infinity around its loads (and back after), and the peer stops when that fails,
// as it always does where the hard limit is 8 MiB and root lacks CAP_SYS_RESOURCE.
//
// What it changes: setrlimit(RLIMIT_MEMLOCK, new) and prlimit64(pid,
// RLIMIT_MEMLOCK, new != NULL, ...) return 0 without doing anything. Every other
// system call, every other resource, and prlimit64 reading the limit
// (new == NULL) reach the kernel unchanged; the limit itself stays as it was.
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static int add_rules(scmp_filter_ctx ctx)
{
	int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(0), SCMP_SYS(setrlimit), 1,
				  SCMP_A0(SCMP_CMP_EQ, RLIMIT_MEMLOCK));
	if (rc)
		return rc;
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(0), SCMP_SYS(prlimit64), 2,
				SCMP_A1(SCMP_CMP_EQ, RLIMIT_MEMLOCK), SCMP_A2(SCMP_CMP_NE, 0));
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: memlock_ok COMMAND [ARG...]\n");
		return 2;
	}
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx) {
		fprintf(stderr, "memlock_ok: seccomp_init failed\n");
		return 1;
	}
	int rc = add_rules(ctx);
	if (!rc)
		rc = seccomp_load(ctx); /* sets no_new_privs; the filter is inherited by exec */
	seccomp_release(ctx);
	if (rc) {
		fprintf(stderr, "memlock_ok: seccomp filter: %s\n", strerror(-rc));
		return 1;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "memlock_ok: %s: %s\n", argv[1], strerror(errno));
	return 127;
}
