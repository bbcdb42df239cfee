// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Memory growth: folds sampled page faults on anonymous memory (the software
 * page-faults perf event, 1 in N) and sampled anonymous mmap/brk growth (bytes)
 * with their stacks, in the maps of bpf/fold.bpf.h.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "ember/growth.h"
#define FOLD_METRICS_NR EMBER_GROWTH_M_NR
#include "fold.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* include/linux/sched.h: the task is a kernel thread (no user memory of its own). */
#define PF_KTHREAD 0x00200000
/* include/uapi/asm-generic/mman-common.h */
#define MAP_ANONYMOUS 0x20
#define PROT_NONE 0x0

#if defined(__TARGET_ARCH_x86)
#define NR_MMAP 9
#define NR_BRK 12
#elif defined(__TARGET_ARCH_arm64)
#define NR_MMAP 222
#define NR_BRK 214
#endif

/*
 * Set by the daemon before load: mapped bytes one sample of mmap/brk growth
 * stands for (a call of L bytes is sampled with probability L / this, or always
 * when larger); 0 leaves mmap/brk out.
 */
const volatile __u64 map_sample_bytes = 0;

/* bpf_find_vma() callback: whether the faulting address's mapping is file-backed. */
static long vma_is_file(struct task_struct *task, struct vm_area_struct *vma, void *arg)
{
	bool *file = arg;

	*file = vma->vm_file != NULL;
	return 0;
}

/*
 * Whether the fault is growth: a user process's fault outside file-backed
 * mappings. A mapping that cannot be looked up (its lock taken) is kept.
 */
static __always_inline bool fault_counts(struct task_struct *task, __u64 addr)
{
	bool file = false;

	if ((task->flags & PF_KTHREAD) || !task->mm) {
		metric_inc(EMBER_GROWTH_M_KTHREAD);
		return false;
	}
	if (bpf_find_vma(task, addr, vma_is_file, &file, 0)) {
		metric_inc(EMBER_GROWTH_M_VMA_UNKNOWN);
		return true;
	}
	if (file) {
		metric_inc(EMBER_GROWTH_M_FILE);
		return false;
	}
	return true;
}

SEC("perf_event")
int ember_growth_fault(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct ember_uregs regs;
	struct fold_event ev = {.tgid = tgid, .n = 1, .kstack = !ember_user_mode(ctx)};

	metric_inc(EMBER_CPU_M_SAMPLES);
	if (!fault_counts(task, ctx->addr))
		return 0;
	note_process(tgid);
	if (fold_dropped(tgid))
		return 0;
	if (ember_user_regs(ctx, &regs))
		ev.regs = &regs;
	fold(ctx, &ev);
	return 0;
}

/* Bytes an anonymous mmap or a growing brk adds to the address space; 0 for any other call. */
static __always_inline __u64 map_growth(struct pt_regs *regs, long id)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 len, prot, flags, brk, old;

	if (id == NR_MMAP) {
		len = PT_REGS_PARM2_CORE_SYSCALL(regs);
		prot = PT_REGS_PARM3_CORE_SYSCALL(regs);
		flags = PT_REGS_PARM4_CORE_SYSCALL(regs);
		/* PROT_NONE: a reservation (allocator arenas, guard areas), not memory */
		return (flags & MAP_ANONYMOUS) && prot != PROT_NONE ? len : 0;
	}
	if (id != NR_BRK)
		return 0;
	brk = PT_REGS_PARM1_CORE_SYSCALL(regs);
	old = BPF_CORE_READ(task, mm, brk);
	return brk > old ? brk - old : 0; /* brk(0) asks; a lower brk shrinks */
}

/*
 * The weight of a call of len bytes sampled by bytes, or 0 when not sampled:
 * unbiased (expected weight = len) at one stack walk per map_sample_bytes.
 */
static __always_inline __u64 map_sample(__u64 len)
{
	if (len >= map_sample_bytes)
		return len;
	if ((__u64)bpf_get_prandom_u32() * map_sample_bytes >= (len << 32))
		return 0;
	return map_sample_bytes;
}

SEC("raw_tp/sys_enter")
int BPF_PROG(ember_growth_map, struct pt_regs *regs, long id)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct ember_uregs uregs;
	struct fold_event ev = {.tgid = tgid, .flags = EMBER_GROWTH_KEY_MAPPED};
	__u64 len;

	if (id != NR_MMAP && id != NR_BRK)
		return 0; /* every other system call: the cost that matters */
	len = map_growth(regs, id);
	if (!len || !map_sample_bytes)
		return 0;
	metric_inc(EMBER_GROWTH_M_MAP_CALLS);
	ev.n = map_sample(len);
	if (!ev.n)
		return 0;
	metric_inc(EMBER_GROWTH_M_MAP_SAMPLED);
	note_process(tgid);
	if (fold_dropped(tgid))
		return 0;
#if defined(__TARGET_ARCH_x86)
	/* the registers saved at syscall entry are the user's */
	uregs.ip = BPF_CORE_READ(regs, ip);
	uregs.sp = BPF_CORE_READ(regs, sp);
	uregs.bp = BPF_CORE_READ(regs, bp);
	ev.regs = &uregs;
#endif
	fold(ctx, &ev);
	return 0;
}
