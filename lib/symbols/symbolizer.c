// SPDX-License-Identifier: MIT
/*
 * Names frames. Kernel addresses through kallsyms; user addresses through the
 * process's mappings (read once per interval) and the mapped ELF file, whose
 * symbols are cached by file identity across processes and intervals.
 * Here: the file cache, its loader thread and the frames; processes in
 * symbolizer_proc.c, kernel names in symbolizer_kernel.c.
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

#include "clock.h"
#include "debugfile.h"
#include "demangle.h"
#include "elfsym.h"
#include "ksyms.h"
#include "log.h"
#include "procids.h"
#include "mapfile.h"
#include "procmaps.h"
#include "symbolizer.h"
#include "symbolizer_int.h"
#include "util.h"
#include "worker.h"

/* Marks a mapping whose file could not be opened or cached this interval. */
struct file_entry no_file;

static int cmp_file(const void *a, const void *b)
{
	const struct file_key *x = &((const struct file_entry *)a)->key;
	const struct file_key *y = &((const struct file_entry *)b)->key;

	return file_key_cmp(x, y);
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

void file_touch(struct symbolizer *s, struct file_entry *f)
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

/* The loader's lock, when there is a loader to share the charges and the entries' loading with. */
static void loader_lock(struct symbolizer *s)
{
	if (s->loader_running)
		worker_lock(&s->loader);
}

static void loader_unlock(struct symbolizer *s)
{
	if (s->loader_running)
		worker_unlock(&s->loader);
}

/* Evicts f, settled: its bytes are no longer charged to its user and process. */
static void file_evict(struct symbolizer *s, struct file_entry *f)
{
	if (f->charged) {
		loader_lock(s);
		symshare_charge(&s->shares, f->load_uid, f->load_pid, -(int64_t)f->bytes);
		loader_unlock(s);
	}
	lru_unlink(s, f);
	tdelete(f, &s->files, cmp_file);
	s->n_files--;
	s->file_bytes -= f->bytes;
	file_entry_free(f);
}

/* The room a new binary of uid's, loaded for pid, has in the cache; *by says what bounds it. */
static uint64_t file_room(struct symbolizer *s, uid_t uid, pid_t pid, enum symshare_by *by)
{
	uint64_t room;

	loader_lock(s);
	room = symshare_room(&s->shares, uid, pid, s->file_cap, by);
	loader_unlock(s);
	return room;
}

/* Whether f may be evicted now: settled, and not used this interval nor pinned for the next. */
static bool file_idle(const struct symbolizer *s, const struct file_entry *f)
{
	return f->settled && f->used < s->interval;
}

/*
 * Makes room for one more file, of need bytes, for pid of user uid: evicts
 * idle files, least recently used first, of whoever holds the bound that
 * leaves it less (its process, its user, or anyone for the whole cache). Only
 * files unused this interval may go: the strings of the others may still be
 * held by the caller, and files of kept processes are pinned for the next
 * interval (used = interval + 1). A file over its own share is refused
 * whatever goes. False when the cache has no slot left.
 */
static bool file_make_room(struct symbolizer *s, uid_t uid, pid_t pid, uint64_t need)
{
	struct file_entry *f = s->lru_tail;
	enum symshare_by by;

	while (f && (s->n_files >= SYM_MAX_FILES || file_room(s, uid, pid, &by) < need)) {
		struct file_entry *prev = f->prev;
		bool full = s->n_files >= SYM_MAX_FILES;

		if (!full && by == SYMSHARE_BY_FILE)
			break;
		if (file_idle(s, f) && (full || by == SYMSHARE_BY_CACHE ||
					(by == SYMSHARE_BY_PROC && f->load_pid == pid) ||
					(by == SYMSHARE_BY_USER && f->load_uid == uid)))
			file_evict(s, f);
		f = prev;
	}
	return s->n_files < SYM_MAX_FILES;
}

/*
 * The room f's shares leave it now (s->shares read under the loader's lock):
 * the loader parses one file at a time, so what it charges never overshoots.
 */
static void file_set_max(struct symbolizer *s, struct file_entry *f)
{
	f->load_max = symshare_room(&s->shares, f->load_uid, f->load_pid, f->load_cap, &f->by);
}

/*
 * Parses f within f->load_max: its symbols, and its debug file's when it has
 * no .symtab. With no room left, nothing is read.
 */
static void load_file(struct file_entry *f)
{
	size_t used;

	if (f->load_max)
		f->syms = elf_syms_load_fd_max(f->load_fd, f->load_max);
	f->too_big = !f->syms && (!f->load_max || errno == E2BIG);
	close(f->load_fd);
	f->load_fd = -1;
	used = f->syms ? elf_syms_memory(f->syms) : 0;
	if (f->syms && elf_syms_source(f->syms) != ELF_SYMS_SYMTAB && f->load_path &&
	    used < f->load_max)
		f->dbg = debugfile_load_max(f->load_pid, f->load_path, f->syms, &f->dbg_via,
					    f->load_max - used);
}

/* Charges f's bytes, once parsed, to its user and process (under the loader's lock). */
static void file_charge(struct symbolizer *s, struct file_entry *f)
{
	f->bytes = sizeof(*f) + (f->syms ? elf_syms_memory(f->syms) : 0) +
		   (f->dbg ? elf_syms_memory(f->dbg) : 0);
	f->charged = !symshare_charge(&s->shares, f->load_uid, f->load_pid, (int64_t)f->bytes);
}

/* Tells the loop, through the loader's eventfd, that every queued binary is parsed. */
static void loader_tell_idle(struct symbolizer *s)
{
	int rc = s->loader_efd >= 0 ? loop_bell_ring(s->loader_efd) : 0;

	if (rc)
		log_debug("symbolizer: cannot signal the loader's end: %s", strerror(-rc));
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
		file_set_max(s, f);
		/* tests: a slow file (on stop, parsed at once) */
		if (s->slow_part[0] && f->load_path && strstr(f->load_path, s->slow_part))
			worker_sleep(w, s->slow_ns);
		worker_unlock(w);
		/* only this thread touches the entry's symbols while it is loading */
		load_file(f);
		worker_lock(w);
		file_charge(s, f);
		f->loading = false;
		if (!--s->loading)
			loader_tell_idle(s);
		worker_done(w);
	}
	worker_unlock(w);
}

