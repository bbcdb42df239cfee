// SPDX-License-Identifier: MIT
/*
 * Perf maps: an incremental parser (names kept in chunks that never move, so
 * that appending never invalidates a name handed out), and a cache that reads
 * each process's file safely through its own root and re-reads it on a miss.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "mapfile.h"
#include "perfmap.h"
#include "procids.h"
#include "util.h"

/* Names are stored in chunks this big; a line (so a name) is at most PERFMAP_MAX_LINE. */
#define PM_CHUNK (64u << 10)
/* Processes whose perf map state is kept, and intervals an unused one is kept for. */
#define PM_MAX_PROCS 4096
#define PM_IDLE_INTERVALS 6
/* A miss re-reads the file at most this often per process. */
#define PM_RETRY_MS 1000
/*
 * Shares of the cache's bound: one process's map at most a quarter, one user's maps at
 * most half, so that no writer of perf maps leaves the others' JIT code unnamed.
 */
#define PM_PROC_SHARE 4
#define PM_USER_SHARE 2
/* Bytes of a file read and parsed at a time. */
#define PM_READ_CHUNK (256u << 10)

/* Offsets of the split parts after an entry's raw name; PM_NO_SPLIT when it did not split. */
#define PM_NO_SPLIT UINT16_MAX

struct pm_sym {
	uint64_t start, end; /* [start, end) */
	const char *name;    /* in a chunk: the raw name, then the function and file when split */
	uint32_t seq;	     /* parse order: the latest entry at one start wins */
	uint32_t line;	     /* the function's first line, 0 when unknown */
	uint16_t func_off, file_off; /* from name, or PM_NO_SPLIT */
};
_Static_assert(3 * (PERFMAP_MAX_LINE + 1) + sizeof(PERFMAP_ANONYMOUS) < PM_NO_SPLIT,
	       "split offsets fit in 16 bits");

struct pm_chunk {
	struct pm_chunk *next;
	size_t used;
	char data[PM_CHUNK];
};

struct perf_map {
	struct pm_sym *v;
	size_t n, cap;
	struct pm_chunk *chunks; /* the newest first */
	size_t n_chunks;
	uint32_t seq;
	bool sorted;
	bool skip_line; /* inside an over-long line: drop up to its newline */
	uint64_t bad_lines;
	size_t limit; /* bound on perfmap_memory(); 0: none */
};

struct perf_map *perfmap_new(void)
{
	struct perf_map *m = calloc(1, sizeof(*m));

	if (m)
		m->sorted = true;
	return m;
}

