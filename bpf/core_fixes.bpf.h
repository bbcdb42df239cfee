/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Kernel-version and architecture differences, in one place. Each helper says
 * which kernel behaviour it covers.
 */
#ifndef EMBER_CORE_FIXES_BPF_H
#define EMBER_CORE_FIXES_BPF_H

#include "vmlinux.h"
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

/*
 * Kernel threads have no user stack: get_perf_callchain() walks no user frame
 * for a task without an mm (and, since v6.4, for PF_KTHREAD | PF_USER_WORKER),
 * so bpf_get_stack(BPF_F_USER_STACK) returns 0 bytes for them, where a failure
 * is negative. That replaces reading task_struct::mm, whose CO-RE relocation
 * made every start parse the kernel's BTF.
 */
static __always_inline bool ember_no_user_stack(__u64 flags, long bytes)
{
	return (flags & BPF_F_USER_STACK) && bytes == 0;
}

#endif /* EMBER_CORE_FIXES_BPF_H */
