/* SPDX-License-Identifier: MIT */
/*
 * ABI of the .eh_frame unwinder: the compact unwind table lib/symbols/unwtab.c compiles
 * from each binary's CFI, and the maps through which daemon/unwind/unwinder.c hands
 * tables and process mappings to the BPF walk (bpf/unwind.bpf.h). x86-64 only.
 */
#ifndef EMBER_UNWIND_H
#define EMBER_UNWIND_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "ember/runtime.h"

/* Executable mappings of one process the walk can see (more: frame pointers there). */
#define EMBER_UNWIND_MAPS_MAX 256
/* Tables loaded at once (one per distinct binary in use on the host). */
#define EMBER_UNWIND_TABLES_MAX 4096
/* Processes whose mappings are loaded at once (beyond: frame pointers, counted). */
#define EMBER_UNWIND_PROCS_MAX 8192
/* Processes whose last exec time the unwind_execs map keeps (LRU): the latest execs. */
#define EMBER_UNWIND_EXECS_MAX 1024
/* Rows of one table: bounds the walk's binary search (24 steps). */
#define EMBER_UNWIND_ROWS_PER_TABLE_MAX (1u << 24)

/* How a row finds the canonical frame address (CFA) of its frame. */
enum ember_cfa_kind {
	EMBER_CFA_RSP = 0, /* CFA = rsp + cfa_off */
	EMBER_CFA_RBP = 1, /* CFA = rbp + cfa_off */
	/* The PLT's DWARF expression: CFA = rsp + 8 + ((rip & 15) >= cfa_off ? 8 : 0) */
	EMBER_CFA_PLT = 2,
	EMBER_CFA_END = 3,    /* return address undefined: outermost frame (_start, clone) */
	EMBER_CFA_SIGNAL = 4, /* a signal trampoline (__restore_rt): the walk ends here */
	EMBER_CFA_FP = 5,     /* a rule the walk cannot evaluate: frame pointers here, counted */
	EMBER_CFA_NONE = 6,   /* no FDE covers these addresses: frame pointers here */
	/* CFA = rbx + cfa_off: ld.so's lazy-binding and TLS-descriptor trampolines */
	EMBER_CFA_RBX = 7,
};

/* Where a row finds the caller's rbp (rbp_kind) or rbx (rbx_kind). */
enum ember_rbp_kind {
	EMBER_RBP_SAME = 0, /* unchanged: the callee did not touch the register (yet) */
	EMBER_RBP_CFA = 1,  /* saved at CFA + rbp_off (rbx: rbx_off) */
	EMBER_RBP_LOST = 2, /* rbx only: a rule the walk cannot follow (an rbx CFA above fails) */
};

/*
 * One row of a table: the rule in force from pc up to the next row's pc. pc is
 * relative to the table's base (struct ember_unwind_table.base, an ELF virtual
 * address), so that one table serves every process that maps the file. The
 * return address is always at CFA - 8 (a CFI saying otherwise compiles to
 * EMBER_CFA_FP). Rows are sorted by pc, without two equal neighbours. The walk
 * follows rbx (rbx_kind) for the frames whose CFA it gives (EMBER_CFA_RBX).
 */
struct ember_unwind_row {
	__u32 pc;      /* first address of the row, minus the table's base */
	__u8 cfa_kind; /* enum ember_cfa_kind */
	__u8 rbp_kind; /* enum ember_rbp_kind */
	__s16 rbp_off; /* EMBER_RBP_CFA: rbp saved at CFA + rbp_off */
	__s32 cfa_off; /* EMBER_CFA_RSP/RBP/RBX: offset added; EMBER_CFA_PLT: the threshold */
	__u8 rbx_kind; /* enum ember_rbp_kind, for rbx */
	__u8 pad;      /* explicit padding, always 0 */
	__s16 rbx_off; /* EMBER_RBP_CFA: rbx saved at CFA + rbx_off */
};
_Static_assert(sizeof(struct ember_unwind_row) == 16, "ember_unwind_row is ABI");

/*
 * Rows per element of the walk's unwind_rows map, a hash map that allocates an
 * element when a table's rows are written (not the whole cap at start): 248 x
 * 16 bytes, which with the kernel's 64 bytes of element header fill a 4 KiB
 * slab object to 98%; and the block the host's walks read in one system call.
 */
