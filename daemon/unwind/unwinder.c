// SPDX-License-Identifier: MIT
/*
 * Loads unwind tables for the BPF stack walk: one table per binary (by file
 * identity), shared by every process that maps it, compiled once on this
 * module's thread and kept in a memory-capped rows map; per process,
 * the list of its executable mappings with the table and bias of each.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <search.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "clock.h"
#include "ember/unwind.h"
#include "hostrows.h"
#include "jobqueue.h"
#include "log.h"
#include "mapfile.h"
#include "outbox.h"
#include "procmaps.h"
#include "procsnap.h"
#include "rowspace.h"
#include "runtime.h"
#include "tablecache.h"
#include "unwinder.h"
#include "util.h"
#include "worker.h"

/* Rows per element of the rows map (include/ember/unwind.h). */
#define ROWS_PER_BLOCK EMBER_ROWS_PER_BLOCK
#define BLOCK_BYTES (ROWS_PER_BLOCK * sizeof(struct ember_unwind_row))
/* Requests waiting for the thread: beyond, they are dropped and counted. */
#define QUEUE_MAX 16384
/*
 * A process is read again for a frame outside its mappings at most this
 * often; twice as late each time the read found nothing new (JIT code that
 * moves, frame-pointer garbage), up to RESCAN_MAX_NS.
 */
#define RESCAN_MIN_NS NS_PER_SEC
#define RESCAN_MAX_NS (64 * RESCAN_MIN_NS)
/*
 * The same for a leaf outside every mapping (EMBER_UNWIND_STALE_LEAF): code
 * runs there, so a read nearly always finds a new mapping (dlopen), and its
 * own backoff, which garbage callers do not grow, starts lower.
 */
#define RESCAN_LEAF_MIN_NS (NS_PER_SEC / 10)
/* Processes the stale map can name at once (bpf/unwind.bpf.h). */
#define STALE_MAX 1024

/* Processes the callers' side remembers having asked for (8x the procs map). */
#define ASKED_MAX (8 * EMBER_UNWIND_PROCS_MAX)

enum req_op { REQ_ADD, REQ_EXIT, REQ_EXEC, REQ_RUNTIME };

struct req {
	pid_t pid;
	enum req_op op;
	int64_t ns;		/* CLOCK_MONOTONIC when asked, for the log */
	struct proc_snap *snap; /* REQ_ADD: its mappings, read by the caller; or NULL */
};

/*
 * Executables whose runtime the thread was asked to look for (unwinder_hint()),
 * by the identity of a first read's first mapping: direct-mapped, so that a
 * program started again and again asks once (while its slot lasts).
 */
#define HINTS 256

/* One loaded process: the tables its entry in the procs map refers to. */
struct proc {
	pid_t pid;
	uint32_t missing;      /* tables it waits for (jobs), at its last scan */
	struct table **tables; /* a reference held on each */
	size_t ntables;
	int64_t scanned_ns;	/* CLOCK_MONOTONIC of the last read of its mappings */
	int64_t rescan_ns;	/* the least time before a rescan */
	int64_t leaf_rescan_ns; /* the same for a leaf outside its mappings; 0: the least */
	uint64_t maps_hash;	/* of what the last read gave the walk */
	/*
	 * Its last read while tables of it are being built, or for good one
	 * made at its exit (procsnap_at_exit): what its scans read once it is
	 * gone (/proc has none of it).
	 */
	struct proc_snap *kept;
	bool exited; /* its exit came while tables of it were built: forgotten once they are */
};

struct unwinder {
	struct unwinder_fds fds;
	size_t rows_cap;       /* rows the rows map holds */
	struct hostrows *host; /* the deferred walks' view of the rows map */

	/* the thread's own state: nobody else touches it */
	struct tablecache tables; /* by file identity and by id (tablecache.h) */
	void *procs;		  /* tsearch tree of struct proc by pid */
	size_t nprocs;
	struct table vdso;
	uint64_t vdso_size;
	uint64_t tick;
	uint32_t gen; /* of the last procs entry written */
	struct ember_unwind_proc *scratch;
	struct jobqueue jobs; /* the tables to compile, who waits for each (jobqueue.h) */

	/* shared with the other threads, under the worker's lock; its done means idle */
	struct worker worker;
	/*
	 * Processes asked for and not exited since: an exec or exit of any other
	 * costs nothing. Past ASKED_MAX (exit events lost), every one is handled.
	 */
	void *asked; /* tsearch tree of pids, as pointers */
	size_t nasked;
	bool asked_over;
	struct req q[QUEUE_MAX];
	size_t qhead, qn;
	/* the callers' (unwinder_hint(), one thread's): asked already */
	struct file_key hinted[HINTS];
	bool busy;
	/*
	 * The stale map has entries to look at (unwinder_stale()): the thread
	 * sleeps without a timeout otherwise, since each wakeup of an idle
	 * daemon costs it more than its whole steady interval's work.
	 */
	bool stale;
	/* when marks the thread keeps for their backoff fall due (its timer), or -1 */
	int64_t stale_due;
	struct unwinder_stats st;
	/* what became of processes, for the loop (unwinder_read_events()) */
	struct outbox out;
};

/* Tells the loop, if it listens, what became of pid's entry. */
static void notify(struct unwinder *u, pid_t pid, enum unwinder_event ev)
{
	struct outbox_msg *m = outbox_msg_new(&u->out, pid, ev, false);

	if (m)
		outbox_post(&u->out, m);
}

static void proc_unref(struct proc *p)
{
	for (size_t i = 0; i < p->ntables; i++)
		p->tables[i]->ext.refs--;
	free(p->tables);
	p->tables = NULL;
	p->ntables = 0;
}

/* A process forgotten, lent to the loop with its tables (proc_drop()): back. */
static void give_back(void *lent)
{
	proc_unref(lent);
	free(lent);
}

/* The processes the loop has walked the samples of with their tables: those tables unused. */
static void take_back(struct unwinder *u)
{
	struct outbox_msg *back = outbox_take_back(&u->out);

	for (struct outbox_msg *m = back; m; m = m->next)
		give_back(m->lent);
	outbox_msg_free(back);
}

static int cmp_proc(const void *a, const void *b)
{
	pid_t x = ((const struct proc *)a)->pid, y = ((const struct proc *)b)->pid;

	return x < y ? -1 : x > y;
}

