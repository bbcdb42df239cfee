// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Sampled allocations: USDT programs on otel_memory:alloc(ptr, size, weight)
 * and otel_memory:free(ptr), attached per process by daemon/sample/allocs.c. An alloc
 * walks the user stack (bpf/unwind.bpf.h) and folds into the active buffer's
 * counts; in inuse mode it also records the pointer until its free.
 *
 * Live allocations outlive intervals, so their stacks cannot sit in the
 * double-buffered stacks maps the daemon empties at each drain: they are kept
 * once more in live_stacks, which nothing here deletes. The daemon reads the
 * live map at each interval's end (that is the inuse profile), and deletes
 * the live_stacks entries no live pointer refers to at two reads in a row.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/usdt.bpf.h>

#include "ember/alloc.h"
#define FOLD_METRICS_NR EMBER_ALLOC_M_NR
#include "core_fixes.bpf.h"
#include "stack.bpf.h"
#include "unwind.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by the daemon before load: live pointers one process may hold in the live map. */
const volatile __u32 live_proc_max = 16384;

/* The buffers' generation (daemon/sample/fold.h's struct fold_gen): the programs write to active_buf & 1. */
__u32 active_buf = 0;

/* Sampled objects and bytes per folded stack, buffer 0 and 1; sized by the daemon. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct ember_sample_key);
	__type(value, struct ember_alloc_count);
} counts0 SEC(".maps"), counts1 SEC(".maps");

/* Stacks referenced by counts0 and counts1, by hash (as cpu.bpf.c's); sized by the daemon. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2048);
	__type(key, __u64);
	__type(value, struct ember_stack);
} stacks0 SEC(".maps"), stacks1 SEC(".maps");

/* Stacks referenced by live pointers, by hash; garbage-collected by the daemon. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct ember_stack);
} live_stacks SEC(".maps");

/* Live sampled pointers of inuse processes; its size is the global cap. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct ember_alloc_ptr);
	__type(value, struct ember_alloc_live);
} live SEC(".maps");

/* Live pointers per process, against live_proc_max; deleted by the daemon at exit. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} live_procs SEC(".maps");

/* The user stack at the probe, leaf first, in the per-CPU scratch; NULL if none. */
static __always_inline struct ember_stack *walk(struct pt_regs *ctx, __u32 tgid)
{
	const struct ember_unwind_proc *proc;
	struct ember_uregs regs;
	struct ember_stack *st;
	struct uw_result res;

	st = scratch_stack();
	if (!st)
		return NULL;
#if defined(__TARGET_ARCH_x86)
	/* a uprobe's context is the user registers themselves */
	ember_ctx_uregs(ctx, &regs);
	proc = uw_proc(tgid);
	/* not loaded, or some of its tables still being compiled: frame pointers there */
	metric_add(EMBER_ALLOC_M_NO_TABLES, !proc || proc->pending);
	uw_walk(st, tgid, proc, &regs, &res);
#else
	long bytes = bpf_get_stack(ctx, st->ips, sizeof(st->ips), BPF_F_USER_STACK);

	if (bytes <= 0)
		return NULL;
	st->len = bytes / sizeof(__u64);
	st->flags = 0;
#endif
	return st;
}

static __always_inline void add_count(void *counts, const struct ember_sample_key *key,
				      __u64 objects, __u64 space)
{
	struct ember_alloc_count *c = bpf_map_lookup_elem(counts, key), zero = {};

	if (!c) {
		bpf_map_update_elem(counts, key, &zero, BPF_NOEXIST);
		c = bpf_map_lookup_elem(counts, key); /* ours, or another CPU's */
		if (!c) {
			metric_inc(EMBER_ALLOC_M_COUNTS_FULL);
			return;
		}
	}
	__sync_fetch_and_add(&c->objects, objects);
	__sync_fetch_and_add(&c->space, space);
	__sync_fetch_and_add(&c->samples, 1);
	metric_inc(EMBER_ALLOC_M_COUNTED);
}

