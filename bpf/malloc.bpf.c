// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Emergency allocation capture: uprobes on one process's malloc, calloc and
 * realloc. Each call walks the user stack (bpf/unwind.bpf.h) and adds one call
 * and its bytes to a count per (process, user stack, comm).
 * The stack hash, its store and the first-call report are bpf/stack.bpf.h's.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "ember/sample.h"
#include "ember/malloc.h"
#include "ember/proc.h"
#define FOLD_METRICS_NR EMBER_MALLOC_M_NR
#include "proc_maps.bpf.h"
#include "stack.bpf.h"
#include "unwind.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by the daemon before load: the one process captured (uprobes also filter by pid). */
const volatile __u32 target_tgid = 0;

/*
 * Bytes and calls per folded stack; sized by the daemon. One buffer: the
 * daemon detaches the probes before it drains, so nothing is written meanwhile.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct ember_sample_key);
	__type(value, struct ember_malloc_value);
} counts SEC(".maps");

/*
 * Stacks referenced by counts, keyed by the hash of their addresses.
 * Preallocated (sized by the daemon): a full map is the only way to lose one.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct ember_stack);
} stacks SEC(".maps");

/* The caller's stack from the probed function's first instruction. */
static __always_inline __u64 user_stack(struct pt_regs *ctx, __u32 tgid, bool *lost)
{
	struct ember_stack *st = scratch_stack();
	struct ember_uregs regs;
	struct uw_result res;

	if (!st)
		return 0;
#if !defined(__TARGET_ARCH_x86)
	/* the table walk is x86-64's: elsewhere, the kernel's frame-pointer walk */
	long bytes = bpf_get_stack(ctx, st->ips, sizeof(st->ips), BPF_F_USER_STACK);

	if (bytes <= 0)
		return 0;
	st->len = bytes / sizeof(__u64);
	st->flags = 0;
	return keep_stack_m(st, &stacks, EMBER_MALLOC_M_STACKS_FULL, lost);
#endif
	ember_ctx_uregs(ctx, &regs);
	uw_walk(st, tgid, uw_proc(tgid), &regs, &res);
	if (res.no_proc)
		metric_inc(EMBER_MALLOC_M_NO_TABLES);
	return keep_stack_m(st, &stacks, EMBER_MALLOC_M_STACKS_FULL, lost);
}

static __always_inline void add_count(const struct ember_sample_key *key, __u64 bytes)
{
	struct ember_malloc_value one = {1, bytes}, *v = bpf_map_lookup_elem(&counts, key);

	if (!v) {
		if (!bpf_map_update_elem(&counts, key, &one, BPF_NOEXIST)) {
			metric_inc(EMBER_MALLOC_M_COUNTED);
			return;
		}
		/* another CPU may have inserted it meanwhile */
		v = bpf_map_lookup_elem(&counts, key);
		if (!v) {
			metric_inc(EMBER_MALLOC_M_COUNTS_FULL);
			return;
		}
	}
	__sync_fetch_and_add(&v->count, 1);
	__sync_fetch_and_add(&v->bytes, bytes);
	metric_inc(EMBER_MALLOC_M_COUNTED);
}

/*
 * A global function, not inlined: the verifier checks it (and the stack walk
 * in it) once, not once per probed function, and loading is most of a
 * capture's start. Its arguments are the context and a scalar, as global ones
 * must be.
 */
__noinline int record(struct pt_regs *ctx, __u64 bytes)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct ember_sample_key key = {};
	bool lost = false;

	metric_inc(EMBER_MALLOC_M_CALLS);
	if (tgid != target_tgid) {
		metric_inc(EMBER_MALLOC_M_FILTERED);
		return 0;
	}
	/* the symbolizer needs its maps */
	note_process_m(tgid, EMBER_MALLOC_M_PROC_EVENT_LOST, EMBER_PROC_SRC_MALLOC);
	key.tgid = tgid;
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	key.user_stack = user_stack(ctx, tgid, &lost);
	if (lost)
		key.flags |= EMBER_KEY_USTACK_LOST;
	add_count(&key, bytes);
	return 0;
}

/* void *malloc(size_t size) */
SEC("uprobe") /* BPF_KPROBE: libbpf 1.1 has no BPF_UPROBE; same registers */
int BPF_KPROBE(ember_malloc, __u64 size)
{
	return record(ctx, size);
}

/* void *calloc(size_t n, size_t size): an overflowing product fails, asks nothing */
SEC("uprobe") /* BPF_KPROBE: libbpf 1.1 has no BPF_UPROBE; same registers */
int BPF_KPROBE(ember_calloc, __u64 n, __u64 size)
{
	__u64 lim = size ? ~0ULL / size : ~0ULL;

	barrier_var(lim); /* else clang folds the check into a 128-bit multiply BPF lacks */
	return record(ctx, n > lim ? 0 : n * size);
}

/* void *realloc(void *ptr, size_t size): the new size, as Go's and tcmalloc's profiles count */
SEC("uprobe") /* BPF_KPROBE: libbpf 1.1 has no BPF_UPROBE; same registers */
int BPF_KPROBE(ember_realloc, void *ptr, __u64 size)
{
	return record(ctx, size);
}
