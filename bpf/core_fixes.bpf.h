/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Kernel-version and architecture differences, in one place. Each helper says
 * which kernel behaviour it covers.
 */
#ifndef EMBER_CORE_FIXES_BPF_H
#define EMBER_CORE_FIXES_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

/*
 * Whether the perf sample interrupted user mode. bpf_user_pt_regs_t is the
 * arch's pt_regs on x86 and arm64 (include/uapi/asm/bpf_perf_event.h); user
 * mode is CPL 3 in cs on x86 and EL0 in pstate on arm64.
 * x86: since v6.9 (FRED, "x86/ptrace: Cleanup the definition of the pt_regs
 * structure") cs is a u16 in a union with the u64 csx, and the verifier only
 * allows 8-byte reads of the perf context's regs: read the whole word.
 */
static __always_inline bool ember_user_mode(const struct bpf_perf_event_data *ctx)
{
#if defined(__TARGET_ARCH_x86)
	__u64 cs = *(const __u64 *)((const char *)&ctx->regs +
				    __builtin_offsetof(struct pt_regs, cs));

	return (cs & 3) == 3;
#elif defined(__TARGET_ARCH_arm64)
	return (ctx->regs.pstate & 0xf) == 0;
#else
#error "ember_user_mode: unsupported architecture"
#endif
}

/*
 * A task without an mm is a kernel thread: it has no user stack to walk.
 * (task_struct::mm has been stable since 2.6; PF_KTHREAD is not needed.)
 */
static __always_inline bool ember_is_kthread(struct task_struct *task)
{
	return BPF_CORE_READ(task, mm) == NULL;
}

#endif /* EMBER_CORE_FIXES_BPF_H */
