// SPDX-License-Identifier: MIT
/*
 * python and runtime: CPython's location tables and code objects as real
 * interpreters made them (py_recorded.h, recorded by mkpy_recorded.py), the
 * same bytes damaged, and the walk of Python frames over a fabricated process.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "clock.h"
#include "python.h"
#include "runtime.h"
#include "suites.h"
#include "utf8.h"
#include "uwalk.h"

#include "py_recorded.h"

/* --- a process's memory: regions of bytes at their addresses --------------------------------- */

struct region {
	uint64_t addr;
	const uint8_t *bytes;
	size_t len;
};

struct memory {
	struct region r[8];
	size_t n;
	unsigned reads; /* reads asked for, answered or not */
};

static bool mem_read(void *arg, void *dst, size_t len, uint64_t addr)
{
	struct memory *m = arg;

	m->reads++;
	for (size_t i = 0; i < m->n; i++) {
		const struct region *r = &m->r[i];

		if (addr >= r->addr && addr - r->addr <= r->len &&
		    len <= r->len - (addr - r->addr)) {
			memcpy(dst, r->bytes + (addr - r->addr), len);
			return true;
		}
	}
	return false;
}

/* The kernel's process_vm_readv(): one call, the pieces in order up to one it cannot read. */
static size_t mem_readv(void *arg, const struct rt_piece *p, size_t n)
{
	struct memory *m = arg;
	size_t whole = 0;

	for (; whole < n && mem_read(m, p[whole].dst, p[whole].len, p[whole].addr); whole++)
		m->reads--;	/* one call for them all */
	m->reads += whole == n; /* the one that failed counted itself */
	return whole;
}

static void mem_add(struct memory *m, uint64_t addr, const void *bytes, size_t len)
{
	ck_assert_uint_lt(m->n, sizeof(m->r) / sizeof(m->r[0]));
	m->r[m->n++] = (struct region){addr, bytes, len};
}

/* --- location tables ------------------------------------------------------------------------- */

/* py_line_at over a copy of exactly len bytes (the sanitizers see a read past it). */
static uint32_t line_at(const uint8_t *tab, size_t len, int32_t first, uint32_t idx)
{
	uint8_t *copy = malloc(len ? len : 1);
	uint32_t line;

	ck_assert_ptr_nonnull(copy);
	if (len)
		memcpy(copy, tab, len);
	line = py_line_at(copy, len, first, idx);
	free(copy);
	return line;
}

/* Every code unit of every recorded function: the line co_lines() gave (0 where None). */
START_TEST(test_lines_recorded)
{
	for (size_t t = 0; t < sizeof(py_rec_tables) / sizeof(py_rec_tables[0]); t++) {
		const struct py_rec_table *r = &py_rec_tables[t];

		for (uint32_t i = 0; i < r->n; i++)
			ck_assert_msg(line_at(r->tab, r->len, r->first, i) == r->lines[i],
				      "%s: unit %u: line %u, want %u", r->what, i,
				      line_at(r->tab, r->len, r->first, i), r->lines[i]);
		/* past the table's last entry: none */
		ck_assert_uint_eq(line_at(r->tab, r->len, r->first, (uint32_t)r->n), 0);
		ck_assert_uint_eq(line_at(r->tab, r->len, r->first, UINT32_MAX), 0);
	}
}
END_TEST

/* Each recorded table cut short anywhere: a unit's line is its own or none, never another. */
START_TEST(test_lines_truncated)
{
	for (size_t t = 0; t < sizeof(py_rec_tables) / sizeof(py_rec_tables[0]); t++) {
		const struct py_rec_table *r = &py_rec_tables[t];

		for (size_t len = 0; len < r->len; len++)
			for (uint32_t i = 0; i < r->n; i++) {
				uint32_t line = line_at(r->tab, len, r->first, i);

				ck_assert_msg(line == 0 || line == r->lines[i],
					      "%s cut at %zu: unit %u: line %u, want %u or 0",
					      r->what, len, i, line, r->lines[i]);
			}
	}
}
END_TEST

/* Entry bytes: the start bit, a code (Objects/locations.md), units - 1. */
#define E(code, units) ((uint8_t)(0x80 | (code) << 3 | ((units)-1)))

/* Tables no compiler writes: none, whatever is asked, and no read past their end. */
START_TEST(test_lines_malformed)
{
	/* a short-form entry (code 0, a column byte), then a byte without the start bit */
	const uint8_t no_start[] = {E(0, 2), 0x05, 0x05, 0x05};
	/* no-column entries whose varint says "more" at the table's end, or forever */
	const uint8_t cut_varint[] = {E(13, 1), 0x02, E(13, 1), 0x42};
	uint8_t long_varint[2 + 16] = {E(13, 1), 0x02, E(13, 1)};
	/* deltas of +2^62 and more: lines past int32, and past int64 in a sum */
	const uint8_t huge[] = {E(13, 1), 0x40, 0x40, 0x40, 0x40,     0x40, 0x40, 0x40,
				0x40,	  0x40, 0x40, 0x08, E(13, 1), 0x7e, 0x7f, 0x7f,
				0x7f,	  0x7f, 0x7f, 0x7f, 0x7f,     0x7f, 0x7f, 0x3f};
	/* +(2^63 - 1) twice: modulo 2^64, line 10 - 2; in truth far past any int */
	const uint8_t wrap[] = {E(13, 1), 0x7e, 0x7f, 0x7f,	0x7f, 0x7f, 0x7f,     0x7f, 0x7f,
				0x7f,	  0x7f, 0x3f, E(13, 1), 0x7e, 0x7f, 0x7f,     0x7f, 0x7f,
				0x7f,	  0x7f, 0x7f, 0x7f,	0x7f, 0x3f, E(10, 1), 0,    0};
	/* a delta of -20 from line 10: no line; then +25: line 15 */
	const uint8_t below[] = {E(13, 1), 0x29, E(13, 1), 0x32};
	/* the long form's extra varints, cut; the one-line form's column bytes, cut */
	const uint8_t cut_long[] = {E(14, 1), 0x02, 0x00, 0x01};
	const uint8_t cut_one[] = {E(11, 1), 0x01};

	ck_assert_uint_eq(line_at(NULL, 0, 10, 0), 0);
	ck_assert_uint_eq(line_at(no_start, sizeof(no_start), 10, 1), 10);
	ck_assert_uint_eq(line_at(no_start, sizeof(no_start), 10, 2), 0);
	ck_assert_uint_eq(line_at(no_start, sizeof(no_start), 10, 3), 0);
	ck_assert_uint_eq(line_at(cut_varint, sizeof(cut_varint), 10, 0), 11);
	ck_assert_uint_eq(line_at(cut_varint, sizeof(cut_varint), 10, 1), 0);
	memset(long_varint + 3, 0x41, sizeof(long_varint) - 3);
	ck_assert_uint_eq(line_at(long_varint, sizeof(long_varint), 10, 0), 11);
	ck_assert_uint_eq(line_at(long_varint, sizeof(long_varint), 10, 1), 0);
	ck_assert_uint_eq(line_at(huge, sizeof(huge), 10, 0), 0);
	ck_assert_uint_eq(line_at(huge, sizeof(huge), 10, 1), 0);
	ck_assert_uint_eq(line_at(wrap, sizeof(wrap), 10, 0), 0);
	ck_assert_uint_eq(line_at(wrap, sizeof(wrap), 10, 1), 0);
	ck_assert_uint_eq(line_at(wrap, sizeof(wrap), 10, 2), 0);
	ck_assert_uint_eq(line_at(below, sizeof(below), 10, 0), 0);
	ck_assert_uint_eq(line_at(below, sizeof(below), 10, 1), 15);
	ck_assert_uint_eq(line_at(below, sizeof(below), -100, 1), 0);
	ck_assert_uint_eq(line_at(cut_long, sizeof(cut_long), 10, 0), 0);
	ck_assert_uint_eq(line_at(cut_one, sizeof(cut_one), 10, 0), 0);
	/* a first line past int32's: none */
	ck_assert_uint_eq(line_at((const uint8_t[]){E(10, 1), 0, 0}, 3, INT32_MAX, 0), INT32_MAX);
	ck_assert_uint_eq(line_at((const uint8_t[]){E(11, 1), 0, 0}, 3, INT32_MAX, 0), 0);
}
END_TEST

/* --- code objects ---------------------------------------------------------------------------- */

/* The memory of recorded object o: its code object, strings and table. */
static void rec_memory(const struct py_rec_object *o, struct memory *m)
{
	memset(m, 0, sizeof(*m));
	mem_add(m, o->code.addr, o->code.bytes, o->code.len);
	mem_add(m, o->qualname.addr, o->qualname.bytes, o->qualname.len);
	mem_add(m, o->filename.addr, o->filename.bytes, o->filename.len);
	mem_add(m, o->linetable.addr, o->linetable.bytes, o->linetable.len);
}

/* The recorded table of 3.minor's function what (its first word: "multi"). */
static const struct py_rec_table *rec_table(uint32_t minor, const char *what)
{
	for (size_t t = 0; t < sizeof(py_rec_tables) / sizeof(py_rec_tables[0]); t++) {
		const struct py_rec_table *r = &py_rec_tables[t];

		if (r->minor == minor && !strcmp(r->what + 5, what))
			return r;
	}
	ck_abort_msg("no table of 3.%u %s", minor, what);
	return NULL;
}

