// SPDX-License-Identifier: MIT
/*
 * Process events: a new process is captured and classified, one that exec'd
 * is captured again after ld.so mapped its libraries, one that exited is
 * forgotten by every part that knew it.
 */
#include <errno.h>
#include <fnmatch.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "allocs.h"
#include "clock.h"
#include "control.h"
#include "daemon.h"
#include "deferred.h"
#include "log.h"
#include "procevents.h"
#include "procinfo.h"
#include "procsnap.h"
#include "proctrack.h"
#include "sampler.h"
#include "symbolizer.h"
#include "timer.h"
#include "unwinder.h"

/*
 * A process first seen while the dynamic loader is still mapping its libraries
 * is captured again after these delays (ld.so takes 1-50 ms), so that a
 * short-lived one leaves a complete snapshot behind.
 */
#define RECAPTURE_FIRST_NS (20 * NS_PER_MS)
#define RECAPTURE_SECOND_NS (250 * NS_PER_MS)
/*
 * Only a process that exec'd this recently can still be in ld.so when first
 * captured; one sampled later (or running before emberd started, or a fork
 * that did not exec) has all its startup libraries mapped and is captured
 * once. Exec times are remembered in a small table indexed by pid.
 */
#define RECENT_EXEC_NS NS_PER_SEC

/*
 * A first-sampled process that did not just exec is handed to the unwinder
 * after this delay, if it still lives: the snapshot taken when it was first
 * sampled serves then, read once for the symbolizer and the unwinder.
 */
#define UNWIND_DEFER_NS RECAPTURE_FIRST_NS

/*
 * A process gone at its first recapture (its exit not read yet) waits in the
 * queue as this round, for its exit to hand its first read to the unwinder
 * (unless the exit sends its mappings), or at most GONE_WAIT_NS.
 */
#define RECAPTURE_GONE 3
#define GONE_WAIT_NS NS_PER_SEC

/* pid's slot in table (loading or unread of struct recapture): a collision forgets one. */
static pid_t *slot_of(pid_t *table, pid_t pid)
{
	return &table[(uint32_t)pid % AT_EXIT_SLOTS];
}

/* Whether pid is in table; forgets it. */
static bool slot_take(pid_t *table, pid_t pid)
{
	pid_t *slot = slot_of(table, pid);

	if (*slot != pid)
		return false;
	*slot = 0;
	return true;
}

/*
 * Arms the timer for the earliest entry still queued (disarms it if none);
 * no system call when it is armed for that already (a push of a later one).
 */
static void recapture_arm(struct daemon *d)
{
	struct recapture *r = &d->recap;
	int64_t wait = 0, due = INT64_MAX;

	for (size_t i = 0; i < r->n; i++) {
		size_t k = (r->head + i) % RECAPTURE_MAX;

		if (r->q[k].pid && r->q[k].due_ns < due)
			due = r->q[k].due_ns;
	}
	if (due == r->armed_ns)
		return;
	r->armed_ns = due;
	if (due != INT64_MAX) {
		wait = due - mono_ns();
		if (wait < 1000)
			wait = 1000; /* 0 would disarm the timer */
	}
	timer_arm(d->ev[EV_RECAPTURE].fd, wait, 0);
}

/* Queues pid for round at now_ns + delay_ns, with a reference to snap; false when full. */
static bool recapture_push(struct daemon *d, pid_t pid, int round, int64_t now_ns, int64_t delay_ns,
			   struct proc_snap *snap)
{
	struct recapture *r = &d->recap;
	size_t tail = (r->head + r->n) % RECAPTURE_MAX;

	if (r->n == RECAPTURE_MAX) {
		r->dropped++;
		return false;
	}
	r->q[tail].pid = pid;
	r->q[tail].round = round;
	r->q[tail].due_ns = now_ns + delay_ns;
	r->q[tail].snap = procsnap_ref(snap);
	r->n++;
	recapture_arm(d); /* a first round (20 ms) may come due before a second queued earlier */
	return true;
}

/*
 * pid exited or exec'd: what was queued for it no longer applies. Returns a
 * reference to the snapshot of a round that would have handed it to the
 * unwinder (all but the second: it never was), or NULL.
 */