/* --- the maps ------------------------------------------------------------------------ */

static int create_maps(struct unwinder *u, uint64_t cap_bytes, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_map_create_opts, noprealloc, .map_flags = BPF_F_NO_PREALLOC);
	uint64_t blocks = cap_bytes / BLOCK_BYTES;

	if (blocks < 1)
		blocks = 1;
	if (blocks > UINT32_MAX / ROWS_PER_BLOCK)
		blocks = UINT32_MAX / ROWS_PER_BLOCK;
	/* elements allocated as tables are written: the cap bounds them, nothing is taken at start */
	u->fds.rows = bpf_map_create(BPF_MAP_TYPE_HASH, "unwind_rows", 4, BLOCK_BYTES, blocks,
				     &noprealloc);
	u->fds.tables =
		bpf_map_create(BPF_MAP_TYPE_ARRAY, "unwind_tables", 4,
			       sizeof(struct ember_unwind_table), EMBER_UNWIND_TABLES_MAX, NULL);
	u->fds.procs = bpf_map_create(BPF_MAP_TYPE_HASH, "unwind_procs", 4,
				      sizeof(struct ember_unwind_proc), EMBER_UNWIND_PROCS_MAX,
				      &noprealloc);
	u->fds.stale = bpf_map_create(BPF_MAP_TYPE_LRU_HASH, "unwind_stale", 4, 1, STALE_MAX, NULL);
	u->fds.execs = bpf_map_create(BPF_MAP_TYPE_LRU_HASH, "unwind_execs", 4, 8,
				      EMBER_UNWIND_EXECS_MAX, NULL);
	u->fds.rt_exes =
		bpf_map_create(BPF_MAP_TYPE_LRU_HASH, "rt_exes", sizeof(struct ember_rt_exe_key),
			       sizeof(struct ember_rt_exe), EMBER_RT_EXES_MAX, NULL);
	if (u->fds.rows < 0 || u->fds.tables < 0 || u->fds.procs < 0 || u->fds.stale < 0 ||
	    u->fds.execs < 0 || u->fds.rt_exes < 0) {
		int rc = -errno;

		snprintf(err, errlen,
			 "cannot create the unwind tables' maps (%" PRIu64 " MiB of rows): %s",
			 cap_bytes >> 20, strerror(errno));
		return rc;
	}
	u->rows_cap = blocks * ROWS_PER_BLOCK;
	u->st.cap_bytes = u->rows_cap * sizeof(struct ember_unwind_row);
	return 0;
}

static void publish_table(struct unwinder *u, uint32_t id, uint32_t first, uint32_t nrows)
{
	struct ember_unwind_table v = {.first = first, .nrows = nrows};

	bpf_map_update_elem(u->fds.tables, &id, &v, BPF_ANY);
}

/* Blocks deleted by one system call. */
#define DELETE_BATCH 256