/* The runtime entry of a process running CPython 3.minor whose PyCode_Type is at code_type. */
static struct ember_rt_proc rt_of(uint32_t minor, uint64_t code_type)
{
	return (struct ember_rt_proc){.kind = EMBER_RT_PYTHON,
				      .version = 3 << 16 | minor << 8 | 1,
				      .addr = {0, code_type}};
}

/*
 * Code objects as the interpreters held them: ASCII, Latin-1, UCS2 and UCS4
 * names, a lone surrogate, a name cut inside a character: names in UTF-8,
 * whole characters, a prefix at most 255 bytes long; the table byte for byte.
 */
START_TEST(test_code_recorded)
{
	for (size_t k = 0; k < sizeof(py_rec_objects) / sizeof(py_rec_objects[0]); k++) {
		const struct py_rec_object *o = &py_rec_objects[k];
		const struct py_layout *l = py_layout(o->minor);
		struct memory m;
		struct py_code c;
		uint64_t size;

		ck_assert_ptr_nonnull(l);
		rec_memory(o, &m);
		ck_assert_int_eq(py_code_read(&(struct rt_mem){mem_read, &m, mem_readv}, l,
					      o->code_type, o->code.addr, &c),
				 0);
		ck_assert_str_eq(c.qualname, o->want_qualname);
		ck_assert_str_eq(c.filename, o->want_filename);
		ck_assert(utf8_valid(c.qualname, strlen(c.qualname)));
		ck_assert(utf8_valid(c.filename, strlen(c.filename)));
		ck_assert_int_eq(c.firstlineno, o->first);
		memcpy(&size, o->linetable.bytes + 16, sizeof(size)); /* PyBytesObject.ob_size */
		ck_assert_uint_eq(c.linetable_len, size);
		ck_assert_mem_eq(c.linetable, o->linetable.bytes + 32, size);
		py_code_release(&c);
		ck_assert_ptr_null(c.linetable);
	}
}
END_TEST

/*
 * The same objects where the memory after each part is mapped too, as in a
 * live heap: the same names and table, read in one call per part (the
 * object, its two names, its table) where they fit a block; with only the
 * parts' own bytes mapped (above), read field by field to the same answer.
 */
START_TEST(test_code_blocks)
{
	size_t in_blocks = 0;

	for (size_t k = 0; k < sizeof(py_rec_objects) / sizeof(py_rec_objects[0]); k++) {
		const struct py_rec_object *o = &py_rec_objects[k];
		const struct py_layout *l = py_layout(o->minor);
		const struct py_rec_region *parts[] = {&o->code, &o->qualname, &o->filename,
						       &o->linetable};
		/* each part at its own page, its pointer in the object moved there */
		const uint16_t at[] = {0, l->co_qualname, l->co_filename, l->co_linetable};
		static uint8_t room[4][4096];
		struct memory m = {0};
		struct py_code c;
		uint64_t size;
		bool fits = true;

		for (size_t i = 0; i < 4; i++) {
			ck_assert_uint_le(parts[i]->len, sizeof(room[i]));
			memset(room[i], 0, sizeof(room[i]));
			memcpy(room[i], parts[i]->bytes, parts[i]->len);
			mem_add(&m, 0x10000 * (i + 1), room[i], sizeof(room[i]));
			if (i) {
				uint64_t addr = 0x10000 * (i + 1);

				memcpy(room[0] + at[i], &addr, sizeof(addr));
				fits = fits && parts[i]->len <= 256;
			}
		}
		/* a reader of one piece a call (fuzzers, V8's), then the live one's vectored calls */
		for (int v = 0; v < 2; v++) {
			struct rt_mem mem = {mem_read, &m, v ? mem_readv : NULL};

			m.reads = 0;
			ck_assert_int_eq(py_code_read(&mem, l, o->code_type, 0x10000, &c), 0);
			ck_assert_str_eq(c.qualname, o->want_qualname);
			ck_assert_str_eq(c.filename, o->want_filename);
			ck_assert_int_eq(c.firstlineno, o->first);
			memcpy(&size, o->linetable.bytes + 16, sizeof(size));
			ck_assert_uint_eq(c.linetable_len, size);
			ck_assert_mem_eq(c.linetable, o->linetable.bytes + 32, size);
			/*
			 * the head, then the names' and the table's blocks: one call, or
			 * three; a part past the block: one more read for its bytes
			 */
			ck_assert_uint_eq(m.reads, fits ? (v ? 2 : 4) : m.reads);
			ck_assert_uint_le(m.reads, v ? 5 : 7);
			py_code_release(&c);
		}
		in_blocks += fits;
	}
	ck_assert_uint_gt(in_blocks, 0);
}
END_TEST

/* The drain's view: a word of a recorded code object named, with the line co_lines() gave. */
START_TEST(test_name_recorded)
{
	for (size_t k = 0; k < sizeof(py_rec_objects) / sizeof(py_rec_objects[0]); k++) {
		const struct py_rec_object *o = &py_rec_objects[k];
		const struct py_rec_table *t = rec_table(o->minor, "multi");
		struct ember_rt_proc rt = rt_of(o->minor, o->code_type);
		struct rt_cache *cache;
		struct rt_name n;
		struct memory m;
		unsigned reads = 0;

		if (o->first != t->first)
			continue; /* another function than multi: its names are tested above */
		cache = rt_cache_new();
		ck_assert_ptr_nonnull(cache);
		rec_memory(o, &m);
		for (uint32_t i = 0; i < t->n; i++) {
			uint64_t word = EMBER_RT_WORD(EMBER_RT_PYTHON, i, o->code.addr);

			ck_assert_int_eq(rt_cache_name(cache,
						       &(struct rt_mem){mem_read, &m, mem_readv},
						       &rt, word, &n),
					 0);
			ck_assert_str_eq(n.function, o->want_qualname);
			ck_assert_str_eq(n.file, o->want_filename);
			ck_assert_uint_eq(n.start_line, (uint32_t)o->first);
			ck_assert_msg(n.line == t->lines[i], "3.%u unit %u: line %u, want %u",
				      o->minor, i, n.line, t->lines[i]);
			if (i == 0)
				reads = m.reads;
		}
		/* read once, named from the cache after */
		ck_assert_uint_eq(m.reads, reads);
		ck_assert_uint_gt(rt_cache_bytes(cache), 0);
		/* an index past what the word holds: the function, no line */
		ck_assert_int_eq(
			rt_cache_name(
				cache, &(struct rt_mem){mem_read, &m, mem_readv}, &rt,
				EMBER_RT_WORD(EMBER_RT_PYTHON, EMBER_RT_AUX_MAX, o->code.addr), &n),
			0);
		ck_assert_str_eq(n.function, o->want_qualname);
		ck_assert_uint_eq(n.line, 0);
		rt_cache_free(cache);
	}
}
END_TEST

/* Names cache c gives for word through m: its function and line, asserting it named it. */
static void name_ok(struct rt_cache *c, struct memory *m, const struct ember_rt_proc *rt,
		    uint64_t word, const struct py_rec_object *o)
{
	struct rt_name n;

	ck_assert_int_eq(rt_cache_name(c, &(struct rt_mem){mem_read, m, mem_readv}, rt, word, &n),
			 0);
	ck_assert_str_eq(n.function, o->want_qualname);
	ck_assert_str_eq(n.file, o->want_filename);
	ck_assert_uint_eq(n.start_line, (uint32_t)o->first);
}

/*
 * A code object freed and another made at its address (a module's body after
 * its import, then a function of the next module): the name read before is
 * checked when a stack sampled after that read is announced, by one read of
 * the object's head, and the new object read anew; one sampled before the
 * read, the same object, or a process gone keep the name read.
 */