static struct proc_snap *recapture_take(struct daemon *d, pid_t pid)
{
	struct recapture *r = &d->recap;
	struct proc_snap *unloaded = NULL;

	for (size_t i = 0; i < r->n; i++) {
		size_t k = (r->head + i) % RECAPTURE_MAX;

		if (r->q[k].pid != pid)
			continue;
		r->q[k].pid = 0;
		if (r->q[k].round != 2 && !unloaded)
			unloaded = r->q[k].snap;
		else
			procsnap_unref(r->q[k].snap);
		r->q[k].snap = NULL;
	}
	return unloaded;
}

/* pid exited or exec'd: what was queued for it no longer applies. */
static void recapture_cancel(struct daemon *d, pid_t pid)
{
	procsnap_unref(recapture_take(d, pid));
}

void procevents_close(struct daemon *d)
{
	struct recapture *r = &d->recap;

	for (size_t i = 0; i < r->n; i++)
		procsnap_unref(r->q[(r->head + i) % RECAPTURE_MAX].snap);
	r->n = 0;
}

/*
 * Reads pid's mappings once, for the symbolizer now and the unwinder (the
 * caller's *snap); the files of those unchanged since prev are not stat'ed
 * again. 0 or -errno.
 */
static int capture(struct daemon *d, pid_t pid, const struct proc_snap *prev,
		   struct proc_snap **snap)
{
	int err = procsnap_read(pid, prev, snap);

	if (!err)
		symbolizer_capture_snap(d->sym, *snap);
	return err;
}

/*
 * Gives the unwinder a read of pid made while it lived: the kernel need not
 * send its mappings at its exit (proc.bpf.c), unless it execs first.
 */
static void load_read(struct daemon *d, struct proc_snap *snap)
{
	unwinder_add_snap(d->unw, snap);
	proctrack_mark_done(d->proc, snap->pid);
}

/* Captures pid again (round 1 or 2), for both modules: the libraries loaded since. */
static void recapture_now(struct daemon *d, pid_t pid, int round, struct proc_snap *prev,
			  int64_t now_ns)
{
	struct proc_snap *snap;

	allocs_rescan(owner_allocs(d->owner),
		      pid); /* the libraries ld.so mapped since: LD_PRELOAD's */
	if (capture(d, pid, prev, &snap)) {
		/*
		 * gone before ld.so was done, its exit not read yet: the
		 * unwinder gets this first read at its exit, for the samples
		 * it left waiting, unless the exit sends its mappings (the
		 * second round's was given at the first)
		 */
		if (round == 1)
			recapture_push(d, pid, RECAPTURE_GONE, now_ns, GONE_WAIT_NS, prev);
		return;
	}
	load_read(d, snap);
	if (round == 1)
		recapture_push(d, pid, 2, now_ns, RECAPTURE_SECOND_NS - RECAPTURE_FIRST_NS, snap);
	procsnap_unref(snap);
}

int procevents_recapture_due(struct daemon *d)
{
	struct recapture *r = &d->recap;
	int64_t now = mono_ns();
	uint64_t ticks;

	if (read(d->ev[EV_RECAPTURE].fd, &ticks, sizeof(ticks)) < 0) {
		if (errno != EAGAIN)
			return 0;
	} else {
		r->armed_ns = 0; /* expired: armed for nothing now */
	}
	/* in order of arrival, but every one due: delays of 20 and 250 ms interleave */
	for (size_t i = 0; i < r->n; i++) {
		size_t k = (r->head + i) % RECAPTURE_MAX;
		pid_t pid = r->q[k].pid;
		int round = r->q[k].round;
		struct proc_snap *snap = r->q[k].snap;

		if (!pid || r->q[k].due_ns > now)
			continue;
		r->q[k].pid = 0; /* done: leaves the queue once at its head */
		r->q[k].snap = NULL;
		if (round == 0) {
			load_read(d, snap);	      /* it lived: worth its unwind tables */
		} else if (round == RECAPTURE_GONE) { /* its exit was not read */
			unwinder_add_snap(d->unw, snap);
			*slot_of(d->recap.loading, pid) = pid;
		} else {
			recapture_now(d, pid, round, snap, now);
		}
		procsnap_unref(snap);
	}
	while (r->n && !r->q[r->head].pid) {
		r->head = (r->head + 1) % RECAPTURE_MAX;
		r->n--;
	}
	recapture_arm(d);
	return 0;
}

