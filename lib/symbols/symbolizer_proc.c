// SPDX-License-Identifier: MIT
/*
 * The symbolizer's processes: each one's mappings, read once per interval
 * and kept until the drain after its exit, and the file each mapping maps.
 */
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "procids.h"
#include "symbolizer_int.h"

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = ((const struct pid_entry *)a)->pid, y = ((const struct pid_entry *)b)->pid;

	return x < y ? -1 : x > y;
}

void pid_entry_free(void *p)
{
	struct pid_entry *pe = p;

	if (pe->before_exec)
		pid_entry_free(pe->before_exec);
	procmaps_free(&pe->maps);
	free(pe->files);
	rt_cache_free(pe->rt_names);
	free(pe);
}

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

/* Installs maps (taken over) as pe's mappings, keeping the files of those unchanged. */
static int pid_install(struct symbolizer *s, struct pid_entry *pe, struct proc_maps *maps)
{
	struct file_entry **files = calloc(maps->n ? maps->n : 1, sizeof(*files));

	if (!files) {
		procmaps_free(maps);
		return -ENOMEM;
	}
	if (pe->files)
		carry_files(pe, maps, files);
	procmaps_free(&pe->maps);
	free(pe->files);
	pe->maps = *maps;
	pe->files = files;
	pe->maps_bytes = procmaps_memory(maps) + (maps->n ? maps->n : 1) * sizeof(*files);
	pe->err = 0;
	pe->read_interval = s->interval;
	pe->maps_stale = false;
	s->st.maps_read++;
	return 0;
}

static int pid_read(struct symbolizer *s, struct pid_entry *pe)
{
	struct proc_maps maps = {};
	int err = procsnap_read_maps(pe->pid, &maps);

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
	return pid_install(s, pe, &maps);
}

static struct pid_entry *pid_find(struct symbolizer *s, pid_t pid)
{
	struct pid_entry probe = {.pid = pid}, **slot;

	if (s->last_pid && s->last_pid->pid == pid)
		return s->last_pid;
	slot = tfind(&probe, &s->pids, cmp_pid);
	return slot ? (s->last_pid = *slot) : NULL;
}

/* A new entry for pid, its mappings read from /proc (snap NULL) or copied from snap. */
static struct pid_entry *pid_new(struct symbolizer *s, pid_t pid, const struct proc_snap *snap)
{
	struct proc_maps maps;
	struct pid_entry *pe;

	if (s->n_pids >= SYM_MAX_PIDS)
		return NULL;
	pe = calloc(1, sizeof(*pe));
	if (!pe)
		return NULL;
	pe->pid = pid;
	if (!snap)
		pid_read(s, pe);
	else if (procmaps_dup(&snap->maps, &maps) || pid_install(s, pe, &maps))
		pe->err = -ENOMEM;
	if (!tsearch(pe, &s->pids, cmp_pid)) {
		pid_entry_free(pe);
		return NULL;
	}
	s->n_pids++;
	return s->last_pid = pe;
}

/* Notes pe's exit: never read again, dropped after the drain of its last samples. */
static void pid_exited(const struct symbolizer *s, struct pid_entry *pe)
{
	pe->exited = true;
	pe->exit_flip = s->flips.n;
}

uid_t pid_uid(struct symbolizer *s, struct pid_entry *pe)
{
	struct proc_ids ids;

	if (pe->uid_interval != s->interval + 1) {
		pe->uid = procids_read(pe->pid, &ids) ? SYMSHARE_NO_UID : ids.ruid;
		pe->uid_interval = s->interval + 1;
	}
	return pe->uid;
}

/* The process's mappings: read on first use (or capture). NULL when unknown. */
struct pid_entry *pid_maps(struct symbolizer *s, pid_t pid)
{
	struct pid_entry *pe = pid_find(s, pid);

	if (!pe)
		pe = pid_new(s, pid, NULL);
	if (pe)
		pe->used_interval = s->interval;
	return pe;
}

/*
 * The mapping of addr. Mappings are re-read only when an address falls outside
 * them (a library loaded since), at most once per interval per process, or
 * once more when the stack walk saw the process run code outside them since
 * (symbolizer_maps_stale()): a long-running process costs no /proc read per interval.
 */
