// SPDX-License-Identifier: MIT
/*
 * Names frames. Kernel addresses through kallsyms; user addresses through the
 * process's mappings (read once per interval) and the mapped ELF file, whose
 * symbols are cached by file identity across processes and intervals.
 */
#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <inttypes.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debugfile.h"
#include "demangle.h"
#include "elfsym.h"
#include "ksyms.h"
#include "log.h"
#include "mapfile.h"
#include "procmaps.h"
#include "symbolizer.h"
#include "util.h"
#include "worker.h"

/* Binaries whose symbols are kept, and the bytes they may hold together by default. */
#define SYM_MAX_FILES 4096
#define SYM_MAX_CACHE_BYTES (1ull << 30)
/* Processes whose mappings are held during one interval. */
#define SYM_MAX_PIDS 16384
/*
 * Kernel names cached from the namer's answers (kernel text is a few hundred
 * thousand addresses at most; a real host's stacks touch a few thousand). Past
 * either bound the cache starts over.
 */
#define SYM_MAX_KNAMES 65536
#define SYM_MAX_KNAME_BYTES (8u << 20)
/* KSYM_NAME_LEN of the kernel, and room for " [module]" after it. */
#define SYM_KNAME_MAX 640
/* Bytes of parsed perf maps, and of demangled names, kept together. */
#define SYM_MAX_PERFMAP_BYTES (256u << 20)
#define SYM_MAX_DEMANGLE_BYTES (16u << 20)
/*
 * No user address is this high on any 64-bit Linux (x86-64 with 5-level
 * paging ends user space at 2^56, kernel space starts at 0xff00...): such an
 * address in a user stack is a kernel one and is named as such.
 */
#define SYM_USER_LIMIT (1ull << 56)

static const char kernel_file[] = "[kernel.kallsyms]";

/* One binary, parsed once. syms NULL is a negative entry: it did not parse. */
struct file_entry {
	struct file_key key;
	struct elf_syms *syms;
	struct elf_syms *dbg;		/* the .symtab of its separate debug file, if found */
	enum debugfile_via dbg_via;
	bool loading;			/* queued or being parsed by the loader (under the loader's lock) */
	bool settled;			/* its size and debug file were accounted for */
	int load_fd;			/* for the loader: the file, opened while reachable */
	pid_t load_pid;			/* for the loader: whose root holds its debug file */
	char *load_path;
	struct file_entry *next_job;	/* the loader's queue */
	size_t bytes;
	uint64_t used;			/* interval in which it was last used */
	struct file_entry *prev, *next;	/* LRU list, most recently used first */
};

/*
 * One process's mappings and the file each resolved to. Kept across intervals:
 * re-read once per interval while the process lives, kept as last seen once it
 * exited, until the drain that follows its exit has used them.
 */
struct pid_entry {
	pid_t pid;
	int err;			/* reading the maps failed: do not retry */
	struct proc_maps maps;
	struct file_entry **files;	/* per mapping: NULL untried, no_file, or cached */
	uint64_t read_interval;		/* interval in which maps were read */
	uint64_t used_interval;		/* last interval a frame or capture used it */
	bool exited;			/* its exit was noted: never re-read, drop after the drain */
};

/* One cached answer of the kernel namer; addr 0 is a free slot. */
struct kname {
	uint64_t addr;
	uint32_t name;			/* offset in the arena, KNAME_UNKNOWN when unnamed */
};
#define KNAME_UNKNOWN UINT32_MAX

/* The kernel namer's answers by address: open addressing, at most half full. */
struct kname_cache {
	struct kname *v;
	size_t n, cap;
	char *arena;
	size_t arena_len, arena_cap;
};

