// SPDX-License-Identifier: MIT
/*
 * CPython's layouts per minor version, its location tables, and reading a
 * code object's names from a process (python.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "python.h"

#define NONE EMBER_RT_OFF_NONE

/*
 * Offsets of x86-64 release builds (no Py_DEBUG), from the DWARF of pyenv's
 * builds (`gdb -batch -ex 'p (long)&((PyThreadState*)0)->cframe'`), checked
 * by integ_python_layout against every binary of a version on the machine.
 */
static const struct py_layout layouts[] = {
	{
		.minor = 11,
		.walk = {[EMBER_PY_RUNTIME_INTERP_HEAD] = 40,
			 [EMBER_PY_INTERP_THREADS_HEAD] = 16,
			 [EMBER_PY_TSTATE_NEXT] = 8,
			 [EMBER_PY_TSTATE_TID] = 160,
			 [EMBER_PY_TSTATE_CFRAME] = 56,
			 [EMBER_PY_FRAME_CURRENT] = 8,
			 [EMBER_PY_FRAME_CODE] = 32,
			 [EMBER_PY_FRAME_PREVIOUS] = 48,
			 [EMBER_PY_FRAME_INSTR] = 56,
			 [EMBER_PY_FRAME_IS_ENTRY] = 68,
			 [EMBER_PY_FRAME_OWNER] = 69,
			 [EMBER_PY_CODE_ADAPTIVE] = 184},
		.co_qualname = 128,
		.co_filename = 112,
		.co_linetable = 136,
		.co_firstlineno = 72,
		.ascii_size = 48,
		.compact_size = 72,
	},
	{
		.minor = 12,
		.walk = {[EMBER_PY_RUNTIME_INTERP_HEAD] = 40,
			 [EMBER_PY_INTERP_THREADS_HEAD] = 72,
			 [EMBER_PY_TSTATE_NEXT] = 8,
			 [EMBER_PY_TSTATE_TID] = 144,
			 [EMBER_PY_TSTATE_CFRAME] = 56,
			 [EMBER_PY_FRAME_CURRENT] = 0,
			 [EMBER_PY_FRAME_CODE] = 0,
			 [EMBER_PY_FRAME_PREVIOUS] = 8,
			 [EMBER_PY_FRAME_INSTR] = 56,
			 [EMBER_PY_FRAME_IS_ENTRY] = NONE,
			 [EMBER_PY_FRAME_OWNER] = 70,
			 [EMBER_PY_CODE_ADAPTIVE] = 192},
		.co_qualname = 128,
		.co_filename = 112,
		.co_linetable = 136,
		.co_firstlineno = 68,
		.ascii_size = 40,
		.compact_size = 56,
	},
	{
		.minor = 13,
		.walk = {[EMBER_PY_RUNTIME_INTERP_HEAD] = 632,
			 [EMBER_PY_INTERP_THREADS_HEAD] = 7344,
			 [EMBER_PY_TSTATE_NEXT] = 8,
			 [EMBER_PY_TSTATE_TID] = 160,
			 [EMBER_PY_TSTATE_CFRAME] = NONE,
			 [EMBER_PY_FRAME_CURRENT] = 72, /* PyThreadState.current_frame */
			 [EMBER_PY_FRAME_CODE] = 0,	/* f_executable */
			 [EMBER_PY_FRAME_PREVIOUS] = 8,
			 [EMBER_PY_FRAME_INSTR] = 56, /* instr_ptr */
			 [EMBER_PY_FRAME_IS_ENTRY] = NONE,
			 [EMBER_PY_FRAME_OWNER] = 70,
			 [EMBER_PY_CODE_ADAPTIVE] = 200},
		.co_qualname = 128,
		.co_filename = 112,
		.co_linetable = 136,
		.co_firstlineno = 68,
		.ascii_size = 40,
		.compact_size = 56,
	},
};

const struct py_layout *py_layout(uint32_t minor)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}

const struct py_layout *py_layouts(size_t *n)
{
	*n = sizeof(layouts) / sizeof(layouts[0]);
	return layouts;
}

/* --- location tables (Objects/locations.md of CPython 3.11+) ------------------------------ */

/* Entry codes (the 4 bits after the start bit). */
#define LOC_NONE 15	 /* no location */
#define LOC_LONG 14	 /* svarint line delta, varint end line, column, end column */
#define LOC_NO_COLUMN 13 /* svarint line delta */
#define LOC_ONE_LINE 10	 /* 10..12: line delta = code - 10, then two column bytes */