START_TEST(test_name_reused)
{
	for (uint32_t minor = 11; minor <= 13; minor++) {
		const struct py_rec_object *a = NULL, *b = NULL;
		struct rt_cache *cache = rt_cache_new();
		struct memory m, gone = {0};
		struct ember_rt_proc rt;
		uint64_t word;
		int64_t before;
		unsigned reads;

		for (size_t k = 0; k < sizeof(py_rec_objects) / sizeof(py_rec_objects[0]); k++) {
			const struct py_rec_object *o = &py_rec_objects[k];

			if (o->minor != minor)
				continue;
			if (!a)
				a = o;
			else if (!b && strcmp(o->want_qualname, a->want_qualname))
				b = o;
		}
		ck_assert_ptr_nonnull(cache);
		ck_assert_ptr_nonnull(b);
		rt = rt_of(minor, a->code_type);
		word = EMBER_RT_WORD(EMBER_RT_PYTHON, 0, a->code.addr);
		/* a checked before it was ever named: nothing to check, nothing read */
		rec_memory(a, &m);
		ck_assert_int_eq(rt_cache_check(cache, &(struct rt_mem){mem_read, &m, mem_readv},
						&rt, word, mono_ns()),
				 RT_CHECK_NONE);
		ck_assert_uint_eq(m.reads, 0);
		/* what a stack's names will read, to be read ahead: a, to name it */
		ck_assert_uint_eq(rt_cache_to_read(cache, &rt, word, mono_ns()), a->code.addr);
		ck_assert_uint_eq(rt_cache_to_read(cache, &rt, word, -1), a->code.addr);
		before = mono_ns();
		name_ok(cache, &m, &rt, word, a);
		/* then only to check it for a stack sampled after that read */
		ck_assert_uint_eq(rt_cache_to_read(cache, &rt, word, -1), 0);
		ck_assert_uint_eq(rt_cache_to_read(cache, &rt, word, before - 1), 0);
		ck_assert_uint_eq(rt_cache_to_read(cache, &rt, word, mono_ns()), a->code.addr);
		ck_assert_uint_eq(rt_cache_to_read(cache, &rt,
						   EMBER_RT_WORD(EMBER_RT_V8, 0, a->code.addr),
						   mono_ns()),
				  0);
		/* sampled before its read, or sampled after and still a: the name stands */
		reads = m.reads;
		ck_assert_int_eq(rt_cache_check(cache, &(struct rt_mem){mem_read, &m, mem_readv},
						&rt, word, before - 1),
				 RT_CHECK_NONE);
		ck_assert_uint_eq(m.reads, reads);
		ck_assert_int_eq(rt_cache_check(cache, &(struct rt_mem){mem_read, &m, mem_readv},
						&rt, word, mono_ns()),
				 RT_CHECK_SAME);
		ck_assert_uint_eq(m.reads, reads + 1);
		/* the process gone: its name is what it was */
		ck_assert_int_eq(rt_cache_check(cache, &(struct rt_mem){mem_read, &gone, mem_readv},
						&rt, word, mono_ns()),
				 RT_CHECK_NONE);
		name_ok(cache, &gone, &rt, word, a);
		/* a freed, b made at its address: the drain alone trusts the name */
		rec_memory(b, &m);
		m.r[0].addr = a->code.addr;
		name_ok(cache, &m, &rt, word, a);
		ck_assert_int_eq(rt_cache_check(cache, &(struct rt_mem){mem_read, &m, mem_readv},
						&rt, word, mono_ns()),
				 RT_CHECK_READ);
		name_ok(cache, &m, &rt, word, b);
		/* read anew: not again for a stack sampled before that */
		ck_assert_int_eq(rt_cache_check(cache, &(struct rt_mem){mem_read, &m, mem_readv},
						&rt, word, before),
				 RT_CHECK_NONE);
		/*
		 * no code object there any more (freed since the sample, as a module's
		 * body once imported): the name kept, never made unreadable
		 */
		memset(&m, 0, sizeof(m));
		mem_add(&m, a->code.addr, b->qualname.bytes, b->qualname.len);
		ck_assert_int_eq(rt_cache_check(cache, &(struct rt_mem){mem_read, &m, mem_readv},
						&rt, word, mono_ns()),
				 RT_CHECK_NONE);
		name_ok(cache, &m, &rt, word, b);
		/* and a again: read anew at the next check */
		rec_memory(a, &m);
		ck_assert_int_eq(rt_cache_check(cache, &(struct rt_mem){mem_read, &m, mem_readv},
						&rt, word, mono_ns()),
				 RT_CHECK_READ);
		name_ok(cache, &m, &rt, word, a);
		rt_cache_free(cache);
	}
}
END_TEST

/*
 * A binary's own code object (CPython's deep-frozen code), read by one
 * process, is named in another process of that binary and user without a
 * read, wherever that one maps the binary (its bias); not for another user,
 * another binary, or an object outside the binary (a heap's).
 */
START_TEST(test_name_shared)
{
	const struct py_rec_object *o = &py_rec_objects[0];
	struct ember_rt_proc rt = rt_of(o->minor, o->code_type);
	uint64_t word = EMBER_RT_WORD(EMBER_RT_PYTHON, 0, o->code.addr);
	struct rt_image img = {.file = {.dev = 8, .ino = 1234, .size = 4096},
			       .uid = 1000,
			       .lo = o->code.addr & ~0xfffull,
			       .hi = (o->code.addr & ~0xfffull) + 0x100000};
	struct rt_shared *sh = rt_shared_new();
	struct rt_cache *c[6];
	struct memory m, none = {0};
	struct rt_image moved = img, other_user = img, other_file = img, heap = img;
	uint64_t shift = -0x100000000ull; /* 4 GiB lower: within a word's 47 bits */
	struct ember_rt_proc rt_moved = rt;
	unsigned reads;

	ck_assert_ptr_nonnull(sh);
	for (size_t i = 0; i < 6; i++)
		ck_assert_ptr_nonnull(c[i] = rt_cache_new());
	rec_memory(o, &m);
	rt_cache_share(c[0], sh, &img);
	name_ok(c[0], &m, &rt, word, o);
	reads = m.reads;
	ck_assert_uint_gt(reads, 0);
	ck_assert_uint_gt(rt_shared_bytes(sh), 0);
	/* another process of the binary and user: no read (none is mapped) */
	rt_cache_share(c[1], sh, &img);
	name_ok(c[1], &none, &rt, word, o);
	ck_assert_uint_eq(none.reads, 0);
	/* one that maps the binary elsewhere: the same vaddr, found at its own address */
	moved.lo += shift;
	moved.hi += shift;
	moved.bias = shift;
	rt_moved.addr[1] += shift;
	rt_cache_share(c[2], sh, &moved);
	name_ok(c[2], &none, &rt_moved, EMBER_RT_WORD(EMBER_RT_PYTHON, 0, o->code.addr + shift), o);
	ck_assert_uint_eq(none.reads, 0);
	ck_assert_uint_eq(rt_shared_hits(sh), 2);
	/* another user, another binary, an object outside the binary: read */
	other_user.uid = 1001;
	other_file.file.ino = 1235;
	heap.hi = heap.lo = o->code.addr + 0x1000;
	rt_cache_share(c[3], sh, &other_user);
	rt_cache_share(c[4], sh, &other_file);
	rt_cache_share(c[5], sh, &heap);
	for (size_t i = 3; i < 6; i++) {
		reads = m.reads;
		name_ok(c[i], &m, &rt, word, o);
		ck_assert_uint_gt(m.reads, reads);
	}
	ck_assert_uint_eq(rt_shared_hits(sh), 2);
	for (size_t i = 0; i < 6; i++)
		rt_cache_free(c[i]);
	rt_shared_free(sh);
}
END_TEST

/* Fields of the objects damaged below (every version ember knows has them there). */
#define OB_TYPE 8
#define STR_LENGTH 16
#define STR_STATE 32
#define BYTES_SIZE 16

/* A recorded 3.12 object's memory, its parts copied where a test may change them. */
struct damaged {
	const struct py_rec_object *o;
	uint8_t code[256], qualname[256], linetable[256];
	struct memory m;
};

static void damaged_init(struct damaged *d, uint32_t minor, const char *qualname)
{
	memset(d, 0, sizeof(*d));
	for (size_t k = 0; k < sizeof(py_rec_objects) / sizeof(py_rec_objects[0]); k++)
		if (py_rec_objects[k].minor == minor &&
		    !strcmp(py_rec_objects[k].want_qualname, qualname))
			d->o = &py_rec_objects[k];
	ck_assert_ptr_nonnull(d->o);
	ck_assert_uint_le(d->o->code.len, sizeof(d->code));
	ck_assert_uint_le(d->o->qualname.len, sizeof(d->qualname));
	ck_assert_uint_le(d->o->linetable.len, sizeof(d->linetable));
	memcpy(d->code, d->o->code.bytes, d->o->code.len);
	memcpy(d->qualname, d->o->qualname.bytes, d->o->qualname.len);
	memcpy(d->linetable, d->o->linetable.bytes, d->o->linetable.len);
	mem_add(&d->m, d->o->code.addr, d->code, d->o->code.len);
	mem_add(&d->m, d->o->qualname.addr, d->qualname, d->o->qualname.len);
	mem_add(&d->m, d->o->filename.addr, d->o->filename.bytes, d->o->filename.len);
	mem_add(&d->m, d->o->linetable.addr, d->linetable, d->o->linetable.len);
}

static int damaged_read(struct damaged *d, struct py_code *c)
{
	int rc = py_code_read(&(struct rt_mem){mem_read, &d->m, mem_readv}, py_layout(d->o->minor),
			      d->o->code_type, d->o->code.addr, c);

	if (rc) /* nothing kept on failure */
		ck_assert(!c->linetable && !c->linetable_len);
	py_code_release(c);
	return rc;
}

static void put_u64(uint8_t *at, uint64_t v)
{
	memcpy(at, &v, sizeof(v));
}

