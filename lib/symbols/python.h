/* SPDX-License-Identifier: MIT */
/*
 * CPython's structures, per minor version: the offsets the stack walk reads
 * frames at (include/ember/runtime.h's enum ember_py_off) and those a code
 * object is named by here. Derived from and checked against real binaries'
 * DWARF (tests/tools/pylayout_check.c, integ_python_layout). Pure.
 */
#ifndef EMBER_PYTHON_H
#define EMBER_PYTHON_H

#include <stddef.h>
#include <stdint.h>

#include <ember/runtime.h>

#include "runtime.h"

/* One minor version's layout. */
struct py_layout {
	uint32_t minor;			/* 3.minor */
	uint16_t walk[EMBER_PY_OFF_NR]; /* enum ember_py_off */
	uint16_t co_qualname, co_filename, co_linetable, co_firstlineno;
	uint16_t ascii_size;   /* sizeof(PyASCIIObject): a compact ASCII string's data */
	uint16_t compact_size; /* sizeof(PyCompactUnicodeObject): other compact strings' */
};

/* The layout of 3.minor, or NULL: a version ember has none for. */
const struct py_layout *py_layout(uint32_t minor);
/* The minor versions py_layout() knows, in a static array of *n. */
const struct py_layout *py_layouts(size_t *n);

/*
 * The line of instruction idx (in code units) of a code object whose first
 * line is firstlineno, from its location table (3.11 on: PEP 626/657's
 * co_linetable, len bytes): the line, or 0 when the table gives none or is
 * malformed.
 */
uint32_t py_line_at(const uint8_t *tab, size_t len, int32_t firstlineno, uint32_t idx);

/* A code object's names, read from a process. */
struct py_code {
	char qualname[256];
	char filename[512];
	int32_t firstlineno;
	uint8_t *linetable; /* malloc'd, linetable_len bytes */
	size_t linetable_len;
	uint64_t head; /* py_code_head()'s key of the object read: whether one there now is it */
};

/*
 * Reads the code object at code (checked: its type is code_type) through
 * mem into *out: 0, or a negative errno (-EINVAL: not a code object or a
 * string out of bounds; -EFAULT: unreadable; -ENOMEM).
 */
int py_code_read(const struct rt_mem *mem, const struct py_layout *l, uint64_t code_type,
		 uint64_t code, struct py_code *out);
void py_code_release(struct py_code *c);
/*
 * A key of what names the code object at code (its names' and table's
 * addresses, its first line; struct py_code's head), in one read: 0, or
 * py_code_read()'s errors. Another key at an address read before: the object
 * there is another (the first freed, its room taken).
 */
int py_code_head(const struct rt_mem *mem, const struct py_layout *l, uint64_t code_type,
		 uint64_t code, uint64_t *key);

/* Bounds of what is read from a process: longer is refused (strings: cut). */
#define PY_STR_MAX 255		    /* characters of a name read */
#define PY_LINETABLE_MAX (1u << 20) /* bytes of a location table */

#endif /* EMBER_PYTHON_H */