#define EMBER_ROWS_PER_BLOCK 248

/*
 * Value of the tables array (index: table id): where a table's rows lie in the
 * rows map (row i: element i / EMBER_ROWS_PER_BLOCK). nrows == 0: free, or
 * being replaced (the walk uses frame pointers).
 */
struct ember_unwind_table {
	__u32 first; /* index of the table's first row in the rows map (a block's first) */
	__u32 nrows; /* rows in use, at most EMBER_UNWIND_ROWS_PER_TABLE_MAX */
};
_Static_assert(sizeof(struct ember_unwind_table) == 8, "ember_unwind_table is ABI");

/* EMBER_UNWIND_NO_TABLE in ember_unwind_map.table: a mapping with no table (JIT, no CFI). */
#define EMBER_UNWIND_NO_TABLE 0xffffffffu

/*
 * One executable mapping of a process. The row for address ip is looked up at
 * ip - bias, where bias = map start - file offset + segment offset - segment
 * vaddr + table base (all folded by the daemon).
 */
struct ember_unwind_map {
	__u64 start; /* first address of the mapping */
	__u64 end;   /* one past its last address */
	__u64 bias;  /* subtracted from an address to get a row pc */
	__u32 table; /* index in the tables array, or EMBER_UNWIND_NO_TABLE */
	__u32 pad;   /* explicit padding, always 0 */
};
_Static_assert(sizeof(struct ember_unwind_map) == 32, "ember_unwind_map is ABI");

/* Value of the procs map (key: tgid): a process's executable mappings sorted by start. */
struct ember_unwind_proc {
	__u32 nmaps; /* valid entries in maps */
	__u32 gen;   /* changes at every write: frames cached under another gen are stale */
	/*
	 * Tables of its mappings still being compiled: until they are, the cpu
	 * program sends its samples to be walked by the daemon, as a process's
	 * not loaded yet (struct ember_deferred_sample).
	 */
	__u32 pending;
	__u32 pad;		 /* explicit padding, always 0 */
	struct ember_rt_proc rt; /* its interpreter or JIT, whose frames the walk reads */
	struct ember_unwind_map maps[EMBER_UNWIND_MAPS_MAX];
};
_Static_assert(sizeof(struct ember_unwind_proc) ==
		       16 + sizeof(struct ember_rt_proc) + 32 * EMBER_UNWIND_MAPS_MAX,
	       "ember_unwind_proc is ABI");

/* Values of the unwind_stale map: how sure the walk is that a mapping is missing. */
#define EMBER_UNWIND_STALE_CALLER 1 /* a caller's address: maybe frame-pointer garbage */
#define EMBER_UNWIND_STALE_LEAF 2   /* the interrupted instruction: code runs there */

/*
 * Bytes of the user stack the kernel's walk reads at once (bpf/unwind.bpf.h's
 * window); the host's walk counts the reads it would take (lib/symbols/uwalk.c).
 */
#define EMBER_UNWIND_WINDOW 512
/*
 * Bytes below the word asked for that a refill takes too: a V8 frame's slots
 * lie just below its frame pointer and are read after the frame pointer's
 * own words (a Node stack's refills: 32 -> 17 a walk with 64).
 */
#define EMBER_UNWIND_WINDOW_BELOW 64

/*
 * Where the window is refilled for a read at addr: from *lo, *len bytes, all
 * within addr's page (the next one may not be mapped), at most
 * EMBER_UNWIND_WINDOW; *len 0 where the word at addr does not fit.
 */
static inline __attribute__((always_inline)) void ember_unwind_window_at(__u64 addr, __u64 *lo,
									 __u64 *len)
{
	__u64 page = addr & ~4095ull;

	*lo = addr - EMBER_UNWIND_WINDOW_BELOW;
	if (*lo < page || *lo > addr)
		*lo = page;
	*len = 4096 - (*lo & 4095);
	if (*len > EMBER_UNWIND_WINDOW)
		*len = EMBER_UNWIND_WINDOW;
	if (*len < addr - *lo + 8)
		*len = 0;
}

/* Rules the walk remembers per CPU (an address range and its row, by process): 96 KiB a CPU. */
#define EMBER_UNWIND_CACHE_SLOTS 2048

#endif /* EMBER_UNWIND_H */