/* Objects that are not what they claim: refused (-EINVAL) or unreadable (-EFAULT), no more. */
START_TEST(test_code_hostile)
{
	const struct py_layout *l;
	struct damaged d;
	struct py_code c;
	uint64_t state;

	for (uint32_t minor = 11; minor <= 13; minor++) {
		l = py_layout(minor);
		damaged_init(&d, minor, "multi");
		ck_assert_int_eq(damaged_read(&d, &c), 0);

		/* another type than PyCode_Type: no code object */
		put_u64(d.code + OB_TYPE, d.o->code_type + 8);
		ck_assert_int_eq(damaged_read(&d, &c), -EINVAL);
		damaged_init(&d, minor, "multi");
		/* the code object unreadable, or its first line */
		d.m.r[0].len = OB_TYPE + 4;
		ck_assert_int_eq(damaged_read(&d, &c), -EFAULT);
		d.m.r[0].len = l->co_firstlineno + 2;
		ck_assert_int_eq(damaged_read(&d, &c), -EFAULT);
		damaged_init(&d, minor, "multi");
		/* a name at NULL, or where nothing is mapped */
		put_u64(d.code + l->co_qualname, 0);
		ck_assert_int_eq(damaged_read(&d, &c), -EFAULT);
		put_u64(d.code + l->co_qualname, 0x10);
		ck_assert_int_eq(damaged_read(&d, &c), -EFAULT);
		damaged_init(&d, minor, "multi");
		/* a string claiming 2^40 characters, and one of 200 whose bytes are not there */
		put_u64(d.qualname + STR_LENGTH, 1ull << 40);
		ck_assert_int_eq(damaged_read(&d, &c), -EINVAL);
		put_u64(d.qualname + STR_LENGTH, 200);
		ck_assert_int_eq(damaged_read(&d, &c), -EFAULT);
		damaged_init(&d, minor, "multi");
		/* a string that is not compact, of kind 3, or ASCII of two-byte characters */
		memcpy(&state, d.qualname + STR_STATE, sizeof(state));
		put_u64(d.qualname + STR_STATE, state & ~(1ull << 5));
		ck_assert_int_eq(damaged_read(&d, &c), -EINVAL);
		put_u64(d.qualname + STR_STATE, (state & ~(7ull << 2)) | 3 << 2);
		ck_assert_int_eq(damaged_read(&d, &c), -EINVAL);
		put_u64(d.qualname + STR_STATE, (state & ~(7ull << 2)) | 2 << 2);
		ck_assert_int_eq(damaged_read(&d, &c), -EINVAL);
		/* ASCII with a byte past 127 */
		put_u64(d.qualname + STR_STATE, state);
		d.qualname[l->ascii_size] = 0xe9;
		ck_assert_int_eq(damaged_read(&d, &c), -EINVAL);
		damaged_init(&d, minor, "multi");
		/* a location table past PY_LINETABLE_MAX, at NULL, or longer than its bytes */
		put_u64(d.linetable + BYTES_SIZE, PY_LINETABLE_MAX + 1ull);
		ck_assert_int_eq(damaged_read(&d, &c), -EINVAL);
		put_u64(d.linetable + BYTES_SIZE, UINT64_MAX);
		ck_assert_int_eq(damaged_read(&d, &c), -EINVAL);
		put_u64(d.linetable + BYTES_SIZE, 4096);
		ck_assert_int_eq(damaged_read(&d, &c), -EFAULT);
		put_u64(d.code + l->co_linetable, 0);
		ck_assert_int_eq(damaged_read(&d, &c), -EFAULT);
		/* an empty table: read, and no line in it */
		damaged_init(&d, minor, "multi");
		put_u64(d.linetable + BYTES_SIZE, 0);
		ck_assert_int_eq(py_code_read(&(struct rt_mem){mem_read, &d.m, mem_readv}, l,
					      d.o->code_type, d.o->code.addr, &c),
				 0);
		ck_assert_uint_eq(c.linetable_len, 0);
		ck_assert_uint_eq(py_line_at(c.linetable, c.linetable_len, c.firstlineno, 0), 0);
		py_code_release(&c);
	}
}
END_TEST

/* Words that name no code object: said so, honestly, and cached as such. */
START_TEST(test_name_hostile)
{
	struct rt_cache *cache = rt_cache_new();
	struct ember_rt_proc rt = rt_of(12, 0x7f0000001000ull), old = rt;
	struct memory m = {0};
	struct rt_mem mem = {mem_read, &m, mem_readv};
	struct rt_name n;
	struct damaged d;
	unsigned reads;

	ck_assert_ptr_nonnull(cache);
	/* a version without a layout: the word's own (ptr 0), whatever the entry says */
	old.version = 3 << 16 | 10 << 8 | 13;
	old.flags = EMBER_RT_F_UNSUPPORTED;
	ck_assert_int_eq(
		rt_cache_name(cache, &mem, &old, EMBER_RT_WORD(EMBER_RT_PYTHON, 0x030a, 0), &n),
		-ENOENT);
	ck_assert_str_eq(n.function, "[python 3.10: not supported]");
	ck_assert_int_eq(
		rt_cache_name(cache, &mem, &rt, EMBER_RT_WORD(EMBER_RT_PYTHON, 0x030a, 0), &n),
		-ENOENT);
	ck_assert_str_eq(n.function, "[python 3.10: not supported]");
	ck_assert_int_eq(rt_cache_name(cache, &mem, &rt, EMBER_RT_WORD(EMBER_RT_PYTHON, 0, 0), &n),
			 -ENOENT);
	ck_assert_str_eq(n.function, "[python < 3.11: not supported]");
	/* an object in a process of an unsupported version: the same, nothing read */
	ck_assert_int_eq(rt_cache_name(cache, &mem, &old,
				       EMBER_RT_WORD(EMBER_RT_PYTHON, 3, 0x7f0000002000ull), &n),
			 -ENOENT);
	ck_assert_str_eq(n.function, "[python < 3.11: not supported]");
	ck_assert_uint_eq(m.reads, 0);
	/* a word of a kind the process does not run */
	ck_assert_int_eq(rt_cache_name(cache, &mem, &rt,
				       EMBER_RT_WORD(EMBER_RT_V8, 3, 0x7f0000002000ull), &n),
			 -ENOENT);
	ck_assert_str_eq(n.function, "[runtime frame 0x7f0000002000]");
	rt.kind = EMBER_RT_NONE;
	ck_assert_int_eq(rt_cache_name(cache, &mem, &rt,
				       EMBER_RT_WORD(EMBER_RT_PYTHON, 3, 0x7f0000002000ull), &n),
			 -ENOENT);
	ck_assert_str_eq(n.function, "[runtime frame 0x7f0000002000]");
	/* an unreadable object: named by its address, read once */
	rt.kind = EMBER_RT_PYTHON;
	ck_assert_int_eq(rt_cache_name(cache, &mem, &rt,
				       EMBER_RT_WORD(EMBER_RT_PYTHON, 3, 0x7f0000002000ull), &n),
			 -ENOENT);
	ck_assert_str_eq(n.function, "[python code 0x7f0000002000]");
	ck_assert_str_eq(n.file, "");
	ck_assert_uint_eq(n.line, 0);
	reads = m.reads;
	ck_assert_int_eq(rt_cache_name(cache, &mem, &rt,
				       EMBER_RT_WORD(EMBER_RT_PYTHON, 4, 0x7f0000002000ull), &n),
			 -ENOENT);
	ck_assert_str_eq(n.function, "[python code 0x7f0000002000]");
	ck_assert_uint_eq(m.reads, reads);
	/* a code object of another type, read from the recorded bytes */
	damaged_init(&d, 12, "multi");
	put_u64(d.code + OB_TYPE, 0x1234);
	rt = rt_of(12, d.o->code_type);
	ck_assert_int_eq(rt_cache_name(cache, &(struct rt_mem){mem_read, &d.m, mem_readv}, &rt,
				       EMBER_RT_WORD(EMBER_RT_PYTHON, 1, d.o->code.addr), &n),
			 -ENOENT);
	ck_assert(!strncmp(n.function, "[python code 0x", 15));
	rt_cache_free(cache);
	rt_cache_free(NULL);
}
END_TEST

/* More objects than the cache keeps: it starts over, its bytes stay bounded. */
START_TEST(test_cache_bounded)
{
	struct rt_cache *cache = rt_cache_new();
	struct ember_rt_proc rt = rt_of(13, 0x7f0000001000ull);
	struct memory m = {0};
	struct rt_name n;
	size_t most = 0;

	ck_assert_ptr_nonnull(cache);
	for (uint64_t i = 0; i < 100000; i++) {
		uint64_t obj = 0x7f0000100000ull + 8 * i;

		ck_assert_int_eq(rt_cache_name(cache, &(struct rt_mem){mem_read, &m, mem_readv},
					       &rt, EMBER_RT_WORD(EMBER_RT_PYTHON, 1, obj), &n),
				 -ENOENT);
		if (rt_cache_bytes(cache) > most)
			most = rt_cache_bytes(cache);
	}
	/* each object once: its block, then (unreadable) its type alone */
	ck_assert_uint_eq(m.reads, 2 * 100000);
	ck_assert_uint_le(most, 64u << 20);
	rt_cache_free(cache);
}
END_TEST

/*
 * A process whose code objects (any number, 0x100 apart from SYN_CODE on)
 * all share one name and one location table of PY_LINETABLE_MAX bytes.
 */
#define SYN_CODE 0x7f0000000000ull
#define SYN_STR 0x7e0000000000ull
#define SYN_TAB 0x7d0000000000ull

static bool syn_read(void *arg, void *dst, size_t len, uint64_t addr)
{
	const struct py_layout *l = arg;
	uint8_t code[0x100] = {0}, str[64] = {0}, tab[32] = {0};
	const uint8_t *from;
	uint64_t off;

	put_u64(code + OB_TYPE, 0x1000);
	put_u64(code + l->co_qualname, SYN_STR);
	put_u64(code + l->co_filename, SYN_STR);
	put_u64(code + l->co_linetable, SYN_TAB);
	put_u64(str + STR_LENGTH, 1);
	put_u64(str + STR_STATE, 1 << 2 | 1 << 5 | 1 << 6); /* compact ASCII */
	str[l->ascii_size] = 'f';
	put_u64(tab + BYTES_SIZE, PY_LINETABLE_MAX);
	if (addr >= SYN_CODE && addr < SYN_CODE + (1ull << 32)) {
		off = (addr - SYN_CODE) % sizeof(code);
		from = code;
		if (len > sizeof(code) - off)
			return false;
	} else if (addr >= SYN_STR && addr - SYN_STR <= sizeof(str) &&
		   len <= sizeof(str) - (addr - SYN_STR)) {
		off = addr - SYN_STR;
		from = str;
	} else if (addr >= SYN_TAB && addr - SYN_TAB < sizeof(tab)) {
		off = addr - SYN_TAB;
		from = tab;
		if (len > sizeof(tab) - off)
			return false;
	} else if (addr >= SYN_TAB + sizeof(tab) &&
		   addr - SYN_TAB - sizeof(tab) <= PY_LINETABLE_MAX &&
		   len <= PY_LINETABLE_MAX - (addr - SYN_TAB - sizeof(tab))) {
		memset(dst, 0x80 | 15 << 3, len); /* entries of no location */
		return true;
	} else {
		return false;
	}
	memcpy(dst, from + off, len);
	return true;
}

