// SPDX-License-Identifier: MIT
/*
 * /proc/PID/maps: a pure parser (text in, sorted mappings out, malformed lines
 * counted and skipped), a bounded reader and a binary-search lookup.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "ember/proc.h"
#include "procmaps.h"
#include "util.h"

/* One line's fields, with the path still pointing into the text. */
struct map_line {
	struct proc_map map;
	const char *path;
	size_t path_len;
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Parses digits in base 16 or 10 at *p; false on no digits or overflow. */
static bool parse_num(const char **p, const char *end, unsigned int base, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int d;

	for (; s < end && (d = hexval(*s)) >= 0 && (unsigned int)d < base; s++) {
		if (v > (UINT64_MAX - (uint64_t)d) / base)
			return false;
		v = v * base + (uint64_t)d;
	}
	if (s == *p)
		return false;
	*p = s;
	*out = v;
	return true;
}

static bool expect(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return false;
	(*p)++;
	return true;
}

/* "rwxp": each position is its letter or '-', the last is 'p' or 's'. */
static bool parse_perms(const char **p, const char *end, uint32_t *perms)
{
	static const char letters[3] = {'r', 'w', 'x'};
	const char *s = *p;
	uint32_t v = 0;
	int i;

	if (end - s < 4)
		return false;
	for (i = 0; i < 3; i++) {
		if (s[i] == letters[i])
			v |= 1u << i;
		else if (s[i] != '-')
			return false;
	}
	if (s[3] == 's')
		v |= PROCMAP_SHARED;
	else if (s[3] != 'p')
		return false;
	*perms = v;
	*p = s + 4;
	return true;
}

/* "start-end perms offset major:minor inode [path]"; the path may hold spaces. */
static bool parse_line(const char *s, const char *end, struct map_line *ml)
{
	struct proc_map *m = &ml->map;
	uint64_t major, minor;

	memset(ml, 0, sizeof(*ml));
	if (!parse_num(&s, end, 16, &m->start) || !expect(&s, end, '-') ||
	    !parse_num(&s, end, 16, &m->end) || !expect(&s, end, ' ') ||
	    !parse_perms(&s, end, &m->perms) || !expect(&s, end, ' ') ||
	    !parse_num(&s, end, 16, &m->offset) || !expect(&s, end, ' ') ||
	    !parse_num(&s, end, 16, &major) || !expect(&s, end, ':') ||
	    !parse_num(&s, end, 16, &minor) || !expect(&s, end, ' ') ||
	    !parse_num(&s, end, 10, &m->inode))
		return false;
	if (m->start >= m->end || major > UINT32_MAX || minor > UINT32_MAX)
		return false;
	m->dev_major = (uint32_t)major;
	m->dev_minor = (uint32_t)minor;
	if (s < end && *s != ' ')
		return false;
	while (s < end && *s == ' ')
		s++;
	/* The kernel pads to a column before the path; no path means anonymous. */
	ml->path = s < end ? s : NULL;
	ml->path_len = (size_t)(end - s);
	/* The kernel escapes what could break a line; a NUL means this is not maps. */
	return !memchr(s, '\0', ml->path_len);
}

/*
 * Walks the lines of text. With dst NULL it only counts entries and path
 * bytes; otherwise it fills dst and copies the paths into arena.
 */
static size_t walk_lines(const char *text, size_t len, struct proc_map *dst, char *arena,
			 size_t *path_bytes, size_t *bad_lines)
{
	const char *p = text, *end = text + len;
	size_t n = 0, bytes = 0, bad = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		struct map_line ml;

		if (eol == p) {
			/* empty lines (e.g. a final newline) are not errors */
		} else if (!parse_line(p, eol, &ml)) {
			bad++;
		} else {
			if (dst) {
				dst[n] = ml.map;
				if (ml.path) {
					memcpy(arena + bytes, ml.path, ml.path_len);
					arena[bytes + ml.path_len] = '\0';
					dst[n].path = arena + bytes;
				}
			}
			if (ml.path)
				bytes += ml.path_len + 1;
			n++;
		}
		p = eol + 1;
	}
	*path_bytes = bytes;
	*bad_lines = bad;
	return n;
}

static int cmp_start(const void *a, const void *b)
{
	const struct proc_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int procmaps_parse(const char *text, size_t len, struct proc_maps *out)
{
	size_t n, bytes, bad, i;
	struct proc_map *v;

	if (len > PROCMAPS_MAX_BYTES)
		return -E2BIG;
	n = walk_lines(text, len, NULL, NULL, &bytes, &bad);
	if (n > PROCMAPS_MAX_ENTRIES)
		return -E2BIG;
	/* One block: the entries, then their paths. procmaps_free frees just v. */
	v = malloc(n * sizeof(*v) + bytes + 1);
	if (!v)
		return -ENOMEM;
	walk_lines(text, len, v, (char *)(v + n), &bytes, &bad);
	for (i = 1; i < n; i++) {
		if (v[i - 1].start > v[i].start) {
			qsort(v, n, sizeof(*v), cmp_start);
			break;
		}
	}
	out->v = v;
	out->n = n;
	out->bad_lines = bad;
	return 0;
}

/* Bytes of m's paths with their NULs. */
static size_t path_bytes(const struct proc_maps *m)
{
	size_t bytes = 0;

	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].path)
			bytes += strlen(m->v[i].path) + 1;
	return bytes;
}