struct symbolizer {
	struct ksyms *ksyms;
	bool ksyms_tried;		/* /proc/kallsyms was read (or failed): never again */
	symbolizer_kernel_namer namer;	/* names kernel addresses instead of ksyms, or NULL */
	void *namer_arg;
	struct kname_cache knames;
	void *files;			/* tsearch tree of struct file_entry, by key */
	struct file_entry *lru_head, *lru_tail;
	size_t n_files, file_bytes;
	size_t file_cap;		/* bytes the file cache may hold (symbolizer_set_caps) */
	void *pids;			/* tsearch tree of struct pid_entry, by pid */
	size_t n_pids;
	struct pid_entry *last_pid;	/* consecutive frames come from one stack */
	uint64_t interval;
	struct symbolizer_stats st;
	struct perfmap_cache *perfmaps;	/* JIT code of each process */
	struct demangle_cache *demangle;
	uint64_t demangle_interval;	/* interval in which the demangle cache was last trimmed */
	struct elf_syms *vdso;		/* our own vDSO image: every process maps the same */
	uint64_t vdso_size;
	/*
	 * The loader thread parses new binaries (and finds their debug files) so
	 * that a cold 200 MB binary never blocks the event loop; the drain waits
	 * only for a binary it needs that is still being parsed.
	 */
	struct worker loader;		/* its lock guards the queue and every entry's loading */
	bool loader_running;
	struct file_entry *jobs, *jobs_tail;
};

/* Marks a mapping whose file could not be opened or cached this interval. */
static struct file_entry no_file;

static int cmp_file(const void *a, const void *b)
{
	const struct file_key *x = &((const struct file_entry *)a)->key;
	const struct file_key *y = &((const struct file_entry *)b)->key;

	return file_key_cmp(x, y);
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = ((const struct pid_entry *)a)->pid, y = ((const struct pid_entry *)b)->pid;

	return x < y ? -1 : x > y;
}

static void lru_unlink(struct symbolizer *s, struct file_entry *f)
{
	if (f->prev)
		f->prev->next = f->next;
	else
		s->lru_head = f->next;
	if (f->next)
		f->next->prev = f->prev;
	else
		s->lru_tail = f->prev;
	f->prev = f->next = NULL;
}

static void lru_push(struct symbolizer *s, struct file_entry *f)
{
	f->prev = NULL;
	f->next = s->lru_head;
	if (s->lru_head)
		s->lru_head->prev = f;
	s->lru_head = f;
	if (!s->lru_tail)
		s->lru_tail = f;
}

static void file_touch(struct symbolizer *s, struct file_entry *f)
{
	f->used = s->interval;
	lru_unlink(s, f);
	lru_push(s, f);
}

static void file_entry_free(void *p)
{
	struct file_entry *f = p;

	elf_syms_free(f->syms);
	elf_syms_free(f->dbg);
	if (f->load_fd >= 0)
		close(f->load_fd);
	free(f->load_path);
	free(f);
}

static void file_evict(struct symbolizer *s, struct file_entry *f)
{
	lru_unlink(s, f);
	tdelete(f, &s->files, cmp_file);
	s->n_files--;
	s->file_bytes -= f->bytes;
	file_entry_free(f);
}

/*
 * Makes room for one more file. Only files unused this interval may go: the
 * strings of the others may still be held by the caller, and files of kept
 * processes are pinned for the next interval (used = interval + 1).
 */
static bool file_make_room(struct symbolizer *s)
{
	while (s->n_files >= SYM_MAX_FILES || s->file_bytes > s->file_cap) {
		/* the loader may be working on it: loading entries are never at risk */
		if (!s->lru_tail || s->lru_tail->used >= s->interval || !s->lru_tail->settled)
			return false;
		file_evict(s, s->lru_tail);
	}
	return true;
}

/* The loader: parses queued files, then looks for their debug files. */
static void loader_main(struct worker *w, void *arg)
{
	struct symbolizer *s = arg;

	worker_lock(w);
	for (;;) {
		struct file_entry *f = s->jobs;

		if (!f && worker_stopping(w))
			break;
		if (!f) {
			worker_wait(w, -1);
			continue;
		}
		s->jobs = f->next_job;
		if (!s->jobs)
			s->jobs_tail = NULL;
		worker_unlock(w);
		/* only this thread touches the entry's symbols while it is loading */
		f->syms = elf_syms_load_fd(f->load_fd);
		close(f->load_fd);
		f->load_fd = -1;
		if (f->syms && elf_syms_source(f->syms) != ELF_SYMS_SYMTAB && f->load_path)
			f->dbg = debugfile_load(f->load_pid, f->load_path, f->syms, &f->dbg_via);
		worker_lock(w);
		f->loading = false;
		worker_done(w);
	}
	worker_unlock(w);
}

/* Parses f now, in this thread: when the loader could not be started. */
static void load_inline(struct file_entry *f)
{
	f->syms = elf_syms_load_fd(f->load_fd);
	close(f->load_fd);
	f->load_fd = -1;
	if (f->syms && elf_syms_source(f->syms) != ELF_SYMS_SYMTAB && f->load_path)
		f->dbg = debugfile_load(f->load_pid, f->load_path, f->syms, &f->dbg_via);
	f->loading = false;
}