void perfmap_free(struct perf_map *m)
{
	struct pm_chunk *c, *next;

	if (!m)
		return;
	for (c = m->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	free(m->v);
	free(m);
}

/* Whether the map may grow by more bytes within its limit. */
static bool within_limit(const struct perf_map *m, size_t more)
{
	return !m->limit || perfmap_memory(m) + more <= m->limit;
}

/* len bytes of chunk space that never move; NULL on ENOMEM or over the limit. len <= PM_CHUNK. */
static char *chunk_alloc(struct perf_map *m, size_t len)
{
	struct pm_chunk *c = m->chunks;
	char *p;

	if (!c || PM_CHUNK - c->used < len) {
		if (!within_limit(m, sizeof(*c)))
			return NULL;
		c = malloc(sizeof(*c));
		if (!c)
			return NULL;
		c->used = 0;
		c->next = m->chunks;
		m->chunks = c;
		m->n_chunks++;
	}
	p = c->data + c->used;
	c->used += len;
	return p;
}

/* Copies len bytes to p as a string; the byte after it. */
static char *put_str(char *p, const char *s, size_t len)
{
	memcpy(p, s, len);
	p[len] = '\0';
	return p + len + 1;
}

/* Stores the raw name and, when it splits, its function and file after it. */
static int store_name(struct perf_map *m, struct pm_sym *e, const char *name, size_t len)
{
	static const char anon[] = PERFMAP_ANONYMOUS;
	struct perfmap_split sp;
	bool split = perfmap_split_name(name, len, &sp);
	const char *func = split && sp.func_len ? name + sp.func_off : anon;
	size_t func_len = split && sp.func_len ? sp.func_len : sizeof(anon) - 1;
	char *p, *q;

	p = chunk_alloc(m, len + 1 + (split ? func_len + 1 + sp.file_len + 1 : 0));
	if (!p)
		return within_limit(m, sizeof(struct pm_chunk)) ? -ENOMEM : -ENOSPC;
	e->name = p;
	e->func_off = e->file_off = PM_NO_SPLIT;
	e->line = 0;
	q = put_str(p, name, len);
	if (!split)
		return 0;
	e->func_off = (uint16_t)(q - p);
	q = put_str(q, func, func_len);
	e->file_off = (uint16_t)(q - p);
	put_str(q, name + sp.file_off, sp.file_len);
	e->line = sp.line;
	return 0;
}

/* --- splitting runtimes' names ---------------------------------------------------------- */

/* V8's tags of JavaScript functions (JS since V8 10.x; older ones before). */
static const char *const v8_tags[] = {"JS:", "LazyCompile:", "Function:", "Script:", "Eval:"};
/*
 * V8's markers of the tier that compiled the code: Turbofan, Ignition, Sparkplug, Maglev;
 * since V8 12, "'" after one marks code specialized to one function context ("JS:*'fib").
 */
static const char v8_markers[] = "*~^+";
/* Lines beyond this are not lines (a script is not this long): the digits stay in the file. */
#define PM_MAX_LINE_DIGITS 9

static bool has_prefix(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);

	return len >= n && !memcmp(s, prefix, n);
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* A run of 1..PM_MAX_LINE_DIGITS digits preceded by ':' ending at end; its start, or NULL. */
static const char *number_before(const char *begin, const char *end, uint32_t *value)
{
	const char *p = end;
	uint32_t v = 0;

	while (p > begin && is_digit(p[-1]) && end - p < PM_MAX_LINE_DIGITS)
		p--;
	if (p == end || p == begin || p[-1] != ':')
		return NULL;
	for (const char *d = p; d < end; d++)
		v = v * 10 + (uint32_t)(*d - '0');
	*value = v;
	return p - 1;
}

/* A script name a function name does not run into: a path, a URL, node:x, <x>. */
static bool looks_like_script(const char *s, const char *end)
{
	const char *p = s;

	if (s == end || *s == '/' || *s == '\\' || *s == '.' || *s == '<')
		return true;
	/* A URL scheme or a drive letter: letters, then ':' (file:, node:, https:, C:). */
	while (p < end && ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			   (p > s && (is_digit(*p) || *p == '+' || *p == '-' || *p == '.'))))
		p++;
	return p > s && p < end && *p == ':';
}

/*
 * The space between a V8 function name and its script. Names may hold spaces
 * ("get foo", a method named 'with space') and so may scripts given to vm
 * ("my file.js"): the first space before something shaped like a script wins,
 * else the first space after a getter's or setter's prefix, else the first.
 */
static const char *v8_separator(const char *s, const char *end)
{
	const char *p, *first = memchr(s, ' ', (size_t)(end - s));

	for (p = first; p; p = memchr(p + 1, ' ', (size_t)(end - p - 1)))
		if (looks_like_script(p + 1, end))
			return p;
	if (first &&
	    (has_prefix(s, (size_t)(end - s), "get ") || has_prefix(s, (size_t)(end - s), "set ")))
		return memchr(s + 4, ' ', (size_t)(end - s - 4));
	return first;
}