static void note_exec(struct daemon *d, pid_t pid, int64_t ns)
{
	d->recap.exec[(uint32_t)pid % RECENT_EXEC_SLOTS].pid = pid;
	d->recap.exec[(uint32_t)pid % RECENT_EXEC_SLOTS].ns = ns;
}

static bool exec_recent(const struct daemon *d, pid_t pid, int64_t now_ns)
{
	const struct recapture *r = &d->recap;
	uint32_t i = (uint32_t)pid % RECENT_EXEC_SLOTS;

	return r->exec[i].pid == pid && now_ns - r->exec[i].ns < RECENT_EXEC_NS;
}

/* The memory mode of a classified process's application (off: none, or excluded). */
static enum app_memory app_memory(const struct daemon *d, const struct proc_class *pc)
{
	if (pc->match.app < 0 || pc->match.excluded || (size_t)pc->match.app >= d->cfg.n_apps)
		return APP_MEMORY_OFF;
	return d->cfg.apps[pc->match.app].memory;
}

void procevents_apply_class(const struct proc_class *pc, void *arg)
{
	struct daemon *d = arg;
	struct allocs *a = owner_allocs(d->owner);

	if (sampler_drop(owner_sampler(d->owner), pc->pid, pc->match.excluded) == -E2BIG)
		log_debug("kernel filter full: pid %d is filtered in user space", pc->pid);
	control_proc_classified(d->ctl, pc);
	if (a)
		allocs_classified(a, pc->pid, app_memory(d, pc));
}

static void on_exit_event(struct daemon *d, pid_t pid)
{
	bool loading = slot_take(d->recap.loading, pid);
	struct proc_snap *unloaded = recapture_take(d, pid);

	slot_take(d->recap.unread, pid);
	/*
	 * read, but gone before the unwinder was given it (a process sent no
	 * mappings at its exit once it woke emberd): given it now, from its
	 * read, for the samples it left waiting
	 */
	if (unloaded && !loading) {
		unwinder_add_snap(d->unw, unloaded);
		loading = true;
	}
	procsnap_unref(unloaded);
	/*
	 * given to the unwinder, which may not have loaded it yet, or still
	 * builds its tables: its samples wait for its word (loaded, or dropped
	 * at this exit, which it reads after)
	 */
	if (!loading && unwinder_asked(d->unw, pid))
		loading = true;
	/*
	 * Being loaded, gone: its last samples may have come after the
	 * samples' ring was read for these events, and must be waiting when
	 * the unwinder has loaded it (the ring holds them now).
	 */
	if (loading)
		sampler_consume(owner_sampler(d->owner));
	/*
	 * its samples waiting for tables it will not get: named while its
	 * snapshot lasts; or, being loaded, once it is
	 */
	sampler_exited(owner_sampler(d->owner), pid, loading);
	unwinder_exited(d->unw, pid);
	symbolizer_exited(d->sym, pid);
	proctable_exited(d->procs, pid);
	sampler_drop(owner_sampler(d->owner), pid, false);
	allocs_exited(owner_allocs(d->owner), pid);
	control_proc_exited(d->ctl, pid);
}

/*
 * pid was gone when its first sample was read. One whose exit the kernel
 * reports (exit_follows: not sampled only in its exit) has its samples wait
 * for that exit, which sends its mappings first (never marked done), or for
 * an exec, which ends the image they are of; the others' are walked
 * now, as for an exit, their frames unnamed.
 */
static void unread(struct daemon *d, pid_t pid, bool exit_follows)
{
	if (!exit_follows)
		sampler_exited(owner_sampler(d->owner), pid, false);
	else
		*slot_of(d->recap.unread, pid) = pid;
	d->processes_unread++;
	log_debug("pid %d: gone before its mappings were read", pid);
}