const struct proc_map *pid_find_map(struct symbolizer *s, struct pid_entry *pe, uint64_t addr)
{
	const struct proc_map *m = procmaps_find(&pe->maps, addr);

	if (m || pe->exited || (pe->read_interval == s->interval && !pe->maps_stale))
		return m;
	if (pid_read(s, pe) < 0)
		pid_exited(s, pe); /* gone without an exit event: keep what we had */
	return procmaps_find(&pe->maps, addr);
}

/*
 * The image of pe's before an exec that addr is from, *exec_id the exec that
 * ended it, or NULL: the newest old image symbolizer_exec() kept that holds
 * addr, when the new one does not (read if it must be). The one rule that
 * names such a frame and classifies such a sample.
 */
static struct pid_entry *old_image(struct symbolizer *s, struct pid_entry *pe, uint64_t addr,
				   uint64_t *exec_id)
{
	struct pid_entry *img = pe->before_exec;
	uint64_t id = pe->exec_id;

	for (; img && !procmaps_find(&img->maps, addr); img = img->before_exec)
		id = img->exec_id;
	if (!img || (!pe->err && pid_find_map(s, pe, addr)))
		return NULL;
	*exec_id = id;
	return img;
}

const struct proc_map *pid_find_map_any(struct symbolizer *s, struct pid_entry **pe, uint64_t addr)
{
	uint64_t id;
	struct pid_entry *img = old_image(s, *pe, addr, &id);

	if (img) {
		*pe = img;
		return procmaps_find(&img->maps, addr);
	}
	return (*pe)->err ? NULL : pid_find_map(s, *pe, addr);
}

/*
 * Frees pe's images before execs past max of them, or past the first whose
 * samples are all drained (flips; NULL: not asked): the links after are older.
 */
static void cut_images(struct pid_entry *pe, size_t max, const struct flips *flips)
{
	for (size_t depth = 1; pe->before_exec; pe = pe->before_exec, depth++) {
		if (depth > max || (flips && flips_drained(flips, pe->exec_flip))) {
			pid_entry_free(pe->before_exec);
			pe->before_exec = NULL;
			return;
		}
	}
}

/*
 * Opens every executable file mapping now, while the process can be reached;
 * with the identities snap holds (its mappings are pe's), without a stat each.
 */
static void pid_resolve_files(struct symbolizer *s, struct pid_entry *pe,
			      const struct proc_snap *snap)
{
	for (size_t i = 0; i < pe->maps.n; i++) {
		const struct proc_map *m = &pe->maps.v[i];
		const struct file_key *key = NULL;

		if (!(m->perms & PROCMAP_X) || !m->path || m->path[0] != '/' || !m->inode)
			continue;
		if (snap)
			procsnap_key(snap, i, &key);
		mapping_file_key(s, pe, i, key, snap != NULL);
	}
}

/* Captures pid from /proc (snap NULL), or from snap, a read of it just made. */
static int capture(struct symbolizer *s, pid_t pid, const struct proc_snap *snap)
{
	struct pid_entry *pe = pid_find(s, pid);
	struct proc_maps maps;
	int err;

	if (!pe) {
		pe = pid_new(s, pid, snap);
		if (!pe)
			return -ENOMEM;
		err = pe->err;
	} else {
		if (!snap)
			err = pid_read(s, pe);
		else if (!(err = procmaps_dup(&snap->maps, &maps)))
			err = pid_install(s, pe, &maps);
		if (!err)
			pe->exited = false; /* a new process under a reused pid, or an exec */
	}
	if (err)
		return err;
	pe->used_interval = s->interval;
	pid_resolve_files(s, pe, snap);
	s->st.captured++;
	return 0;
}

void symbolizer_maps_stale(struct symbolizer *s, pid_t pid)
{
	struct pid_entry *pe = pid_find(s, pid);
	uint64_t read_interval;

	if (!pe)
		return;
	pe->maps_stale = true;
	if (pe->exited)
		return;
	read_interval = pe->read_interval;
	if (pid_read(s, pe))
		return;
	pid_resolve_files(s, pe, NULL);
	/* a library still being mapped (ld.so, dlopen) is read once more by the drain */
	pe->read_interval = read_interval;
}