size_t procmaps_memory(const struct proc_maps *m)
{
	return m->n * sizeof(*m->v) + path_bytes(m);
}

int procmaps_dup(const struct proc_maps *m, struct proc_maps *out)
{
	size_t bytes = path_bytes(m);
	struct proc_map *v;
	char *arena;

	v = malloc(m->n * sizeof(*v) + bytes + 1);
	if (!v)
		return -ENOMEM;
	arena = (char *)(v + m->n);
	for (size_t i = 0; i < m->n; i++) {
		v[i] = m->v[i];
		if (m->v[i].path) {
			size_t len = strlen(m->v[i].path) + 1;

			memcpy(arena, m->v[i].path, len);
			v[i].path = arena;
			arena += len;
		}
	}
	out->v = v;
	out->n = m->n;
	out->bad_lines = m->bad_lines;
	return 0;
}

/*
 * The path of an exit's mapping, or NULL: a whole one (NUL-terminated within
 * its field, no newline: it is shown as /proc/PID/maps would) that is
 * absolute, or the vDSO's.
 */
static const char *exit_path(const struct ember_proc_map *m)
{
	size_t len = strnlen(m->path, sizeof(m->path));

	if ((m->flags & EMBER_PROC_MAP_NO_PATH) || len == sizeof(m->path) ||
	    memchr(m->path, '\n', len))
		return NULL;
	if (m->path[0] == '/' || (!m->ino && !strcmp(m->path, "[vdso]")))
		return m->path;
	return NULL;
}

int procmaps_parse_exit(const void *rec, size_t size, struct proc_maps *out)
{
	const struct ember_proc_maps_event *r = rec;
	const size_t head = offsetof(struct ember_proc_maps_event, m);
	struct proc_map v[EMBER_PROC_MAPS_MAX];
	struct proc_maps maps = {v, 0, 0};
	uint64_t end = 0;

	if (size < head || r->e.type != EMBER_PROC_MAPS || !r->n || r->n > EMBER_PROC_MAPS_MAX ||
	    size < head + r->n * sizeof(r->m[0]))
		return -EINVAL;
	for (uint32_t i = 0; i < r->n; i++) {
		const struct ember_proc_map *m = &r->m[i];

		if (m->start >= m->end || m->start < end) { /* the kernel's are sorted, apart */
			maps.bad_lines++;
			continue;
		}
		end = m->end;
		v[maps.n] = (struct proc_map){
			.start = m->start,
			.end = m->end,
			.offset = m->offset,
			.inode = m->ino,
			.dev_major = m->dev >> 20,
			.dev_minor = m->dev & 0xfffff,
			.perms = PROCMAP_R | PROCMAP_X | PROCMAP_AT_EXIT,
			.path = (char *)exit_path(m),
		};
		if (!v[maps.n].path && m->ino && !(m->flags & EMBER_PROC_MAP_NO_PATH))
			maps.bad_lines++; /* a path not as the program writes them */
		maps.n++;
	}
	return procmaps_dup(&maps, out); /* one block, as procmaps_parse makes it */
}