/* Deletes the blocks of rows [first, first + nrows): their memory goes back to the kernel. */
static void delete_rows(struct unwinder *u, uint32_t first, uint32_t nrows)
{
	uint32_t keys[DELETE_BATCH], b = first / ROWS_PER_BLOCK,
				     end = b + (nrows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK;

	while (b < end) {
		uint32_t count = 0;

		for (; count < DELETE_BATCH && b < end; count++)
			keys[count] = b++;
		bpf_map_delete_batch(u->fds.rows, keys, &count, NULL);
	}
}

/* t's file as the kernel names it (the rt_exes map's key). */
static struct ember_rt_exe_key exe_key(const struct table *t)
{
	return (struct ember_rt_exe_key){.dev = (uint64_t)major((dev_t)t->key.dev) << 20 |
						minor((dev_t)t->key.dev),
					 .ino = t->key.ino};
}

/*
 * Drops a loaded table nobody uses: the walk stops using it before its rows
 * are deleted (a walk still in them finds none: it ends there).
 */
static void evict(struct unwinder *u, struct table *t)
{
	struct ember_rt_exe_key k = exe_key(t);

	if (t->rt.kind == EMBER_RT_PYTHON)
		bpf_map_delete_elem(u->fds.rt_exes, &k);
	publish_table(u, t->id, 0, 0);
	hostrows_drop(u->host, t->id);
	delete_rows(u, t->ext.first, t->ext.nrows);
	tablecache_remove(&u->tables, t);
	worker_lock(&u->worker);
	u->st.tables--;
	u->st.used_bytes -= (uint64_t)t->ext.nrows * sizeof(struct ember_unwind_row);
	u->st.evicted++;
	worker_unlock(&u->worker);
	free(t);
}

/*
 * Room for n rows and an id, evicting unused tables, least recently used
 * first (rowspace.h). 0, or -ENOSPC when the cap is full of tables in use.
 */
static int make_room(struct unwinder *u, size_t n, uint32_t *id, uint32_t *first)
{
	const struct rowspace_extent *v[EMBER_UNWIND_TABLES_MAX];

	take_back(u); /* tables the loop no longer walks with may go */
	for (size_t i = 0; i < EMBER_UNWIND_TABLES_MAX; i++)
		v[i] = u->tables.by_id[i] ? &u->tables.by_id[i]->ext : NULL;
	for (;;) {
		int64_t f =
			rowspace_fit(v, EMBER_UNWIND_TABLES_MAX, u->rows_cap, ROWS_PER_BLOCK, n);
		int64_t i = rowspace_free_id(v, EMBER_UNWIND_TABLES_MAX);
		int64_t victim;

		if (f >= 0 && i >= 0) {
			*first = (uint32_t)f;
			*id = (uint32_t)i;
			return 0;
		}
		victim = rowspace_victim(v, EMBER_UNWIND_TABLES_MAX);
		if (victim < 0)
			return -ENOSPC;
		evict(u, u->tables.by_id[victim]);
		v[victim] = NULL;
	}
}

/* --- tables ------------------------------------------------------------------------------ */

/* Blocks written by one system call: 62 KiB, a buffer the heap reuses (no mmap each time). */
#define WRITE_BATCH 16

/*
 * Writes rows into the rows map from row first (a block boundary) on, block by
 * block; the last block's tail repeats the last row. Through system calls
 * rather than an mmap, whose pages would all count in emberd's RSS.
 */
static int write_rows(struct unwinder *u, uint32_t first, const struct ember_unwind_row *rows,
		      size_t n)
{
	uint32_t keys[WRITE_BATCH];
	struct ember_unwind_row *vals = malloc(WRITE_BATCH * BLOCK_BYTES);
	size_t done = 0;
	int rc = 0;

	if (!vals)
		return -ENOMEM;
	while (!rc && done < n) {
		uint32_t count = 0;

		for (; count < WRITE_BATCH && done < n; count++) {
			keys[count] = (first + done) / ROWS_PER_BLOCK;
			for (size_t j = 0; j < ROWS_PER_BLOCK; j++)
				vals[count * ROWS_PER_BLOCK + j] =
					rows[done + j < n ? done + j : n - 1];
			done += ROWS_PER_BLOCK;
		}
		if (bpf_map_update_batch(u->fds.rows, keys, vals, &count, NULL))
			rc = -errno;
	}
	free(vals);
	return rc;
}

/* Copies a compiled table into the rows map and publishes it. 0 or -ENOSPC. */
static int load_table(struct unwinder *u, struct table *t, const struct unwtab *tab)
{
	uint32_t id, first;
	int rc;

	if (tab->nrows > EMBER_UNWIND_ROWS_PER_TABLE_MAX || tab->nrows > u->rows_cap)
		return -ENOSPC;
	rc = make_room(u, tab->nrows, &id, &first);
	if (!rc)
		rc = write_rows(u, first, tab->rows, tab->nrows);
	if (rc)
		return rc;
	if (hostrows_add(u->host, id, first, tab->rows, tab->nrows))
		log_debug("unwinder: out of memory: table %u not walked on the host", id);
	t->id = id;
	t->ext.first = first;
	t->ext.nrows = tab->nrows;
	t->base = tab->base;
	t->nsegs = tab->nsegs;
	memcpy(t->segs, tab->segs, sizeof(t->segs));
	tablecache_place(&u->tables, t);
	publish_table(u, id, first, tab->nrows);
	worker_lock(&u->worker);
	u->st.tables++;
	u->st.used_bytes += (uint64_t)tab->nrows * sizeof(struct ember_unwind_row);
	worker_unlock(&u->worker);
	return 0;
}

/*
 * A supported CPython in t's file, told to the kernel by file: the samples of
 * a process started from it, taken before the process is loaded, read its
 * frames then (bpf/fold.bpf.h's defer_runtime()). Where the file is no
 * program but a library, its entry is never looked up.
 */
static void publish_exe_runtime(struct unwinder *u, const struct table *t, Elf *elf)
{
	struct ember_rt_exe v = {.rt = t->rt};
	struct ember_rt_exe_key k = exe_key(t);
	uint64_t code_vaddr;

	if (t->rt.kind != EMBER_RT_PYTHON || (t->rt.flags & EMBER_RT_F_UNSUPPORTED) ||
	    !rt_code_vaddr(elf, &code_vaddr))
		return;
	v.code_vaddr = code_vaddr;
	if (bpf_map_update_elem(u->fds.rt_exes, &k, &v, BPF_ANY))
		log_debug("unwinder: cannot tell the kernel of the runtime in %" PRIu64 ":%" PRIu64
			  ": %s",
			  (uint64_t)t->key.dev, (uint64_t)t->key.ino, strerror(errno));
}

/* The runtime fd's file holds (CPython's eval loop, V8), for the walk to read its frames. */
static void table_runtime(struct unwinder *u, struct table *t, int fd)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);

	if (elf && rt_detect(elf, fd, &t->rt)) {
		log_debug("unwinder: a runtime in %" PRIu64 ":%" PRIu64 " (kind %u, version %#x%s)",
			  (uint64_t)t->key.dev, (uint64_t)t->key.ino, t->rt.kind, t->rt.version,
			  t->rt.flags & EMBER_RT_F_UNSUPPORTED ? ", not supported" : "");
		publish_exe_runtime(u, t, elf);
	}
	elf_end(elf);
}

/* Compiles and loads the table of fd's file into t; on failure t is a negative entry. */
static void build_table(struct unwinder *u, struct table *t, int fd, const void *image, size_t len)
{
	struct unwtab tab = {0};
	enum unwtab_err why = UNWTAB_OK;
	int64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	int rc;

	rc = image ? unwtab_build_mem(image, len, &tab, &why) : unwtab_build_fd(fd, &tab, &why);
	if (!rc && !tab.nrows) {
		rc = -ENOENT;
		why = UNWTAB_E_NO_CFI;
	}
	t->id = NO_ID;
	if (!rc) {
		rc = load_table(u, t, &tab);
		if (rc)
			why = UNWTAB_E_NR; /* not the file's fault: the cap is full */
	}
	t->err = rc ? why : UNWTAB_OK;
	if (!rc && fd >= 0)
		table_runtime(u, t, fd);
	unwtab_free(&tab);
	worker_lock(&u->worker);
	u->st.build_ns += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	if (!rc)
		u->st.built++;
	else if (why == UNWTAB_E_NR)
		u->st.cap_full++;
	else if (why < UNWTAB_E_NR)
		u->st.failed[why]++;
	worker_unlock(&u->worker);
}

/*
 * A table already known (loaded, or negative) for mapping m of pid, by one
 * stat(), or none when its snapshot (snap_err 0: snap_key; else the error)
 * says who m's file is.
 */
static struct table *table_cached(struct unwinder *u, pid_t pid, const struct proc_map *m,
				  const struct file_key *snap_key, int snap_err,
				  struct file_key *key)
{
	struct file_key k = {0};

	memset(key, 0, sizeof(*key));
	if (snap_key)
		k = *snap_key;
	else if (snap_err != -ENODATA || mapfile_key(pid, m, &k))
		return NULL;
	*key = k;
	return tablecache_find(&u->tables, key);
}

/*
 * Opens job j's file: through the process that asked first, else through
 * another that waits for it, else by its path in emberd's own root; those
 * last only if they are the very file the job was made for. A short program's
 * processes are often all gone by the time its job runs.
 */