int symbolizer_capture(struct symbolizer *s, pid_t pid)
{
	return capture(s, pid, NULL);
}

int symbolizer_capture_snap(struct symbolizer *s, const struct proc_snap *snap)
{
	return capture(s, snap->pid, snap);
}

bool symbolizer_has_maps(struct symbolizer *s, pid_t pid)
{
	const struct pid_entry *pe = pid_find(s, pid);

	return pe && !pe->err && pe->maps.n && !pe->maps_stale;
}

void symbolizer_keep(struct symbolizer *s, pid_t pid)
{
	struct pid_entry *pe = pid_find(s, pid);

	if (pe)
		pe->used_interval = s->interval;
}

void symbolizer_exited(struct symbolizer *s, pid_t pid)
{
	struct pid_entry *pe = pid_find(s, pid);

	if (pe)
		pid_exited(s, pe);
}

void symbolizer_exec(struct symbolizer *s, pid_t pid, uint64_t exec_id)
{
	struct pid_entry *pe = pid_find(s, pid), *old;

	/* an image never read is not kept: the one before stays, ended by its own exec */
	if (!pe || pe->err || !pe->maps.n || !(old = calloc(1, sizeof(*old))))
		return;
	old->pid = pid;
	old->maps = pe->maps;
	old->files = pe->files;
	old->maps_bytes = pe->maps_bytes;
	old->before_exec = pe->before_exec;
	old->exec_flip = pe->exec_flip;
	old->exec_id = pe->exec_id;
	pe->before_exec = old;
	pe->exec_flip = s->flips.n;
	pe->exec_id = exec_id;
	cut_images(pe, SYMBOLIZER_EXECS_MAX, NULL);
	pe->maps = (struct proc_maps){0};
	pe->files = NULL;
	pe->maps_bytes = 0;
	pe->maps_stale = true; /* the new image is read at its next use */
}

uint64_t symbolizer_before_exec(struct symbolizer *s, pid_t pid, uint64_t addr)
{
	struct pid_entry *pe = pid_find(s, pid);
	uint64_t id = 0;

	if (pe)
		old_image(s, pe, addr, &id);
	return id;
}

void symbolizer_flipped(struct symbolizer *s)
{
	flips_note(&s->flips);
}

static void pid_add_bytes(const void *node, VISIT which, void *arg)
{
	const struct pid_entry *pe = *(const struct pid_entry *const *)node;

	if (which != postorder && which != leaf)
		return;
	for (; pe; pe = pe->before_exec)
		*(uint64_t *)arg += sizeof(*pe) + pe->maps_bytes;
}

uint64_t pid_bytes(const struct symbolizer *s)
{
	uint64_t n = 0;

	twalk_r(s->pids, pid_add_bytes, &n);
	return n;
}

/* Whether pe is dropped at the end of this interval. */
static bool pid_expired(const struct symbolizer *s, const struct pid_entry *pe)
{
	/* exited before this interval's flip: its last samples were in this drain */
	if (pe->exited && flips_drained(&s->flips, pe->exit_flip))
		return true;
	/* idle for 2 intervals: re-read if seen */
	return pe->err || (!pe->exited && pe->used_interval + 2 <= s->interval);
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

/* Pins pe's files: a kept entry may still name frames next interval. */
static void pin_files(struct symbolizer *s, struct pid_entry *pe)
{
	for (size_t j = 0; j < pe->maps.n; j++) {
		if (!pe->files[j] || pe->files[j] == &no_file)
			continue;
		file_touch(s, pe->files[j]);
		pe->files[j]->used = s->interval + 1;
	}
}

void pid_expire(struct symbolizer *s)
{
	struct pid_entry **all = calloc(s->n_pids ? s->n_pids : 1, sizeof(*all));
	struct pid_walk w = {.v = all};

	flips_end_interval(&s->flips);
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
			/* its images before execs noted before this interval's flip: drained now */
			cut_images(pe, SYMBOLIZER_EXECS_MAX, &s->flips);
			for (struct pid_entry *img = pe; img; img = img->before_exec)
				pin_files(s, img);
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