/*
 * Waits until f is parsed, then accounts for it once. Its symbols are only
 * read after this (the lock orders them after the loader's writes).
 */
static void file_wait(struct symbolizer *s, struct file_entry *f)
{
	if (f->settled)
		return;
	worker_lock(&s->loader);
	while (f->loading)
		worker_wait_done(&s->loader);
	worker_unlock(&s->loader);
	f->settled = true;
	f->bytes = sizeof(*f) + (f->syms ? elf_syms_memory(f->syms) : 0) +
		   (f->dbg ? elf_syms_memory(f->dbg) : 0);
	s->file_bytes += f->bytes;
	if (f->dbg && f->dbg_via == DEBUGFILE_BUILD_ID)
		s->st.debug_build_id++;
	else if (f->dbg)
		s->st.debug_link++;
}

/*
 * A new cache entry for fd (a binary not seen before), parsed by the loader;
 * its debug file is looked for there too, while the process's root can still
 * be reached.
 */
static struct file_entry *file_insert(struct symbolizer *s, int fd, const struct file_key *key,
				      pid_t pid, const char *path)
{
	struct file_entry *f, **slot;

	if (!file_make_room(s)) {
		s->st.file_cache_full++;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->key = *key;
	f->load_pid = pid;
	f->load_path = path ? strdup(path) : NULL;
	f->load_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (f->load_fd < 0) {
		free(f->load_path);
		free(f);
		return NULL;
	}
	f->loading = true;
	slot = tsearch(f, &s->files, cmp_file);
	if (!slot) {
		file_entry_free(f);
		return NULL;
	}
	if (s->loader_running) {
		worker_lock(&s->loader);
		if (s->jobs_tail)
			s->jobs_tail->next_job = f;
		else
			s->jobs = f;
		s->jobs_tail = f;
		worker_wake_locked(&s->loader);
		worker_unlock(&s->loader);
	} else {
		load_inline(f);
	}
	s->n_files++;
	lru_push(s, f);
	f->used = s->interval;
	return f;
}

/*
 * The symbols naming f: its own .symtab, else the .symtab of its separate
 * debug file (looked for once per binary, by the loader), else its .dynsym.
 */
static const struct elf_syms *file_symbols(const struct file_entry *f)
{
	return f->dbg ? f->dbg : f->syms;
}

/*
 * A file already cached, found by one stat() of the mapping (through
 * map_files, which only root may follow): nothing is opened, so capturing a
 * process whose libraries are all known costs one system call per library
 * instead of four. NULL when it must be opened (not cached, or not root).
 */
static struct file_entry *cached_mapping(struct symbolizer *s, pid_t pid,
					 const struct proc_map *m)
{
	struct file_entry probe, **found;

	if (mapfile_key(pid, m, &probe.key))
		return NULL;
	found = tfind(&probe, &s->files, cmp_file);
	if (!found)
		return NULL;
	file_touch(s, *found);
	return *found;
}

/* The cached file of mapping m, opening and parsing it on first use. */
static struct file_entry *file_for_mapping(struct symbolizer *s, pid_t pid,
					   const struct proc_map *m)
{
	struct file_entry probe, **found, *f;
	struct stat st;
	int fd;

	f = cached_mapping(s, pid, m);
	if (f)
		return f;
	fd = mapfile_open(pid, m, &st);
	if (fd < 0)
		return NULL;
	probe.key = file_key_of(&st);
	found = tfind(&probe, &s->files, cmp_file);
	if (found) {
		f = *found;
		file_touch(s, f);
	} else {
		f = file_insert(s, fd, &probe.key, pid, m->path);
	}
	close(fd);
	return f;
}

/* Resolves mapping i of pe once, and every other mapping of the same file with it. */
static struct file_entry *mapping_file(struct symbolizer *s, struct pid_entry *pe, size_t i)
{
	const struct proc_map *m = &pe->maps.v[i];
	struct file_entry *f;
	size_t j;

	if (pe->files[i]) {
		if (pe->files[i] != &no_file)
			file_touch(s, pe->files[i]);
		return pe->files[i];
	}
	f = file_for_mapping(s, pe->pid, m);
	if (!f)
		f = &no_file;
	for (j = 0; j < pe->maps.n; j++) {
		const struct proc_map *o = &pe->maps.v[j];

		if (!pe->files[j] && o->inode == m->inode && o->dev_major == m->dev_major &&
		    o->dev_minor == m->dev_minor && o->path && !strcmp(o->path, m->path))
			pe->files[j] = f;
	}
	return f;
}

static void pid_entry_free(void *p)
{
	struct pid_entry *pe = p;

	procmaps_free(&pe->maps);
	free(pe->files);
	free(pe);
}

/* (Re-)reads pe's mappings; on failure the previous snapshot, if any, stays. */
static bool same_mapping(const struct proc_map *a, const struct proc_map *b)
{
	return a->start == b->start && a->end == b->end && a->offset == b->offset &&
	       a->inode == b->inode && a->dev_major == b->dev_major &&
	       a->dev_minor == b->dev_minor && !a->path == !b->path &&
	       (!a->path || !strcmp(a->path, b->path));
}

/*
 * Keeps the files already resolved for mappings that did not change, so that
 * reading a process's maps again opens only what is new (both lists are
 * sorted by start).
 */
static void carry_files(const struct pid_entry *pe, const struct proc_maps *maps,
			struct file_entry **files)
{
	size_t i = 0, j = 0;

	while (i < pe->maps.n && j < maps->n) {
		const struct proc_map *o = &pe->maps.v[i], *m = &maps->v[j];

		if (o->start < m->start) {
			i++;
		} else if (m->start < o->start) {
			j++;
		} else {
			/* a failure (no_file) is retried: it may have been passing */
			if (same_mapping(o, m) && pe->files[i] != &no_file)
				files[j] = pe->files[i];
			i++;
			j++;
		}
	}
}

/*
 * Frames lie only in executable mappings: ask the kernel for those alone
 * (PROCMAP_QUERY, ~3x cheaper than formatting and parsing every line of
 * /proc/PID/maps), or read the whole text on kernels before 6.11.
 */
static int read_maps(pid_t pid, struct proc_maps *maps)
{
	static bool no_query;
	int err;

	if (!no_query) {
		err = procmaps_read_exec(pid, maps);
		if (err != -ENOTTY && err != -EINVAL)
			return err;
		no_query = true;
	}
	return procmaps_read(pid, maps);
}

static int pid_read(struct symbolizer *s, struct pid_entry *pe)
{
	struct proc_maps maps = {};
	struct file_entry **files;
	int err = read_maps(pe->pid, &maps);

	/* an exiting process (or a zombie) has no mm left: its maps read empty */
	if (!err && maps.n == 0) {
		procmaps_free(&maps);
		err = -ESRCH;
	}
	if (err) {
		s->st.maps_failed++;
		if (!pe->maps.v)
			pe->err = err;
		return err;
	}
	files = calloc(maps.n ? maps.n : 1, sizeof(*files));
	if (!files) {
		procmaps_free(&maps);
		return -ENOMEM;
	}
	if (pe->files)
		carry_files(pe, &maps, files);
	procmaps_free(&pe->maps);
	free(pe->files);
	pe->maps = maps;
	pe->files = files;
	pe->err = 0;
	pe->read_interval = s->interval;
	s->st.maps_read++;
	return 0;
}

static struct pid_entry *pid_find(struct symbolizer *s, pid_t pid)
{
	struct pid_entry probe = { .pid = pid }, **slot;

	if (s->last_pid && s->last_pid->pid == pid)
		return s->last_pid;
	slot = tfind(&probe, &s->pids, cmp_pid);
	return slot ? (s->last_pid = *slot) : NULL;
}

static struct pid_entry *pid_new(struct symbolizer *s, pid_t pid)
{
	struct pid_entry *pe;

	if (s->n_pids >= SYM_MAX_PIDS)
		return NULL;
	pe = calloc(1, sizeof(*pe));
	if (!pe)
		return NULL;
	pe->pid = pid;
	pid_read(s, pe);
	if (!tsearch(pe, &s->pids, cmp_pid)) {
		pid_entry_free(pe);
		return NULL;
	}
	s->n_pids++;
	return s->last_pid = pe;
}

/* The process's mappings: read on first use (or capture). NULL when unknown. */
static struct pid_entry *pid_maps(struct symbolizer *s, pid_t pid)
{
	struct pid_entry *pe = pid_find(s, pid);

	if (!pe)
		pe = pid_new(s, pid);
	if (pe)
		pe->used_interval = s->interval;
	return pe;
}

/*
 * The mapping of addr. Mappings are re-read only when an address falls outside
 * them (a library loaded since), at most once per interval per process: a
 * long-running process costs no /proc read per interval.
 */
static const struct proc_map *pid_find_map(struct symbolizer *s, struct pid_entry *pe,
					   uint64_t addr)
{
	const struct proc_map *m = procmaps_find(&pe->maps, addr);

	if (m || pe->exited || pe->read_interval == s->interval)
		return m;
	if (pid_read(s, pe) < 0)
		pe->exited = true; /* gone without an exit event: keep what we had */
	return procmaps_find(&pe->maps, addr);
}

/* Opens every executable file mapping now, while the process can be reached. */
static void pid_resolve_files(struct symbolizer *s, struct pid_entry *pe)
{
	for (size_t i = 0; i < pe->maps.n; i++) {
		const struct proc_map *m = &pe->maps.v[i];

		if ((m->perms & PROCMAP_X) && m->path && m->path[0] == '/' && m->inode)
			mapping_file(s, pe, i);
	}
}

int symbolizer_capture(struct symbolizer *s, pid_t pid)
{
	struct pid_entry *pe = pid_find(s, pid);
	int err;

	if (!pe) {
		pe = pid_new(s, pid);
		if (!pe)
			return -ENOMEM;
		err = pe->err;
	} else {
		err = pid_read(s, pe);
		if (!err)
			pe->exited = false; /* a new process under a reused pid, or an exec */
	}
	if (err)
		return err;
	pe->used_interval = s->interval;
	pid_resolve_files(s, pe);
	s->st.captured++;
	return 0;
}

void symbolizer_exited(struct symbolizer *s, pid_t pid)
{
	struct pid_entry *pe = pid_find(s, pid);

	if (pe)
		pe->exited = true;
}

/* Whether pe is dropped at the end of this interval. */
static bool pid_expired(const struct symbolizer *s, const struct pid_entry *pe)
{
	/* exited: this interval's drain has used it; idle for 2 intervals: re-read if seen */
	return pe->exited || pe->err || pe->used_interval + 2 <= s->interval;
}

/* twalk cannot delete: gather the entries first. */
struct pid_walk {
	struct pid_entry **v;
	size_t n;
};

static void pid_gather(const void *node, VISIT which, void *arg)
{
	struct pid_walk *w = arg;

	if (which == postorder || which == leaf)
		w->v[w->n++] = *(struct pid_entry *const *)node;
}

static void pid_expire(struct symbolizer *s)
{
	struct pid_entry **all = calloc(s->n_pids ? s->n_pids : 1, sizeof(*all));
	struct pid_walk w = { .v = all };

	if (!all) {
		tdestroy(s->pids, pid_entry_free);
		s->pids = NULL;
		s->n_pids = 0;
		return;
	}
	twalk_r(s->pids, pid_gather, &w);
	for (size_t i = 0; i < w.n; i++) {
		struct pid_entry *pe = all[i];

		if (!pid_expired(s, pe)) {
			/* pin its files: kept entries may still name frames next interval */
			for (size_t j = 0; j < pe->maps.n; j++) {
				if (!pe->files[j] || pe->files[j] == &no_file)
					continue;
				file_touch(s, pe->files[j]);
				pe->files[j]->used = s->interval + 1;
			}
			continue;
		}
		if (pe->exited)
			perfmap_cache_forget(s->perfmaps, pe->pid);
		tdelete(pe, &s->pids, cmp_pid);
		pid_entry_free(pe);
		s->n_pids--;
	}
	free(all);
}

static void kname_reset(struct kname_cache *c)
{
	free(c->v);
	free(c->arena);
	memset(c, 0, sizeof(*c));
}

static size_t kname_slot(const struct kname_cache *c, uint64_t addr)
{
	size_t i = (size_t)((addr * 0x9e3779b97f4a7c15ULL) >> 20) & (c->cap - 1);

	while (c->v[i].addr && c->v[i].addr != addr)
		i = (i + 1) & (c->cap - 1);
	return i;
}

/* Room for one more entry and len bytes of name; false on ENOMEM. */
static bool kname_reserve(struct kname_cache *c, size_t len)
{
	if (c->n + 1 > SYM_MAX_KNAMES || c->arena_len + len > SYM_MAX_KNAME_BYTES)
		kname_reset(c);
	if (2 * (c->n + 1) > c->cap) {
		struct kname *old = c->v;
		size_t old_cap = c->cap, cap = old_cap ? 2 * old_cap : 4096;

		c->v = calloc(cap, sizeof(*c->v));
		if (!c->v) {
			c->v = old;
			return false;
		}
		c->cap = cap;
		for (size_t i = 0; i < old_cap; i++)
			if (old[i].addr)
				c->v[kname_slot(c, old[i].addr)] = old[i];
		free(old);
	}
	return array_grow((void **)&c->arena, &c->arena_cap, c->arena_len + len, 1, 64 << 10) == 0;
}

/*
 * Asks the namer once per address and caches its answer, a name with its
 * " [module]" suffix dropped, or "unknown". Negative errno when it failed.
 */
static int kname_lookup(struct symbolizer *s, uint64_t addr, const char **name)
{
	struct kname_cache *c = &s->knames;
	char buf[SYM_KNAME_MAX];
	size_t i, len;
	char *sp;
	int rc;

	*name = NULL;
	if (c->cap) {
		i = kname_slot(c, addr);
		if (c->v[i].addr) {
			if (c->v[i].name != KNAME_UNKNOWN)
				*name = c->arena + c->v[i].name;
			return 0;
		}
	}
	s->st.kernel_asked++;
	rc = s->namer(s->namer_arg, addr, buf, sizeof(buf));
	if (rc < 0)
		return rc;
	buf[sizeof(buf) - 1] = '\0';
	sp = strchr(buf, ' '); /* "func [module]": named alone, as for [kernel.kallsyms] */
	if (sp)
		*sp = '\0';
	len = strlen(buf) + 1;
	if (!addr || !kname_reserve(c, len))
		return 0; /* 0 marks free slots; and no memory is no reason to fail */
	i = kname_slot(c, addr);
	c->v[i].addr = addr;
	c->v[i].name = KNAME_UNKNOWN;
	if (rc > 0 && buf[0]) {
		memcpy(c->arena + c->arena_len, buf, len);
		c->v[i].name = (uint32_t)c->arena_len;
		c->arena_len += len;
		*name = c->arena + c->v[i].name;
	}
	c->n++;
	return 0;
}

static void kernel_frame(struct symbolizer *s, uint64_t addr, struct sym_frame *out)
{
	int err;

	/* Module functions are named alone, as perf does for [kernel.kallsyms]. */
	out->kernel = true;
	out->file = kernel_file;
	if (s->namer) {
		err = kname_lookup(s, addr, &out->function);
		if (!err)
			return;
		log_warnx("naming kernel frames in the kernel failed (%s): reading /proc/kallsyms "
			  "instead", strerror(-err));
		s->namer = NULL;
		kname_reset(&s->knames);
	}
	if (!s->ksyms_tried) {
		s->ksyms_tried = true;
		err = ksyms_load(&s->ksyms);
		if (err)
			log_warnx("kernel symbols unavailable, kernel frames stay unnamed: %s",
				  strerror(-err));
	}
	out->function = ksyms_lookup(s->ksyms, addr, NULL);
}

/* Names addr in a mapped ELF file; false when the mapping is no readable ELF file. */
static bool file_frame(struct symbolizer *s, struct pid_entry *pe, const struct proc_map *m,
		       uint64_t addr, struct sym_frame *out)
{
	const struct elf_syms *syms;
	struct file_entry *f;
	uint64_t vaddr;

	/* [heap], [stack], memfd names and the like have no file to read. */
	if (m->path[0] != '/' || !m->inode || !strncmp(m->path, "/memfd:", 7))
		return false;
	f = mapping_file(s, pe, (size_t)(m - pe->maps.v));
	if (f == &no_file)
		return false;
	file_wait(s, f);
	if (!f->syms)
		return false;
	out->build_id = elf_syms_build_id(f->syms);
	syms = file_symbols(f);
	/* A debug file's addresses are the binary's: translate with the binary's segments. */
	if (!elf_syms_offset_to_vaddr(f->syms, addr - m->start + m->offset, &vaddr))
		return true;
	out->function = elf_syms_lookup_versioned(syms, vaddr, &out->system_name);
	/* A debug file has no PLT (its sections are empty): the binary names the stubs. */
	if (!out->function && syms != f->syms)
		out->function = elf_syms_lookup_versioned(f->syms, vaddr, &out->system_name);
	return true;
}

/*
 * Loads our own vDSO: the kernel maps the same image into every process, so
 * it names every process's [vdso] frames. Its size is the [vdso] mapping's.
 */
static void vdso_load(struct symbolizer *s)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	struct proc_maps maps = { 0 };
	const struct proc_map *m;

	if (!base || procmaps_read(getpid(), &maps))
		return;
	m = procmaps_find(&maps, base);
	if (m && m->start == base && m->path && !strcmp(m->path, "[vdso]")) {
		s->vdso = elf_syms_load_mem((const void *)(uintptr_t)base, m->end - m->start);
		s->vdso_size = m->end - m->start;
	}
	procmaps_free(&maps);
}