/* Reads all of fd into a new buffer of at most max bytes; -E2BIG beyond. */
static int read_bounded(int fd, size_t max, char **buf, size_t *len)
{
	size_t cap = 64 * 1024, n = 0;
	char *b = malloc(cap), *nb;
	ssize_t r;

	if (!b)
		return -ENOMEM;
	for (;;) {
		if (n == cap) {
			/* Room for max + 1 bytes tells "exactly max" from "too big". */
			if (cap > max) {
				free(b);
				return -E2BIG;
			}
			cap = cap * 2 > max ? max + 1 : cap * 2;
			nb = realloc(b, cap);
			if (!nb) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			r = -errno;
			free(b);
			return (int)r;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*buf = b;
	*len = n;
	return 0;
}

int procmaps_read(pid_t pid, struct proc_maps *out)
{
	char path[64], *buf = NULL;
	size_t len = 0;
	int fd, err;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = read_bounded(fd, PROCMAPS_MAX_BYTES, &buf, &len);
	close(fd);
	if (err)
		return err;
	err = procmaps_parse(buf, len, out);
	free(buf);
	return err;
}

/*
 * PROCMAP_QUERY of include/uapi/linux/fs.h (Linux 6.11), declared here for
 * older headers: the UAPI is extensible by size, this is its first version.
 */
struct ember_procmap_query {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start, vma_end;
	uint64_t vma_flags;
	uint64_t vma_page_size;
	uint64_t vma_offset;
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint32_t vma_name_size;
	uint32_t build_id_size;
	uint64_t vma_name_addr;
	uint64_t build_id_addr;
};
#define EMBER_PROCMAP_QUERY _IOWR('f', 17, struct ember_procmap_query)
#define EMBER_PROCMAP_QUERY_VMA_EXECUTABLE 0x04
#define EMBER_PROCMAP_QUERY_COVERING_OR_NEXT_VMA 0x10
/* Longest name asked for: PATH_MAX and room for " (deleted)". */
#define PROCMAP_NAME_MAX 4200

/* Mappings queried so far, their names in one arena (it moves as it grows). */
struct queried {
	struct proc_map *v;
	size_t *name_off; /* per mapping: offset of its name in arena, SIZE_MAX for none */
	size_t n, cap, off_cap;
	char *arena;
	size_t bytes, arena_cap;
};

static int add_queried(struct queried *qs, const struct ember_procmap_query *q, const char *name)
{
	size_t len = q->vma_name_size ? strnlen(name, q->vma_name_size) : 0;
	int err;

	if (qs->n >= PROCMAPS_MAX_ENTRIES || qs->bytes + len + 1 > PROCMAPS_MAX_BYTES)
		return -E2BIG;
	err = array_grow((void **)&qs->v, &qs->cap, qs->n + 1, sizeof(*qs->v), 64);
	if (!err)
		err = array_grow((void **)&qs->name_off, &qs->off_cap, qs->n + 1,
				 sizeof(*qs->name_off), 64);
	if (!err && len)
		err = array_grow((void **)&qs->arena, &qs->arena_cap, qs->bytes + len + 1, 1, 4096);
	if (err)
		return err;
	qs->v[qs->n] = (struct proc_map){
		.start = q->vma_start,
		.end = q->vma_end,
		.offset = q->vma_offset,
		.inode = q->inode,
		.dev_major = q->dev_major,
		.dev_minor = q->dev_minor,
		/* the ioctl's VMA bits are the PROCMAP_* bits */
		.perms = (uint32_t)(q->vma_flags &
				    (PROCMAP_R | PROCMAP_W | PROCMAP_X | PROCMAP_SHARED)),
	};
	qs->name_off[qs->n] = SIZE_MAX;
	if (len) {
		memcpy(qs->arena + qs->bytes, name, len);
		qs->arena[qs->bytes + len] = '\0';
		qs->name_off[qs->n] = qs->bytes;
		qs->bytes += len + 1;
	}
	qs->n++;
	return 0;
}

/* One block, entries then paths, as procmaps_parse makes it. */
static int pack_queried(const struct queried *qs, struct proc_maps *out)
{
	struct proc_map *b = malloc(qs->n * sizeof(*b) + qs->bytes + 1);
	char *paths;

	if (!b)
		return -ENOMEM;
	paths = (char *)(b + qs->n);
	if (qs->bytes)
		memcpy(paths, qs->arena, qs->bytes);
	for (size_t i = 0; i < qs->n; i++) {
		b[i] = qs->v[i];
		b[i].path = qs->name_off[i] == SIZE_MAX ? NULL : paths + qs->name_off[i];
	}
	out->v = b;
	out->n = qs->n;
	out->bad_lines = 0;
	return 0;
}

int procmaps_read_exec(pid_t pid, struct proc_maps *out)
{
	struct queried qs = {0};
	char path[64], *name;
	uint64_t addr = 0;
	int fd, err = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	name = malloc(PROCMAP_NAME_MAX);
	if (!name) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		struct ember_procmap_query q = {
			.size = sizeof(q),
			.query_flags = EMBER_PROCMAP_QUERY_COVERING_OR_NEXT_VMA |
				       EMBER_PROCMAP_QUERY_VMA_EXECUTABLE,
			.query_addr = addr,
			.vma_name_size = PROCMAP_NAME_MAX,
			.vma_name_addr = (uint64_t)(uintptr_t)name,
		};

		if (ioctl(fd, EMBER_PROCMAP_QUERY, &q)) {
			/* ENOENT: no executable mapping at or above addr */
			err = errno == ENOENT ? 0 : -errno;
			break;
		}
		if (q.vma_end <= q.vma_start || q.vma_start < addr) {
			err = -EPROTO; /* never from a sane kernel: do not loop */
			break;
		}
		err = add_queried(&qs, &q, name);
		if (err)
			break;
		addr = q.vma_end;
	}
	close(fd);
	free(name);
	if (!err)
		err = pack_queried(&qs, out);
	free(qs.v);
	free(qs.name_off);
	free(qs.arena);
	return err;
}

const struct proc_map *procmaps_find(const struct proc_maps *m, uint64_t addr)
{
	size_t lo = sorted_upper_bound(m->v, m->n, sizeof(*m->v), offsetof(struct proc_map, start),
				       addr);

	if (lo == 0 || addr >= m->v[lo - 1].end)
		return NULL;
	return &m->v[lo - 1];
}

void procmaps_free(struct proc_maps *m)
{
	if (!m)
		return;
	free(m->v);
	m->v = NULL;
	m->n = 0;
	m->bad_lines = 0;
}