/* Code objects sharing a table as large as a table may be: the cache's bytes stay bounded. */
START_TEST(test_cache_bounded_tables)
{
	const struct py_layout *l = py_layout(12);
	struct ember_rt_proc rt = rt_of(12, 0x1000);
	struct rt_cache *cache = rt_cache_new();
	struct rt_name n;

	ck_assert_ptr_nonnull(cache);
	for (uint64_t i = 0; i < 200; i++) {
		ck_assert_int_eq(
			rt_cache_name(cache, &(struct rt_mem){syn_read, (void *)l, NULL}, &rt,
				      EMBER_RT_WORD(EMBER_RT_PYTHON, 1, SYN_CODE + 0x100 * i), &n),
			0);
		ck_assert_str_eq(n.function, "f");
		ck_assert_uint_eq(n.line, 0);
		ck_assert_uint_le(rt_cache_bytes(cache), 64u << 20);
	}
	rt_cache_free(cache);
}
END_TEST

/* --- the walk: Python frames in place of the eval loop's, over a fabricated process ---------- */

#define TEXT 0x400000ull
#define TEXT_END 0x500000ull
#define EVAL (TEXT + 0x40000) /* _PyEval_EvalFrameDefault */
#define EVAL_END (EVAL + 0x8000)
#define STACK 0x7ffc0000ull
#define TID 4711
/* The process's memory: _PyRuntime, an interpreter, two threads, frames, code objects. */
#define PM 0x10000000ull
#define PM_RUNTIME PM
#define PM_INTERP (PM + 0x1000) /* 3.13's threads.head is at 7344 */
#define PM_TS_OTHER (PM + 0x3000)
#define PM_TS (PM + 0x3200)
#define PM_CFRAME (PM + 0x3400)
#define PM_FRAME(i) (PM + 0x4000 + 0x100 * (uint64_t)(i))
#define PM_CODE(i) (PM + 0x6000 + 0x100 * (uint64_t)(i))
#define CODE_TYPE 0x7f00000c0de0ull
/* uwalk_result.rt_miss: enum uw_rt_miss of bpf/uwalk_rt.bpf.h, which the host walk compiles */
#define MISS_NO_THREAD 1
#define MISS_BAD_FRAME 2
/* The instruction index each code object's frame is at. */
#define IDX(c) (3 * (c) + 1)

struct walk_fixture {
	const struct py_layout *l;
	struct ember_unwind_proc proc;
	uint8_t stack[4096];
	uint8_t pm[0x8000];
	struct uwalk_result res;
};

static struct walk_fixture wx;

static bool pm_read(void *arg, void *dst, size_t len, uint64_t addr)
{
	(void)arg;
	if (addr < PM || addr - PM > sizeof(wx.pm) || len > sizeof(wx.pm) - (addr - PM))
		return false;
	memcpy(dst, wx.pm + (addr - PM), len);
	return true;
}

static void pm_put(uint64_t addr, const void *v, size_t len)
{
	ck_assert(addr >= PM && addr + len <= PM + sizeof(wx.pm));
	memcpy(wx.pm + (addr - PM), v, len);
}

static void pm_u64(uint64_t addr, uint64_t v)
{
	pm_put(addr, &v, sizeof(v));
}

static void pm_u8(uint64_t addr, uint8_t v)
{
	pm_put(addr, &v, 1);
}

static void stack_put(uint64_t addr, uint64_t v)
{
	ck_assert(addr >= STACK && addr + 8 <= STACK + sizeof(wx.stack));
	memcpy(wx.stack + (addr - STACK), &v, sizeof(v));
}

/* Frame-pointer frames: leaf, eval (the inner run), a C function, eval (the outer), main. */
#define SP (STACK + 0x100)
#define BP(i) (STACK + 0x200 + 0x100 * (uint64_t)(i))
#define RA_EVAL_IN (EVAL + 0x51)
#define RA_C (TEXT + 0x201)
#define RA_EVAL_OUT (EVAL + 0x81)
#define RA_MAIN (TEXT + 0x301)
#define LEAF (TEXT + 0x10)

/*
 * A process running CPython 3.minor whose thread TID's state holds frame
 * first: its unwind entry (one mapping, no table: frame pointers) with the
 * runtime as the unwinder gives it, and the native stack above.
 */
static void py_process(uint32_t minor, uint64_t first)
{
	const struct py_layout *l = py_layout(minor);
	const uint16_t *off = wx.proc.rt.off;

	ck_assert_ptr_nonnull(l);
	memset(&wx, 0, sizeof(wx));
	wx.l = l;
	wx.proc.nmaps = 1;
	wx.proc.maps[0] = (struct ember_unwind_map){
		.start = TEXT, .end = TEXT_END, .bias = TEXT, .table = EMBER_UNWIND_NO_TABLE};
	wx.proc.rt = (struct ember_rt_proc){.kind = EMBER_RT_PYTHON,
					    .version = 3 << 16 | minor << 8 | 1,
					    .text = {EVAL, EVAL_END},
					    .addr = {PM_RUNTIME, CODE_TYPE}};
	for (int i = 0; i < EMBER_RT_OFF_MAX; i++)
		wx.proc.rt.off[i] = i < EMBER_PY_OFF_NR ? l->walk[i] : EMBER_RT_OFF_NONE;
	/* _PyRuntime -> the interpreter -> another thread -> TID's */
	pm_u64(PM_RUNTIME + off[EMBER_PY_RUNTIME_INTERP_HEAD], PM_INTERP);
	pm_u64(PM_INTERP + off[EMBER_PY_INTERP_THREADS_HEAD], PM_TS_OTHER);
	pm_u64(PM_TS_OTHER + off[EMBER_PY_TSTATE_TID], TID + 1);
	pm_u64(PM_TS_OTHER + off[EMBER_PY_TSTATE_NEXT], PM_TS);
	pm_u64(PM_TS + off[EMBER_PY_TSTATE_TID], TID);
	if (off[EMBER_PY_TSTATE_CFRAME] != EMBER_RT_OFF_NONE) {
		pm_u64(PM_TS + off[EMBER_PY_TSTATE_CFRAME], PM_CFRAME);
		pm_u64(PM_CFRAME + off[EMBER_PY_FRAME_CURRENT], first);
	} else {
		pm_u64(PM_TS + off[EMBER_PY_FRAME_CURRENT], first);
	}
	for (int c = 0; c < 16; c++)
		pm_u64(PM_CODE(c) + 8, CODE_TYPE);
	stack_put(BP(0), BP(1));
	stack_put(BP(0) + 8, RA_EVAL_IN);
	stack_put(BP(1), BP(2));
	stack_put(BP(1) + 8, RA_C);
	stack_put(BP(2), BP(3));
	stack_put(BP(2) + 8, RA_EVAL_OUT);
	stack_put(BP(3), 0);
	stack_put(BP(3) + 8, RA_MAIN);
}

/* Frame slot i: a frame of code object c (at IDX(c)), previous at slot prev (-1: none). */
static void py_frame(int i, int c, int prev, bool is_entry)
{
	const uint16_t *off = wx.proc.rt.off;
	uint64_t code = PM_CODE(c);

	pm_u64(PM_FRAME(i) + off[EMBER_PY_FRAME_CODE], code);
	pm_u64(PM_FRAME(i) + off[EMBER_PY_FRAME_PREVIOUS], prev < 0 ? 0 : PM_FRAME(prev));
	pm_u64(PM_FRAME(i) + off[EMBER_PY_FRAME_INSTR],
	       code + off[EMBER_PY_CODE_ADAPTIVE] + 2 * IDX(c));
	if (off[EMBER_PY_FRAME_IS_ENTRY] != EMBER_RT_OFF_NONE)
		pm_u8(PM_FRAME(i) + off[EMBER_PY_FRAME_IS_ENTRY], is_entry);
}

/* Frame slot i: a C stack's entry frame (3.12 on), previous at slot prev. */
static void py_entry_frame(int i, int prev)
{
	const uint16_t *off = wx.proc.rt.off;

	ck_assert_uint_eq(off[EMBER_PY_FRAME_IS_ENTRY], EMBER_RT_OFF_NONE);
	py_frame(i, 15, prev, false);
	pm_u8(PM_FRAME(i) + off[EMBER_PY_FRAME_OWNER], 3);
}

/*
 * Two runs of the eval loop, code objects 3, 2 (the inner, called from C
 * called from Python) and 1, 0 (the outer), each run's end marked as the
 * version marks it. Slots 0.., innermost first.
 */