static void vdso_frame(struct symbolizer *s, const struct proc_map *m, uint64_t addr,
		       struct sym_frame *out)
{
	uint64_t vaddr;

	/* A process of another ABI (32-bit, x32) has another vDSO. */
	if (!s->vdso || m->end - m->start != s->vdso_size)
		return;
	out->build_id = elf_syms_build_id(s->vdso);
	if (elf_syms_offset_to_vaddr(s->vdso, addr - m->start, &vaddr))
		out->function = elf_syms_lookup(s->vdso, vaddr);
	if (out->function)
		s->st.vdso_named++;
}

/*
 * Anonymous (or memfd) code is JIT code: its perf map names it. The function is
 * split from the runtime's text ("JS:*fib /srv/app.js:2:13" is fib in
 * /srv/app.js at line 2), which stays as the system name.
 */
static void jit_frame(struct symbolizer *s, pid_t pid, uint64_t addr, struct sym_frame *out)
{
	struct perfmap_name n;

	if (!perfmap_cache_lookup(s->perfmaps, pid, addr, s->interval, &n))
		return;
	out->function = n.function;
	if (n.function != n.raw)
		out->system_name = n.raw;
	if (*n.file)
		out->source_file = n.file;
	out->line = n.line;
}

static void user_frame(struct symbolizer *s, pid_t pid, uint64_t addr, struct sym_frame *out)
{
	const struct proc_map *m = NULL;
	struct pid_entry *pe;

	pe = pid_maps(s, pid);
	if (pe && !pe->err)
		m = pid_find_map(s, pe, addr);
	if (m && m->path) {
		out->file = m->path;
		out->map_start = m->start;
		out->map_limit = m->end;
		out->map_offset = m->offset;
	}
	if (m && m->path && !strcmp(m->path, "[vdso]"))
		vdso_frame(s, m, addr, out);
	else if (!m || !m->path || !file_frame(s, pe, m, addr, out))
		jit_frame(s, pid, addr, out);
}