static int job_open(const struct job *j, struct stat *st)
{
	int fd = mapfile_open(j->pids[0], &j->m, st);

	for (size_t k = 1; fd < 0 && j->key.size && k <= j->npids; k++) {
		struct file_key key;

		fd = k < j->npids ? mapfile_open(j->pids[k], &j->m, st) :
				    mapfile_open_regular(j->m.path, st);
		if (fd < 0)
			continue;
		key = file_key_of(st);
		if (file_key_cmp(&key, &j->key)) {
			close(fd);
			fd = -ESTALE;
		}
	}
	return fd;
}

/*
 * Compiles the table of job j's file, unless it is known by now. The table,
 * a negative entry (id NO_ID: no usable CFI), or NULL when the file cannot be
 * opened or there is no room.
 */
static struct table *table_build(struct unwinder *u, const struct job *j)
{
	struct file_key key;
	struct stat st;
	struct table *t;
	int fd;

	fd = job_open(j, &st);
	if (fd < 0) {
		worker_lock(&u->worker);
		u->st.open_failed++;
		worker_unlock(&u->worker);
		return NULL;
	}
	key = file_key_of(&st);
	t = tablecache_find(&u->tables, &key);
	if (t) {
		close(fd);
		return t;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		close(fd);
		return NULL;
	}
	t->key = key;
	build_table(u, t, fd, NULL, 0);
	close(fd);
	log_debug("unwinder: the table of %s (%" PRIu64 ":%" PRIu64 ") built%s", j->m.path,
		  (uint64_t)t->key.dev, (uint64_t)t->key.ino,
		  t->id == NO_ID ? ", none usable" : "");
	if (t->id == NO_ID && t->err == UNWTAB_E_NR) { /* no room: try again another time */
		free(t);
		return NULL;
	}
	if (!tablecache_insert(&u->tables, t)) {
		if (t->id != NO_ID)
			evict(u, t);
		else
			free(t);
		return NULL;
	}
	return t;
}

/*
 * pid's executable, its runtime told to the kernel now, unless its table is
 * built (which told it): the table waits behind every smaller file's and the
 * one being built (python3.11 started 50 ms after node, in a fresh emberd:
 * 2.8% of its samples had no Python frames, 0.7-1.4% with this).
 */
static void exe_runtime(struct unwinder *u, pid_t pid)
{
	struct table probe = {0};
	struct stat st;
	char path[32];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return; /* gone, or a kernel thread */
	if (!fstat(fd, &st) && S_ISREG(st.st_mode)) {
		probe.key = file_key_of(&st);
		if (!tablecache_find(&u->tables, &probe.key))
			table_runtime(u, &probe, fd);
		if (probe.rt.kind)
			log_debug(
				"unwinder: pid %d: its executable's runtime told before its table "
				"is built",
				(int)pid);
	}
	close(fd);
}

/* Our own vDSO: the kernel maps the same image into every 64-bit process. */
static void vdso_build(struct unwinder *u)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	struct proc_maps maps = {0};
	const struct proc_map *m;

	u->vdso.id = NO_ID;
	u->vdso.vdso = true;
	u->vdso.ext.pinned = true;
	if (!base || procmaps_read(getpid(), &maps))
		return;
	m = procmaps_find(&maps, base);
	if (m && m->start == base && m->path && !strcmp(m->path, "[vdso]")) {
		u->vdso_size = m->end - m->start;
		build_table(u, &u->vdso, -1, (const void *)(uintptr_t)base, u->vdso_size);
	}
	procmaps_free(&maps);
}

/*
 * The bias of mapping m for table t (row pc = address - bias): the address of
 * m's first byte is at ELF vaddr seg.vaddr + (m.offset - seg.offset) of the
 * executable segment whose file range holds m's offset. false when none does.
 */
static bool map_bias(const struct table *t, const struct proc_map *m, uint64_t *bias)
{
	long page = sysconf(_SC_PAGESIZE);

	for (size_t i = 0; i < t->nsegs; i++) {
		const struct unwtab_seg *s = &t->segs[i];
		uint64_t lo = s->offset & ~(uint64_t)(page - 1);

		if (m->offset >= lo && m->offset < s->offset + s->filesz) {
			*bias = m->start - (s->vaddr + (m->offset - s->offset)) + t->base;
			return true;
		}
	}
	return false;
}

/* --- processes ----------------------------------------------------------------------------- */

static struct proc *proc_find(struct unwinder *u, pid_t pid)
{
	struct proc probe = {.pid = pid}, **found = tfind(&probe, &u->procs, cmp_proc);

	return found ? *found : NULL;
}

/*
 * Forgets pid, told to the loop as ev (dropping: with a copy of its entry,
 * its tables kept until the samples that wait for it are walked with them;
 * or an exec).
 */
static void proc_drop(struct unwinder *u, pid_t pid, enum unwinder_event ev)
{
	struct proc *p = proc_find(u, pid);
	struct outbox_msg *m;

	if (!p)
		return;
	log_debug("unwinder: pid %d forgotten%s", (int)pid, ev == UNWINDER_EXEC ? " (exec)" : "");
	m = outbox_msg_new(&u->out, pid, ev, ev == UNWINDER_DROPPING);
	if (m && m->entry && bpf_map_lookup_elem(u->fds.procs, &pid, m->entry)) {
		free(m->entry);
		m->entry = NULL;
	}
	bpf_map_delete_elem(u->fds.procs, &pid);
	procsnap_unref(p->kept);
	p->kept = NULL;
	tdelete(p, &u->procs, cmp_proc);
	if (m && m->entry)
		m->lent = p;
	else
		give_back(p);
	if (m)
		outbox_post(&u->out, m);
	u->nprocs--;
	worker_lock(&u->worker);
	u->st.procs = u->nprocs;
	worker_unlock(&u->worker);
}

static void proc_forget(struct unwinder *u, pid_t pid)
{
	proc_drop(u, pid, UNWINDER_DROPPING);
}

/*
 * The table of one mapping: its file's, the vDSO's, or none (JIT code,
 * anonymous memory). A file's not compiled yet becomes a job: *missing counts
 * those, with which the process is loaded again once they are built.
 */
