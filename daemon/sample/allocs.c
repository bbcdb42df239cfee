// SPDX-License-Identifier: MIT
/*
 * Loads bpf/alloc.bpf.c, attaches it with libbpf's USDT support to the
 * otel_memory probes of the processes whose [app] has memory = alloc|inuse,
 * and drains the interval's allocations and the live ones per stack.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "allocs.h"
#include "bpfload.h"
#include "clock.h"
#include "fold.h"
#include "log.h"
#include "mapfile.h"
#include "percpu.h"
#include "procmaps.h"
#include "stapsdt.h"

#include "alloc.skel.h"

/* Interval counts and their stacks per buffer (sampled allocations are rare). */
#define COUNTS_MAX 8192
#define STACKS_MAX 4096
/* Distinct stacks of live pointers. */
#define LIVE_STACKS_MAX 8192
/* Files remembered to have no usable probe (direct-mapped by inode; a miss rereads). */
#define NOPROBE_SLOTS 4096
/* Exited processes whose live pointers the next drain deletes. */
#define DEAD_MAX 4096

static const char *const probe_names[] = {"alloc", "free"};
#define HAS_ALLOC 1U
#define HAS_FREE 2U

/* One file with otel_memory probes, attached in one process. */
struct afile {
	uint64_t dev, ino;
	struct bpf_link *alloc, *free;
};

/* One attached process. */
struct aproc {
	pid_t pid; /* 0: free slot */
	enum app_memory mode;
	size_t nfiles;
	struct afile f[ALLOCS_FILES_MAX];
};

struct allocs {
	struct alloc_bpf *skel;
	uint32_t live_max;
	struct fold_gen gen; /* the buffer the programs write to */
	struct aproc procs[ALLOCS_PROCS_MAX];
	struct {
		uint64_t dev, ino;
	} noprobe[NOPROBE_SLOTS];
	pid_t dead[DEAD_MAX];
	size_t ndead;
	uint64_t *gc_prev; /* live stacks unreferenced at the last drain, sorted */
	size_t gc_nprev;
	struct allocs_stats st;
	uint64_t logged[4];	   /* the losses last logged (see log_losses) */
	uint64_t logged_no_tables; /* the allocs walked without tables last logged */
};

int allocs_open(const struct allocs_opts *o, struct allocs **out, char *err, size_t errlen)
{
	/* the walk reads the unwinder's tables; the object has no other shared maps */
	const struct fold_shared sh = {
		.events_fd = -1, .known_fd = -1, .drop_fd = -1, .unwind = o->unwind};
	struct allocs *a = calloc(1, sizeof(*a));
	int rc;

	if (!a)
		return -ENOMEM;
	a->skel = alloc_bpf__open();
	if (!a->skel) {
		rc = -errno;
		snprintf(err, errlen, "cannot open the allocation BPF object: %s", strerror(errno));
		free(a);
		return rc;
	}
	a->live_max = o->live_max ? o->live_max : 1;
	a->skel->rodata->live_proc_max = o->live_proc_max;
	bpf_map__set_max_entries(a->skel->maps.counts0, COUNTS_MAX);
	bpf_map__set_max_entries(a->skel->maps.counts1, COUNTS_MAX);
	bpf_map__set_max_entries(a->skel->maps.stacks0, STACKS_MAX);
	bpf_map__set_max_entries(a->skel->maps.stacks1, STACKS_MAX);
	bpf_map__set_max_entries(a->skel->maps.live_stacks, LIVE_STACKS_MAX);
	bpf_map__set_max_entries(a->skel->maps.live, a->live_max);
	bpf_map__set_max_entries(a->skel->maps.live_procs, ALLOCS_PROCS_MAX);
	rc = fold_share_maps(a->skel->obj, &sh, err, errlen);
	if (rc) {
		allocs_close(a);
		return rc;
	}
	bpfload_prepare(a->skel->obj, "alloc");
	rc = alloc_bpf__load(a->skel);
	if (rc) {
		bpfload_error(rc, "alloc", err, errlen);
		allocs_close(a);
		return rc;
	}
	bpfload_report(a->skel->obj, "alloc");
	a->gen.active_buf = &a->skel->bss->active_buf;
	*out = a;
	return 0;
}