/* C++ and Rust names: the readable one is the function, the mangled its system name. */
static void demangle_frame(struct symbolizer *s, struct sym_frame *out)
{
	const char *readable;

	if (s->demangle_interval != s->interval) {
		/* Names handed out in earlier intervals are no longer held. */
		demangle_cache_trim(s->demangle);
		s->demangle_interval = s->interval;
	}
	if (!out->function || !demangle_is_mangled(out->function))
		return;
	readable = demangle_cache_get(s->demangle, out->function);
	if (!readable)
		return;
	/* A versioned or runtime's name is more than the mangled one: it stays. */
	if (!out->system_name)
		out->system_name = out->function;
	out->function = readable;
	s->st.demangled++;
}

struct symbolizer *symbolizer_new(void)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->file_cap = SYM_MAX_CACHE_BYTES;
	s->perfmaps = perfmap_cache_new(SYM_MAX_PERFMAP_BYTES);
	s->demangle = demangle_cache_new(SYM_MAX_DEMANGLE_BYTES);
	if (!s->perfmaps || !s->demangle) {
		symbolizer_free(s);
		errno = ENOMEM;
		return NULL;
	}
	vdso_load(s);
	/*
	 * Without the thread, binaries are parsed inline: slower, still correct.
	 * It is created with every signal blocked, so that signals meant for the
	 * daemon's signalfd (TERM, INT, HUP) can never be delivered to it.
	 */
	s->loader_running = !worker_init(&s->loader) &&
			    !worker_start(&s->loader, loader_main, s);
	if (!s->loader_running)
		log_warnx("symbolizer: no loader thread, binaries are parsed inline");
	return s;
}

