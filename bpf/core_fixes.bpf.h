/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Kernel-version and architecture differences, in one place. Each helper says
 * which kernel behaviour it covers.
 */
#ifndef EMBER_CORE_FIXES_BPF_H
#define EMBER_CORE_FIXES_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

/*
 * Whether the perf sample interrupted user mode. bpf_user_pt_regs_t is the
 * arch's pt_regs on x86 and arm64 (include/uapi/asm/bpf_perf_event.h); user
 * mode is CPL 3 in cs on x86 and EL0 in pstate on arm64.
 * x86: since v6.9 (FRED, "x86/ptrace: Cleanup the definition of the pt_regs
 * structure") cs is a u16 in a union with the u64 csx, and the verifier only
 * allows 8-byte reads of the perf context's regs: read the whole word.
 * regs is the first member of the UAPI struct bpf_perf_event_data: the context
 * is read at fixed offsets, with no CO-RE relocation, so that loading needs no
 * parse of the kernel's BTF (~8 ms of CPU at every start).
 */
static __always_inline bool ember_user_mode(const struct bpf_perf_event_data *ctx)
{
#if defined(__TARGET_ARCH_x86)
	__u64 cs = *(const __u64 *)((const char *)ctx + __builtin_offsetof(struct pt_regs, cs));

	return (cs & 3) == 3;
#elif defined(__TARGET_ARCH_arm64)
	__u64 pstate = *(const __u64 *)((const char *)ctx +
					__builtin_offsetof(struct user_pt_regs, pstate));

	return (pstate & 0xf) == 0;
#else
#error "ember_user_mode: unsupported architecture"
#endif
}

/* The user registers the stack walk starts from (rbx: the CFA of ld.so's trampolines). */
struct ember_uregs {
	__u64 ip, sp, bp, bx;
};

/* Reads one word of the perf context's registers (see ember_user_mode). */
#define EMBER_CTX_REG(ctx, field) \
	(*(const __u64 *)((const char *)(ctx) + __builtin_offsetof(struct pt_regs, field)))

/*
 * The registers of a context that holds the user's own (a perf sample in user
 * mode, a uprobe's): direct loads, which the verifier rewrites to the real regs.
 */
static __always_inline void ember_ctx_uregs(const void *ctx, struct ember_uregs *r)
{
#if defined(__TARGET_ARCH_x86)
	r->ip = EMBER_CTX_REG(ctx, ip);
	r->sp = EMBER_CTX_REG(ctx, sp);
	r->bp = EMBER_CTX_REG(ctx, bp);
	r->bx = EMBER_CTX_REG(ctx, bx);
#endif
}

/*
 * The user registers a task entered the kernel with (its saved pt_regs, from
 * bpf_task_pt_regs()); false when there are none (a kernel thread's are zero).
 */
static __always_inline bool ember_saved_uregs(const struct pt_regs *regs, struct ember_uregs *r)
{
#if defined(__TARGET_ARCH_x86)
	if (!regs)
		return false;
	r->ip = BPF_CORE_READ(regs, ip);
	r->sp = BPF_CORE_READ(regs, sp);
	r->bp = BPF_CORE_READ(regs, bp);
	r->bx = BPF_CORE_READ(regs, bx);
	return r->ip && r->sp;
#else
	return false; /* the .eh_frame walk is x86-64 only: see user_stack() */
#endif
}

/* The user registers task entered the kernel with (ember_saved_uregs() of its pt_regs). */
static __always_inline bool ember_task_uregs(struct task_struct *task, struct ember_uregs *r)
{
	return ember_saved_uregs((const struct pt_regs *)bpf_task_pt_regs(task), r);
}

/*
 * The interrupted user registers: the perf context's own when the sample hit
 * user mode, else those the kernel saved at its entry (bpf_task_pt_regs,
 * v5.15), read from kernel memory: rbp and rbx, neighbours in the x86
 * pt_regs, in one read. Fixed offsets of the x86 pt_regs, no CO-RE (see
 * above). False when there are none: a kernel thread's saved registers are zero.
 */
static __always_inline bool ember_user_regs(const struct bpf_perf_event_data *ctx,
					    struct ember_uregs *r)
{
#if defined(__TARGET_ARCH_x86)
	const char *regs;

	_Static_assert(__builtin_offsetof(struct pt_regs, bx) ==
			       __builtin_offsetof(struct pt_regs, bp) + 8,
		       "pt_regs: bx follows bp");
	_Static_assert(__builtin_offsetof(struct ember_uregs, bx) ==
			       __builtin_offsetof(struct ember_uregs, bp) + 8,
		       "ember_uregs: bx follows bp");
	if (ember_user_mode(ctx)) {
		ember_ctx_uregs(ctx, r);
		return true;
	}
	regs = (const char *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (!regs ||
	    bpf_probe_read_kernel(&r->ip, 8, regs + __builtin_offsetof(struct pt_regs, ip)) ||
	    bpf_probe_read_kernel(&r->sp, 8, regs + __builtin_offsetof(struct pt_regs, sp)) ||
	    bpf_probe_read_kernel(&r->bp, 16, regs + __builtin_offsetof(struct pt_regs, bp)))
		return false;
	return r->ip && r->sp;
#else
	return false; /* the .eh_frame walk is x86-64 only: see user_stack() */
#endif
}

/*
 * Whether the current task, sampled in the kernel, is inside an execve or
 * execveat system call: the number it entered with, in its saved registers
 * (x86-64's; its ia32 compat calls are not looked for).
 */
static __always_inline bool ember_in_exec_syscall(void)
{
#if defined(__TARGET_ARCH_x86)
	const char *regs = (const char *)bpf_task_pt_regs(bpf_get_current_task_btf());
	__u64 nr;

	if (!regs ||
	    bpf_probe_read_kernel(&nr, 8, regs + __builtin_offsetof(struct pt_regs, orig_ax)))
		return false;
	return nr == 59 || nr == 322; /* __NR_execve, __NR_execveat */
#else
	return false;
#endif
}

#endif /* EMBER_CORE_FIXES_BPF_H */