struct loc_reader {
	const uint8_t *p, *end;
	bool bad;
};

static uint32_t loc_byte(struct loc_reader *r)
{
	if (r->p >= r->end) {
		r->bad = true;
		return 0;
	}
	return *r->p++;
}

/* A varint of 6-bit chunks, the low first, bit 6 saying another follows. */
static uint64_t loc_varint(struct loc_reader *r)
{
	uint32_t b = loc_byte(r);
	uint64_t v = b & 63;

	for (unsigned shift = 6; (b & 64) && !r->bad; shift += 6) {
		if (shift > 60) {
			r->bad = true;
			return 0;
		}
		b = loc_byte(r);
		v |= (uint64_t)(b & 63) << shift;
	}
	return v;
}

static int64_t loc_svarint(struct loc_reader *r)
{
	uint64_t u = loc_varint(r);

	return u & 1 ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
}

/* One entry's line delta, its extra bytes skipped. */
static int64_t loc_delta(struct loc_reader *r, uint32_t code)
{
	int64_t d = 0;

	if (code == LOC_NONE)
		return 0;
	if (code == LOC_LONG) {
		d = loc_svarint(r);
		loc_varint(r); /* end line delta */
		loc_varint(r); /* column + 1 */
		loc_varint(r); /* end column + 1 */
	} else if (code == LOC_NO_COLUMN) {
		d = loc_svarint(r);
	} else if (code >= LOC_ONE_LINE) {
		d = code - LOC_ONE_LINE;
		loc_byte(r);
		loc_byte(r);
	} else {
		loc_byte(r); /* the short form: a column byte, same line */
	}
	return d;
}

uint32_t py_line_at(const uint8_t *tab, size_t len, int32_t firstlineno, uint32_t idx)
{
	struct loc_reader r = {tab, tab + len, false};
	int64_t line = firstlineno;
	uint64_t at = 0;

	while (r.p < r.end) {
		uint32_t b = loc_byte(&r), code = (b >> 3) & 15, n = (b & 7) + 1;
		bool none = code == LOC_NONE;
		int64_t d;

		if (!(b & 0x80))
			return 0; /* not the start of an entry: a malformed table */
		d = loc_delta(&r, code);
		/*
		 * CPython's lines are C ints: a delta or a line past them is no
		 * table's (and deltas of 2^63 overflowed the sum, wrapping to a
		 * plausible line: check_python's malformed tables).
		 */
		if (r.bad || d > (int64_t)UINT32_MAX || d < -(int64_t)UINT32_MAX)
			return 0;
		line += d;
		if (line < INT32_MIN || line > INT32_MAX)
			return 0;
		if (idx < at + n)
			return none || line <= 0 ? 0 : (uint32_t)line;
		at += n;
	}
	return 0;
}

/* --- code objects ---------------------------------------------------------------------------- */

/* PyASCIIObject (every version ember knows): length, and the state bits. */
#define PY_STR_LENGTH 16
#define PY_STR_STATE 32
#define PY_STR_KIND(s) (((s) >> 2) & 7)
#define PY_STR_COMPACT(s) (((s) >> 5) & 1)
#define PY_STR_ASCII(s) (((s) >> 6) & 1)
/* PyBytesObject: ob_size and ob_sval. */
#define PY_BYTES_SIZE 16
#define PY_BYTES_DATA 32
#define PY_OB_TYPE 8

static bool mem_u64(const struct rt_mem *mem, uint64_t addr, uint64_t *v)
{
	return mem->read(mem->arg, v, sizeof(*v), addr);
}

/* Appends code point c to out[n..] as UTF-8 (cap: a NUL still fits): the new n, n if it cannot. */
static size_t put_utf8(char *out, size_t n, size_t cap, uint32_t c)
{
	char b[4];
	size_t k;

	if (c >= 0xd800 && c < 0xe000)
		c = 0xfffd; /* a lone surrogate is no character */
	if (c < 0x80) {
		b[0] = (char)c;
		k = 1;
	} else if (c < 0x800) {
		b[0] = (char)(0xc0 | c >> 6);
		b[1] = (char)(0x80 | (c & 63));
		k = 2;
	} else if (c < 0x10000) {
		b[0] = (char)(0xe0 | c >> 12);
		b[1] = (char)(0x80 | (c >> 6 & 63));
		b[2] = (char)(0x80 | (c & 63));
		k = 3;
	} else if (c <= 0x10ffff) {
		b[0] = (char)(0xf0 | c >> 18);
		b[1] = (char)(0x80 | (c >> 12 & 63));
		b[2] = (char)(0x80 | (c >> 6 & 63));
		b[3] = (char)(0x80 | (c & 63));
		k = 4;
	} else {
		return put_utf8(out, n, cap, 0xfffd); /* no character */
	}
	if (n + k >= cap)
		return n;
	memcpy(out + n, b, k);
	return n + k;
}