void symbolizer_set_kernel_namer(struct symbolizer *s, symbolizer_kernel_namer fn, void *arg)
{
	s->namer = fn;
	s->namer_arg = arg;
	kname_reset(&s->knames);
}

void symbolizer_frame(struct symbolizer *s, pid_t pid, uint64_t addr, bool kernel,
		      struct sym_frame *out)
{
	*out = (struct sym_frame){ .build_id = "", .address = addr };
	if (kernel) {
		kernel_frame(s, addr, out);
	} else if (addr >= SYM_USER_LIMIT) {
		s->st.kernel_in_user++;
		kernel_frame(s, addr, out);
	} else {
		user_frame(s, pid, addr, out);
	}
	demangle_frame(s, out);
	s->st.frames++;
	if (out->function)
		s->st.named++;
	else
		s->st.unnamed++;
}

void symbolizer_end_interval(struct symbolizer *s)
{
	pid_expire(s);
	s->last_pid = NULL;
	s->interval++;
}

void symbolizer_stats(const struct symbolizer *s, struct symbolizer_stats *st)
{
	*st = s->st;
	st->files_cached = s->n_files;
	st->file_cache_bytes = s->file_bytes;
	st->file_cache_bound = s->file_cap;
	st->kernel_cached = s->knames.n;
	st->demangle_bytes = demangle_cache_bytes(s->demangle);
	st->demangle_bound = demangle_cache_max(s->demangle);
	st->demangle_entries = demangle_cache_count(s->demangle);
	st->pids_held = s->n_pids;
	perfmap_cache_stats(s->perfmaps, &st->perfmap);
}