static struct table *mapping_table(struct unwinder *u, const struct proc_snap *snap, size_t i,
				   uint32_t *missing)
{
	const struct proc_map *m = &snap->maps.v[i];
	const struct file_key *snap_key = NULL;
	int snap_err = procsnap_key(snap, i, &snap_key);
	pid_t pid = snap->pid;
	struct file_key key;
	struct table *t;

	if (!m->path)
		return NULL;
	if (!strcmp(m->path, "[vdso]"))
		return u->vdso.id != NO_ID && m->end - m->start == u->vdso_size ? &u->vdso : NULL;
	if (m->path[0] != '/')
		return NULL;
	t = table_cached(u, pid, m, snap_key, snap_err, &key);
	/*
	 * A file whose identity cannot be read (deleted, and map_files denied)
	 * is no job: its table, built, could never be found again, and the
	 * process would be rescanned for it forever.
	 */
	if (!t && key.ino && jobqueue_add(&u->jobs, pid, m, &key))
		(*missing)++;
	return t;
}

/* Fills the scratch entry with a process's executable mappings; the tables it uses go in used. */
static size_t fill_entry(struct unwinder *u, const struct proc_snap *snap, struct table **used,
			 size_t *nused, uint32_t *missing)
{
	const struct proc_maps *maps = &snap->maps;
	struct ember_unwind_proc *e = u->scratch;
	size_t n = 0, over = 0;

	memset(e, 0, sizeof(*e));
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];
		struct ember_unwind_map *em;
		struct table *t;
		uint64_t bias;

		if (!(m->perms & PROCMAP_X) || m->start >= (1ull << 56))
			continue; /* [vsyscall] lies in the kernel's half */
		if (n == EMBER_UNWIND_MAPS_MAX) {
			over++;
			continue;
		}
		em = &e->maps[n++];
		em->start = m->start;
		em->end = m->end;
		em->table = EMBER_UNWIND_NO_TABLE;
		t = mapping_table(u, snap, i, missing);
		if (t && t->id != NO_ID && map_bias(t, m, &bias)) {
			em->bias = bias;
			em->table = t->id;
			if (t->rt.kind != EMBER_RT_NONE && e->rt.kind == EMBER_RT_NONE) {
				/* ELF vaddr v is at v - base + bias in the process */
				e->rt = t->rt;
				rt_relocate(&e->rt, bias - t->base);
			}
			t->ext.used = u->tick;
			t->ext.refs++;
			used[(*nused)++] = t;
		}
	}
	e->nmaps = n;
	e->gen = ++u->gen;     /* the walk's cached frames of this process are stale */
	e->pending = *missing; /* its samples are walked by the daemon until they are built */
	return over;
}

/* What an entry gives the walk, for telling whether a rescan found anything new. */
static uint64_t entry_hash(const struct ember_unwind_proc *e)
{
	/* tables still to build: the walk hands its samples over until the entry says none */
	uint64_t h =
		(0xcbf29ce484222325ULL ^ e->pending ^ (uint64_t)e->rt.kind << 32 ^ e->rt.text[0]) *
		0x100000001b3ULL;

	for (uint32_t i = 0; i < e->nmaps && i < EMBER_UNWIND_MAPS_MAX; i++)
		h = (h ^ e->maps[i].start ^ e->maps[i].end << 1 ^ e->maps[i].table) *
		    0x100000001b3ULL;
	return h;
}

/*
 * Keeps snap as p's mappings while tables of it are built, or if it was read
 * at the process's exit: the scans once it is gone read it.
 */
static void keep_snap(struct proc *p, struct proc_snap *snap)
{
	if (p->kept == snap)
		return;
	procsnap_unref(p->kept);
	p->kept = p->missing || procsnap_at_exit(snap) ? procsnap_ref(snap) : NULL;
}

/*
 * pid exited: forgotten now, or, with tables of it still being built, once
 * they are (its samples may wait for them: daemon/sample/deferred.c).
 */
static void proc_exit(struct unwinder *u, pid_t pid)
{
	struct proc *p = proc_find(u, pid);

	if (p && p->kept && p->missing) {
		p->exited = true;
		return;
	}
	proc_forget(u, pid);
}

static void proc_scan(struct unwinder *u, pid_t pid, int64_t asked_ns, struct proc_snap *snap);

/*
 * Writes pid's entry (the scratch one) from snap. -ESTALE, and no entry left,
 * when pid exec'd since snap was read: the exec deleted the entry in the
 * kernel before this write, and the new program's samples are not walked
 * with the old one's tables. The lookup is after the write: an exec after it
 * deletes the entry itself (bpf/proc.bpf.c writes its time first).
 */
static int write_entry(struct unwinder *u, pid_t pid, const struct proc_snap *snap)
{
	uint64_t exec_ns;

	if (bpf_map_update_elem(u->fds.procs, &pid, u->scratch, BPF_ANY))
		return -errno;
	if (snap->read_ns && !bpf_map_lookup_elem(u->fds.execs, &pid, &exec_ns) &&
	    (int64_t)exec_ns >= snap->read_ns) {
		bpf_map_delete_elem(u->fds.procs, &pid);
		return -ESTALE;
	}
	return 0;
}

/*
 * A read of p's mappings that failed with rc found it gone before its exit
 * reached the unwinder (a rescan after a job, or of the stale map): with
 * tables of it still being built, it is taken as exited, its kept mappings
 * loaded, so that its samples wait for them as after its exit.
 */
static bool gone_first(struct proc *p, int rc)
{
	if (!p || !p->kept || !p->missing || (rc != -ESRCH && rc != -ENOENT))
		return false;
	p->exited = true;
	return true;
}

/*
 * The daemon adds pid: a process gone whose exit came before (its tables still
 * being built) is another under the same pid, unless snap is its exit's.
 */
static void proc_add(struct unwinder *u, pid_t pid, int64_t asked_ns, struct proc_snap *snap)
{
	struct proc *p = proc_find(u, pid);

	if (p && p->exited && !(snap && procsnap_at_exit(snap)))
		p->exited = false;
	proc_scan(u, pid, asked_ns, snap);
}

/*
 * Gives the walk the tables of pid's mappings: those of snap (a read the
 * caller made) or, without one, read now.
 */
