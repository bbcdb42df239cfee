// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Memory growth: folds sampled page faults on anonymous memory (the software
 * page-faults perf event, 1 in N) and anonymous mmaps sampled by bytes, with
 * their stacks, in the maps of bpf/fold.bpf.h; those of a process whose
 * unwind tables are not loaded yet go to the deferred ring with a copy of
 * their stack, as the cpu program's do, for the daemon to walk.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "ember/growth.h"
#define FOLD_METRICS_NR EMBER_GROWTH_M_NR
#define FOLD_PROC_SOURCE EMBER_PROC_SRC_GROWTH
#define FOLD_DEFER
#include "fold.bpf.h"
#include "growth_class.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* include/linux/sched.h: the task is exiting; a kernel thread (no user memory of its own). */
#define PF_EXITING 0x00000004
#define PF_KTHREAD 0x00200000
/* include/uapi/asm-generic/mman-common.h */
#define MAP_ANONYMOUS 0x20
#define PROT_NONE 0x0

#if defined(__TARGET_ARCH_x86)
#define NR_MMAP 9
#elif defined(__TARGET_ARCH_arm64)
#define NR_MMAP 222
#endif

/*
 * Set by the daemon before load: mapped bytes one sample of mmap growth
 * stands for (a call of L bytes is sampled with probability L / this, or always
 * when larger); 0 leaves mmaps out.
 */
const volatile __u64 map_sample_bytes = 0;

/*
 * Set by the daemon before load: a process's faults and mmaps in its first
 * this many ns (since its fork) are counted without a stack (fold_startup()):
 * the start-up of a short-lived process (ld.so, libc, a shell's fork before
 * exec) would otherwise report nearly every new process as sampled, and its
 * capture costs far more than the few pages it stands for. 0: all walked.
 */
const volatile __u64 min_age_ns = 0;

/* Whether task's process is younger than min_age_ns (counted when so: fold_startup()). */
static __always_inline bool too_young(struct task_struct *task)
{
	__u64 start;

	if (!min_age_ns)
		return false;
	start = BPF_CORE_READ(task, group_leader, start_time);
	if (bpf_ktime_get_ns() - start >= min_age_ns)
		return false;
	metric_inc(EMBER_GROWTH_M_YOUNG);
	return true;
}

/* bpf_find_vma() callback: whether the faulting address's mapping is file-backed. */
static long vma_is_file(struct task_struct *task, struct vm_area_struct *vma, void *arg)
{
	bool *file = arg;

	*file = vma->vm_file != NULL;
	return 0;
}

/* The class of a fault at addr from mm's own ranges (growth_class.bpf.h). */
static __always_inline enum growth_class fault_class(struct mm_struct *mm, __u64 addr)
{
	struct growth_mm m = {
		.start_code = mm->start_code,
		.end_code = mm->end_code,
		.start_data = mm->start_data,
		.end_data = mm->end_data,
		.start_brk = mm->start_brk,
		.brk = mm->brk,
		.start_stack = mm->start_stack,
	};

	return growth_class(&m, addr);
}

/*
 * Whether the fault is a user process's own: not a kernel thread's, nor one
 * of an exiting task (clear_child_tid, robust futexes), which is not growth,
 * and reporting the process again after its exit event would keep its
 * tables loaded.
 */
static __always_inline bool fault_of_user(struct task_struct *task)
{
	if ((task->flags & PF_KTHREAD) || !task->mm) {
		metric_inc(EMBER_GROWTH_M_KTHREAD);
		return false;
	}
	if (task->flags & PF_EXITING) {
		metric_inc(EMBER_SAMPLE_M_FILTERED);
		return false;
	}
	return true;
}

/*
 * Whether a user fault is growth: outside file-backed mappings. The heap,
 * the main stack and the executable's own image are known from the mm;
 * elsewhere the mapping is looked up, and one that cannot be (its lock
 * taken) is kept.
 */
