// SPDX-License-Identifier: MIT
/*
 * Names frames. Kernel addresses through kallsyms; user addresses through the
 * process's mappings (read once per interval) and the mapped ELF file, whose
 * symbols are cached by file identity across processes and intervals.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfsym.h"
#include "ksyms.h"
#include "log.h"
#include "procmaps.h"
#include "symbolizer.h"

/* Binaries whose symbols are kept, and the bytes they may hold together. */
#define SYM_MAX_FILES 4096
#define SYM_MAX_CACHE_BYTES (1ull << 30)
/* Processes whose mappings are held during one interval. */
#define SYM_MAX_PIDS 16384

static const char kernel_file[] = "[kernel.kallsyms]";
static const char deleted_suffix[] = " (deleted)";

/* A file's identity: the same binary in every process, a new one once rewritten. */
struct file_key {
	uint64_t dev, ino, size;
	int64_t mtime_sec, mtime_nsec;
};

/* One binary, parsed once. syms NULL is a negative entry: it did not parse. */
struct file_entry {
	struct file_key key;
	struct elf_syms *syms;
	size_t bytes;
	uint64_t used;			/* interval in which it was last used */
	struct file_entry *prev, *next;	/* LRU list, most recently used first */
};

/* One process's mappings for this interval, and the file each resolved to. */
struct pid_entry {
	pid_t pid;
	int err;			/* reading the maps failed: do not retry */
	struct proc_maps maps;
	struct file_entry **files;	/* per mapping: NULL untried, no_file, or cached */
};

struct symbolizer {
	struct ksyms *ksyms;
	void *files;			/* tsearch tree of struct file_entry, by key */
	struct file_entry *lru_head, *lru_tail;
	size_t n_files, file_bytes;
	void *pids;			/* tsearch tree of struct pid_entry, by pid */
	size_t n_pids;
	struct pid_entry *last_pid;	/* consecutive frames come from one stack */
	uint64_t interval;
	struct symbolizer_stats st;
};

/* Marks a mapping whose file could not be opened or cached this interval. */
static struct file_entry no_file;

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int cmp_file(const void *a, const void *b)
{
	const struct file_key *x = &((const struct file_entry *)a)->key;
	const struct file_key *y = &((const struct file_entry *)b)->key;

	if (x->ino != y->ino)
		return cmp_u64(x->ino, y->ino);
	if (x->dev != y->dev)
		return cmp_u64(x->dev, y->dev);
	if (x->size != y->size)
		return cmp_u64(x->size, y->size);
	if (x->mtime_sec != y->mtime_sec)
		return x->mtime_sec < y->mtime_sec ? -1 : 1;
	return x->mtime_nsec < y->mtime_nsec ? -1 : x->mtime_nsec > y->mtime_nsec;
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

static void file_evict(struct symbolizer *s, struct file_entry *f)
{
	lru_unlink(s, f);
	tdelete(f, &s->files, cmp_file);
	s->n_files--;
	s->file_bytes -= f->bytes;
	elf_syms_free(f->syms);
	free(f);
}

/*
 * Makes room for one more file. Only files unused this interval may go: the
 * strings of the others may still be held by the caller.
 */
static bool file_make_room(struct symbolizer *s)
{
	while (s->n_files >= SYM_MAX_FILES || s->file_bytes > SYM_MAX_CACHE_BYTES) {
		if (!s->lru_tail || s->lru_tail->used == s->interval)
			return false;
		file_evict(s, s->lru_tail);
	}
	return true;
}

/* Parses fd into a new cache entry (negative when it does not parse). */
static struct file_entry *file_insert(struct symbolizer *s, int fd, const struct file_key *key)
{
	struct file_entry *f, **slot;

	if (!file_make_room(s))
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->key = *key;
	f->syms = elf_syms_load_fd(fd);
	f->bytes = sizeof(*f) + (f->syms ? elf_syms_memory(f->syms) : 0);
	slot = tsearch(f, &s->files, cmp_file);
	if (!slot) {
		elf_syms_free(f->syms);
		free(f);
		return NULL;
	}
	s->n_files++;
	s->file_bytes += f->bytes;
	lru_push(s, f);
	f->used = s->interval;
	return f;
}

/* Opens path if it is a regular file: devices are not opened at all. */
static int open_regular(const char *path, struct stat *st)
{
	struct stat pre;
	int fd;

	if (stat(path, &pre))
		return -errno;
	if (!S_ISREG(pre.st_mode))
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) || st->st_dev != pre.st_dev || st->st_ino != pre.st_ino) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

static bool path_deleted(const char *path)
{
	size_t n = strlen(path), d = sizeof(deleted_suffix) - 1;

	return n >= d && !strcmp(path + n - d, deleted_suffix);
}

/*
 * The mapped file itself through map_files (root only), else its path in
 * the process's root, accepted only when it is still the mapped inode.
 */