static void proc_scan(struct unwinder *u, pid_t pid, int64_t asked_ns, struct proc_snap *snap)
{
	struct table **used = NULL;
	struct proc *p = proc_find(u, pid);
	enum unwinder_event ev;
	size_t nused = 0, over;
	uint32_t missing = 0;
	uint64_t h;
	int64_t t0 = mono_ns();
	int rc = 0;

	u->tick++;
	if (!snap && p && p->exited)
		snap = p->kept; /* gone: its tables were built, it is loaded with them */
	if (!snap) {
		/* the files identified now: kept, the read serves once the process is gone */
		rc = procsnap_read(pid, p ? p->kept : NULL, &snap);
		if (gone_first(p, rc)) {
			snap = procsnap_ref(p->kept);
			rc = 0;
		}
	} else {
		procsnap_ref(snap);
	}
	if (rc) {
		/* gone, no longer readable, or exiting (a zombie maps nothing): not loaded */
		if (p)
			proc_forget(u, pid);
		else
			notify(u, pid, UNWINDER_DROPPING);
		return;
	}
	used = calloc(snap->maps.n ? snap->maps.n : 1, sizeof(*used));
	if (!used) {
		procsnap_unref(snap);
		return;
	}
	over = fill_entry(u, snap, used, &nused, &missing);
	h = entry_hash(u->scratch);
	if (p && h == p->maps_hash)
		rc = 0; /* nothing new: the walk keeps its entry, and the frames it cached */
	else
		rc = write_entry(u, pid, snap);
	if (!p && !rc) {
		p = calloc(1, sizeof(*p));
		if (p)
			p->pid = pid; /* the tree's key: set before the insert */
		if (p && tsearch(p, &u->procs, cmp_proc)) {
			u->nprocs++;
		} else {
			free(p);
			p = NULL;
			bpf_map_delete_elem(u->fds.procs, &pid);
			rc = -ENOMEM;
		}
	}
	if (rc) { /* not loaded: its stacks are walked with frame pointers */
		for (size_t i = 0; i < nused; i++)
			used[i]->ext.refs--;
		free(used);
		ev = rc == -ESTALE ? UNWINDER_EXEC : UNWINDER_DROPPING;
		/*
		 * exec'd since the read (its exec's event, read later, finds
		 * none), or gone and its entry could not be written again
		 */
		if (p && (rc == -ESTALE || p->exited))
			proc_drop(u, pid, ev);
		else
			notify(u, pid, ev);
	} else {
		proc_unref(p); /* the tables of its previous mappings (before an exec) */
		p->tables = used;
		p->ntables = nused;
		p->missing = missing;
		p->scanned_ns = mono_ns();
		if (h == p->maps_hash && p->rescan_ns)
			p->rescan_ns =
				p->rescan_ns < RESCAN_MAX_NS ? 2 * p->rescan_ns : RESCAN_MAX_NS;
		else
			p->rescan_ns = RESCAN_MIN_NS;
		p->maps_hash = h;
		log_debug("unwinder: pid %d: %zu of %u mappings with a table (%u to build), in "
			  "%.1f ms, %.1f ms after it was asked%s",
			  (int)pid, nused, u->scratch->nmaps, missing, (p->scanned_ns - t0) / 1e6,
			  (p->scanned_ns - asked_ns) / 1e6,
			  procsnap_at_exit(snap) ? " (mappings read at its exit)" : "");
		keep_snap(p, snap);
		notify(u, pid, missing ? UNWINDER_BUILDING : UNWINDER_LOADED);
		if (p->exited && !missing)
			proc_forget(u, pid); /* its samples were walked with every table */
	}
	procsnap_unref(snap);
	worker_lock(&u->worker);
	u->st.procs = u->nprocs;
	u->st.maps_over += over;
	if (rc == -E2BIG || rc == -ENOSPC)
		u->st.procs_full++;
	worker_unlock(&u->worker);
}

/*
 * Reads again the processes the walk found a frame outside of every known
 * mapping in. Returns when the first of those read too recently to be read
 * again is due (they stay in the map), or -1 when none waits.
 */
static int64_t rescan_stale(struct unwinder *u)
{
	uint32_t keys[STALE_MAX], key, next;
	size_t n = 0;
	int64_t now = mono_ns(), due = -1;

	if (bpf_map_get_next_key(u->fds.stale, NULL, &key))
		return -1;
	do {
		keys[n++] = key;
		if (bpf_map_get_next_key(u->fds.stale, &key, &next))
			break;
		key = next;
	} while (n < STALE_MAX);
	for (size_t i = 0; i < n; i++) {
		struct proc *p = proc_find(u, keys[i]);
		uint8_t how = EMBER_UNWIND_STALE_CALLER;
		bool leaf;
		uint64_t h;
		int64_t wait;

		bpf_map_lookup_elem(u->fds.stale, &keys[i], &how);
		leaf = how >= EMBER_UNWIND_STALE_LEAF;
		wait = !p		 ? 0 :
		       !leaf		 ? p->rescan_ns :
		       p->leaf_rescan_ns ? p->leaf_rescan_ns :
					   RESCAN_LEAF_MIN_NS;
		if (p && now - p->scanned_ns < wait) {
			/* stays in the map: looked at again when due */
			if (due < 0 || p->scanned_ns + wait < due)
				due = p->scanned_ns + wait;
			continue;
		}
		bpf_map_delete_elem(u->fds.stale, &keys[i]);
		if (!p)
			continue;
		h = p->maps_hash;
		proc_scan(u, keys[i], now, NULL);
		p = proc_find(u, keys[i]); /* gone if it exited */
		if (p && leaf)		   /* twice as late when the read found nothing new */
			p->leaf_rescan_ns = h != p->maps_hash	 ? RESCAN_LEAF_MIN_NS :
					    wait < RESCAN_MAX_NS ? 2 * wait :
								   RESCAN_MAX_NS;
		worker_lock(&u->worker);
		u->st.rescans++;
		worker_unlock(&u->worker);
	}
	return due;
}

/*
 * Loads pid again, after a job it waited for (built: the job made its table).
 * One gone (its exit came while it waited) that still misses tables after a
 * job that failed is forgotten, its samples walked with the tables it has:
 * its files may be out of reach (/proc has no more of it), and jobs for them
 * would fail alike forever.
 */
static void rescan_or_drop(struct unwinder *u, pid_t pid, bool built)
{
	struct proc *p = proc_find(u, pid);

	if (!p)
		return;
	proc_scan(u, pid, mono_ns(), NULL);
	p = proc_find(u, pid);
	if (p && p->exited && p->missing && !built)
		proc_forget(u, pid);
}