static __always_inline bool fault_is_anon(struct task_struct *task, __u64 addr)
{
	enum growth_class c = fault_class(task->mm, addr);
	bool file = false;

	if (c != GROWTH_CLASS_LOOKUP) {
		metric_inc(EMBER_GROWTH_M_BY_RANGE);
		if (c == GROWTH_CLASS_FILE)
			metric_inc(EMBER_GROWTH_M_FILE);
		return c == GROWTH_CLASS_ANON;
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

/*
 * A young process's sampled faults are classified (anonymous or not) 1 in
 * this many, chosen at random, and one found anonymous stands for as many:
 * the start-up total stays unbiased, and the other faults of a start-up
 * (most of a host's when commands come and go) skip the mapping lookup, the
 * most of a run's cost (issue 46). 4: the start-up bytes of a process
 * faulting in 500 MiB stay within 5 % (one standard deviation).
 */
#define YOUNG_CLASSIFY_EVERY 4

/*
 * Growth of a young process (too_young()): n counted under its process and
 * thread name without a stack walk (EMBER_GROWTH_KEY_STARTUP | flags), and
 * without reporting the process: its start-up is what growth_min_age spares.
 */
static __always_inline void fold_startup(__u32 tgid, __u32 flags, __u64 n)
{
	struct ember_sample_key key = {.tgid = tgid, .flags = flags | EMBER_GROWTH_KEY_STARTUP};

	if (fold_dropped(tgid))
		return;
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	add_count_gen(&key, n, active_buf);
}

SEC("perf_event")
int ember_growth_fault(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct ember_uregs regs;
	struct fold_event ev = {.tgid = tgid, .n = 1, .kstack = !ember_user_mode(ctx)};

	metric_inc(EMBER_SAMPLE_M_SAMPLES);
	if (!fault_of_user(task))
		return 0;
	if (too_young(task)) {
		if (bpf_get_prandom_u32() % YOUNG_CLASSIFY_EVERY) {
			metric_inc(EMBER_GROWTH_M_YOUNG_UNCLASSIFIED);
			return 0;
		}
		if (fault_is_anon(task, ctx->addr))
			fold_startup(tgid, 0, YOUNG_CLASSIFY_EVERY);
		return 0;
	}
	if (!fault_is_anon(task, ctx->addr))
		return 0;
	note_process(tgid);
	if (fold_dropped(tgid))
		return 0;
	if (ember_user_regs(ctx, &regs))
		ev.regs = &regs;
	fold(ctx, &ev);
	return 0;
}

/* The number of the system call current is in (from its saved registers), or -1. */
static __always_inline long syscall_nr(struct pt_regs *regs)
{
#if defined(__TARGET_ARCH_x86)
	return BPF_CORE_READ(regs, orig_ax);
#elif defined(__TARGET_ARCH_arm64)
	return BPF_CORE_READ(regs, syscallno);
#endif
}

/*
 * Bytes a successful anonymous mmap adds to the address space, read from the
 * system call's arguments; 0 for any other search of the address space (a
 * file mapping, shmat, mremap) and for a reservation (PROT_NONE: allocator
 * arenas and guard areas, memory only once made accessible).
 */
static __always_inline __u64 map_growth(struct pt_regs *regs, unsigned long addr)
{
	__u64 prot, flags;

	if (addr & 0xfff) /* an error (-ENOMEM), never page-aligned: the search failed */
		return 0;
	if (syscall_nr(regs) != NR_MMAP)
		return 0;
	prot = PT_REGS_PARM3_CORE_SYSCALL(regs);
	flags = PT_REGS_PARM4_CORE_SYSCALL(regs);
	if (!(flags & MAP_ANONYMOUS) || prot == PROT_NONE)
		return 0;
	return PT_REGS_PARM2_CORE_SYSCALL(regs);
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

/*
 * Every mmap without MAP_FIXED searches the address space for room
 * (vm_unmapped_area): a hook that runs on mappings only, where the entry of
 * every system call would cost every process on the host. brk and MAP_FIXED
 * mappings are not seen; their pages are, when touched, as faults.
 */
SEC("raw_tp/vm_unmapped_area")
int BPF_PROG(ember_growth_map, unsigned long addr)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	struct fold_event ev = {.tgid = tgid, .flags = EMBER_GROWTH_KEY_MAPPED};
	struct ember_uregs uregs;
	__u64 len;

	if (!map_sample_bytes || !regs)
		return 0;
	len = map_growth(regs, addr);
	if (!len)
		return 0;
	metric_inc(EMBER_GROWTH_M_MAP_CALLS);
	ev.n = map_sample(len);
	if (!ev.n)
		return 0;
	if (too_young(task)) {
		fold_startup(tgid, EMBER_GROWTH_KEY_MAPPED, ev.n);
		return 0;
	}
	metric_inc(EMBER_GROWTH_M_MAP_SAMPLED);
	note_process(tgid);
	if (fold_dropped(tgid))
		return 0;
#if defined(__TARGET_ARCH_x86)
	/* the registers saved at system-call entry are the user's */
	if (ember_saved_uregs(regs, &uregs))
		ev.regs = &uregs;
#endif
	fold(ctx, &ev);
	return 0;
}