void symbolizer_caps_for_limit(uint64_t memory_limit, struct symbolizer_caps *c)
{
	c->files = memory_limit / 8 * 3;
	c->perfmaps = memory_limit / 8;
	c->names = memory_limit / 32;
}

void symbolizer_set_caps(struct symbolizer *s, const struct symbolizer_caps *c)
{
	if (c->files)
		s->file_cap = c->files;
	if (c->perfmaps)
		perfmap_cache_set_max(s->perfmaps, c->perfmaps);
	if (c->names)
		demangle_cache_set_max(s->demangle, c->names);
}

/*
 * Evicts binaries, least recently used first, until the file cache holds at
 * most target bytes. Only files no kept process refers to may go: those of
 * kept processes were pinned to this interval by pid_expire().
 */
static size_t file_shrink(struct symbolizer *s, size_t target)
{
	struct file_entry *f = s->lru_tail;
	size_t freed = 0;

	while (f && s->file_bytes > target) {
		struct file_entry *prev = f->prev;

		if (f->settled && f->used < s->interval) {
			freed += f->bytes;
			file_evict(s, f);
		}
		f = prev;
	}
	return freed;
}

static uint64_t cache_bytes(struct symbolizer *s)
{
	struct perfmap_stats pm;

	perfmap_cache_stats(s->perfmaps, &pm);
	return s->file_bytes + pm.memory + demangle_cache_bytes(s->demangle);
}

uint64_t symbolizer_shrink(struct symbolizer *s, uint64_t target)
{
	uint64_t held = cache_bytes(s), freed = 0;

	/* names first (rebuilt from a string), then perf maps (a file read), then binaries */
	if (held > target)
		freed += demangle_cache_clear(s->demangle);
	if (held - freed > target) {
		struct perfmap_stats pm;

		perfmap_cache_stats(s->perfmaps, &pm);
		uint64_t others = held - freed - pm.memory;

		freed += perfmap_cache_shrink(s->perfmaps, target > others ? target - others : 0);
	}
	if (held - freed > target) {
		uint64_t others = held - freed - s->file_bytes;

		freed += file_shrink(s, target > others ? target - others : 0);
	}
	/* give what glibc kept of the freed memory (and of parsing's peaks) back */
	malloc_trim(0);
	return freed;
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	worker_stop(&s->loader); /* the loader finishes the queued files first */
	tdestroy(s->pids, pid_entry_free);
	tdestroy(s->files, file_entry_free);
	ksyms_free(s->ksyms);
	kname_reset(&s->knames);
	perfmap_cache_free(s->perfmaps);
	demangle_cache_free(s->demangle);
	elf_syms_free(s->vdso);
	free(s);
}
