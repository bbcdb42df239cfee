// SPDX-License-Identifier: MIT
/*
 * Process events: a new process is captured and classified, one that exec'd
 * is captured again after ld.so mapped its libraries, one that exited is
 * forgotten by every part that knew it.
 */
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "allocs.h"
#include "clock.h"
#include "control.h"
#include "daemon.h"
#include "log.h"
#include "procevents.h"
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

static void recapture_arm(struct daemon *d)
{
	struct recapture *r = &d->recap;
	int64_t wait = 0;

	if (r->n) {
		wait = r->q[r->head].due_ns - mono_ns();
		if (wait < 1000)
			wait = 1000; /* 0 would disarm the timer */
	}
	timer_arm(d->ev[EV_RECAPTURE].fd, wait, 0);
}

static void recapture_push(struct daemon *d, pid_t pid, int round, int64_t delay_ns)
{
	struct recapture *r = &d->recap;
	size_t tail = (r->head + r->n) % RECAPTURE_MAX;

	if (r->n == RECAPTURE_MAX) {
		r->dropped++;
		return;
	}
	r->q[tail].pid = pid;
	r->q[tail].round = round;
	r->q[tail].due_ns = mono_ns() + delay_ns;
	if (r->n++ == 0)
		recapture_arm(d);
}

int procevents_recapture_due(struct daemon *d)
{
	struct recapture *r = &d->recap;
	int64_t now = mono_ns();
	uint64_t ticks;

	if (read(d->ev[EV_RECAPTURE].fd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		return 0;
	while (r->n && r->q[r->head].due_ns <= now) {
		pid_t pid = r->q[r->head].pid;
		int round = r->q[r->head].round;

		r->head = (r->head + 1) % RECAPTURE_MAX;
		r->n--;
		unwinder_add(d->unw, pid); /* libraries the new program loaded since */
		if (symbolizer_capture(d->sym, pid) == 0 && round == 1)
			recapture_push(d, pid, 2, RECAPTURE_SECOND_NS - RECAPTURE_FIRST_NS);
	}
	recapture_arm(d);
	return 0;
}

static void note_exec(struct daemon *d, pid_t pid)
{
	d->recap.exec[(uint32_t)pid % RECENT_EXEC_SLOTS].pid = pid;
	d->recap.exec[(uint32_t)pid % RECENT_EXEC_SLOTS].ns = mono_ns();
}

static bool exec_recent(const struct daemon *d, pid_t pid)
{
	const struct recapture *r = &d->recap;
	uint32_t i = (uint32_t)pid % RECENT_EXEC_SLOTS;

	return r->exec[i].pid == pid && mono_ns() - r->exec[i].ns < RECENT_EXEC_NS;
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

	if (sampler_drop(d->sampler, pc->pid, pc->match.excluded) == -E2BIG)
		log_debug("kernel filter full: pid %d is filtered in user space", pc->pid);
	control_proc_classified(d->ctl, pc);
	if (d->allocs)
		allocs_classified(d->allocs, pc->pid, app_memory(d, pc));
}

static void on_exit_event(struct daemon *d, pid_t pid)
{
	unwinder_exited(d->unw, pid);
	symbolizer_exited(d->sym, pid);
	proctable_exited(d->procs, pid);
	sampler_drop(d->sampler, pid, false);
	allocs_exited(d->allocs, pid);
	control_proc_exited(d->ctl, pid);
}

static void on_new_event(struct daemon *d, pid_t pid)
{
	const struct proc_class *pc;

	d->processes_seen++;
	pc = proctable_classify(d->procs, &d->cfg, pid, NULL);
	if (pc)
		procevents_apply_class(pc, d);
	if (pc && pc->match.excluded)
		return;
	unwinder_add(d->unw, pid); /* first sight, or first sample after an exec */
	if (symbolizer_capture(d->sym, pid) == 0 && exec_recent(d, pid))
		recapture_push(d, pid, 1, RECAPTURE_FIRST_NS);
}

/*
 * Captures a process while it lives and classifies it into an application;
 * forgets it after the drain that follows its exit.
 */
void procevents_on_event(const struct ember_proc_event *e, void *arg)
{
	struct daemon *d = arg;

	if (e->type == EMBER_PROC_EXIT) {
		on_exit_event(d, e->tgid);
	} else if (e->type == EMBER_PROC_NEW) {
		on_new_event(d, e->tgid);
	} else if (e->type == EMBER_PROC_EXEC) {
		/* the first sample after it reports the process again, with its libraries */
		note_exec(d, e->tgid);
		unwinder_exec(d->unw, e->tgid);
	}
}

const struct proc_class *procevents_classify(uint32_t pid, const char *comm, void *arg)
{
	struct daemon *d = arg;

	return proctable_get(d->procs, &d->cfg, pid, comm);
}