/* Parses f now, in this thread: when the loader could not be started. */
static void load_inline(struct symbolizer *s, struct file_entry *f)
{
	file_set_max(s, f);
	load_file(f);
	file_charge(s, f);
	f->loading = false;
}

/* Accounts for f, parsed, once: its bytes in the cache's, its refusal or debug file counted. */
static void file_settle(struct symbolizer *s, struct file_entry *f)
{
	f->settled = true;
	if (f->too_big && f->by == SYMSHARE_BY_FILE)
		s->st.files_too_big++;
	else if (f->too_big && f->by == SYMSHARE_BY_CACHE)
		s->st.file_cache_full++;
	else if (f->too_big)
		s->st.files_over_share++;
	s->file_bytes += f->bytes;
	if (f->dbg && f->dbg_via == DEBUGFILE_BUILD_ID)
		s->st.debug_build_id++;
	else if (f->dbg)
		s->st.debug_link++;
}

/*
 * Whether f is parsed, then accounted for once; false while the loader still
 * parses it: the frame stays an address (counted). Nothing here waits: the
 * loop starts an interval's drain once the loader is idle, or a deadline
 * passed (symbolizer_loading()). Its symbols are only read after this (the
 * lock orders them after the loader's writes).
 */
static bool file_ready(struct symbolizer *s, struct file_entry *f)
{
	bool loading;

	if (f->settled)
		return true;
	loader_lock(s);
	loading = f->loading;
	loader_unlock(s);
	if (loading) {
		s->st.loader_waits_cut++;
		return false;
	}
	file_settle(s, f);
	return true;
}

/*
 * Settles every file the loader finished, used or not: what it holds is in
 * the cache's bytes (and the memory bound's) from the interval it was parsed in.
 */
static void file_settle_done(struct symbolizer *s)
{
	loader_lock(s);
	for (struct file_entry *f = s->lru_head; f; f = f->next)
		if (!f->settled && !f->loading)
			file_settle(s, f);
	loader_unlock(s);
}

/*
 * A new cache entry for fd (a binary not seen before), parsed by the loader;
 * its debug file is looked for there too, while the process's root can still
 * be reached.
 */
static struct file_entry *file_insert(struct symbolizer *s, int fd, const struct file_key *key,
				      struct pid_entry *pe, const char *path, uint64_t size)
{
	struct file_entry *f, **slot;
	uid_t uid = pid_uid(s, pe);
	uint64_t need = size < s->file_cap / SYMSHARE_FILE ? size : s->file_cap / SYMSHARE_FILE;

