/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Whether a page fault is on anonymous memory, from the ranges a process's
 * mm_struct keeps of its own image, heap and stack: no bpf_find_vma() (about
 * 7 us a call under the mmap lock, most of a sampled fault's cost, issue 46).
 * Pure integer arithmetic: growth.bpf.c and the unit tests include it (the
 * includer provides __u64).
 */
#ifndef EMBER_GROWTH_CLASS_BPF_H
#define EMBER_GROWTH_CLASS_BPF_H

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/*
 * Below the initial stack pointer, this much is the stack's own mapping or its
 * guard gap: the kernel keeps every mapping it places itself at least
 * stack_guard_gap (1 MiB by default) below a stack that grows down, and the
 * mmap area starts at least 128 MiB below it (mm/util.c, MIN_GAP).
 */
#define GROWTH_STACK_NEAR (1ULL << 20)

/* The ranges of struct mm_struct growth_class() reads (unsigned long there). */
struct growth_mm {
	__u64 start_code, end_code; /* the executable's text (file-backed) */
	__u64 start_data, end_data; /* its last loaded segment's file bytes (file-backed) */
	__u64 start_brk, brk;	    /* the heap (anonymous) */
	__u64 start_stack;	    /* the initial stack pointer (anonymous above and near) */
};

enum growth_class {
	GROWTH_CLASS_LOOKUP, /* in none of the ranges: the mapping must be looked up */
	GROWTH_CLASS_ANON,   /* the heap or the main stack: growth */
	GROWTH_CLASS_FILE,   /* the executable's text or data: not growth */
};

/*
 * The class of a fault at addr in a process whose mm holds m. Only what the
 * kernel set up at exec (load_elf_binary, setup_arg_pages) and brk() move
 * these ranges; a mapping placed over them with MAP_FIXED (or a range moved
 * by prctl(PR_SET_MM)) is the one case classified by the range, not the
 * mapping.
 */
static __always_inline enum growth_class growth_class(const struct growth_mm *m, __u64 addr)
{
	if (addr >= m->start_brk && addr < m->brk)
		return GROWTH_CLASS_ANON;
	if (addr < m->start_stack && addr + GROWTH_STACK_NEAR >= m->start_stack)
		return GROWTH_CLASS_ANON;
	if (addr >= m->start_code && addr < m->end_code)
		return GROWTH_CLASS_FILE;
	if (addr >= m->start_data && addr < m->end_data)
		return GROWTH_CLASS_FILE;
	return GROWTH_CLASS_LOOKUP;
}

#endif /* EMBER_GROWTH_CLASS_BPF_H */
