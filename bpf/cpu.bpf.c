// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * On-CPU sampler: runs on every cpu-clock perf event, folds the sample into a
 * count per (process, user stack, kernel stack) in the active buffer.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "ember/cpu.h"
#include "core_fixes.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by the daemon before load: count samples of the idle task (pid 0) too. */
const volatile __u32 include_idle = 0;
/* Set by the daemon before load: when non-zero, sample only this process. */
const volatile __u32 target_tgid = 0;

/*
 * Buffer the programs write to (0 or 1). Flipped by the daemon, which then
 * waits for running programs to finish before it drains the other buffer.
 */
__u32 active_buf = 0;

/* Sample counts per folded stack, buffer 0 and 1; sized by the daemon. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct ember_cpu_key);
	__type(value, __u64);
} counts0 SEC(".maps"), counts1 SEC(".maps");

/* Stack traces referenced by counts0 and counts1; sized by the daemon. */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, EMBER_MAX_STACK_DEPTH * sizeof(__u64));
} stacks0 SEC(".maps"), stacks1 SEC(".maps");

/* Per-CPU counters indexed by enum ember_cpu_metric; summed by the daemon. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EMBER_CPU_M_NR);
	__type(key, __u32);
	__type(value, __u64);
} metrics SEC(".maps");

static __always_inline void metric_inc(enum ember_cpu_metric m)
{
	__u32 key = m;
	__u64 *v = bpf_map_lookup_elem(&metrics, &key);

	if (v)
		*v += 1;
}

/* Stores one stack; a negative result is kept in the key as the loss marker. */
static __always_inline __s32 get_stack(void *ctx, void *stacks, __u64 flags,
				       enum ember_cpu_metric collision, enum ember_cpu_metric failed)
{
	long id = bpf_get_stackid(ctx, stacks, flags);

	if (id >= 0)
		return id;
	metric_inc(id == -17 /* EEXIST */ ? collision : failed);
	return id;
}

static __always_inline void count_sample(struct bpf_perf_event_data *ctx, void *counts,
					 void *stacks, __u32 tgid)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct ember_cpu_key key = {};
	__u64 one = 1, *count;

	key.tgid = tgid;
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	key.user_stack_id = ember_is_kthread(task) ? EMBER_STACK_NONE :
			    get_stack(ctx, stacks, BPF_F_USER_STACK, EMBER_CPU_M_USTACK_COLLISION,
				      EMBER_CPU_M_USTACK_FAILED);
	key.kern_stack_id = ember_user_mode(ctx) ? EMBER_STACK_NONE :
			    get_stack(ctx, stacks, 0, EMBER_CPU_M_KSTACK_COLLISION,
				      EMBER_CPU_M_KSTACK_FAILED);

	count = bpf_map_lookup_elem(counts, &key);
	if (count) {
		__sync_fetch_and_add(count, 1);
	} else if (bpf_map_update_elem(counts, &key, &one, BPF_NOEXIST)) {
		/* another CPU may have inserted it meanwhile */
		count = bpf_map_lookup_elem(counts, &key);
		if (!count) {
			metric_inc(EMBER_CPU_M_COUNTS_FULL);
			return;
		}
		__sync_fetch_and_add(count, 1);
	}
	metric_inc(EMBER_CPU_M_COUNTED);
}

SEC("perf_event")
int ember_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;

	metric_inc(EMBER_CPU_M_SAMPLES);
	if (tid == 0 && !include_idle) {
		metric_inc(EMBER_CPU_M_IDLE_SKIPPED);
		return 0;
	}
	if (target_tgid && tgid != target_tgid) {
		metric_inc(EMBER_CPU_M_FILTERED);
		return 0;
	}
	if (active_buf == 0)
		count_sample(ctx, &counts0, &stacks0, tgid);
	else
		count_sample(ctx, &counts1, &stacks1, tgid);
	return 0;
}
