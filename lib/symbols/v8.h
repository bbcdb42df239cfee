/* SPDX-License-Identifier: MIT */
/*
 * V8 (Node.js): finding its layout in a binary (the v8dbg_* symbols every node
 * exports about itself), and naming a JavaScript frame word (include/ember/
 * runtime.h) from the live process's memory: function, script and line.
 * Pure: every object read is type-checked and bounded, a bad one an error.
 */
#ifndef EMBER_V8_H
#define EMBER_V8_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ember/runtime.h>

#include "runtime.h"

/* Bounds of what is read from a process: longer is cut (names) or refused. */
#define V8_NAME_MAX 255		  /* characters of a name */
#define V8_SOURCE_MAX (16u << 20) /* characters of a script scanned for its lines */
#define V8_TABLE_MAX (1u << 20)	  /* bytes of a source position table */
#define V8_STRING_DEPTH 8	  /* nested cons/sliced/thin strings followed */

/*
 * The V8 a binary holds, if any, into *out (kind EMBER_RT_V8; text[] as ELF
 * virtual addresses, for the unwinder to move by the load bias): true when
 * found; EMBER_RT_F_UNSUPPORTED where a constant ember relies on differs
 * (pointer compression, another Smi or string layout) or a field is missing.
 */
bool v8_detect(Elf *elf, struct ember_rt_proc *out);

/*
 * Names frame word (kind EMBER_RT_V8) of a process whose V8 is rt, reading
 * its memory through mem: 0, or a negative errno (-ENOENT: the object is
 * not what it should be, or unreadable) with out->function saying what was
 * seen. out->line: the line executing when known, else the function's.
 */
int v8_name(const struct rt_mem *mem, const struct ember_rt_proc *rt, uint64_t word,
	    struct rt_name *out);

/*
 * The source position in force at code offset off (bytecode or machine code)
 * of a V8 source position table (tab, len bytes) into *pos (V8's
 * SourcePosition: script offset + 1 in bits 1..30, inlining id + 1 in bits
 * 31..46): false when none is, or the table is malformed.
 */
bool v8_position_at(const uint8_t *tab, size_t len, int64_t off, uint64_t *pos);

/*
 * The bytecode a baseline (Sparkplug) frame runs, as V8's
 * BytecodeOffsetIterator finds it: pc offset pc (a return address: the
 * bytecode whose code ends at pc is the one) in baseline code whose bytecode
 * offset table is tab (len bytes: base-128 sizes of the machine code of the
 * prologue, then of each bytecode in turn), of the bytecodes bc (n bytes),
 * each as long as sizes says (V8's kBytecodeSizes: three operand scales of
 * n_sizes bytecodes, the first V8_BYTECODE_PREFIXES scaling the next), into
 * *off: -1 in the prologue. False when the tables disagree or end first.
 */
#define V8_BYTECODE_PREFIXES 4
bool v8_baseline_offset(const uint8_t *tab, size_t len, const uint8_t *bc, size_t n,
			const uint8_t *sizes, uint32_t n_sizes, uint32_t pc, int64_t *off);

#endif /* EMBER_V8_H */