/* "JS:*fib /srv/app.js:2:13" after its tag. */
static bool split_v8(const char *name, const char *s, const char *end, struct perfmap_split *out)
{
	const char *loc_end = end, *col, *line, *sep;
	uint32_t n1 = 0, n2 = 0;

	if (s < end && *s && strchr(v8_markers, *s)) {
		s++;
		if (s < end && *s == '\'')
			s++;
	}
	/* ":line:column", or ":line" alone (V8 before 2018 logged no column). */
	col = number_before(s, end, &n1);
	if (col) {
		line = number_before(s, col, &n2);
		loc_end = line ? line : col;
		out->line = line ? n2 : n1;
	}
	sep = v8_separator(s, loc_end);
	if (!sep) {
		/* No script: a native function; its name is all of it. */
		out->line = 0;
		sep = loc_end = end;
	}
	out->func_off = (size_t)(s - name);
	out->func_len = (size_t)(sep - s);
	out->file_off = sep < end ? (size_t)(sep + 1 - name) : (size_t)(end - name);
	out->file_len = sep < loc_end ? (size_t)(loc_end - (sep + 1)) : 0;
	return true;
}

/* "py::qualname:/path/file.py" after its tag: a qualname has no ':', a path may. */
static bool split_python(const char *name, const char *s, const char *end,
			 struct perfmap_split *out)
{
	const char *colon = memchr(s, ':', (size_t)(end - s));

	out->func_off = (size_t)(s - name);
	out->func_len = (size_t)((colon ? colon : end) - s);
	out->file_off = colon ? (size_t)(colon + 1 - name) : (size_t)(end - name);
	out->file_len = colon ? (size_t)(end - colon - 1) : 0;
	return true;
}

bool perfmap_split_name(const char *name, size_t len, struct perfmap_split *out)
{
	const char *end = name + len;

	*out = (struct perfmap_split){0};
	if (has_prefix(name, len, "py::"))
		return split_python(name, name + 4, end, out);
	for (size_t i = 0; i < sizeof(v8_tags) / sizeof(v8_tags[0]); i++)
		if (has_prefix(name, len, v8_tags[i]))
			return split_v8(name, name + strlen(v8_tags[i]), end, out);
	return false;
}

/* A hex number of 1 to 16 digits, with an optional 0x; advances *p past it. */
static bool parse_hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end; s++, digits++) {
		char c = *s;
		int d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			break;
		if (digits == 16)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	if (digits == 0)
		return false;
	*p = s;
	*out = v;
	return true;
}

/* Skips one or more blanks; false when there are none. */
static bool skip_blanks(const char **p, const char *end)
{
	const char *s = *p;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (s == *p)
		return false;
	*p = s;
	return true;
}

/* Names are text: control bytes (and NULs) mean the line is not a perf map line. */
static bool name_ok(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return false;
	}
	return len > 0;
}