	if (!file_make_room(s, uid, pe->pid, need)) {
		s->st.file_cache_full++;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->key = *key;
	f->load_pid = pe->pid;
	f->load_uid = uid;
	f->load_cap = s->file_cap;
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
		s->loading++;
		worker_wake_locked(&s->loader);
		worker_unlock(&s->loader);
	} else {
		load_inline(s, f);
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

/* A cached file by its identity, or NULL. */
static struct file_entry *cached_file(struct symbolizer *s, const struct file_key *key)
{
	struct file_entry probe, **found;

	probe.key = *key;
	found = tfind(&probe, &s->files, cmp_file);
	if (!found)
		return NULL;
	file_touch(s, *found);
	return *found;
}

/*
 * The cached file of mapping m, opening and parsing it on first use. Its
 * identity, when known (key: from one stat() through map_files, which only
 * root may follow), finds a cached file without opening anything, so that
 * capturing a process whose libraries are all known costs no system call per
 * library, or one when the identity is not known yet (key NULL and key_tried
 * false; key NULL and key_tried true: the stat failed, it would fail again).
 */
static struct file_entry *file_for_mapping(struct symbolizer *s, struct pid_entry *pe,
					   const struct proc_map *m, const struct file_key *key,
					   bool key_tried)
{
	pid_t pid = pe->pid;
	struct file_key k;
	struct file_entry *f;
	struct stat st;
	int fd;

	if (!key && !key_tried && !mapfile_key(pid, m, &k))
		key = &k;
	f = key ? cached_file(s, key) : NULL;
	if (f)
		return f;
	fd = mapfile_open(pid, m, &st);
	if (fd < 0)
		return NULL;
	k = file_key_of(&st);
	f = cached_file(s, &k);
	if (!f)
		f = file_insert(s, fd, &k, pe, m->path, (uint64_t)st.st_size);
	close(fd);
	return f;
}

/* Resolves mapping i of pe once, and every other mapping of the same file with it. */
struct file_entry *mapping_file_key(struct symbolizer *s, struct pid_entry *pe, size_t i,
				    const struct file_key *key, bool key_tried)
{
	const struct proc_map *m = &pe->maps.v[i];
	struct file_entry *f;
	size_t j;

	if (pe->files[i]) {
		if (pe->files[i] != &no_file)
			file_touch(s, pe->files[i]);
		return pe->files[i];
	}
	f = file_for_mapping(s, pe, m, key, key_tried);
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

struct file_entry *mapping_file(struct symbolizer *s, struct pid_entry *pe, size_t i)
{
	return mapping_file_key(s, pe, i, NULL, false);
}

/* Whether m maps a file to read: [heap], [stack], memfd names and the like do not. */
static bool mapping_has_file(const struct proc_map *m)
{
	return m->path && m->path[0] == '/' && m->inode && strncmp(m->path, "/memfd:", 7);
}

/*
 * Names vaddr from syms, whose names are read back from their file (once per
 * distinct frame and interval at most: the drain caches its frames, the
 * symbols their hot names): 1 named, 0 no symbol, < 0 its name unreadable
 * (counted; the frame stays an address).
 */
static int file_name(struct symbolizer *s, const struct elf_syms *syms, uint64_t vaddr,
		     struct sym_frame *out)
{
	uint64_t reads, failed, reads_after;
	int ret;

	elf_syms_name_stats(syms, &reads, &failed);
	ret = elf_syms_name(syms, vaddr, &out->function, &out->system_name);
	elf_syms_name_stats(syms, &reads_after, &failed);
	s->st.names_read += reads_after - reads;
	if (ret < 0)
		s->st.names_unread++;
	return ret;
}

static bool file_frame(struct symbolizer *s, struct pid_entry *pe, const struct proc_map *m,
		       uint64_t addr, struct sym_frame *out)
{
	const struct elf_syms *syms;
	struct file_entry *f;
	uint64_t vaddr;
	int ret;

	if (!mapping_has_file(m))
		return false;
	f = mapping_file(s, pe, (size_t)(m - pe->maps.v));
	if (f == &no_file || !file_ready(s, f) || !f->syms)
		return false;
	out->build_id = elf_syms_build_id(f->syms);
	syms = file_symbols(f);
	/* A debug file's addresses are the binary's: translate with the binary's segments. */
	if (!elf_syms_offset_to_vaddr(f->syms, addr - m->start + m->offset, &vaddr))
		return true;
	ret = file_name(s, syms, vaddr, out);
	/* A debug file has no PLT (its sections are empty): the binary names the stubs. */
	if (!ret && syms != f->syms)
		file_name(s, f->syms, vaddr, out);
	return true;
}

/*
 * Loads our own vDSO: the kernel maps the same image into every process, so
 * it names every process's [vdso] frames. Its size is the [vdso] mapping's.
 */
static void vdso_load(struct symbolizer *s)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	struct proc_maps maps = {0};
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
 * Anonymous (or memfd) code is JIT code: its perf map names it, else (a
 * runtime version without a layout) an honest frame. The function is
 * split from the runtime's text ("JS:*fib /srv/app.js:2:13" is fib in
 * /srv/app.js at line 2), which stays as the system name.
 */
static void jit_frame(struct symbolizer *s, struct pid_entry *pe, const struct proc_map *m,
		      pid_t pid, uint64_t addr, struct sym_frame *out)
{
	struct perfmap_name n;

	if (!perfmap_cache_lookup(s->perfmaps, pid, addr, s->interval, &n)) {
		/* code in no file (a file's frame whose symbols are missing stays an address) */
		if (m && (m->perms & PROCMAP_X) && !mapping_has_file(m))
			runtime_jit_unsupported(s, pe, pid, out);
		return;
	}
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
	if (pe)
		m = pid_find_map_any(s, &pe, addr);
	if (m && m->path) {
		out->file = m->path;
		out->map_start = m->start;
		out->map_limit = m->end;
		out->map_offset = m->offset;
	}
	if (m && m->path && !strcmp(m->path, "[vdso]"))
		vdso_frame(s, m, addr, out);
	else if (!m || !m->path || !file_frame(s, pe, m, addr, out))
		jit_frame(s, pe, m, pid, addr, out);
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
	s->loader_efd = -1;
	s->file_cap = SYM_MAX_CACHE_BYTES;
	s->perfmaps = perfmap_cache_new(SYM_MAX_PERFMAP_BYTES);
	s->demangle = demangle_cache_new(SYM_MAX_DEMANGLE_BYTES);
	s->rt_shared = rt_shared_new();
	if (!s->perfmaps || !s->demangle || !s->rt_shared) {
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
	s->loader_efd = loop_bell_new();
	s->loader_running = s->loader_efd >= 0 && !worker_init(&s->loader) &&
			    !worker_start(&s->loader, "ember-symbols", loader_main, s);
	if (!s->loader_running) {
		log_warnx("symbolizer: no loader thread, binaries are parsed inline");
		if (s->loader_efd >= 0)
			close(s->loader_efd);
		s->loader_efd = -1;
	}
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
	*out = (struct sym_frame){.build_id = "", .address = addr};
	if (!kernel && EMBER_RT_IS_WORD(addr)) {
		runtime_frame(s, pid, addr, out);
	} else if (kernel) {
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
	file_settle_done(s);
	pid_expire(s);
	s->last_pid = NULL;
	s->interval++;
}

void symbolizer_slow_loads(struct symbolizer *s, const char *path_part, int64_t ns)
{
	loader_lock(s);
	snprintf(s->slow_part, sizeof(s->slow_part), "%s", path_part);
	s->slow_ns = ns;
	loader_unlock(s);
}

int symbolizer_loader_fd(const struct symbolizer *s)
{
	return s->loader_efd;
}

bool symbolizer_loading(struct symbolizer *s)
{
	bool busy;

	loader_lock(s);
	busy = s->loading > 0;
	loader_unlock(s);
	return busy;
}

bool symbolizer_loader_woke(struct symbolizer *s)
{
	int rc = s->loader_efd >= 0 ? loop_bell_clear(s->loader_efd) : 0;

	if (rc)
		log_debug("symbolizer: cannot read the loader's eventfd: %s", strerror(-rc));
	return !symbolizer_loading(s);
}

bool symbolizer_settle_until(struct symbolizer *s, int64_t until_ns)
{
	bool busy;

	loader_lock(s);
	while (s->loading && worker_wait_done_until(&s->loader, until_ns))
		;
	busy = s->loading > 0;
	loader_unlock(s);
	return !busy;
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
	st->pids_bytes = pid_bytes(s);
	perfmap_cache_stats(s->perfmaps, &st->perfmap);
	st->runtime_shared = rt_shared_hits(s->rt_shared);
	st->runtime_shared_bytes = rt_shared_bytes(s->rt_shared);
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

		if (file_idle(s, f)) {
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
	/* the processes' mappings are not freed here, but count in what is held */
	return s->file_bytes + pm.memory + demangle_cache_bytes(s->demangle) + pid_bytes(s) +
	       rt_shared_bytes(s->rt_shared);
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
	if (s->loader_efd >= 0)
		close(s->loader_efd);
	tdestroy(s->pids, pid_entry_free);
	tdestroy(s->files, file_entry_free);
	symshare_free(&s->shares);
	ksyms_free(s->ksyms);
	kname_reset(&s->knames);
	perfmap_cache_free(s->perfmaps);
	demangle_cache_free(s->demangle);
	rt_shared_free(s->rt_shared);
	free(s->prefetch);
	elf_syms_free(s->vdso);
	free(s);
}
