// SPDX-License-Identifier: MIT
/*
 * Process table: classification of each sampled process into an application,
 * read once per process (and again after exec) and kept until its exit drained.
 */
#include <errno.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flips.h"
#include "proctable.h"

/* Processes classified at once; past it, processes are classified per lookup. */
#define PROCTABLE_MAX 65536

struct proctable {
	void *root; /* tsearch tree of struct proc_class, by pid */
	size_t n;
	uint64_t interval;
	struct flips flips;	    /* when the dead's last samples are drained */
	struct proc_class *last;    /* consecutive lookups are for one process */
	struct proc_class scratch;  /* answer when the table is full */
	proctable_cgroup_fn cgroup; /* names a gone process's cgroup; NULL: none */
	void *cgroup_arg;
	uint64_t names_sanitized; /* service names that were no valid label value */
};

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = ((const struct proc_class *)a)->pid, y = ((const struct proc_class *)b)->pid;

	return x < y ? -1 : x > y;
}

struct proctable *proctable_new(proctable_cgroup_fn cgroup, void *arg)
{
	struct proctable *t = calloc(1, sizeof(struct proctable));

	if (t) {
		t->cgroup = cgroup;
		t->cgroup_arg = arg;
	}
	return t;
}

/* An entry and the classes it had before its execs. */
static void entry_free(void *p)
{
	struct proc_class *pc = p;

	while (pc) {
		struct proc_class *older = pc->before_exec;

		free(pc);
		pc = older;
	}
}

/*
 * Frees pc's classes before execs past max of them, or past the first whose
 * samples are all drained (flips; NULL: not asked): the links after are older.
 */
static void cut_classes(struct proc_class *pc, size_t max, const struct flips *flips)
{
	for (size_t depth = 1; pc->before_exec; pc = pc->before_exec, depth++) {
		if (depth > max || (flips && flips_drained(flips, pc->exec_flip))) {
			entry_free(pc->before_exec);
			pc->before_exec = NULL;
			return;
		}
	}
}

void proctable_free(struct proctable *t)
{
	if (!t)
		return;
	tdestroy(t->root, entry_free);
	free(t);
}

uint64_t proctable_names_sanitized(const struct proctable *t)
{
	return t->names_sanitized;
}

size_t proctable_size(const struct proctable *t)
{
	return t->n;
}

/* The process being classified: its pinned /proc/PID directory. */
struct reader {
	pid_t pid;
	int dirfd;
};

static int read_env(const char *name, char *out, size_t len, void *arg)
{
	return procinfo_env(((struct reader *)arg)->pid, name, out, len);
}

static int read_fields(unsigned int mask, struct proc_info *pi, void *arg)
{
	return procinfo_fill(((struct reader *)arg)->dirfd, mask, pi);
}

/*
 * Reads from /proc only what the rules, then the service name, look at (most
 * processes: their cgroup and executable). False when the process is gone, or
 * a zombie or exiting with nothing left to read but its comm.
 */
static bool classify_live(const struct ember_config *cfg, pid_t pid, struct app_match *out)
{
	struct proc_info pi;
	struct reader r = {.pid = pid, .dirfd = procinfo_open(pid, &pi)};
	int err;

	if (r.dirfd < 0)
		return false;
	err = apps_classify_lazy(cfg, &pi, read_fields, read_env, &r, out);
	/* on its way out its executable and command line read empty, as a kernel thread's */
	if (!err && (pi.have & PROCINFO_EXE) && !pi.exe[0] && !pi.cmdline[0] &&
	    procinfo_exiting(r.dirfd))
		err = -ESRCH;
	close(r.dirfd);
	return err == 0;
}

/*
 * A gone process's cgroup, from its event's id: the unit and container that
 * rules and the service name look at, as /proc/PID/cgroup would have said.
 */
static void cgroup_by_id(const struct proctable *t, const struct proc_class *pc,
			 struct proc_info *pi)
{
	if (!t->cgroup || !pc->cgroup_id ||
	    t->cgroup(pc->cgroup_id, pi->cgroup, sizeof(pi->cgroup), t->cgroup_arg)) {
		pi->cgroup[0] = '\0';
		return;
	}
	procinfo_unit_from_cgroup(pi->cgroup, pi->unit, sizeof(pi->unit));
	procinfo_container_from_cgroup(pi->cgroup, pi->container_id, sizeof(pi->container_id),
				       pi->container_runtime, sizeof(pi->container_runtime));
}

/*
 * Classifies a process already gone by what its sample says, its comm (NULL:
 * none), and by what its event says, its cgroup.
 */
static void classify_by_comm(const struct proctable *t, struct proc_class *pc,
			     const struct ember_config *cfg, const char *comm)
{
	struct proc_info pi;

	memset(&pi, 0, sizeof(pi));
	pi.pid = pc->pid;
	snprintf(pi.comm, sizeof(pi.comm), "%s", comm ? comm : "");
	snprintf(pi.cmdline, sizeof(pi.cmdline), "%s", pi.comm);
	cgroup_by_id(t, pc, &pi);
	apps_classify(cfg, &pi, NULL, NULL, &pc->match);
}

/* Classifies pc->pid from /proc; a process already gone is named by its comm. */
static void classify(struct proctable *t, struct proc_class *pc, const struct ember_config *cfg,
		     const char *comm)
{
	pc->gone = !classify_live(cfg, pc->pid, &pc->match);
	if (pc->gone) {
		classify_by_comm(t, pc, cfg, comm);
		pc->dead_flip = t->flips.n;
	}
	t->names_sanitized += pc->match.sanitized;
	pc->used_interval = t->interval;
}

static struct proc_class *find(struct proctable *t, pid_t pid)
{
	struct proc_class probe = {.pid = pid}, **slot;