/* One line without its newline: 1 when added, 0 when malformed, -ENOMEM, -ENOSPC at the limit. */
static int parse_line(struct perf_map *m, const char *s, size_t len)
{
	const char *p = s, *end = s + len;
	uint64_t start, size;
	struct pm_sym *e;
	int ret;

	while (end > p && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (len > PERFMAP_MAX_LINE || !parse_hex(&p, end, &start) || !skip_blanks(&p, end) ||
	    !parse_hex(&p, end, &size) || !skip_blanks(&p, end) || !name_ok(p, (size_t)(end - p)) ||
	    size == 0 || start + size < start)
		return 0;
	if (m->n >= PERFMAP_MAX_ENTRIES)
		return 0;
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 256;
		struct pm_sym *v;

		if (!within_limit(m, (cap - m->cap) * sizeof(*v)))
			return -ENOSPC;
		v = reallocarray(m->v, cap, sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->v = v;
		m->cap = cap;
	}
	e = &m->v[m->n];
	*e = (struct pm_sym){.start = start, .end = start + size, .seq = m->seq};
	ret = store_name(m, e, p, (size_t)(end - p));
	if (ret)
		return ret;
	m->n++;
	m->seq++;
	m->sorted = false;
	return 1;
}

int perfmap_parse(struct perf_map *m, const char *text, size_t len, size_t *used)
{
	size_t pos = 0;
	int ret;

	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t line_len;

		if (!nl) {
			/* An unfinished line: wait for its end unless it is already too long. */
			if (len - pos > PERFMAP_MAX_LINE && !m->skip_line) {
				m->bad_lines++;
				m->skip_line = true;
			}
			if (m->skip_line)
				pos = len;
			break;
		}
		line_len = (size_t)(nl - (text + pos));
		if (m->skip_line) {
			m->skip_line = false;
		} else {
			ret = parse_line(m, text + pos, line_len);
			if (ret < 0) {
				*used = pos;
				return ret;
			}
			if (ret == 0)
				m->bad_lines++;
		}
		pos += line_len + 1;
	}
	*used = pos;
	return 0;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct pm_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorts by start and keeps, at each start, the entry parsed last (code reused by the JIT). */
static void sort_syms(struct perf_map *m)
{
	size_t i, w = 0;

	qsort(m->v, m->n, sizeof(*m->v), cmp_sym);
	for (i = 0; i < m->n; i++) {
		if (w > 0 && m->v[w - 1].start == m->v[i].start)
			w--;
		m->v[w++] = m->v[i];
	}
	m->n = w;
	m->sorted = true;
}

bool perfmap_lookup(struct perf_map *m, uint64_t addr, struct perfmap_name *out)
{
	const struct pm_sym *e;
	size_t lo;

	if (!m->sorted)
		sort_syms(m);
	lo = sorted_upper_bound(m->v, m->n, sizeof(*m->v), offsetof(struct pm_sym, start), addr);
	if (lo == 0 || addr >= m->v[lo - 1].end)
		return false;
	e = &m->v[lo - 1];
	*out = (struct perfmap_name){.raw = e->name, .function = e->name, .file = ""};
	if (e->func_off != PM_NO_SPLIT) {
		out->function = e->name + e->func_off;
		out->file = e->name + e->file_off;
		out->line = e->line;
	}
	return true;
}

size_t perfmap_count(struct perf_map *m)
{
	if (!m->sorted)
		sort_syms(m);
	return m->n;
}

uint64_t perfmap_bad_lines(const struct perf_map *m)
{
	return m->bad_lines;
}

void perfmap_set_limit(struct perf_map *m, size_t bytes)
{
	m->limit = bytes;
}

size_t perfmap_memory(const struct perf_map *m)
{
	return sizeof(*m) + m->cap * sizeof(*m->v) + m->n_chunks * sizeof(struct pm_chunk);
}

/* --- the cache of live processes' perf maps ------------------------------------- */

/* Why a file was refused; a file is counted once per reason, not once per retry. */
enum pm_refusal { PM_OK = 0, PM_SYMLINK, PM_OWNER, PM_SIZE, PM_TYPE };

/* One process: its parsed map and where reading its file stopped. */
struct pm_proc {
	pid_t pid;
	struct perf_map *map;	  /* NULL until a file was read */
	struct perf_map *retired; /* replaced this interval: its names may still be held */
	uint64_t dev, ino, off;	  /* the file read, and the bytes of it parsed */
	int64_t next_try_ms;	  /* a miss before this does not re-read */
	uint64_t used;		  /* interval of the last lookup */
	enum pm_refusal refused;  /* the refusal last counted */
	uid_t uid;		  /* the process's real user, whose share it counts in */
	bool gone;		  /* the process exited: dropped at the next interval */
};

struct perfmap_cache {
	struct pm_proc **v; /* sorted by pid */
	size_t n;
	size_t bytes, max_bytes;
	uint64_t interval;
	struct pm_proc *last; /* consecutive frames come from one process */
	struct perfmap_stats st;
};

struct perfmap_cache *perfmap_cache_new(size_t max_bytes)
{
	struct perfmap_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->v = calloc(PM_MAX_PROCS, sizeof(*c->v));
	if (!c->v) {
		free(c);
		return NULL;
	}
	c->max_bytes = max_bytes;
	return c;
}

static void proc_free(struct perfmap_cache *c, struct pm_proc *p)
{
	if (p->map)
		c->bytes -= perfmap_memory(p->map);
	if (p->retired)
		c->bytes -= perfmap_memory(p->retired);
	perfmap_free(p->map);
	perfmap_free(p->retired);
	free(p);
}

void perfmap_cache_free(struct perfmap_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		proc_free(c, c->v[i]);
	free(c->v);
	free(c);
}

/* A new interval: names handed out before are released; idle processes are forgotten. */
static void new_interval(struct perfmap_cache *c, uint64_t interval)
{
	size_t i, w = 0;

	c->interval = interval;
	c->last = NULL;
	for (i = 0; i < c->n; i++) {
		struct pm_proc *p = c->v[i];

		if (p->retired) {
			c->bytes -= perfmap_memory(p->retired);
			perfmap_free(p->retired);
			p->retired = NULL;
		}
		if (p->gone || p->used + PM_IDLE_INTERVALS < interval)
			proc_free(c, p);
		else
			c->v[w++] = p;
	}
	c->n = w;
}

/* The index of pid in c->v, or where it would go. */
static size_t proc_index(const struct perfmap_cache *c, pid_t pid)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->v[mid]->pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void perfmap_cache_forget(struct perfmap_cache *c, pid_t pid)
{
	size_t i = proc_index(c, pid);

	if (i < c->n && c->v[i]->pid == pid)
		c->v[i]->gone = true;
}

/* Makes room for one more process by forgetting the least recently used idle one. */
static bool proc_make_room(struct perfmap_cache *c)
{
	size_t i, victim = c->n;

	if (c->n < PM_MAX_PROCS)
		return true;
	for (i = 0; i < c->n; i++)
		if (c->v[i]->used != c->interval &&
		    (victim == c->n || c->v[i]->used < c->v[victim]->used))
			victim = i;
	if (victim == c->n)
		return false;
	proc_free(c, c->v[victim]);
	memmove(&c->v[victim], &c->v[victim + 1], (c->n - victim - 1) * sizeof(*c->v));
	c->n--;
	return true;
}

static struct pm_proc *proc_get(struct perfmap_cache *c, pid_t pid)
{
	struct pm_proc *p;
	size_t i;

	if (c->last && c->last->pid == pid)
		return c->last;
	i = proc_index(c, pid);
	if (i < c->n && c->v[i]->pid == pid)
		return c->last = c->v[i];
	if (!proc_make_room(c))
		return NULL;
	i = proc_index(c, pid);
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	memmove(&c->v[i + 1], &c->v[i], (c->n - i) * sizeof(*c->v));
	c->v[i] = p;
	c->n++;
	return c->last = p;
}

/*
 * Opens path under root without following any symlink, and with the process's
 * root as "/" (openat2); a regular file only, checked before it is opened for
 * reading (a device's open() never runs). Without openat2 (ENOSYS, or EPERM
 * from a seccomp filter) nothing is opened: openat's O_NOFOLLOW checks the
 * last component only, and /tmp itself may be a link in a container's root.
 */
static int open_in_root(int root, const char *path, struct stat *st)
{
	return mapfile_open_regular_at(
		root, path, RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, st);
}

static void refuse(struct perfmap_cache *c, struct pm_proc *p, enum pm_refusal why)
{
	if (p->refused == why)
		return;
	p->refused = why;
	switch (why) {
	case PM_SYMLINK:
		c->st.refused_symlink++;
		break;
	case PM_OWNER:
		c->st.refused_owner++;
		break;
	case PM_SIZE:
		c->st.refused_size++;
		break;
	case PM_TYPE:
		c->st.refused_type++;
		break;
	case PM_OK:
		break;
	}
}

/* The process's perf map, checked: 0 with *fd open, a refusal, or -errno. */
static int open_checked(struct perfmap_cache *c, struct pm_proc *p, int *fd, struct stat *st)
{
	struct proc_ids ids;
	char path[64];
	int root, err;

	err = procids_read(p->pid, &ids);
	if (err)
		return err;
	p->uid = ids.ruid;
	snprintf(path, sizeof(path), "/proc/%d/root", (int)p->pid);
	root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -errno;
	snprintf(path, sizeof(path), "tmp/perf-%ld.map", ids.nspid);
	*fd = open_in_root(root, path, st);
	close(root);
	if (*fd == -ELOOP || *fd == -EXDEV) {
		refuse(c, p, PM_SYMLINK);
		return -ELOOP;
	}
	if (*fd == -EINVAL)
		refuse(c, p, PM_TYPE);
	if (*fd < 0)
		return *fd;
	err = 0;
	if (st->st_uid != ids.ruid && st->st_uid != ids.euid) {
		refuse(c, p, PM_OWNER);
		err = -EPERM;
	} else if ((uint64_t)st->st_size > PERFMAP_MAX_FILE) {
		refuse(c, p, PM_SIZE);
		err = -EFBIG;
	}
	if (err)
		close(*fd);
	return err;
}

/* Reads [off, off + len) of fd; the bytes read, short when the file shrank. */
static size_t read_at(int fd, char *buf, size_t len, uint64_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t r = pread(fd, buf + got, len - got, (off_t)(off + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	return got;
}

/* Starts over on a new map when the file was replaced or shrank. */
static int restart_map(struct perfmap_cache *c, struct pm_proc *p, const struct stat *st)
{
	struct perf_map *m = perfmap_new();

	if (!m)
		return -ENOMEM;
	if (p->map) {
		/* Names of the old map may be held until the interval ends. */
		if (p->retired) {
			c->bytes -= perfmap_memory(p->retired);
			perfmap_free(p->retired);
		}
		p->retired = p->map;
	}
	p->map = m;
	c->bytes += perfmap_memory(m);
	p->dev = st->st_dev;
	p->ino = st->st_ino;
	p->off = 0;
	return 0;
}

/* Bytes held by the maps of user uid's processes other than skip. */
static size_t user_bytes(const struct perfmap_cache *c, uid_t uid, const struct pm_proc *skip)
{
	size_t n = 0;

	for (size_t i = 0; i < c->n; i++) {
		const struct pm_proc *q = c->v[i];

		if (q != skip && q->uid == uid)
			n += (q->map ? perfmap_memory(q->map) : 0) +
			     (q->retired ? perfmap_memory(q->retired) : 0);
	}
	return n;
}

static size_t proc_drop_maps(struct perfmap_cache *c, struct pm_proc *p);

/*
 * Frees other processes' maps not used this interval, least recently used
 * first, until need more bytes fit under the bound. Whether they fit.
 */
static bool make_room(struct perfmap_cache *c, const struct pm_proc *keep, size_t need)
{
	while (c->bytes + need > c->max_bytes) {
		struct pm_proc *victim = NULL;

		for (size_t i = 0; i < c->n; i++) {
			struct pm_proc *q = c->v[i];

			if (q != keep && (q->map || q->retired) && q->used != c->interval &&
			    (!victim || q->used < victim->used))
				victim = q;
		}
		if (!victim)
			return false;
		proc_drop_maps(c, victim);
	}
	return true;
}

/*
 * The most p's map may hold: its process's share, within what its user's other
 * maps leave of the user's share, and what the cache can make room for.
 */
static size_t map_limit(struct perfmap_cache *c, const struct pm_proc *p)
{
	size_t proc = c->max_bytes / PM_PROC_SHARE, user = c->max_bytes / PM_USER_SHARE;
	size_t others = user_bytes(c, p->uid, p), held = perfmap_memory(p->map), lim;

	lim = others < user ? user - others : 0;
	if (lim > proc)
		lim = proc;
	if (lim <= held)
		return held;
	/* what the cache has beside this map, once idle maps of others are dropped */
	make_room(c, p, lim - held);
	if (c->bytes + (lim - held) > c->max_bytes) {
		c->st.cache_full++;
		lim = c->max_bytes > c->bytes ? held + (c->max_bytes - c->bytes) : held;
	}
	return lim;
}

/*
 * Parses [p->off, p->off + len) of fd, PM_READ_CHUNK at a time: what the file
 * claims is no allocation. A map that reaches its limit is cut there, the rest
 * of the file passed over and counted.
 */
static void parse_file(struct perfmap_cache *c, struct pm_proc *p, int fd, uint64_t len)
{
	uint64_t end = p->off + len, bad_before = perfmap_bad_lines(p->map);
	size_t got, used, before = perfmap_memory(p->map);
	char *buf = malloc(PM_READ_CHUNK);
	int rc = 0;

	if (!buf)
		return;
	perfmap_set_limit(p->map, map_limit(c, p));
	while (p->off < end && !rc) {
		size_t want = end - p->off < PM_READ_CHUNK ? end - p->off : PM_READ_CHUNK;

		got = read_at(fd, buf, want, p->off);
		if (!got)
			break;
		rc = perfmap_parse(p->map, buf, got, &used);
		c->st.bytes_read += got;
		/* an unfinished last line waits for its end (a chunk holds a whole line) */
		p->off += used;
		if (got < want || !used)
			break;
	}
	if (rc == -ENOSPC) {
		c->st.over_share++;
		p->off = end;
	}
	free(buf);
	c->bytes += perfmap_memory(p->map) - before;
	c->st.reads++;
	c->st.bad_lines += perfmap_bad_lines(p->map) - bad_before;
}

/* Parses what was appended to the process's perf map since the last read. */
static void refresh(struct perfmap_cache *c, struct pm_proc *p)
{
	struct stat st;
	int fd = -1;

	if (open_checked(c, p, &fd, &st))
		return;
	p->refused = PM_OK;
	if (!p->map || p->dev != (uint64_t)st.st_dev || p->ino != (uint64_t)st.st_ino ||
	    (uint64_t)st.st_size < p->off) {
		if (restart_map(c, p, &st))
			goto out;
	}
	if ((uint64_t)st.st_size > p->off)
		parse_file(c, p, fd, (uint64_t)st.st_size - p->off);
out:
	close(fd);
}

bool perfmap_cache_lookup(struct perfmap_cache *c, pid_t pid, uint64_t addr, uint64_t interval,
			  struct perfmap_name *out)
{
	bool found = false;
	struct pm_proc *p;
	int64_t now;

	if (interval != c->interval)
		new_interval(c, interval);
	p = proc_get(c, pid);
	if (!p)
		return false;
	p->used = interval;
	if (p->map)
		found = perfmap_lookup(p->map, addr, out);
	if (!found) {
		now = mono_ns() / NS_PER_MS;
		if (now < p->next_try_ms)
			return false;
		p->next_try_ms = now + PM_RETRY_MS;
		refresh(c, p);
		if (p->map)
			found = perfmap_lookup(p->map, addr, out);
	}
	if (found)
		c->st.named++;
	return found;
}

void perfmap_cache_set_max(struct perfmap_cache *c, size_t max_bytes)
{
	c->max_bytes = max_bytes;
}

/* Frees p's parsed maps; its next miss reads the file again from the start. */
static size_t proc_drop_maps(struct perfmap_cache *c, struct pm_proc *p)
{
	size_t freed = 0;

	if (p->map)
		freed += perfmap_memory(p->map);
	if (p->retired)
		freed += perfmap_memory(p->retired);
	perfmap_free(p->map);
	perfmap_free(p->retired);
	p->map = p->retired = NULL;
	p->off = p->dev = p->ino = 0;
	p->next_try_ms = 0;
	c->bytes -= freed;
	return freed;
}

size_t perfmap_cache_shrink(struct perfmap_cache *c, size_t target)
{
	size_t freed = 0;

	c->last = NULL;
	while (c->bytes > target) {
		struct pm_proc *victim = NULL;

		for (size_t i = 0; i < c->n; i++) {
			struct pm_proc *p = c->v[i];

			if ((p->map || p->retired) && (!victim || p->used < victim->used))
				victim = p;
		}
		if (!victim)
			break;
		freed += proc_drop_maps(c, victim);
	}
	return freed;
}

void perfmap_cache_stats(const struct perfmap_cache *c, struct perfmap_stats *st)
{
	*st = c->st;
	st->maps = c->n;
	st->memory = c->bytes;
	st->max_bytes = c->max_bytes;
}