/*
 * The mappings the kernel read at the exit of a process not marked done: one
 * never read (gone before the wakeup that would have read it), or not yet
 * handed to the unwinder (read while ld.so mapped its libraries, or too
 * young), is named from them, and its samples waiting for tables are walked
 * with those the unwinder loads from them (its exit, read next, leaves them
 * to it).
 */
static void on_maps_event(struct daemon *d, const struct ember_proc_event *e, size_t size)
{
	pid_t pid = e->tgid;
	const struct proc_class *pc;
	struct proc_snap *snap;
	bool read = symbolizer_has_maps(d->sym, pid);
	int err;

	/*
	 * never classified (no sample of it is kept), or read and given to the
	 * unwinder while it lived (not from a read inside ld.so, found gone)
	 */
	if (!proctable_has(d->procs, pid) ||
	    (read && unwinder_asked(d->unw, pid) && *slot_of(d->recap.loading, pid) != pid))
		return;
	pc = proctable_get(d->procs, &d->cfg, pid, NULL);
	if (!pc || pc->match.excluded)
		return;
	err = procsnap_read_exit(e, size, &snap);
	if (err) {
		log_debug("pid %d: the mappings its exit sent are unusable: %s", pid,
			  strerror(-err));
		return;
	}
	symbolizer_capture_snap(d->sym, snap);
	unwinder_add_snap(d->unw, snap);
	*slot_of(d->recap.loading, pid) = pid;
	d->processes_at_exit += !read;
	log_debug("pid %d: %s: named and walked from the %zu mappings its exit sent", pid,
		  read ? "gone before its unwind tables were loaded" : "gone before it was read",
		  snap->maps.n);
	procsnap_unref(snap);
}

/*
 * A process's first sample: classify it, and read its mappings once for the
 * symbolizer (now: a short-lived one is gone soon) and the unwinder (once it
 * lived UNWIND_DEFER_NS, or, after an exec, once ld.so is done). when: why it
 * is read late, for the log (NULL: it is not).
 */
static void on_new_event(struct daemon *d, const struct ember_proc_event *e, unsigned int source,
			 const char *when)
{
	static const char *const names[] = {
		[EMBER_PROC_SRC_CPU] = "on-CPU",
		[EMBER_PROC_SRC_GROWTH] = "memory growth",
		[EMBER_PROC_SRC_OFFCPU] = "off-CPU",
		[EMBER_PROC_SRC_MALLOC] = "malloc capture",
	};
	pid_t pid = e->tgid;
	int64_t now_ns = (int64_t)e->ktime_ns; /* CLOCK_MONOTONIC: no clock read per event */
	const struct proc_class *pc;
	struct proc_snap *snap;
	const char *what;
	bool fresh;

	d->processes_seen++;
	what = when ? "" : "exec"; /* a first sample's source, else a late read's or an exec's */
	if (source < sizeof(names) / sizeof(names[0]) && names[source])
		what = names[source];
	log_debug("pid %d: first sample (%s%s): classified and captured", pid, what,
		  when ? when : "");
	pc = proctable_classify(d->procs, &d->cfg, pid, NULL, e->cgroup_id);
	if (pc)
		procevents_apply_class(pc, d);
	if (pc && pc->gone) { /* classified by its comm alone */
		unread(d, pid, e->type != EMBER_PROC_EXITING);
		return;
	}
	if (pc && pc->match.excluded) {
		proctrack_mark_done(d->proc, pid); /* nothing of it is kept */
		return;
	}
	if (capture(d, pid, NULL, &snap)) { /* gone meanwhile, or a zombie */
		unread(d, pid, e->type != EMBER_PROC_EXITING);
		return;
	}
	/*
	 * Just exec'd: both again once ld.so is done, the unwinder only then
	 * (its samples until then wait for tables of every library, not of
	 * those ld.so mapped so far). Else the unwinder only if it still lives
	 * a little later, from this same read. One gone before either is loaded
	 * from the mappings its exit sends (load_read marks it done).
	 */
	fresh = exec_recent(d, pid, now_ns);
	unwinder_hint(d->unw, snap); /* its runtime, for the samples before its tables */
	if (!recapture_push(d, pid, fresh ? 1 : 0, now_ns,
			    fresh ? RECAPTURE_FIRST_NS : UNWIND_DEFER_NS, snap))
		load_read(d, snap);
	procsnap_unref(snap);
}