static void py_two_runs(uint32_t minor)
{
	py_process(minor, PM_FRAME(0));
	if (minor == 11) {
		py_frame(0, 3, 1, false);
		py_frame(1, 2, 2, true);
		py_frame(2, 1, 3, false);
		py_frame(3, 0, -1, true);
	} else {
		py_frame(0, 3, 1, false);
		py_frame(1, 2, 2, false);
		py_entry_frame(2, 3);
		py_frame(3, 1, 4, false);
		py_frame(4, 0, 5, false);
		py_entry_frame(5, -1);
	}
}

static void py_walk(uint64_t ip, uint64_t bp)
{
	struct uwalk_rows src = {NULL, NULL}; /* never asked: the mapping has no table */
	struct uwalk_stack stk = {wx.stack, STACK, sizeof(wx.stack)};
	struct uwalk_mem mem = {.read = pm_read, .arg = NULL};
	struct uwalk_regs regs = {.ip = ip, .sp = SP, .bp = bp, .tid = TID};

	uwalk_mem(&wx.proc, &src, &stk, &mem, &regs, &wx.res);
}

static uint64_t W(int c)
{
	return EMBER_RT_WORD(EMBER_RT_PYTHON, IDX(c), PM_CODE(c));
}

static void expect_walk(const uint64_t *want, uint32_t n)
{
	for (uint32_t i = 0; i < n && i < wx.res.n; i++)
		ck_assert_msg(wx.res.ips[i] == want[i], "3.%u frame %u: %#lx, want %#lx",
			      wx.l->minor, i, (unsigned long)wx.res.ips[i], (unsigned long)want[i]);
	ck_assert_uint_eq(wx.res.n, n);
	ck_assert_uint_eq(wx.res.end, EMBER_SAMPLE_M_END_OUTERMOST);
}

/* Each eval frame gives its run's Python frames, innermost first; C frames stay between. */
START_TEST(test_walk_runs)
{
	for (uint32_t minor = 11; minor <= 13; minor++) {
		py_two_runs(minor);
		py_walk(LEAF, BP(0));
		expect_walk((const uint64_t[]){LEAF, W(3), W(2), RA_C, W(1), W(0), RA_MAIN}, 7);
		ck_assert_uint_eq(wx.res.rt_frames, 4);
		ck_assert_uint_eq(wx.res.rt_miss, 0);
		ck_assert_uint_eq(wx.res.rt_unsupported, 0);
		ck_assert_uint_eq(wx.res.by_fp, 5); /* native frames, each stepped from once */

		/* sampled in the eval loop itself: the leaf is its frames */
		py_walk(EVAL + 0x10, BP(1));
		expect_walk((const uint64_t[]){W(3), W(2), RA_C, W(1), W(0), RA_MAIN}, 6);
		ck_assert_uint_eq(wx.res.rt_frames, 4);

		/* no memory to read: the native frames, as before */
		{
			struct uwalk_rows src = {NULL, NULL};
			struct uwalk_stack stk = {wx.stack, STACK, sizeof(wx.stack)};
			struct uwalk_regs regs = {.ip = LEAF, .sp = SP, .bp = BP(0), .tid = TID};

			uwalk(&wx.proc, &src, &stk, &regs, &wx.res);
			expect_walk(
				(const uint64_t[]){LEAF, RA_EVAL_IN, RA_C, RA_EVAL_OUT, RA_MAIN},
				5);
			ck_assert_uint_eq(wx.res.rt_frames, 0);
			ck_assert_uint_eq(wx.res.rt_miss, MISS_NO_THREAD);
		}
	}
}
END_TEST

/* A thread the interpreter does not know, or a list of threads in a ring: native frames. */
START_TEST(test_walk_no_thread)
{
	for (uint32_t minor = 11; minor <= 13; minor++) {
		const uint16_t *off;

		py_two_runs(minor);
		off = wx.proc.rt.off;
		pm_u64(PM_TS + off[EMBER_PY_TSTATE_TID], TID + 2);
		py_walk(LEAF, BP(0));
		expect_walk((const uint64_t[]){LEAF, RA_EVAL_IN, RA_C, RA_EVAL_OUT, RA_MAIN}, 5);
		ck_assert_uint_eq(wx.res.rt_miss, MISS_NO_THREAD);
		ck_assert_uint_eq(wx.res.rt_frames, 0);
		/* two thread states naming each other */
		pm_u64(PM_TS + off[EMBER_PY_TSTATE_NEXT], PM_TS_OTHER);
		py_walk(LEAF, BP(0));
		expect_walk((const uint64_t[]){LEAF, RA_EVAL_IN, RA_C, RA_EVAL_OUT, RA_MAIN}, 5);
		ck_assert_uint_eq(wx.res.rt_miss, MISS_NO_THREAD);
		/* no interpreter */
		pm_u64(PM_RUNTIME + off[EMBER_PY_RUNTIME_INTERP_HEAD], 0);
		py_walk(LEAF, BP(0));
		expect_walk((const uint64_t[]){LEAF, RA_EVAL_IN, RA_C, RA_EVAL_OUT, RA_MAIN}, 5);
		ck_assert_uint_eq(wx.res.rt_miss, MISS_NO_THREAD);
	}
}
END_TEST

/* py_walk() with the thread's memo of its state (the kernel keeps one per task). */
static void py_walk_memo(uint64_t ip, uint64_t bp, struct ember_py_ts_memo *memo)
{
	struct uwalk_rows src = {NULL, NULL};
	struct uwalk_stack stk = {wx.stack, STACK, sizeof(wx.stack)};
	struct uwalk_mem mem = {.read = pm_read, .ts_memo = memo};
	struct uwalk_regs regs = {.ip = ip, .sp = SP, .bp = bp, .tid = TID};

	uwalk_mem(&wx.proc, &src, &stk, &mem, &regs, &wx.res);
}

/*
 * The thread's state remembered: found by the search once, then checked with
 * one read where the search took five (the interpreter, its first thread, that
 * thread's id and next, this one's id); one that is not this thread's (another
 * thread's, another runtime's, unreadable) is searched for again and replaced;
 * a thread the interpreter no longer knows has no Python frames, as without.
 */
START_TEST(test_walk_memo)
{
	const uint64_t want[] = {LEAF, W(3), W(2), RA_C, W(1), W(0), RA_MAIN};

	for (uint32_t minor = 11; minor <= 13; minor++) {
		struct ember_py_ts_memo m = {0};
		uint32_t searched, remembered;

		py_two_runs(minor);
		py_walk_memo(LEAF, BP(0), &m);
		expect_walk(want, 7);
		ck_assert_uint_eq(m.runtime, PM_RUNTIME);
		ck_assert_uint_eq(m.ts, PM_TS);
		searched = wx.res.mem_reads;
		py_walk_memo(LEAF, BP(0), &m);
		expect_walk(want, 7);
		remembered = wx.res.mem_reads;
		ck_assert_uint_eq(searched - remembered, 4);

		m.ts = PM_TS_OTHER; /* another thread's */
		py_walk_memo(LEAF, BP(0), &m);
		expect_walk(want, 7);
		ck_assert_uint_eq(m.ts, PM_TS);
		m = (struct ember_py_ts_memo){.runtime = PM_RUNTIME + 8, .ts = PM_TS};
		py_walk_memo(LEAF, BP(0), &m);
		expect_walk(want, 7);
		ck_assert_uint_eq(wx.res.mem_reads, searched);
		ck_assert_uint_eq(m.runtime, PM_RUNTIME);
		m.ts = 8; /* unreadable */
		py_walk_memo(LEAF, BP(0), &m);
		expect_walk(want, 7);
		ck_assert_uint_eq(m.ts, PM_TS);

		pm_u64(PM_TS + wx.proc.rt.off[EMBER_PY_TSTATE_TID],
		       TID + 2); /* the thread is gone */
		py_walk_memo(LEAF, BP(0), &m);
		expect_walk((const uint64_t[]){LEAF, RA_EVAL_IN, RA_C, RA_EVAL_OUT, RA_MAIN}, 5);
		ck_assert_uint_eq(wx.res.rt_miss, MISS_NO_THREAD);
		ck_assert_uint_eq(wx.res.rt_frames, 0);
	}
}
END_TEST

/*
 * After a frame that is not the runtime's, the Python frames end (counted),
 * its eval frame gives what it gave; the walk goes on natively to its end.
 */
static void expect_cut(const uint64_t *given, uint32_t ngiven)
{
	uint64_t want[16] = {LEAF};
	uint32_t n = 1;

	for (uint32_t i = 0; i < ngiven; i++)
		want[n++] = given[i];
	want[n++] = RA_C;
	want[n++] = RA_EVAL_OUT; /* the outer run: no frames left to give */
	want[n++] = RA_MAIN;
	expect_walk(want, n);
	ck_assert_uint_eq(wx.res.rt_miss, MISS_BAD_FRAME);
	ck_assert_uint_eq(wx.res.rt_frames, ngiven);
}