	if (t->last && t->last->pid == pid)
		return t->last;
	slot = tfind(&probe, &t->root, cmp_pid);
	return slot ? (t->last = *slot) : NULL;
}

static struct proc_class *insert(struct proctable *t, pid_t pid)
{
	struct proc_class *pc;

	if (t->n >= PROCTABLE_MAX) {
		memset(&t->scratch, 0, sizeof(t->scratch));
		t->scratch.pid = pid;
		return &t->scratch;
	}
	pc = calloc(1, sizeof(*pc));
	if (!pc)
		return NULL;
	pc->pid = pid;
	if (!tsearch(pc, &t->root, cmp_pid)) {
		free(pc);
		return NULL;
	}
	t->n++;
	return t->last = pc;
}

const struct proc_class *proctable_classify(struct proctable *t, const struct ember_config *cfg,
					    pid_t pid, const char *comm, uint64_t cgroup_id)
{
	struct proc_class *pc = find(t, pid);
	bool had = pc && !pc->gone; /* classified from /proc before */
	struct app_match before;

	if (!pc)
		pc = insert(t, pid);
	if (!pc)
		return NULL;
	before = pc->match;
	if (cgroup_id)
		pc->cgroup_id = cgroup_id;
	pc->exited = false; /* a new process under a reused pid, or an exec */
	classify(t, pc, cfg, comm);
	/*
	 * Gone since it was classified: its last samples are still that
	 * process's, better named as it was than by what little is left.
	 */
	if (had && pc->gone)
		pc->match = before;
	/*
	 * Gone before it was ever read, and no comm given (a first sample read
	 * late: the event has none): an empty comm would name it as a kernel
	 * thread. The drain's lookup, with its sample's comm, names it.
	 */
	pc->want_comm = pc->gone && !had && !comm;
	return pc;
}

const struct proc_class *proctable_get(struct proctable *t, const struct ember_config *cfg,
				       pid_t pid, const char *comm)
{
	struct proc_class *pc = find(t, pid);

	if (!pc)
		return proctable_classify(t, cfg, pid, comm, 0);
	if (pc->want_comm && comm) {
		classify_by_comm(t, pc, cfg, comm);
		pc->want_comm = false;
	}
	pc->used_interval = t->interval;
	return pc;
}

bool proctable_has(struct proctable *t, pid_t pid)
{
	return find(t, pid) != NULL;
}

void proctable_exited(struct proctable *t, pid_t pid)
{
	struct proc_class *pc = find(t, pid);

	if (pc) {
		pc->exited = true;
		pc->dead_flip = t->flips.n;
	}
}

void proctable_exec(struct proctable *t, pid_t pid, uint64_t exec_id)
{
	struct proc_class *pc = find(t, pid), *old;

	if (!pc || !(old = malloc(sizeof(*old))))
		return;
	*old = *pc; /* with the classes before it */
	pc->before_exec = old;
	pc->exec_flip = t->flips.n;
	pc->exec_id = exec_id;
	cut_classes(pc, PROCTABLE_EXECS_MAX, NULL);
}

bool proctable_execd(struct proctable *t, pid_t pid)
{
	struct proc_class *pc = find(t, pid);

	return pc && pc->before_exec;
}

const struct proc_class *proctable_before_exec(struct proctable *t, pid_t pid, uint64_t exec_id)
{
	const struct proc_class *pc = find(t, pid);

	for (; pc && pc->before_exec; pc = pc->before_exec)
		if (pc->exec_id == exec_id)
			return pc->before_exec;
	return NULL;
}

void proctable_flipped(struct proctable *t)
{
	flips_note(&t->flips);
}

/*
 * Whether pc is dropped at this interval's end: dead (exited, or gone when
 * read) before this interval's flip, its last samples were in this drain;
 * idle for 2 intervals, it is classified again if seen again.
 */
static bool expired(const struct proctable *t, const struct proc_class *pc)
{
	if (pc->exited || pc->gone)
		return flips_drained(&t->flips, pc->dead_flip);
	return pc->used_interval + 2 <= t->interval;
}

/* twalk cannot delete: gather the entries first. */
struct gather {
	struct proc_class **v;
	size_t n;
};

static void gather(const void *node, VISIT which, void *arg)
{
	struct gather *g = arg;

	if (which == postorder || which == leaf)
		g->v[g->n++] = *(struct proc_class *const *)node;
}

static struct proc_class **all_entries(struct proctable *t, size_t *n)
{
	struct gather g = {.v = calloc(t->n ? t->n : 1, sizeof(*g.v))};

	if (g.v)
		twalk_r(t->root, gather, &g);
	*n = g.n;
	return g.v;
}

void proctable_end_interval(struct proctable *t)
{
	size_t n;
	struct proc_class **v = all_entries(t, &n);

	t->last = NULL;
	flips_end_interval(&t->flips);
	for (size_t i = 0; v && i < n; i++) {
		cut_classes(v[i], PROCTABLE_EXECS_MAX, &t->flips);
		if (!expired(t, v[i]))
			continue;
		tdelete(v[i], &t->root, cmp_pid);
		entry_free(v[i]);
		t->n--;
	}
	free(v);
	t->interval++;
}

void proctable_reclassify(struct proctable *t, const struct ember_config *cfg,
			  void (*cb)(const struct proc_class *pc, void *arg), void *arg)
{
	size_t n;
	struct proc_class **v = all_entries(t, &n);

	for (size_t i = 0; v && i < n; i++) {
		/* a class from before an exec names the old configuration's application */
		entry_free(v[i]->before_exec);
		v[i]->before_exec = NULL;
		if (v[i]->exited)
			continue;
		classify(t, v[i], cfg, v[i]->match.service);
		cb(v[i], arg);
	}
	free(v);
}
