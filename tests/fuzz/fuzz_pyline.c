// SPDX-License-Identifier: MIT
/*
 * libFuzzer: CPython's location tables and code objects as a process's
 * memory holds them (lib/symbols/python.c, runtime.c), every byte hostile.
 * A table gives a line of its own or none, a cut table the same line or
 * none; a code object read gives names of valid UTF-8 within bounds, and the
 * cache names its frame word as the reader read it.
 *
 * Input: a byte choosing the layout (py_layouts()), firstlineno (i32), an
 * instruction index (u32), a table's length (u16) and its bytes; the rest is
 * the process's memory from MEM on, with the code object at MEM and
 * PyCode_Type at CODE_TYPE (little-endian, as x86-64).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "python.h"
#include "runtime.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MEM 0x10000000ull
#define CODE_TYPE 0x7f00000c0de0ull

struct memory {
	const uint8_t *bytes;
	size_t len;
};

static bool mem_read(void *arg, void *dst, size_t len, uint64_t addr)
{
	const struct memory *m = arg;

	if (addr < MEM || addr - MEM > m->len || len > m->len - (addr - MEM))
		return false;
	memcpy(dst, m->bytes + (addr - MEM), len);
	return true;
}

static bool take(const uint8_t **p, size_t *left, void *out, size_t n)
{
	if (*left < n)
		return false;
	memcpy(out, *p, n);
	*p += n;
	*left -= n;
	return true;
}

/* py_line_at over an exactly sized copy: a read past the table is the sanitizers' to see. */
static uint32_t line_at(const uint8_t *tab, size_t len, int32_t first, uint32_t idx)
{
	uint8_t *copy = malloc(len ? len : 1);
	uint32_t line;

	if (!copy)
		return 0;
	if (len)
		memcpy(copy, tab, len);
	line = py_line_at(copy, len, first, idx);
	free(copy);
	if (line > INT32_MAX)
		__builtin_trap(); /* a line is a C int */
	return line;
}

static void check_table(const uint8_t *tab, size_t len, int32_t first, uint32_t idx)
{
	uint32_t want[16];

	for (uint32_t i = 0; i < 16; i++)
		want[i] = line_at(tab, len, first, i);
	line_at(tab, len, first, idx);
	/* decoding goes forward: a table cut short keeps the lines it still holds, or says none */
	for (size_t cut = len > 8 ? len - 8 : 0; cut < len; cut++)
		for (uint32_t i = 0; i < 16; i++) {
			uint32_t line = line_at(tab, cut, first, i);

			if (line && line != want[i])
				__builtin_trap();
		}
}

static void check_name(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	if (n == cap || !utf8_valid(s, n))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct py_layout *layouts, *l;
	struct memory m;
	struct rt_mem mem = {mem_read, &m, NULL};
	struct ember_rt_proc rt = {.kind = EMBER_RT_PYTHON, .addr = {0, CODE_TYPE}};
	struct rt_cache *cache;
	struct rt_name name, again;
	enum rt_check chk;
	struct py_code c;
	uint8_t sel;
	int32_t first;
	uint32_t idx;
	uint16_t tlen;
	size_t nl;
	int rc, named;

	if (!take(&data, &size, &sel, 1) || !take(&data, &size, &first, 4) ||
	    !take(&data, &size, &idx, 4) || !take(&data, &size, &tlen, 2) || size < tlen)
		return 0;
	check_table(data, tlen, first, idx);
	data += tlen;
	size -= tlen;

	layouts = py_layouts(&nl);
	l = &layouts[sel % nl];
	m = (struct memory){data, size};
	rc = py_code_read(&mem, l, CODE_TYPE, MEM, &c);
	if (rc != 0 && rc != -EINVAL && rc != -EFAULT && rc != -ENOMEM)
		__builtin_trap();
	if (rc && (c.linetable || c.linetable_len))
		__builtin_trap(); /* nothing kept on failure */
	if (!rc) {
		check_name(c.qualname, sizeof(c.qualname));
		check_name(c.filename, sizeof(c.filename));
		if (c.linetable_len > PY_LINETABLE_MAX || !c.linetable)
			__builtin_trap();
		for (uint32_t i = 0; i < 64; i++)
			line_at(c.linetable, c.linetable_len, c.firstlineno, i);
	}

	/* the drain's view of the same object: named as read, or said to be unreadable */
	rt.version = 3 << 16 | l->minor << 8;
	cache = rt_cache_new();
	if (!cache) {
		py_code_release(&c);
		return 0;
	}
	named = rt_cache_name(cache, &mem, &rt, EMBER_RT_WORD(EMBER_RT_PYTHON, idx, MEM), &name);
	if ((named == 0) != (rc == 0) && rc != -ENOMEM)
		__builtin_trap();
	check_name(name.function, sizeof(name.function));
	check_name(name.file, sizeof(name.file));
	if (!named && (strcmp(name.function, c.qualname) || strcmp(name.file, c.filename) ||
		       name.line != ((idx & EMBER_RT_AUX_MAX) == EMBER_RT_AUX_MAX ?
					     0 :
					     py_line_at(c.linetable, c.linetable_len, c.firstlineno,
							idx & EMBER_RT_AUX_MAX))))
		__builtin_trap();
	/* checked against memory unchanged (rt_cache_check()): the same object, named alike */
	chk = rt_cache_check(cache, &mem, &rt, EMBER_RT_WORD(EMBER_RT_PYTHON, idx, MEM), INT64_MAX);
	if ((named == 0 && chk != RT_CHECK_SAME) || (named != 0 && chk == RT_CHECK_SAME))
		__builtin_trap();
	if (rt_cache_name(cache, &mem, &rt, EMBER_RT_WORD(EMBER_RT_PYTHON, idx, MEM), &again) !=
		    named ||
	    strcmp(again.function, name.function) || strcmp(again.file, name.file) ||
	    again.line != name.line)
		__builtin_trap();
	rt_cache_free(cache);
	py_code_release(&c);
	return 0;
}