static void detach(struct aproc *p)
{
	for (size_t i = 0; i < p->nfiles; i++) {
		bpf_link__destroy(p->f[i].alloc);
		bpf_link__destroy(p->f[i].free);
	}
	p->nfiles = 0;
}

void allocs_close(struct allocs *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < ALLOCS_PROCS_MAX; i++)
		detach(&a->procs[i]);
	free(a->gc_prev);
	alloc_bpf__destroy(a->skel);
	bpfload_closed();
	free(a);
}

static struct aproc *find_proc(struct allocs *a, pid_t pid)
{
	for (size_t i = 0; i < ALLOCS_PROCS_MAX; i++)
		if (a->procs[i].pid == pid)
			return &a->procs[i];
	return NULL;
}

static bool attached_file(const struct aproc *p, uint64_t dev, uint64_t ino)
{
	for (size_t i = 0; i < p->nfiles; i++)
		if (p->f[i].dev == dev && p->f[i].ino == ino)
			return true;
	return false;
}

static size_t noprobe_slot(uint64_t dev, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ULL) ^ dev) % NOPROBE_SLOTS;
}

/*
 * The otel_memory probes (HAS_ALLOC, HAS_FREE) of mapping m's file, read from the mapped
 * inode itself (mapfile_open: regular files only, never a FIFO that would block the open),
 * whose stat goes to st. 0 or -errno; -EINVAL for a malformed .note.stapsdt only.
 */
static int probes_of(pid_t pid, const struct proc_map *m, struct stat *st, unsigned int *found)
{
	int fd = mapfile_open(pid, m, st), rc;

	*found = 0;
	if (fd < 0)
		return fd == -EINVAL ? -ENOEXEC : fd;
	rc = stapsdt_fd(fd, "otel_memory", probe_names, 2, found);
	close(fd);
	return rc;
}

/*
 * Whether path, which libbpf opens itself to attach, still leads to the file read (st):
 * another file mounted over it in the process's namespace, a FIFO above all, would have
 * libbpf read something else or block in open() until a writer came.
 */
static bool path_is(const char *path, const struct stat *st)
{
	struct stat now;

	return !stat(path, &now) && S_ISREG(now.st_mode) && now.st_dev == st->st_dev &&
	       now.st_ino == st->st_ino;
}

/*
 * Whether only root may change the file: libbpf maps it (ELF_C_READ_MMAP) to read its probes,
 * and a truncation by its owner while it reads would raise SIGBUS in emberd.
 */