/* Whether a round of pid's is queued. */
static bool recapture_queued(const struct daemon *d, pid_t pid)
{
	const struct recapture *r = &d->recap;

	for (size_t i = 0; i < r->n; i++)
		if (r->q[(r->head + i) % RECAPTURE_MAX].pid == pid)
			return true;
	return false;
}

void procevents_late(struct daemon *d)
{
	struct sampler *s = owner_sampler(d->owner);
	struct deferred *defer = s ? sampler_deferred(s) : NULL;
	uint32_t pids[DEFERRED_LATE_MAX];
	size_t n = defer ? deferred_take_late(defer, pids, DEFERRED_LATE_MAX) : 0;

	for (size_t i = 0; i < n; i++) {
		pid_t pid = (pid_t)pids[i];
		struct ember_proc_event e = {.type = EMBER_PROC_NEW, .tgid = pids[i]};
		const struct proc_class *pc = proctable_has(d->procs, pid) ?
						      proctable_get(d->procs, &d->cfg, pid, NULL) :
						      NULL;

		/* asked for (tables still building), read soon, read and excluded, or gone */
		if (unwinder_asked(d->unw, pid) || recapture_queued(d, pid) ||
		    (pc && pc->match.excluded) || kill(pid, 0))
			continue;
		e.ktime_ns = (uint64_t)mono_ns();
		d->processes_late++;
		log_info("pid %d: its samples waited %d s for unwind tables nobody asked for (its "
			 "first sample's report was missed): read now",
			 (int)pid, (int)(DEFERRED_WAIT_NS / NS_PER_SEC));
		on_new_event(d, &e, EMBER_PROC_SRC_OTHER, "late: its samples waited");
	}
}

/*
 * Whether an [app] with memory = alloc|inuse may match a process whose comm
 * is comm: its comm rules hold (its other rules need /proc; they are read
 * only for such a process). No application asks: false, for every process.
 */
static bool memory_may_match(const struct ember_config *c, const char *comm)
{
	for (size_t i = 0; i < c->n_apps; i++) {
		const struct app_config *a = &c->apps[i];
		bool may = a->memory != APP_MEMORY_OFF && !a->exclude;

		for (size_t r = 0; may && r < a->n_rules; r++)
			if (a->rules[r].kind == RULE_COMM && fnmatch(a->rules[r].pattern, comm, 0))
				may = false;
		if (may)
			return true;
	}
	return false;
}

/*
 * An exec: a process an application with sampled allocations may match is
 * taken now, as if first sampled (and marked so: its exit is reported), so
 * that one that allocates but seldom runs is attached from its start; the
 * libraries ld.so maps after the exec are attached at its recaptures.
 */
static void on_exec_event(struct daemon *d, const struct ember_proc_exec_event *x)
{
	pid_t pid = x->e.tgid;

	note_exec(d, pid, x->e.ktime_ns);
	recapture_cancel(d, pid);
	/*
	 * its samples from before are of the old program, whose unwind entry
	 * the exec deleted: walked now (or when read) with frame pointers. One
	 * gone when read waited for an exit that will not come for that
	 * program; those after wait for the new one's tables (or exit).
	 */
	slot_take(d->recap.unread, pid);
	sampler_exec(owner_sampler(d->owner), pid, x->e.ktime_ns);
	unwinder_exec(d->unw, pid);
	/* its samples from before are named and classified by its old image */
	d->execs_noted++;
	symbolizer_exec(d->sym, pid, d->execs_noted);
	proctable_exec(d->procs, pid, d->execs_noted);
	/* otherwise the first sample after it reports the process again, with its libraries */
	if (!owner_allocs(d->owner) || !memory_may_match(&d->cfg, x->comm) ||
	    proctrack_mark_known(d->proc, pid))
		return;
	log_debug("pid %d (%s): exec'd, taken now: an application with sampled allocations "
		  "may match it",
		  pid, x->comm);
	on_new_event(d, &x->e, EMBER_PROC_SRC_OTHER, NULL);
}