/* Compiles one pending table and loads again the processes that wait for it. */
static void run_job(struct unwinder *u)
{
	struct job j;
	struct table *t;

	if (!jobqueue_take(&u->jobs, &j))
		return;
	t = table_build(u, &j);
	for (size_t i = 0; i < j.npids; i++)
		rescan_or_drop(u, j.pids[i], t != NULL);
	job_free(&j);
}

/*
 * Once every job is done: loads again whoever still waits (beyond
 * JOBQUEUE_WAITERS, or a failed job).
 */
static void gather_waiting(const void *node, VISIT which, void *arg)
{
	struct proc *p = *(struct proc *const *)node;
	pid_t **out = arg;

	if ((which == postorder || which == leaf) && p->missing)
		*(*out)++ = p->pid;
}

static void rescan_waiting(struct unwinder *u)
{
	pid_t *v = calloc(u->nprocs + 1, sizeof(*v)), *end = v;

	if (!v)
		return;
	twalk_r(u->procs, gather_waiting, &end);
	for (pid_t *p = v; p < end; p++)
		rescan_or_drop(u, *p, false);
	free(v);
}

/* --- the thread ---------------------------------------------------------------------------- */

static void unwinder_main(struct worker *w, void *arg)
{
	struct unwinder *u = arg;
	int64_t due;

	worker_lock(w);
	while (!worker_stopping(w)) {
		if (!u->qn && u->jobs.n) {
			/* processes first: one job at a time, between requests */
			worker_unlock(&u->worker);
			run_job(u);
			if (!u->jobs.n)
				rescan_waiting(u);
			worker_lock(&u->worker);
		} else if (!u->qn && !u->stale) {
			int64_t left = u->stale_due - mono_ns();

			u->busy = false;
			worker_done(w);
			/* no timeout unless processes kept in the stale map fall due */
			worker_wait(w, u->stale_due < 0 ? -1 : left > 0 ? left : 0);
		}
		if (worker_stopping(w))
			break;
		if (u->qn) {
			struct req r = u->q[u->qhead];

			u->qhead = (u->qhead + 1) % QUEUE_MAX;
			u->qn--;
			u->busy = true;
			worker_unlock(&u->worker);
			take_back(u);
			if (r.op == REQ_ADD)
				proc_add(u, r.pid, r.ns, r.snap);
			else if (r.op == REQ_EXIT)
				proc_exit(u, r.pid);
			else if (r.op == REQ_RUNTIME)
				exe_runtime(u, r.pid);
			else
				proc_drop(u, r.pid, UNWINDER_EXEC);
			procsnap_unref(r.snap);
			worker_lock(&u->worker);
		}
		if (u->stale || (u->stale_due >= 0 && mono_ns() >= u->stale_due)) {
			u->stale = false;
			worker_unlock(&u->worker);
			due = rescan_stale(u);
			worker_lock(&u->worker);
			u->stale_due = due;
		}
	}
	u->busy = false;
	worker_done(w);
	worker_unlock(w);
	jobqueue_free(&u->jobs);
}

static int cmp_asked(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

	return x < y ? -1 : x > y;
}

static void *pid_key(pid_t pid)
{
	return (void *)(uintptr_t)(uint32_t)pid;
}

/* Under the lock: remembers pid as asked for. */
static void asked_add(struct unwinder *u, pid_t pid)
{
	if (u->asked_over || tfind(pid_key(pid), &u->asked, cmp_asked))
		return;
	if (u->nasked >= ASKED_MAX || !tsearch(pid_key(pid), &u->asked, cmp_asked)) {
		u->asked_over = true; /* from now on, every exit and exec is handled */
		return;
	}
	u->nasked++;
}

/* Under the lock: forgets pid; whether it had been asked for (or may have been). */
static bool asked_drop(struct unwinder *u, pid_t pid)
{
	if (tdelete(pid_key(pid), &u->asked, cmp_asked)) {
		u->nasked--;
		return true;
	}
	return u->asked_over;
}

/* Under the lock: queues a request (taking over snap's reference). */
static void enqueue_locked(struct unwinder *u, pid_t pid, enum req_op op, struct proc_snap *snap)
{
	if (u->qn == QUEUE_MAX) {
		u->st.queue_full++;
		procsnap_unref(snap);
		return;
	}
	u->q[(u->qhead + u->qn) % QUEUE_MAX] = (struct req){pid, op, mono_ns(), snap};
	u->qn++;
	u->busy = true;
	worker_wake_locked(&u->worker);
}

static void add(struct unwinder *u, pid_t pid, struct proc_snap *snap)
{
	worker_lock(&u->worker);
	asked_add(u, pid);
	enqueue_locked(u, pid, REQ_ADD, snap);
	worker_unlock(&u->worker);
}

void unwinder_add(struct unwinder *u, pid_t pid)
{
	if (u)
		add(u, pid, NULL);
}

void unwinder_add_snap(struct unwinder *u, struct proc_snap *snap)
{
	if (u)
		add(u, snap->pid, procsnap_ref(snap));
}

void unwinder_hint(struct unwinder *u, const struct proc_snap *snap)
{
	const struct file_key *key;
	struct file_key *slot;

	if (!u || !snap->maps.n || procsnap_key(snap, 0, &key))
		return;
	slot = &u->hinted[(key->dev * 31 + key->ino) % HINTS];
	if (!file_key_cmp(slot, key))
		return;
	*slot = *key;
	worker_lock(&u->worker);
	enqueue_locked(u, snap->pid, REQ_RUNTIME, NULL);
	worker_unlock(&u->worker);
}

bool unwinder_asked(struct unwinder *u, pid_t pid)
{
	bool asked;

	if (!u)
		return false;
	worker_lock(&u->worker);
	asked = tfind(pid_key(pid), &u->asked, cmp_asked) != NULL;
	worker_unlock(&u->worker);
	return asked;
}

/* Forgets pid if it was ever asked for; whether it was. */
static bool forget(struct unwinder *u, pid_t pid, enum req_op op)
{
	bool was;

	worker_lock(&u->worker);
	was = asked_drop(u, pid);
	if (was)
		enqueue_locked(u, pid, op, NULL);
	worker_unlock(&u->worker);
	return was;
}

void unwinder_exited(struct unwinder *u, pid_t pid)
{
	if (u)
		forget(u, pid, REQ_EXIT);
}