/* A frame whose code object is not one (another type, unreadable, NULL). */
START_TEST(test_walk_bad_code)
{
	for (uint32_t minor = 11; minor <= 13; minor++) {
		const uint16_t *off;

		py_two_runs(minor);
		off = wx.proc.rt.off;
		pm_u64(PM_CODE(2) + 8, CODE_TYPE + 8);
		py_walk(LEAF, BP(0));
		expect_cut((const uint64_t[]){W(3)}, 1);

		pm_u64(PM_FRAME(1) + off[EMBER_PY_FRAME_CODE], PM + sizeof(wx.pm));
		py_walk(LEAF, BP(0));
		expect_cut((const uint64_t[]){W(3)}, 1);

		pm_u64(PM_FRAME(1) + off[EMBER_PY_FRAME_CODE], 0);
		py_walk(LEAF, BP(0));
		expect_cut((const uint64_t[]){W(3)}, 1);

		/* the innermost frame itself: the eval frame is stored as itself, a native one */
		pm_u64(PM_FRAME(0) + off[EMBER_PY_FRAME_CODE], 0);
		py_walk(LEAF, BP(0));
		expect_walk((const uint64_t[]){LEAF, RA_EVAL_IN, RA_C, RA_EVAL_OUT, RA_MAIN}, 5);
		ck_assert_uint_eq(wx.res.rt_miss, MISS_BAD_FRAME);

		/* a frame that cannot be read */
		py_two_runs(minor);
		pm_u64(PM_FRAME(1) + off[EMBER_PY_FRAME_PREVIOUS], PM + sizeof(wx.pm) - 8);
		py_walk(LEAF, BP(0));
		expect_cut((const uint64_t[]){W(3), W(2)}, 2);
	}
}
END_TEST

/* py_walk() with the thread's memo of its state and a CPU's memo of code objects (or NULL). */
static void py_walk_codes(struct ember_py_ts_memo *ts, struct ember_py_code_memo *codes)
{
	struct uwalk_rows src = {NULL, NULL};
	struct uwalk_stack stk = {wx.stack, STACK, sizeof(wx.stack)};
	struct uwalk_mem mem = {.read = pm_read, .ts_memo = ts, .py_code_memo = codes};
	struct uwalk_regs regs = {.ip = LEAF, .sp = SP, .bp = BP(0), .tid = TID};

	uwalk_mem(&wx.proc, &src, &stk, &mem, &regs, &wx.res);
}

/*
 * Code objects kept across walks of a process (the kernel's py_code_memo, per
 * CPU): a walk that met them reads none of their types again; a new
 * generation of the process's entry (a process after another at its pid, or
 * its mappings changed), or a walk of no known generation, reads and checks
 * them anew. A code object kept is trusted while its slot holds it: a live
 * frame holds its code, which CPython never moves; the host checks the type
 * again when it names it.
 */
START_TEST(test_walk_code_memo)
{
	const uint64_t want[] = {LEAF, W(3), W(2), RA_C, W(1), W(0), RA_MAIN};

	for (uint32_t minor = 11; minor <= 13; minor++) {
		struct ember_py_code_memo codes[EMBER_PY_CODE_MEMO_SLOTS] = {0};
		struct ember_py_ts_memo ts = {0};
		uint32_t unkept, kept;

		py_two_runs(minor);
		wx.proc.gen = 5;
		py_walk_codes(&ts,
			      NULL); /* the thread's state found: each walk below reads it once */
		py_walk_codes(&ts, NULL);
		expect_walk(want, 7);
		unkept = wx.res.mem_reads;
		py_walk_codes(&ts, codes);
		expect_walk(want, 7);
		ck_assert_uint_eq(wx.res.mem_reads, unkept); /* each code object read, and kept */
		py_walk_codes(&ts, codes);
		expect_walk(want, 7);
		kept = wx.res.mem_reads;
		ck_assert_uint_eq(unkept - kept, 4); /* codes 3, 2, 1, 0: none read again */

		/* trusted while kept: the host's naming checks the type again */
		pm_u64(PM_CODE(2) + 8, CODE_TYPE + 8);
		py_walk_codes(&ts, codes);
		expect_walk(want, 7);
		ck_assert_uint_eq(wx.res.mem_reads, kept);
		/* another generation of the process: read and checked anew */
		wx.proc.gen = 6;
		py_walk_codes(&ts, codes);
		expect_cut((const uint64_t[]){W(3)}, 1);
		pm_u64(PM_CODE(2) + 8, CODE_TYPE);
		py_walk_codes(&ts, codes);
		expect_walk(want, 7);
		py_walk_codes(&ts, codes);
		ck_assert_uint_eq(wx.res.mem_reads, kept);
		/* no generation known (a process not loaded): nothing kept across walks */
		wx.proc.gen = 0;
		py_walk_codes(&ts, codes);
		expect_walk(want, 7);
		ck_assert_uint_eq(wx.res.mem_reads, unkept);
	}
}
END_TEST

/*
 * A deferred sample's walk (daemon/sample/deferred.c): the chain read at the sample
 * (uwalk_rt_trace(), the kernel's uw_py_trace()) gives what the walk of the
 * live chain gave then, though the process's memory moved on since.
 */
static void py_walk_traced(const struct ember_rt_trace *t, uint64_t ip, uint64_t bp)
{
	struct uwalk_rows src = {NULL, NULL};
	struct uwalk_stack stk = {wx.stack, STACK, sizeof(wx.stack)};
	struct uwalk_mem mem = {.read = pm_read, .arg = NULL};
	struct uwalk_regs regs = {.ip = ip, .sp = SP, .bp = bp, .tid = TID};

	uwalk_traced(&wx.proc, &src, &stk, &mem, t, &regs, &wx.res);
}

START_TEST(test_walk_traced)
{
	struct uwalk_mem mem = {.read = pm_read, .arg = NULL};
	struct ember_rt_trace t;

	for (uint32_t minor = 11; minor <= 13; minor++) {
		py_two_runs(minor);
		uwalk_rt_trace(&wx.proc.rt, &mem, TID, &t);
		ck_assert_uint_eq(t.kind, EMBER_RT_PYTHON);
		ck_assert_uint_eq(t.n, 4);
		ck_assert_uint_eq(t.miss, 0);
		/* the chain moved on: the live one now names other code */
		py_frame(0, 7, -1, true);
		py_frame(1, 7, -1, true);
		py_walk_traced(&t, LEAF, BP(0));
		expect_walk((const uint64_t[]){LEAF, W(3), W(2), RA_C, W(1), W(0), RA_MAIN}, 7);
		ck_assert_uint_eq(wx.res.rt_frames, 4);
		ck_assert_uint_eq(wx.res.rt_miss, 0);
		py_walk_traced(&t, EVAL + 0x10, BP(1));
		expect_walk((const uint64_t[]){W(3), W(2), RA_C, W(1), W(0), RA_MAIN}, 6);
		/* without the trace, the live chain: what the walk of a moved-on chain gives */
		py_walk(LEAF, BP(0));
		ck_assert_uint_eq(wx.res.ips[1], W(7));

		/* a thread the interpreter did not know then: native frames, though it does now */
		py_two_runs(minor);
		pm_u64(PM_TS + wx.proc.rt.off[EMBER_PY_TSTATE_TID], TID + 2);
		uwalk_rt_trace(&wx.proc.rt, &mem, TID, &t);
		ck_assert_uint_eq(t.n, 0);
		ck_assert_uint_eq(t.miss, MISS_NO_THREAD);
		pm_u64(PM_TS + wx.proc.rt.off[EMBER_PY_TSTATE_TID], TID);
		py_walk_traced(&t, LEAF, BP(0));
		expect_walk((const uint64_t[]){LEAF, RA_EVAL_IN, RA_C, RA_EVAL_OUT, RA_MAIN}, 5);
		ck_assert_uint_eq(wx.res.rt_miss, MISS_NO_THREAD);

		/* a chain cut by a bad frame then: cut the same way, counted */
		py_two_runs(minor);
		pm_u64(PM_CODE(2) + 8, CODE_TYPE + 8);
		uwalk_rt_trace(&wx.proc.rt, &mem, TID, &t);
		ck_assert_uint_eq(t.n, 1);
		ck_assert_uint_eq(t.miss, MISS_BAD_FRAME);
		pm_u64(PM_CODE(2) + 8, CODE_TYPE);
		py_walk_traced(&t, LEAF, BP(0));
		expect_cut((const uint64_t[]){W(3)}, 1);

		/* a ring of frames: the trace ends within its bound, counted */
		py_process(minor, PM_FRAME(0));
		py_frame(0, 0, 1, false);
		py_frame(1, 1, 0, false);
		uwalk_rt_trace(&wx.proc.rt, &mem, TID, &t);
		ck_assert_uint_le(t.n, 8);
		ck_assert_uint_eq(t.miss, MISS_BAD_FRAME);
	}
}
END_TEST

/*
 * previous chains that come back on themselves: the Python frames end
 * (counted) within a few turns, the walk goes on natively and ends.
 */