/*
 * A user stack with runtime frames, sampled moments ago (EMBER_PROC_RT_FRAMES):
 * its frames named now from the process's memory, which its exit may take
 * before the drain. A record shorter than the words it claims is dropped.
 */
static void on_rt_event(struct daemon *d, const struct ember_proc_event *e, size_t size)
{
	const struct ember_proc_rt_event *r = (const struct ember_proc_rt_event *)e;
	size_t head = offsetof(struct ember_proc_rt_event, words);

	if (size < head || !r->n || r->n > EMBER_PROC_RT_WORDS ||
	    (size - head) / sizeof(r->words[0]) < r->n)
		return;
	symbolizer_runtime_seen(d->sym, (pid_t)e->tgid, (const uint64_t *)r->words, r->n,
				(int64_t)e->ktime_ns);
}

/*
 * EMBER_TEST_MISS_REPORT=COMM (tests only): the first-sample reports of the
 * processes named COMM are dropped, as reports missed, for procevents_late()
 * to find them (tests/integration/missed_report.sh).
 */
static bool test_missed(pid_t pid)
{
	static const char *want;
	static bool looked;
	struct proc_info pi;
	bool missed;
	int dirfd;

	if (!looked) {
		want = getenv("EMBER_TEST_MISS_REPORT");
		looked = true;
	}
	if (!want || (dirfd = procinfo_open(pid, &pi)) < 0)
		return false;
	missed = !procinfo_fill(dirfd, PROCINFO_COMM, &pi) && !strcmp(pi.comm, want);
	close(dirfd);
	return missed;
}

/*
 * Captures a process while it lives and classifies it into an application;
 * forgets it after the drain that follows its exit. An exec or the exit of a
 * process never sampled costs nothing beyond reading its event; nor does one
 * sampled only young (EMBER_PROC_YOUNG_NS) and gone by the next wakeup, but
 * one failed open. EMBER_PROC_WAKE only woke the daemon for the events before.
 */
void procevents_on_event(const struct ember_proc_event *e, size_t size, void *arg)
{
	struct daemon *d = arg;

	if (e->type == EMBER_PROC_EXIT) {
		on_exit_event(d, e->tgid);
	} else if (e->type == EMBER_PROC_MAPS) {
		on_maps_event(d, e, size);
	} else if ((e->type == EMBER_PROC_NEW || e->type == EMBER_PROC_NEW_YOUNG) &&
		   test_missed((pid_t)e->tgid)) {
		log_debug("pid %d: first sample's report dropped (EMBER_TEST_MISS_REPORT)",
			  e->tgid);
	} else if (e->type == EMBER_PROC_NEW) {
		on_new_event(d, e, e->source, NULL);
	} else if (e->type == EMBER_PROC_NEW_YOUNG) {
		on_new_event(d, e, e->source, ", young: read at the next wakeup");
	} else if (e->type == EMBER_PROC_EXITING) {
		/* one per sample in its exit: the first classifies it (by its cgroup, once gone) */
		if (!proctable_has(d->procs, e->tgid))
			on_new_event(d, e, e->source, ", exiting: read at the next wakeup");
	} else if (e->type == EMBER_PROC_STALE) {
		symbolizer_maps_stale(d->sym, e->tgid);
		unwinder_stale(d->unw);
	} else if (e->type == EMBER_PROC_RT_FRAMES) {
		on_rt_event(d, e, size);
	} else if (e->type == EMBER_PROC_WAKE) {
		log_debug("pid %d: sampled again, older: woke emberd", e->tgid);
	} else if (e->type == EMBER_PROC_EXEC) {
		/* proctrack hands an exec's event inside its ember_proc_exec_event */
		on_exec_event(d, (const struct ember_proc_exec_event *)e);
	}
}

const struct proc_class *procevents_classify(uint32_t pid, const char *comm, uint64_t user_leaf,
					     void *arg)
{
	struct daemon *d = arg;
	const struct proc_class *old = NULL;

	/* its code before an exec: that image's application, not the new one's */
	if (user_leaf && proctable_execd(d->procs, pid))
		old = proctable_before_exec(d->procs, pid,
					    symbolizer_before_exec(d->sym, pid, user_leaf));
	return old ? old : proctable_get(d->procs, &d->cfg, pid, comm);
}