/*
 * Bytes read at once from the start of a string, a location table or a code
 * object, past the fields needed first: most names and tables fit, so an
 * object costs one process_vm_readv() where reading field by field cost three
 * (a short-lived Python process announces ~50 code objects: ~600 calls,
 * issue 46). When the block cannot be read (it ends past a mapping), the
 * exact reads follow: the answer is the same, only the calls differ.
 */
#define PY_BLOCK 256

/* The u64 at off of block b (off + 8 <= PY_BLOCK). */
static uint64_t block_u64(const uint8_t *b, size_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

/*
 * A block at each of n addresses (0: none wanted), in one call where mem can
 * (rt_read_pieces()): read[i] says which were read whole (one near the end of a mapping is
 * not: its reader then reads its fields one by one).
 */
static void read_blocks(const struct rt_mem *mem, const uint64_t *addrs, size_t n,
			uint8_t (*blocks)[PY_BLOCK], bool *read)
{
	struct rt_piece p[RT_READV_MAX];
	size_t idx[RT_READV_MAX], np = 0;
	bool got[RT_READV_MAX];

	for (size_t i = 0; i < n; i++) {
		read[i] = false;
		if (addrs[i] && np < RT_READV_MAX) {
			p[np] = (struct rt_piece){blocks[i], PY_BLOCK, addrs[i]};
			idx[np++] = i;
		}
	}
	rt_read_pieces(mem, p, np, got);
	for (size_t k = 0; k < np; k++)
		read[idx[k]] = got[k];
}

/*
 * The compact string at addr as UTF-8 into out (cap bytes), cut at
 * PY_STR_MAX characters; head: a block read at addr (NULL: none could be).
 * Only compact strings (all names and file names of code objects are): others
 * are refused.
 */
static int read_str(const struct rt_mem *mem, const struct py_layout *l, uint64_t addr,
		    const uint8_t *head, char *out, size_t cap)
{
	uint64_t len, state, data;
	uint8_t buf[4 * PY_STR_MAX];
	const uint8_t *bytes = buf;
	bool block = head != NULL;
	uint32_t kind;
	size_t n = 0;

	out[0] = '\0';
	if (!addr)
		return -EFAULT;
	if (block) {
		len = block_u64(head, PY_STR_LENGTH);
		state = block_u64(head, PY_STR_STATE);
	} else if (!mem_u64(mem, addr + PY_STR_LENGTH, &len) ||
		   !mem_u64(mem, addr + PY_STR_STATE, &state)) {
		return -EFAULT;
	}
	kind = PY_STR_KIND(state);
	if (!PY_STR_COMPACT(state) || (kind != 1 && kind != 2 && kind != 4) || len > (1u << 30))
		return -EINVAL;
	if (len > PY_STR_MAX)
		len = PY_STR_MAX;
	if (PY_STR_ASCII(state) && kind != 1)
		return -EINVAL;
	data = PY_STR_ASCII(state) ? l->ascii_size : l->compact_size;
	if (block && data + len * kind <= PY_BLOCK)
		bytes = head + data;
	else if (len && !mem->read(mem->arg, buf, len * kind, addr + data))
		return -EFAULT;
	for (size_t i = 0; i < len; i++) {
		uint32_t c = kind == 1 ? bytes[i] :
			     kind == 2 ? (uint32_t)bytes[2 * i] | (uint32_t)bytes[2 * i + 1] << 8 :
					 (uint32_t)bytes[4 * i] | (uint32_t)bytes[4 * i + 1] << 8 |
						 (uint32_t)bytes[4 * i + 2] << 16 |
						 (uint32_t)bytes[4 * i + 3] << 24;
		size_t m;

		if (PY_STR_ASCII(state) && c >= 0x80)
			return -EINVAL;
		m = put_utf8(out, n, cap, c);
		if (m == n)
			break; /* cut before the first that does not fit: a prefix, not a gap */
		n = m;
	}
	out[n] = '\0';
	return 0;
}

/* The location table of the bytes object at bytes; head: a block read there (NULL: none). */
static int read_linetable(const struct rt_mem *mem, uint64_t bytes, const uint8_t *head,
			  struct py_code *out)
{
	uint64_t len;
	bool block = head != NULL;

	if (!bytes)
		return -EFAULT;
	if (block)
		len = block_u64(head, PY_BYTES_SIZE);
	else if (!mem_u64(mem, bytes + PY_BYTES_SIZE, &len))
		return -EFAULT;
	if (len > PY_LINETABLE_MAX)
		return -EINVAL;
	out->linetable = malloc(len ? len : 1);
	if (!out->linetable)
		return -ENOMEM;
	out->linetable_len = len;
	if (block && PY_BYTES_DATA + len <= PY_BLOCK)
		memcpy(out->linetable, head + PY_BYTES_DATA, len);
	else if (len && !mem->read(mem->arg, out->linetable, len, bytes + PY_BYTES_DATA))
		return -EFAULT;
	return 0;
}

/* The fields of a code object that name it: its names', its table's addresses, its first line. */
struct py_head {
	uint64_t qualname, filename, linetable;
	int32_t first;
};

/*
 * The fields at code, of an object whose type is code_type: 0, -EFAULT, or
 * -EINVAL (another type). One read where they fit a block, else the type
 * read and checked before the rest, field by field.
 */
static int read_head(const struct rt_mem *mem, const struct py_layout *l, uint64_t code_type,
		     uint64_t code, struct py_head *h)
{
	uint8_t head[PY_BLOCK];
	size_t end = (size_t)l->co_firstlineno + sizeof(h->first);
	uint64_t type;

	end = end > (size_t)l->co_qualname + 8 ? end : (size_t)l->co_qualname + 8;
	end = end > (size_t)l->co_filename + 8 ? end : (size_t)l->co_filename + 8;
	end = end > (size_t)l->co_linetable + 8 ? end : (size_t)l->co_linetable + 8;
	if (end <= sizeof(head) && mem->read(mem->arg, head, end, code)) {
		if (block_u64(head, PY_OB_TYPE) != code_type)
			return -EINVAL;
		h->qualname = block_u64(head, l->co_qualname);
		h->filename = block_u64(head, l->co_filename);
		h->linetable = block_u64(head, l->co_linetable);
		memcpy(&h->first, head + l->co_firstlineno, sizeof(h->first));
		return 0;
	}
	if (!mem_u64(mem, code + PY_OB_TYPE, &type))
		return -EFAULT;
	if (type != code_type)
		return -EINVAL;
	if (!mem_u64(mem, code + l->co_qualname, &h->qualname) ||
	    !mem_u64(mem, code + l->co_filename, &h->filename) ||
	    !mem_u64(mem, code + l->co_linetable, &h->linetable) ||
	    !mem->read(mem->arg, &h->first, sizeof(h->first), code + l->co_firstlineno))
		return -EFAULT;
	return 0;
}

/* A hash of what names a code object (struct py_code's head). */
static uint64_t head_key(const struct py_head *h)
{
	return hash_mix(hash_mix(hash_mix(hash_mix(0, h->qualname), h->filename), h->linetable),
			(uint32_t)h->first);
}

int py_code_head(const struct rt_mem *mem, const struct py_layout *l, uint64_t code_type,
		 uint64_t code, uint64_t *key)
{
	struct py_head h;
	int rc = read_head(mem, l, code_type, code, &h);

	if (!rc)
		*key = head_key(&h);
	return rc;
}

int py_code_read(const struct rt_mem *mem, const struct py_layout *l, uint64_t code_type,
		 uint64_t code, struct py_code *out)
{
	struct py_head h;
	uint8_t blocks[3][PY_BLOCK];
	bool read[3];
	int rc;

	memset(out, 0, sizeof(*out));
	rc = read_head(mem, l, code_type, code, &h);
	if (rc)
		return rc;
	out->firstlineno = h.first;
	out->head = head_key(&h);
	/* the names' and the table's first bytes at once: one system call, not three */
	read_blocks(mem, (const uint64_t[]){h.qualname, h.filename, h.linetable}, 3, blocks, read);
	rc = read_str(mem, l, h.qualname, read[0] ? blocks[0] : NULL, out->qualname,
		      sizeof(out->qualname));
	if (!rc)
		rc = read_str(mem, l, h.filename, read[1] ? blocks[1] : NULL, out->filename,
			      sizeof(out->filename));
	if (!rc)
		rc = read_linetable(mem, h.linetable, read[2] ? blocks[2] : NULL, out);
	if (rc)
		py_code_release(out);
	return rc;
}

void py_code_release(struct py_code *c)
{
	free(c->linetable);
	c->linetable = NULL;
	c->linetable_len = 0;
}