static int open_mapping(pid_t pid, const struct proc_map *m, struct stat *st)
{
	char path[4096 + 64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid,
		 m->start, m->end);
	fd = open_regular(path, st);
	if (fd >= 0 || path_deleted(m->path))
		return fd;
	if ((size_t)snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, m->path) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	fd = open_regular(path, st);
	if (fd >= 0 && (uint64_t)st->st_ino != m->inode) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* The cached file of mapping m, opening and parsing it on first use. */
static struct file_entry *file_for_mapping(struct symbolizer *s, pid_t pid,
					   const struct proc_map *m)
{
	struct file_entry probe, **found, *f;
	struct stat st;
	int fd;

	fd = open_mapping(pid, m, &st);
	if (fd < 0)
		return NULL;
	probe.key = (struct file_key){
		.dev = st.st_dev,
		.ino = st.st_ino,
		.size = (uint64_t)st.st_size,
		.mtime_sec = st.st_mtim.tv_sec,
		.mtime_nsec = st.st_mtim.tv_nsec,
	};
	found = tfind(&probe, &s->files, cmp_file);
	if (found) {
		f = *found;
		file_touch(s, f);
	} else {
		f = file_insert(s, fd, &probe.key);
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

/* The process's mappings for this interval, read on first use; NULL when unknown. */
static struct pid_entry *pid_maps(struct symbolizer *s, pid_t pid)
{
	struct pid_entry probe = { .pid = pid }, **slot, *pe;

	if (s->last_pid && s->last_pid->pid == pid)
		return s->last_pid;
	slot = tfind(&probe, &s->pids, cmp_pid);
	if (slot)
		return s->last_pid = *slot;
	if (s->n_pids >= SYM_MAX_PIDS)
		return NULL;
	pe = calloc(1, sizeof(*pe));
	if (!pe)
		return NULL;
	pe->pid = pid;
	pe->err = procmaps_read(pid, &pe->maps);
	if (!pe->err) {
		pe->files = calloc(pe->maps.n ? pe->maps.n : 1, sizeof(*pe->files));
		if (!pe->files) {
			procmaps_free(&pe->maps);
			pe->err = -ENOMEM;
		}
	}
	if (pe->err)
		s->st.maps_failed++;
	else
		s->st.maps_read++;
	slot = tsearch(pe, &s->pids, cmp_pid);
	if (!slot) {
		pid_entry_free(pe);
		return NULL;
	}
	s->n_pids++;
	return s->last_pid = pe;
}

static void kernel_frame(struct symbolizer *s, uint64_t addr, struct sym_frame *out)
{
	/* Module functions are named alone, as perf does for [kernel.kallsyms]. */
	out->kernel = true;
	out->file = kernel_file;
	out->function = ksyms_lookup(s->ksyms, addr, NULL);
}

static void user_frame(struct symbolizer *s, pid_t pid, uint64_t addr, struct sym_frame *out)
{
	const struct proc_map *m;
	struct pid_entry *pe;
	struct file_entry *f;
	uint64_t vaddr;

	pe = pid_maps(s, pid);
	if (!pe || pe->err)
		return;
	m = procmaps_find(&pe->maps, addr);
	if (!m || !m->path)
		return;
	out->file = m->path;
	out->map_start = m->start;
	out->map_limit = m->end;
	out->map_offset = m->offset;
	/* [vdso], [heap], memfd names and the like have no file to read. */
	if (m->path[0] != '/' || !m->inode)
		return;
	f = mapping_file(s, pe, (size_t)(m - pe->maps.v));
	if (f == &no_file || !f->syms)
		return;
	out->build_id = elf_syms_build_id(f->syms);
	if (elf_syms_offset_to_vaddr(f->syms, addr - m->start + m->offset, &vaddr))
		out->function = elf_syms_lookup(f->syms, vaddr);
}

struct symbolizer *symbolizer_new(void)
{
	struct symbolizer *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return NULL;
	err = ksyms_load(&s->ksyms);
	if (err)
		log_warnx("kernel symbols unavailable, kernel frames stay unnamed: %s",
			  strerror(-err));
	return s;
}

void symbolizer_frame(struct symbolizer *s, pid_t pid, uint64_t addr, bool kernel,
		      struct sym_frame *out)
{
	*out = (struct sym_frame){ .build_id = "", .address = addr };
	if (kernel)
		kernel_frame(s, addr, out);
	else
		user_frame(s, pid, addr, out);
	s->st.frames++;
	if (out->function)
		s->st.named++;
	else
		s->st.unnamed++;
}

void symbolizer_end_interval(struct symbolizer *s)
{
	tdestroy(s->pids, pid_entry_free);
	s->pids = NULL;
	s->n_pids = 0;
	s->last_pid = NULL;
	s->interval++;
}

void symbolizer_stats(const struct symbolizer *s, struct symbolizer_stats *st)
{
	*st = s->st;
	st->files_cached = s->n_files;
	st->file_cache_bytes = s->file_bytes;
}

static void file_entry_free(void *p)
{
	struct file_entry *f = p;

	elf_syms_free(f->syms);
	free(f);
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	symbolizer_end_interval(s);
	tdestroy(s->files, file_entry_free);
	ksyms_free(s->ksyms);
	free(s);
}