/* Records a live pointer within the global (map size) and per-process caps. */
static __always_inline void add_live(const struct ember_stack *st, __u64 h, __u32 tgid, __u64 ptr,
				     const struct ember_alloc_live *v0)
{
	struct ember_alloc_ptr k = {.tgid = tgid, .ptr = ptr};
	struct ember_alloc_live v = *v0;
	__u32 one = 1, *n;

	n = bpf_map_lookup_elem(&live_procs, &tgid);
	if (n && *n >= live_proc_max) {
		metric_inc(EMBER_ALLOC_M_LIVE_PROC_CAP);
		return;
	}
	v.user_stack = h && store_stack(st, h, &live_stacks, EMBER_ALLOC_M_STACKS_FULL) ? h : 0;
	if (bpf_map_update_elem(&live, &k, &v, BPF_NOEXIST)) {
		/* full, or the pointer is there already (its free was not seen) */
		metric_inc(EMBER_ALLOC_M_LIVE_FULL);
		return;
	}
	if (n)
		__sync_fetch_and_add(n, 1);
	else if (bpf_map_update_elem(&live_procs, &tgid, &one, BPF_NOEXIST)) {
		n = bpf_map_lookup_elem(&live_procs, &tgid); /* another CPU's insert */
		if (n)
			__sync_fetch_and_add(n, 1);
	}
	metric_inc(EMBER_ALLOC_M_LIVE_ADDED);
}

SEC("usdt")
int ember_alloc(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct ember_sample_key key = {.tgid = tgid};
	struct ember_alloc_live v = {};
	long ptr = 0, size = 0, weight = 0;
	struct ember_stack *st;
	void *counts, *stacks;
	__u64 h = 0;

	metric_inc(EMBER_ALLOC_M_ALLOCS);
	if (bpf_usdt_arg(ctx, 0, &ptr) || bpf_usdt_arg(ctx, 1, &size) ||
	    bpf_usdt_arg(ctx, 2, &weight) || weight <= 0)
		return 0;
	counts = active_buf & 1 ? (void *)&counts1 : (void *)&counts0;
	stacks = active_buf & 1 ? (void *)&stacks1 : (void *)&stacks0;
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	st = walk(ctx, tgid);
	if (st) {
		h = stack_hash(st);
		key.user_stack = store_stack(st, h, stacks, EMBER_ALLOC_M_STACKS_FULL) ? h : 0;
	}
	if (!key.user_stack)
		key.flags |= EMBER_KEY_USTACK_LOST;
	/* Go's convention: a sample of size s weighing w stands for w / s objects */
	v.objects = size > 0 && weight >= size ? (__u64)weight / (__u64)size : 1;
	v.space = weight;
	add_count(counts, &key, v.objects, v.space);
	if (!(bpf_usdt_cookie(ctx) & EMBER_ALLOC_COOKIE_INUSE) || !ptr)
		return 0;
	__builtin_memcpy(v.comm, key.comm, sizeof(v.comm));
	if (st)
		add_live(st, h, tgid, ptr, &v);
	else
		add_live(NULL, 0, tgid, ptr, &v);
	return 0;
}

SEC("usdt")
int ember_free(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct ember_alloc_ptr k = {.tgid = tgid};
	long ptr = 0;
	__u32 *n;

	metric_inc(EMBER_ALLOC_M_FREES);
	if (bpf_usdt_arg(ctx, 0, &ptr))
		return 0;
	k.ptr = ptr;
	if (bpf_map_delete_elem(&live, &k)) {
		metric_inc(EMBER_ALLOC_M_FREE_UNKNOWN);
		return 0;
	}
	n = bpf_map_lookup_elem(&live_procs, &tgid);
	if (n && *n)
		__sync_fetch_and_add(n, (__u32)-1); /* no fetch-sub before -mcpu=v3 */
	metric_inc(EMBER_ALLOC_M_LIVE_FREED);
	return 0;
}
