/* SPDX-License-Identifier: MIT */
/*
 * The unwind table compiler: one ELF file's CFI (.eh_frame, and .debug_frame where it covers
 * more), read with libdw, compiled into the rows of include/ember/unwind.h. x86-64 only.
 */
#ifndef EMBER_UNWTAB_H
#define EMBER_UNWTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libelf.h>

#include <ember/unwind.h>

/* Executable PT_LOAD segments kept per file (more: FDEs in the others are dropped). */
#define UNWTAB_MAX_SEGS 8

/* One executable PT_LOAD: what the daemon needs to fold a mapping into a bias. */
struct unwtab_seg {
	uint64_t vaddr;
	uint64_t memsz;
	uint64_t offset;
	uint64_t filesz;
};

/* What a table holds, for emberctl status and the benchmark. Rows are counted after merging. */
struct unwtab_stats {
	uint32_t fdes;		     /* FDE ranges compiled */
	uint32_t fdes_dropped;	     /* empty, outside the text, inside an earlier one */
	uint32_t fdes_bad;	     /* libdw refused their instructions: EMBER_CFA_FP there */
	uint32_t from_debug_frame;   /* FDE ranges taken from .debug_frame */
	uint32_t debug_frame_unread; /* 1: the file's DWARF is over UNWTAB_DWARF_MAX */
	uint32_t rows;
	uint32_t rows_fp; /* EMBER_CFA_FP: rules the walk cannot evaluate */
	uint32_t rows_plt;
	uint32_t rows_end;
	uint32_t rows_signal;
	uint32_t gaps; /* EMBER_CFA_NONE rows: addresses no FDE covers */
	uint32_t pads; /* gaps of alignment nops after an FDE: its last rule holds on there */
	uint32_t crt;  /* .init and .fini without FDEs given crti/crtn's rules */
};

struct unwtab {
	uint64_t base;		       /* ELF vaddr that row pc 0 stands for */
	uint64_t end;		       /* ELF vaddr one past the last covered address */
	struct ember_unwind_row *rows; /* sorted by pc; the last row is EMBER_CFA_NONE */
	size_t nrows;
	struct unwtab_seg segs[UNWTAB_MAX_SEGS];
	size_t nsegs;
	struct unwtab_stats st;
};

/* Why a file got no table. */
enum unwtab_err {
	UNWTAB_OK = 0,
	UNWTAB_E_NOT_ELF,    /* not an ELF file, or unreadable */
	UNWTAB_E_NOT_X86_64, /* ELF, but not 64-bit x86-64 */
	UNWTAB_E_NO_TEXT,    /* no executable PT_LOAD segment */
	UNWTAB_E_NO_CFI,     /* neither .eh_frame nor .debug_frame covers any code */
	UNWTAB_E_BAD_CFI,    /* a CFI section libdw cannot read to its end */
	UNWTAB_E_TOO_BIG,    /* more rows, span (4 GiB), work or CFI bytes than the bounds allow */
	UNWTAB_E_NOMEM,
	UNWTAB_E_NR,
};

const char *unwtab_strerror(enum unwtab_err why);

/* Longest .init or .fini read for its shape (glibc's crti/crtn make 23-28 bytes). */
#define UNWTAB_CRT_MAX 256

/*
 * Whether the n bytes at p (an .init or .fini section) have the shape glibc's
 * crti.o and crtn.o give them on x86-64 (sysdeps/x86_64/crti.S, crtn.S):
 * [endbr64] sub $8,%rsp; the weak __gmon_start__ call, calls; add $8,%rsp; ret.
 * Then CFA = rsp + 8 up to *sub_end, rsp + 16 up to *add_end (offsets in p),
 * rsp + 8 after. Pure; any other byte refuses.
 */
bool unwtab_crt_shape(const uint8_t *p, size_t n, uint32_t *sub_end, uint32_t *add_end);

/*
 * The length of the x86-64 nop at p (n bytes readable), as assemblers pad code to an
 * alignment with: nop, xchg %ax,%ax, nopl/nopw with a memory operand, behind 0x66 and cs
 * prefixes; 0 for anything else. Pure.
 */
size_t unwtab_pad_len(const uint8_t *p, size_t n);

/*
 * Compile the table of an ELF file. 0, or -errno with *why set (why may be NULL) and *out
 * zeroed. The fd is not closed; the image must outlive the call only.
 */
int unwtab_build_fd(int fd, struct unwtab *out, enum unwtab_err *why);
int unwtab_build_mem(const void *image, size_t len, struct unwtab *out, enum unwtab_err *why);
/*
 * The range [*lo, *hi) of the .eh_frame FDE that covers pc, decoded as the table compiler
 * decodes FDEs: no CFI instruction is run (libdw sizes its frame state by the registers they
 * name). 0, or -ENOENT when none covers it, the file has no such CFI or is not x86-64.
 */
int unwtab_fde_at(Elf *elf, uint64_t pc, uint64_t *lo, uint64_t *hi);
/* Releases the rows; accepts NULL and a zeroed or already freed table. */
void unwtab_free(struct unwtab *t);

/* The row in force at ELF vaddr, or NULL outside [base, end). Binary search. */
const struct ember_unwind_row *unwtab_find(const struct unwtab *t, uint64_t vaddr);
/* A kind's name for tools and messages ("rsp", "rbp", "plt", "end", ...). */
const char *unwtab_cfa_name(unsigned int cfa_kind);

#endif /* EMBER_UNWTAB_H */