void unwinder_exec(struct unwinder *u, pid_t pid)
{
	/*
	 * The exec deleted its entry (bpf/proc.bpf.c); again now, in case the
	 * thread wrote it since from a read of the old program
	 */
	if (u && forget(u, pid, REQ_EXEC))
		bpf_map_delete_elem(u->fds.procs, &pid);
}

void unwinder_stale(struct unwinder *u)
{
	if (!u)
		return;
	worker_lock(&u->worker);
	u->stale = true;
	worker_wake_locked(&u->worker);
	worker_unlock(&u->worker);
}

void unwinder_check_stale(struct unwinder *u)
{
	uint32_t key;
	bool timed;

	if (!u)
		return;
	/*
	 * Marks kept for their backoff are the thread's timer's: no wakeup for
	 * them (a new mark no event reported then waits for that timer too).
	 */
	worker_lock(&u->worker);
	timed = u->stale || u->stale_due >= 0;
	worker_unlock(&u->worker);
	/* one system call, from a thread awake anyway: no wakeup of the unwinder's own */
	if (!timed && !bpf_map_get_next_key(u->fds.stale, NULL, &key))
		unwinder_stale(u);
}

void unwinder_settle(struct unwinder *u)
{
	unwinder_settle_until(u, -1);
}

bool unwinder_settle_until(struct unwinder *u, int64_t until_ns)
{
	bool settled = true;

	if (!u)
		return true;
	worker_lock(&u->worker);
	while ((u->qn || u->busy) && !worker_stopping(&u->worker) && settled) {
		if (until_ns < 0)
			worker_wait_done(&u->worker);
		else
			settled = worker_wait_done_until(&u->worker, until_ns);
	}
	settled = !u->qn && !u->busy;
	worker_unlock(&u->worker);
	return settled;
}

bool unwinder_idle(struct unwinder *u)
{
	bool idle;

	if (!u)
		return true;
	worker_lock(&u->worker);
	idle = !u->qn && !u->busy;
	worker_unlock(&u->worker);
	return idle;
}

void unwinder_stats(struct unwinder *u, struct unwinder_stats *out)
{
	struct hostrows_stats hs;

	if (!u) {
		memset(out, 0, sizeof(*out));
		return;
	}
	worker_lock(&u->worker);
	*out = u->st;
	worker_unlock(&u->worker);
	hostrows_stats(u->host, &hs);
	out->host_finds = hs.finds;
	out->host_reads = hs.reads;
	out->host_bytes = hs.bytes;
}

void unwinder_listen(struct unwinder *u, bool on)
{
	outbox_listen(&u->out, on);
}

int unwinder_events_fd(const struct unwinder *u)
{
	return outbox_fd(&u->out);
}

size_t unwinder_read_events(struct unwinder *u, outbox_fn fn, void *arg)
{
	return outbox_read(&u->out, fn, arg);
}

bool unwinder_find_rule(struct unwinder *u, uint32_t table, uint64_t pc,
			struct ember_unwind_row *out)
{
	return hostrows_find(u->host, table, pc, out);
}

uint64_t unwinder_tables_dropped(struct unwinder *u)
{
	return u ? hostrows_drops(u->host) : 0;
}

/* hostrows' reader: one block of the rows map, one system call. */
static bool read_block(void *arg, uint32_t block, struct ember_unwind_row *rows)
{
	const struct unwinder *u = arg;

	return !bpf_map_lookup_elem(u->fds.rows, &block, rows);
}

bool unwinder_runtime(void *arg, pid_t pid, struct ember_rt_proc *out)
{
	struct unwinder *u = arg;
	struct ember_unwind_proc *e;
	bool found;

	if (!u || u->fds.procs < 0)
		return false;
	e = malloc(sizeof(*e)); /* 8 KiB: once per process that has runtime frames */
	if (!e)
		return false;
	found = !bpf_map_lookup_elem(u->fds.procs, &pid, e) && e->rt.kind != EMBER_RT_NONE;
	if (found)
		*out = e->rt;
	free(e);
	return found;
}

void unwinder_fds(const struct unwinder *u, struct unwinder_fds *out)
{
	if (u)
		*out = u->fds;
	else
		*out = (struct unwinder_fds){-1, -1, -1, -1, -1, -1};
}

struct unwinder *unwinder_open(uint64_t cap_bytes, char *err, size_t errlen)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	int rc;

	if (!u)
		return NULL;
	u->fds = (struct unwinder_fds){-1, -1, -1, -1, -1, -1};
	u->stale_due = -1;
	rc = outbox_init(&u->out);
	if (rc) {
		free(u);
		errno = -rc;
		return NULL;
	}
	rc = worker_init(&u->worker);
	u->scratch = rc ? NULL : calloc(1, sizeof(*u->scratch));
	if (!rc)
		rc = u->scratch ? create_maps(u, cap_bytes ? cap_bytes : UNWINDER_DEFAULT_CAP, err,
					      errlen) :
				  -ENOMEM;
	if (!rc) {
		u->host = hostrows_new(read_block, u);
		rc = u->host ? 0 : -ENOMEM;
	}
	if (!rc) {
		vdso_build(u);
		rc = worker_start(&u->worker, "ember-unwind", unwinder_main, u);
		if (rc)
			snprintf(err, errlen, "cannot start the unwinder's thread: %s",
				 strerror(-rc));
	}
	if (rc) {
		unwinder_close(u);
		errno = -rc;
		return NULL;
	}
	return u;
}

static void no_free(void *p)
{
	(void)p;
}

static void free_proc(void *p)
{
	procsnap_unref(((struct proc *)p)->kept);
	free(((struct proc *)p)->tables);
	free(p);
}

void unwinder_close(struct unwinder *u)
{
	if (!u)
		return;
	worker_stop(&u->worker); /* joins the thread, then nothing else takes the lock */
	for (size_t i = 0; i < u->qn; i++)
		procsnap_unref(u->q[(u->qhead + i) % QUEUE_MAX].snap);
	tdestroy(u->asked, no_free);
	outbox_free(&u->out, give_back); /* before the tables the processes lent hold */
	tdestroy(u->procs, free_proc);
	tablecache_free(&u->tables);
	for (int *fd = &u->fds.rows; fd <= &u->fds.rt_exes; fd++)
		if (*fd >= 0)
			close(*fd);
	free(u->scratch);
	hostrows_free(u->host);
	free(u);
}