START_TEST(test_walk_cycle)
{
	for (uint32_t minor = 11; minor <= 13; minor++) {
		for (int len = 1; len <= 12; len++) {
			/* slots 0..len-1 of code objects 0..len-1, the last back to slot 0 */
			py_process(minor, PM_FRAME(0));
			for (int i = 0; i < len; i++)
				py_frame(i, i, i + 1 < len ? i + 1 : 0, false);
			py_walk(LEAF, BP(0));
			ck_assert_uint_eq(wx.res.end, EMBER_SAMPLE_M_END_OUTERMOST);
			ck_assert_uint_eq(wx.res.rt_miss, MISS_BAD_FRAME);
			/* each frame given at most a few times */
			ck_assert_uint_ge(wx.res.rt_frames, (uint32_t)len);
			ck_assert_uint_le(wx.res.rt_frames, 4 * (uint32_t)len);
			ck_assert_uint_eq(wx.res.n, 1 + wx.res.rt_frames + 3);
			ck_assert_uint_eq(wx.res.ips[0], LEAF);
			for (uint32_t i = 0; i < wx.res.rt_frames; i++)
				ck_assert_uint_eq(wx.res.ips[1 + i], W((int)i % len));
			ck_assert_uint_eq(wx.res.ips[wx.res.n - 3], RA_C);
			ck_assert_uint_eq(wx.res.ips[wx.res.n - 2], RA_EVAL_OUT);
			ck_assert_uint_eq(wx.res.ips[wx.res.n - 1], RA_MAIN);
		}
		/* a ring that starts past two frames: those, then the ring's */
		py_process(minor, PM_FRAME(0));
		py_frame(0, 0, 1, false);
		py_frame(1, 1, 2, false);
		py_frame(2, 2, 3, false);
		py_frame(3, 3, 2, false);
		py_walk(LEAF, BP(0));
		ck_assert_uint_eq(wx.res.end, EMBER_SAMPLE_M_END_OUTERMOST);
		ck_assert_uint_eq(wx.res.rt_miss, MISS_BAD_FRAME);
		ck_assert_uint_le(wx.res.rt_frames, 8);
		ck_assert_uint_eq(wx.res.ips[wx.res.n - 1], RA_MAIN);
	}
	/* 3.12 on: a ring through a C stack's entry frame */
	for (uint32_t minor = 12; minor <= 13; minor++) {
		py_process(minor, PM_FRAME(0));
		py_frame(0, 0, 1, false);
		py_entry_frame(1, 0);
		py_walk(LEAF, BP(0));
		ck_assert_uint_eq(wx.res.end, EMBER_SAMPLE_M_END_OUTERMOST);
		ck_assert_uint_eq(wx.res.rt_miss, MISS_BAD_FRAME);
		ck_assert_uint_le(wx.res.rt_frames, 2);
		ck_assert_uint_eq(wx.res.ips[wx.res.n - 1], RA_MAIN);
		/* an entry frame that is its own previous */
		py_entry_frame(1, 1);
		py_walk(LEAF, BP(0));
		ck_assert_uint_eq(wx.res.end, EMBER_SAMPLE_M_END_OUTERMOST);
		ck_assert_uint_eq(wx.res.rt_miss, MISS_BAD_FRAME);
		expect_walk((const uint64_t[]){LEAF, W(0), RA_C, RA_EVAL_OUT, RA_MAIN}, 5);
	}
}
END_TEST

/* A version without a layout: one honest frame per eval frame, nothing read. */
START_TEST(test_walk_unsupported)
{
	uint64_t honest = EMBER_RT_WORD(EMBER_RT_PYTHON, 0x030a, 0);

	py_two_runs(12);
	wx.proc.rt.version = 3 << 16 | 10 << 8 | 13;
	wx.proc.rt.flags = EMBER_RT_F_UNSUPPORTED;
	py_walk(LEAF, BP(0));
	expect_walk((const uint64_t[]){LEAF, honest, RA_C, honest, RA_MAIN}, 5);
	ck_assert_uint_eq(wx.res.rt_unsupported, 2);
	ck_assert_uint_eq(wx.res.rt_frames, 0);
	ck_assert(EMBER_RT_IS_WORD(honest) && !EMBER_RT_IS_WORD(LEAF));
}
END_TEST

/* One stack's code objects read at once: repeats once, a piece that fails read alone later. */
START_TEST(test_prefetch)
{
	static uint8_t page[3][1024];
	struct memory m = {0};
	struct rt_prefetch *pf = malloc(sizeof(*pf));
	struct rt_mem under = {mem_read, &m, mem_readv}, pm;
	/* 0x10000, 0x20000 and 0x40000 mapped, 0x30000 not */
	uint64_t addrs[] = {0x10000, 0x20000, 0x10000, 0, 0x30000, 0x40000}, many[12];
	uint8_t out[16];

	ck_assert_ptr_nonnull(pf);
	for (int i = 0; i < 3; i++)
		for (size_t j = 0; j < sizeof(page[i]); j++)
			page[i][j] = (uint8_t)(j * 7 + 0x40 * i);
	mem_add(&m, 0x10000, page[0], sizeof(page[0]));
	mem_add(&m, 0x20000, page[1], sizeof(page[1]));
	mem_add(&m, 0x40000, page[2], sizeof(page[2]));
	/* two whole in one call, which stops at the unmapped one; the last in a second */
	ck_assert_uint_eq(rt_prefetch_fill(pf, &under, addrs, 6), 2);
	ck_assert_uint_eq(m.reads, 2);
	ck_assert_uint_eq(pf->n, 4);
	pm = rt_prefetch_mem(pf);
	ck_assert_ptr_nonnull(pm.readv);
	/* inside a block: no read */
	ck_assert(pm.read(pm.arg, out, 16, 0x20000 + 240));
	ck_assert_mem_eq(out, page[1] + 240, 16);
	ck_assert(pm.read(pm.arg, out, 8, 0x40000));
	ck_assert_mem_eq(out, page[2], 8);
	ck_assert_uint_eq(m.reads, 2);
	/* past a block's end, or at the one not read: the process's */
	ck_assert(pm.read(pm.arg, out, 16, 0x10000 + 250));
	ck_assert_uint_eq(m.reads, 3);
	ck_assert(!pm.read(pm.arg, out, 8, 0x30000));
	ck_assert_uint_eq(m.reads, 4);
	/* more than a call takes: 12 blocks in 2 calls */
	for (int i = 0; i < 12; i++)
		many[i] = (uint64_t[]){0x10000, 0x20000, 0x40000}[i / 4] + 256 * (i % 4);
	m.reads = 0;
	ck_assert_uint_eq(rt_prefetch_fill(pf, &under, many, 12), 2);
	ck_assert_uint_eq(m.reads, 2);
	pm = rt_prefetch_mem(pf);
	ck_assert(pm.read(pm.arg, out, 16, 0x40000 + 1000));
	ck_assert_mem_eq(out, page[2] + 1000, 16);
	ck_assert_uint_eq(m.reads, 2);
	/* a reader without readv: nothing read ahead, every read the process's */
	under.readv = NULL;
	ck_assert_uint_eq(rt_prefetch_fill(pf, &under, addrs, 6), 0);
	pm = rt_prefetch_mem(pf);
	ck_assert_ptr_null(pm.readv);
	ck_assert(pm.read(pm.arg, out, 8, 0x10000));
	ck_assert_uint_eq(m.reads, 3);
	free(pf);
}
END_TEST

/* The live reader's vectored call, on this process: the pieces whole up to one not mapped. */
START_TEST(test_readv_pid)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *mem =
		mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t a[16], b[16], c[32];
	void *self = (void *)(intptr_t)getpid();
	uint64_t base;

	ck_assert_ptr_ne(mem, MAP_FAILED);
	base = (uint64_t)(uintptr_t)mem;
	memset(mem, 0xab, page);
	ck_assert_int_eq(munmap(mem + page, page), 0);
	struct rt_piece all[] = {{a, 16, base}, {b, 16, base + 100}, {c, 32, base + page - 32}};
	struct rt_piece cut[] = {{a, 16, base}, {c, 32, base + page - 16}, {b, 16, base}};
	struct rt_piece none[] = {{a, 16, base + page}, {b, 16, base}};

	ck_assert_uint_eq(rt_readv_pid(self, all, 3), 3);
	ck_assert_uint_eq(a[0] & b[15] & c[31], 0xab);
	ck_assert_uint_eq(rt_readv_pid(self, cut, 3), 1); /* the second runs off the mapping */
	ck_assert_uint_eq(rt_readv_pid(self, none, 2), 0);
	ck_assert_uint_eq(rt_readv_pid(self, all, 0), 0);
	munmap(mem, page);
}
END_TEST

Suite *python_suite(void)
{
	Suite *s = suite_create("python");
	TCase *lines = tcase_create("lines");
	TCase *code = tcase_create("code");
	TCase *walk = tcase_create("walk");

	tcase_add_test(lines, test_lines_recorded);
	tcase_add_test(lines, test_lines_truncated);
	tcase_add_test(lines, test_lines_malformed);
	tcase_add_test(code, test_code_recorded);
	tcase_add_test(code, test_code_blocks);
	tcase_add_test(code, test_readv_pid);
	tcase_add_test(code, test_prefetch);
	tcase_add_test(code, test_name_recorded);
	tcase_add_test(code, test_name_shared);
	tcase_add_test(code, test_name_reused);
	tcase_add_test(code, test_code_hostile);
	tcase_add_test(code, test_name_hostile);
	tcase_add_test(code, test_cache_bounded);
	tcase_add_test(code, test_cache_bounded_tables);
	tcase_add_test(walk, test_walk_runs);
	tcase_add_test(walk, test_walk_no_thread);
	tcase_add_test(walk, test_walk_memo);
	tcase_add_test(walk, test_walk_bad_code);
	tcase_add_test(walk, test_walk_code_memo);
	tcase_add_test(walk, test_walk_cycle);
	tcase_add_test(walk, test_walk_traced);
	tcase_add_test(walk, test_walk_unsupported);
	suite_add_tcase(s, lines);
	suite_add_tcase(s, code);
	suite_add_tcase(s, walk);
	return s;
}