static bool root_only(const struct stat *st)
{
	return st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

static void no_probe(struct allocs *a, uint64_t dev, uint64_t ino)
{
	size_t slot = noprobe_slot(dev, ino);

	a->noprobe[slot].dev = dev;
	a->noprobe[slot].ino = ino;
}

/* A file with probes that libbpf must not be given: counted, logged, not looked at again. */
static void refuse(struct allocs *a, const struct aproc *p, const struct proc_map *m,
		   const char *why)
{
	a->st.attach_failed++;
	no_probe(a, makedev(m->dev_major, m->dev_minor), m->inode);
	log_warnx("pid %d: %s: %s, not attached", p->pid, m->path, why);
}

/* Attaches the probes file (path as the process sees it) has; counts what fails. */
static void attach_file(struct allocs *a, struct aproc *p, const struct proc_map *m)
{
	uint64_t dev = makedev(m->dev_major, m->dev_minor);
	LIBBPF_OPTS(bpf_usdt_opts, uo);
	struct afile *f;
	unsigned int found = 0;
	char path[4200];
	size_t slot = noprobe_slot(dev, m->inode);
	struct stat st;
	int rc;

	if (a->noprobe[slot].dev == dev && a->noprobe[slot].ino == m->inode)
		return;
	rc = probes_of(p->pid, m, &st, &found);
	if (rc == -EINVAL) {
		a->st.notes_malformed++;
		log_warnx("pid %d: %s: malformed .note.stapsdt, not attached", p->pid, m->path);
	}
	if (rc || !(found & HAS_ALLOC)) {
		if (rc != -ENOENT && rc != -EACCES) /* gone, or not ours to read: ask again */
			no_probe(a, dev, m->inode);
		return;
	}
	if (p->nfiles == ALLOCS_FILES_MAX) {
		a->st.attach_failed++;
		return;
	}
	if (!root_only(&st)) {
		refuse(a, p, m, "a non-root user may write it");
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/root%s", p->pid, m->path);
	if (!path_is(path, &st)) {
		refuse(a, p, m, "its path leads to another file than the one mapped");
		return;
	}
	f = &p->f[p->nfiles];
	uo.usdt_cookie = p->mode == APP_MEMORY_INUSE ? EMBER_ALLOC_COOKIE_INUSE : 0;
	*f = (struct afile){.dev = dev, .ino = m->inode};
	f->alloc = bpf_program__attach_usdt(a->skel->progs.ember_alloc, p->pid, path, "otel_memory",
					    "alloc", &uo);
	if (f->alloc && p->mode == APP_MEMORY_INUSE && (found & HAS_FREE))
		f->free = bpf_program__attach_usdt(a->skel->progs.ember_free, p->pid, path,
						   "otel_memory", "free", NULL);
	if (!f->alloc || (p->mode == APP_MEMORY_INUSE && (found & HAS_FREE) && !f->free)) {
		rc = -errno;
		a->st.attach_failed++;
		log_debug("pid %d: cannot attach to the otel_memory probes of %s: %s", p->pid,
			  m->path, strerror(-rc));
		bpf_link__destroy(f->alloc);
		return;
	}
	p->nfiles++;
	a->st.files_attached++;
	log_debug("pid %d: sampled allocations from %s", p->pid, m->path);
}

/* Reads the process's executable file mappings and attaches to new files with probes. */
static void scan(struct allocs *a, struct aproc *p)
{
	struct proc_maps maps = {};
	int rc = procmaps_read_exec(p->pid, &maps);

	if (rc == -ENOTTY || rc == -EINVAL) {
		procmaps_free(&maps);
		memset(&maps, 0, sizeof(maps));
		rc = procmaps_read(p->pid, &maps);
	}
	for (size_t i = 0; !rc && i < maps.n; i++) {
		const struct proc_map *m = &maps.v[i];

		if (!(m->perms & PROCMAP_X) || !m->path || m->path[0] != '/' ||
		    strstr(m->path, " (deleted)") ||
		    attached_file(p, makedev(m->dev_major, m->dev_minor), m->inode))
			continue;
		attach_file(a, p, m);
	}
	procmaps_free(&maps);
}

void allocs_classified(struct allocs *a, pid_t pid, enum app_memory m)
{
	struct aproc *p;

	if (!a)
		return;
	p = find_proc(a, pid);
	if (p && p->mode == m)
		return;
	if (p) { /* reclassified: attach again with the new mode, or not at all */
		detach(p);
		p->pid = 0;
		a->st.procs--;
	}
	if (m == APP_MEMORY_OFF)
		return;
	p = find_proc(a, 0);
	if (!p) {
		a->st.procs_over_cap++;
		return;
	}
	*p = (struct aproc){.pid = pid, .mode = m};
	a->st.procs++;
	scan(a, p);
}

void allocs_rescan(struct allocs *a, pid_t pid)
{
	struct aproc *p = a && pid ? find_proc(a, pid) : NULL;

	if (p)
		scan(a, p);
}

void allocs_exited(struct allocs *a, pid_t pid)
{
	struct aproc *p = a ? find_proc(a, pid) : NULL;

	if (!p)
		return;
	detach(p);
	p->pid = 0;
	a->st.procs--;
	if (p->mode == APP_MEMORY_INUSE && a->ndead < DEAD_MAX)
		a->dead[a->ndead++] = pid;
}

static bool is_dead(const struct allocs *a, uint32_t tgid)
{
	for (size_t i = 0; i < a->ndead; i++)
		if ((uint32_t)a->dead[i] == tgid)
			return true;
	return false;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* A drained stack and its hash, sortable by hash. */
struct hstack {
	uint64_t h;
	struct ember_stack *st;
};

static int cmp_hstack(const void *x, const void *y)
{
	return cmp_u64(&((const struct hstack *)x)->h, &((const struct hstack *)y)->h);
}

static void to_sampler_stack(const struct ember_stack *st, bool lost, struct sampler_stack *out)
{
	*out = (struct sampler_stack){.lost = lost || !st};
	if (!st)
		return;
	out->ips = (const uint64_t *)st->ips;
	out->n = st->len < EMBER_MAX_STACK_DEPTH ? st->len : EMBER_MAX_STACK_DEPTH;
	sampler_stack_flags(out, st->flags);
}

/* The old buffer's counts with their stacks, as alloc values. */
static int drain_counts(struct allocs *a, uint32_t old, allocs_cb cb, void *arg)
{
	struct ember_sample_key *keys = calloc(COUNTS_MAX, sizeof(*keys));
	struct ember_alloc_count *vals = calloc(COUNTS_MAX, sizeof(*vals));
	uint64_t *hashes = calloc(STACKS_MAX, sizeof(*hashes));
	struct ember_stack *stacks = calloc(STACKS_MAX, sizeof(*stacks));
	struct hstack *idx = calloc(STACKS_MAX, sizeof(*idx));
	long n = -ENOMEM, ns = 0;
	int rc = -ENOMEM;

	if (!keys || !vals || !hashes || !stacks || !idx)
		goto out;
	n = fold_read_all(bpf_map__fd(old ? a->skel->maps.counts1 : a->skel->maps.counts0), true,
			  keys, vals, sizeof(*keys), sizeof(*vals), COUNTS_MAX);
	ns = n < 0 ? n :
		     fold_read_all(bpf_map__fd(old ? a->skel->maps.stacks1 : a->skel->maps.stacks0),
				   true, hashes, stacks, sizeof(*hashes), sizeof(*stacks),
				   STACKS_MAX);
	rc = n < 0 ? (int)n : ns < 0 ? (int)ns : 0;
	for (long i = 0; i < ns; i++)
		idx[i] = (struct hstack){hashes[i], &stacks[i]};
	if (ns > 0)
		qsort(idx, ns, sizeof(*idx), cmp_hstack);
	for (long i = 0; !rc && i < n; i++) {
		struct hstack k = {.h = keys[i].user_stack}, *f = NULL;
		int64_t v[4] = {(int64_t)vals[i].objects, (int64_t)vals[i].space, 0, 0};
		struct sampler_stack us;

		if (k.h && ns > 0)
			f = bsearch(&k, idx, ns, sizeof(*idx), cmp_hstack);
		to_sampler_stack(f ? f->st : NULL, keys[i].flags & EMBER_KEY_USTACK_LOST, &us);
		if (!k.h)
			us.lost = keys[i].flags & EMBER_KEY_USTACK_LOST;
		rc = cb(&keys[i], v, vals[i].samples, &us, arg);
	}
out:
	free(keys);
	free(vals);
	free(hashes);
	free(stacks);
	free(idx);
	return rc;
}

/* Live pointers folded by process, thread name and stack. */
struct live_fold {
	struct ember_sample_key k;
	uint64_t objects, space, samples;
};

static int cmp_fold(const void *x, const void *y)
{
	return memcmp(&((const struct live_fold *)x)->k, &((const struct live_fold *)y)->k,
		      sizeof(struct ember_sample_key));
}

/* Deletes the live entries of exited processes; folds the others into f. */
static size_t fold_live(struct allocs *a, const struct ember_alloc_ptr *keys,
			const struct ember_alloc_live *vals, long n, struct live_fold *f)
{
	int fd = bpf_map__fd(a->skel->maps.live);
	size_t nf = 0, out = 0;

	for (long i = 0; i < n; i++) {
		if (is_dead(a, keys[i].tgid)) {
			bpf_map_delete_elem(fd, &keys[i]);
			continue;
		}
		f[nf] = (struct live_fold){
			.objects = vals[i].objects, .space = vals[i].space, .samples = 1};
		f[nf].k.tgid = keys[i].tgid;
		f[nf].k.user_stack = vals[i].user_stack;
		f[nf].k.flags = vals[i].user_stack ? 0 : EMBER_KEY_USTACK_LOST;
		memcpy(f[nf].k.comm, vals[i].comm, sizeof(f[nf].k.comm));
		nf++;
	}
	if (nf)
		qsort(f, nf, sizeof(*f), cmp_fold);
	for (size_t i = 0; i < nf; i++) {
		if (out && !cmp_fold(&f[out - 1], &f[i])) {
			f[out - 1].objects += f[i].objects;
			f[out - 1].space += f[i].space;
			f[out - 1].samples += f[i].samples;
		} else {
			f[out++] = f[i];
		}
	}
	return out;
}

/*
 * Deletes the live stacks no live pointer refers to now nor did at the last
 * drain: a pointer recorded between the live map's read and this one finds
 * its stack still there, and refers to it by the next drain.
 */
static void gc_live_stacks(struct allocs *a, uint64_t *refs, size_t nrefs)
{
	int fd = bpf_map__fd(a->skel->maps.live_stacks);
	uint64_t key, next, *cand = calloc(LIVE_STACKS_MAX, sizeof(*cand));
	size_t ncand = 0;
	bool first = true;

	if (!cand)
		return;
	if (nrefs)
		qsort(refs, nrefs, sizeof(*refs), cmp_u64);
	while (ncand < LIVE_STACKS_MAX && !bpf_map_get_next_key(fd, first ? NULL : &key, &next)) {
		first = false;
		key = next;
		if (!nrefs || !bsearch(&key, refs, nrefs, sizeof(*refs), cmp_u64))
			cand[ncand++] = key;
	}
	for (size_t i = 0; i < ncand; i++) {
		if (a->gc_nprev &&
		    bsearch(&cand[i], a->gc_prev, a->gc_nprev, sizeof(uint64_t), cmp_u64) &&
		    !bpf_map_delete_elem(fd, &cand[i])) {
			a->st.live_stacks_gc++;
			cand[i] = 0; /* deleted: no longer a candidate */
		}
	}
	if (ncand)
		qsort(cand, ncand, sizeof(*cand), cmp_u64);
	free(a->gc_prev);
	a->gc_prev = cand;
	a->gc_nprev = ncand;
}

/* The live pointers at the end of the interval, as inuse values per stack. */
static int drain_live(struct allocs *a, allocs_cb cb, void *arg)
{
	struct ember_alloc_ptr *keys = calloc(a->live_max, sizeof(*keys));
	struct ember_alloc_live *vals = calloc(a->live_max, sizeof(*vals));
	struct live_fold *f = calloc(a->live_max, sizeof(*f));
	uint64_t *refs = calloc(a->live_max, sizeof(*refs));
	struct ember_stack *st = malloc(sizeof(*st));
	int sfd = bpf_map__fd(a->skel->maps.live_stacks), rc = -ENOMEM;
	size_t nf = 0;
	long n;

	if (!keys || !vals || !f || !refs || !st)
		goto out;
	n = fold_read_all(bpf_map__fd(a->skel->maps.live), false, keys, vals, sizeof(*keys),
			  sizeof(*vals), a->live_max);
	rc = n < 0 ? (int)n : 0;
	if (!rc)
		nf = fold_live(a, keys, vals, n, f);
	for (size_t i = 0; !rc && i < nf; i++) {
		int64_t v[4] = {0, 0, (int64_t)f[i].objects, (int64_t)f[i].space};
		bool found = f[i].k.user_stack && !bpf_map_lookup_elem(sfd, &f[i].k.user_stack, st);
		struct sampler_stack us;

		if (f[i].k.user_stack && !found)
			a->st.live_stacks_lost++;
		refs[i] = f[i].k.user_stack;
		to_sampler_stack(found ? st : NULL, false, &us);
		rc = cb(&f[i].k, v, f[i].samples, &us, arg);
	}
	if (!rc)
		gc_live_stacks(a, refs, nf);
	for (size_t i = 0; !rc && i < a->ndead; i++)
		bpf_map_delete_elem(bpf_map__fd(a->skel->maps.live_procs), &a->dead[i]);
	if (!rc)
		a->ndead = 0;
out:
	free(keys);
	free(vals);
	free(f);
	free(refs);
	free(st);
	return rc;
}

/*
 * Says what was lost or refused since the start, when it grew since the last
 * drain; and, in the debug log, how many allocations were walked without tables.
 */
static void log_losses(struct allocs *a)
{
	struct allocs_stats s;
	uint64_t now[4];

	allocs_stats(a, &s);
	if (s.m[EMBER_ALLOC_M_NO_TABLES] != a->logged_no_tables) {
		a->logged_no_tables = s.m[EMBER_ALLOC_M_NO_TABLES];
		log_debug("sampled allocations since the start: %lu of %lu walked before their "
			  "process's unwind tables were all loaded (frame pointers there)",
			  (unsigned long)s.m[EMBER_ALLOC_M_NO_TABLES],
			  (unsigned long)s.m[EMBER_ALLOC_M_ALLOCS]);
	}
	now[0] = s.m[EMBER_ALLOC_M_LIVE_FULL];
	now[1] = s.m[EMBER_ALLOC_M_LIVE_PROC_CAP];
	now[2] = s.attach_failed + s.procs_over_cap;
	now[3] = s.notes_malformed;
	if (!memcmp(now, a->logged, sizeof(now)))
		return;
	memcpy(a->logged, now, sizeof(now));
	log_warnx("sampled allocations since the start: live pointers not recorded %lu (live map "
		  "full) and %lu (per-process cap); processes or files not attached %lu; "
		  "malformed .note.stapsdt %lu; %u processes attached",
		  (unsigned long)now[0], (unsigned long)now[1], (unsigned long)now[2],
		  (unsigned long)now[3], s.procs);
}

void allocs_flip(struct allocs *a)
{
	fold_gen_flip(&a->gen);
}

int allocs_drain(struct allocs *a, allocs_cb cb, void *arg)
{
	uint32_t old;
	int rc;

	/* libraries dlopen'd since: only the attached processes are read again */
	for (size_t i = 0; i < ALLOCS_PROCS_MAX; i++)
		if (a->procs[i].pid)
			scan(a, &a->procs[i]);
	/* uprobe programs may be preempted: they finish within microseconds of running again */
	old = fold_gen_drainable(&a->gen);
	rc = drain_counts(a, old, cb, arg);
	if (!rc)
		rc = drain_live(a, cb, arg);
	log_losses(a);
	return rc;
}

void allocs_stats(struct allocs *a, struct allocs_stats *out)
{
	*out = a->st;
	percpu_array_sum(bpf_map__fd(a->skel->maps.metrics), EMBER_ALLOC_M_NR, out->m);
}

int64_t allocs_run_ns(const struct allocs *a)
{
	return bpfload_run_ns(a->skel->obj);
}
