// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * On-CPU sampler: runs on every cpu-clock perf event and folds the sample into
 * a count per (process, user stack, kernel stack, comm) in the active buffer
 * (bpf/fold.bpf.h, which walks the user stack with bpf/unwind.bpf.h).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "ember/cpu.h"
/* samples of processes not loaded yet go to the daemon with their stacks */
#define FOLD_DEFER
#include "fold.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by the daemon before load: count samples of the idle task (pid 0) too. */
const volatile __u32 include_idle = 0;
/* Set by the daemon before load: when non-zero, sample only this process. */
const volatile __u32 target_tgid = 0;
/* Set by the daemon before load: when non-zero, sample only the processes in allow_tgids. */
const volatile __u32 allow_only = 0;

/*
 * Processes an on-demand capture of one application samples (allow_only):
 * filled by the daemon with the application's processes and kept up to date as
 * they start and exit. One entry when unused (sized by the daemon).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EMBER_CPU_ALLOW_MAX);
	__type(key, __u32);
	__type(value, __u8);
} allow_tgids SEC(".maps");

/* The sample of ctx into the active buffer: user stack, and kernel stack outside user mode. */
static __always_inline void count_sample(struct bpf_perf_event_data *ctx, __u32 tgid)
{
	struct ember_uregs regs;
	struct fold_event ev = {.tgid = tgid, .n = 1, .kstack = !ember_user_mode(ctx)};

	if (ember_user_regs(ctx, &regs))
		ev.regs = &regs;
	fold(ctx, &ev);
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
	if ((target_tgid && tgid != target_tgid) ||
	    (allow_only && !bpf_map_lookup_elem(&allow_tgids, &tgid))) {
		metric_inc(EMBER_CPU_M_FILTERED);
		return 0;
	}
	/* reported even when dropped: after an exec it may have to be sampled again */
	note_process(tgid);
	if (fold_dropped(tgid))
		return 0;
	count_sample(ctx, tgid);
	return 0;
}
