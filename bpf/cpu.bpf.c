// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * On-CPU sampler: runs on every cpu-clock perf event and folds the sample into
 * a count per (process, user stack, kernel stack, comm) in the active buffer
 * (bpf/fold.bpf.h, which walks the user stack with bpf/unwind.bpf.h).
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "ember/sample.h"
/* samples of processes not loaded yet go to the daemon with their stacks */
#define FOLD_DEFER
/* samples of a process tearing down its memory take the stack it had at its exit */
#define FOLD_EXIT_STACKS
/* samples in an execve system call before it replaces the program are "[execve]" too */
#define FOLD_EXEC_SYSCALL
#include "fold.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by the daemon before load: count samples of the idle task (pid 0) too. */
const volatile __u32 include_idle = 0;
/* Set by the daemon before load: when non-zero, sample only this process. */
const volatile __u32 target_tgid = 0;
/* Set by the daemon before load: when non-zero, sample only the processes in allow_tgids. */
const volatile __u32 allow_only = 0;
/*
 * Set by the daemon before load: the pages of address space from which a
 * process's user stack is read at its exit (ember_cpu_exit); 0: never.
 */
const volatile __u64 exit_stack_pages = 0;

#ifndef PF_KTHREAD
#define PF_KTHREAD 0x00200000 /* include/linux/sched.h */
#endif
#define SIGNAL_GROUP_EXIT 0x00000004 /* include/linux/sched/signal.h: the whole process exits */

/*
 * Processes an on-demand capture of one application samples (allow_only):
 * filled by the daemon with the application's processes and kept up to date as
 * they start and exit. One entry when unused (sized by the daemon).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EMBER_SAMPLE_ALLOW_MAX);
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

	metric_inc(EMBER_SAMPLE_M_SAMPLES);
	if (tid == 0 && !include_idle) {
		metric_inc(EMBER_SAMPLE_M_IDLE_SKIPPED);
		return 0;
	}
	if ((target_tgid && tgid != target_tgid) ||
	    (allow_only && !bpf_map_lookup_elem(&allow_tgids, &tgid))) {
		metric_inc(EMBER_SAMPLE_M_FILTERED);
		return 0;
	}
	/* reported even when dropped: after an exec it may have to be sampled again */
	note_process(tgid);
	if (fold_dropped(tgid))
		return 0;
	count_sample(ctx, tgid);
	return 0;
}

/*
 * A thread's exit (before exit_mm): when it may be the last user of its
 * process's address space, whose teardown (exit_mmap) it then runs (the only
 * user left, or one of a process exiting as a whole: which of its threads
 * releases it last is a race), its user stack is read now into its task's
 * exit_stacks entry, for the samples the teardown takes after: then no user
 * memory is left to walk. Only processes whose tables are loaded (a walk by
 * frame pointers is not worth keeping) and that map exit_stack_pages or more
 * (a small process's teardown is over long before a sample at 19 Hz is
 * likely): the cost is one walk at such an exit.
 */
#if defined(__TARGET_ARCH_x86)
SEC("raw_tracepoint/sched_process_exit")
int ember_cpu_exit(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	const struct ember_unwind_proc *proc;
	struct mm_struct *mm = task->mm;
	struct exit_stack *ex;
	struct uw_result res;
	struct ember_uregs regs;

	if (!exit_stack_pages || !mm || (task->flags & PF_KTHREAD))
		return 0;
	if (BPF_CORE_READ(mm, total_vm) < exit_stack_pages)
		return 0;
	if (BPF_CORE_READ(mm, mm_users.counter) != 1 &&
	    !(BPF_CORE_READ(task, signal, flags) & SIGNAL_GROUP_EXIT))
		return 0; /* a thread leaving a process that goes on */
	if ((target_tgid && tgid != target_tgid) ||
	    (allow_only && !bpf_map_lookup_elem(&allow_tgids, &tgid)) ||
	    (drops_used && bpf_map_lookup_elem(&drop_tgids, &tgid)))
		return 0;
	proc = uw_proc(tgid);
	if (!proc || proc->pending)
		return 0;
	ex = bpf_task_storage_get(&exit_stacks, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ex || !ember_task_uregs(task, &regs))
		return 0;
	uw_walk(&ex->st, tgid, proc, &regs, &res);
	ex->end = res.end;
	return 0;
}
#endif
