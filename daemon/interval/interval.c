// SPDX-License-Identifier: MIT
/*
 * One interval, end to end: drain every active profile type, store one
 * profile per application and type, prune and roll up the history, wake the
 * uploader, then one report read from every source for the log, the memory
 * bound, sd_notify and the status file.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "apps.h"
#include "history.h"
#include "interval.h"
#include "log.h"
#include "membound.h"
#include "notify.h"
#include "procinfo.h"
#include "proctable.h"
#include "proctrack.h"
#include "retention.h"
#include "rollups.h"
#include "selfcost.h"
#include "status.h"
#include "store.h"
#include "unwinder.h"
#include "uploader.h"

/* Profile types active at once: every entry of profile_types[] fits. */
#define INTERVAL_TYPES_MAX PROFILE_TYPES_NR

/* The steps of an interval whose main-thread CPU the -v breakdown gives. */
enum step {
	/* between intervals (events, process captures); the exits read and forgotten */
	STEP_CAPTURE,
	/* drain and name the frames, one step per type */
	STEP_DRAIN,
	/* encode, compress, insert */
	STEP_STORE = STEP_DRAIN + INTERVAL_TYPES_MAX,
	/* retention, the periodic check, rollups, the uploader woken */
	STEP_PRUNE,
	/* counters, log, memory bound, status file */
	STEP_REPORT,
	STEP_NR,
};

/* One active profile type and the object owning its maps. */
struct interval_type {
	const struct profile_type *type;
	void *src;
};

/* The interval's state: the daemon's parts it reads, and what it keeps between intervals. */
struct interval {
	struct interval_deps d;
	struct interval_type types[INTERVAL_TYPES_MAX];
	size_t n_types;
	int64_t start_ns;    /* CLOCK_REALTIME: the current interval's start */
	struct store *store; /* the history's puts, retries and backlog */
	uint64_t late;	     /* intervals longer than 1.5 x interval since the start */
	int64_t late_last_ns, late_last_end_ns;
	int64_t due_ns; /* the interval's length when the current one started */
	/*
	 * With -v: the main thread's CPU per step (CLOCK_THREAD_CPUTIME_ID, a
	 * system call: only read when logged). Between two intervals the main
	 * thread handles events only, so the time since the last one ended is theirs.
	 */
	bool timed;
	int64_t step_ns[STEP_NR];
	int64_t step_t0; /* at the current step's start */
	struct interval_report rep;
	struct membound mb;
	struct status *status; /* <runtime_dir>/status */
	struct selfcost *cost; /* cpu_budget: what emberd cost, and what it lowered */
};

/* The drains' totals over every type, and what they dropped. */
struct interval_totals {
	struct drain_stats st;
	uint64_t excluded;
	size_t apps;
	struct status_runq runq[STATUSFILE_MAX_RUNQ]; /* off-CPU: run-queue delay per app */
	size_t n_runq;
	struct status_startup startup[STATUSFILE_MAX_RUNQ]; /* growth in start-ups per app */
	size_t n_startup;
};

/* The run-queue delay of each application of an offcpu drain, for the status file. */
static void note_runq(const struct drain_result *r, struct interval_totals *tot)
{
	for (size_t i = 0; i < r->n && tot->n_runq < STATUSFILE_MAX_RUNQ; i++) {
		struct status_runq *q = &tot->runq[tot->n_runq++];

		snprintf(q->app, sizeof(q->app), "%s", r->v[i].service);
		q->ns = r->v[i].st.runq_ns;
		q->waits = r->v[i].st.runq_waits;
	}
}

/* The growth in its processes' start-ups of each application of a growth drain that had some. */
static void note_startup(const struct drain_result *r, struct interval_totals *tot)
{
	for (size_t i = 0; i < r->n && tot->n_startup < STATUSFILE_MAX_RUNQ; i++) {
		struct status_startup *q = &tot->startup[tot->n_startup];

		if (r->v[i].st.startup_bytes <= 0)
			continue;
		snprintf(q->app, sizeof(q->app), "%s", r->v[i].service);
		q->bytes = (uint64_t)r->v[i].st.startup_bytes;
		tot->n_startup++;
	}
}

/* Stores one application's profile of the interval. */
static int store_profile(struct interval *iv, const struct drain_result *r,
			 const struct drain_profile *p, int64_t start, int64_t end)
{
	char labels[CONFIG_MAX_SERIES_LABELS * (CONFIG_NAME_MAX + CONFIG_VALUE_MAX + 2)];
	struct label_set set;
	struct history_meta m = {
		.start_ns = start,
		.end_ns = end,
		.type = r->type->name,
		.app = p->service,
		.labels = labels,
		.samples = p->st.samples,
		.processes = p->st.processes,
	};
	uint8_t *buf = NULL;
	size_t len;
	int rc;

	/* a label that cannot be made (the configuration prevents it) does not cost the profile */
	if (apps_labels(iv->d.src.cfg, p->app, p->service, procinfo_hostname(), &set))
		log_warnx("labels of %s: some left out", p->service);
	rc = labels_format(&set, labels, sizeof(labels));
	if (!rc)
		rc = pprof_encode(p->b, &buf, &len);
	if (rc) {
		log_warnx("cannot encode the %s profile of %s: %s", r->type->name, p->service,
			  strerror(-rc));
		return rc;
	}
	rc = store_put(iv->store, &m, buf, len); /* failures: kept and said by store.c */
	free(buf);
	return rc < 0 ? rc : 0;
}

/* Drains one type into r (empty when the drain failed, said). */
static void drain_type(struct interval *iv, const struct interval_type *t, int64_t start,
		       int64_t end, struct drain_result *r)
{
	struct drain_request q = {
		.type = t->type,
		.src = t->src,
		.sym = iv->d.src.sym,
		.hz = iv->d.src.cfg->hz,
		.start_ns = start,
		.end_ns = end,
		.classify = iv->d.classify,
		.arg = iv->d.classify_arg,
		.comment = t->type->comment ? t->type->comment(t->src) : NULL,
	};
	int rc = drain_profiles(&q, r);

	if (rc)
		log_warnx("cannot drain the %s samples: %s", t->type->name, strerror(-rc));
}

/* Stores one type's profiles and adds them to the totals; frees r. 0, or -EIO. */
static int store_type(struct interval *iv, struct drain_result *r, int64_t start, int64_t end,
		      struct interval_totals *tot)
{
	int failed = 0;

	for (size_t i = 0; i < r->n; i++)
		if (store_profile(iv, r, &r->v[i], start, end))
			failed = -EIO;
	/*
	 * The report's samples, stacks, processes and apps are the on-CPU sampling
	 * clock's: a fault or an allocation is no sample of it, and an application
	 * with three types is one application. Lost stacks are lost in any type.
	 */
	tot->st.lost_stacks += r->total.lost_stacks;
	if (r->type->report & PROFILE_REPORT_CLOCK) {
		tot->st.samples += r->total.samples;
		tot->st.stacks += r->total.stacks;
		tot->st.processes += r->total.processes;
		tot->excluded += r->excluded;
		tot->apps += r->n;
	}
	if (r->type->report & PROFILE_REPORT_RUNQ)
		note_runq(r, tot);
	if (r->type->report & PROFILE_REPORT_STARTUP)
		note_startup(r, tot);
	drain_result_free(r);
	return failed;
}

/* What follows the stores: retention, rollups, and the uploader told of new profiles. */
static void after_stores(struct interval *iv, int64_t end, bool stored)
{
	const struct ember_config *cfg = iv->d.src.cfg;
	struct uploader *up = *iv->d.src.up;

	if (retention_prune(iv->d.src.hist, cfg) == -EBADMSG)
		store_damaged(iv->store, "a prune failed: database disk image is malformed");
	store_check(iv->store);
	rollups_interval(iv->d.rollups, end, cfg->interval_ns);
	unwinder_check_stale(iv->d.src.unw);
	if (up && stored)
		uploader_wake(up);
}

/*
 * An interval over 1.5 times its length: the loop was stopped (SIGSTOP, a
 * frozen cgroup) or starved of CPU. Its samples are in its profiles; said and
 * counted, since the profile's duration alone does not tell anyone.
 */
static void check_length(struct interval *iv, int64_t start, int64_t end)
{
	int64_t len = end - start, want = iv->d.src.cfg->interval_ns;
	char l[32], w[32];

	if (iv->due_ns > want) /* a reload shortened the interval while this one ran */
		want = iv->due_ns;
	iv->due_ns = iv->d.src.cfg->interval_ns;
	if (len <= want + want / 2)
		return;
	iv->late++;
	iv->late_last_ns = len;
	iv->late_last_end_ns = end;
	format_duration(len, l, sizeof(l));
	format_duration(want, w, sizeof(w));
	log_warnx("an interval of %s where %s was due: emberd was stopped or starved of CPU; "
		  "its profiles cover the whole %s (late intervals since the start: %" PRIu64 ")",
		  l, w, l, iv->late);
}

/* The report, read once, and everything written from it. */
static void report(struct interval *iv, const struct interval_totals *tot)
{
	struct interval_report *rep = &iv->rep;
	uint64_t limit = iv->d.src.cfg->memory_limit;

	membound_limit(&iv->mb, limit);
	report_gather(rep, &iv->d.src, &tot->st, tot->excluded, tot->apps, store_stored(iv->store));
	rep->st.intervals_late = iv->late;
	rep->st.late_last_ns = iv->late_last_ns;
	rep->st.late_last_end_ns = iv->late_last_end_ns;
	memcpy(rep->st.runq, tot->runq, sizeof(tot->runq));
	rep->st.n_runq = tot->n_runq;
	memcpy(rep->st.startup, tot->startup, sizeof(tot->startup));
	rep->st.n_startup = tot->n_startup;
	store_status(iv->store, &rep->st.store);
	selfcost_interval(iv->cost, &iv->d.src, &rep->st.budget);
	snprintf(rep->st.state, sizeof(rep->st.state), "%s",
		 rep->st.store.failing ? "store-failing" : "running");
	report_log(rep);
	notify_report(rep);
	log_flush(false);
	membound_check(&iv->mb, limit, rep);
	status_write(iv->status, &rep->st);
}

/* Charges the main thread's CPU since the last step's end to step s (-v only). */
static void step_end(struct interval *iv, enum step s)
{
	int64_t now;

	if (!iv->timed)
		return;
	now = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	iv->step_ns[s] += now - iv->step_t0;
	iv->step_t0 = now;
}

/* The -v breakdown of the interval's main-thread CPU, per step and type. */
static void log_steps(struct interval *iv)
{
	char drains[160] = "";
	size_t off = 0;
	const int64_t *t = iv->step_ns;

	if (!iv->timed)
		return;
	for (size_t i = 0; i < iv->n_types && off < sizeof(drains); i++)
		off += snprintf(drains + off, sizeof(drains) - off, "%s%s %.2f", i ? ", " : "",
				iv->types[i].type->name, t[STEP_DRAIN + i] / 1e6);
	log_debug("interval CPU (main thread, ms): between intervals (events, walks, captures) "
		  "%.2f, drains (%s), "
		  "stores %.2f, retention and rollups %.2f, report %.2f",
		  t[STEP_CAPTURE] / 1e6, drains, t[STEP_STORE] / 1e6, t[STEP_PRUNE] / 1e6,
		  t[STEP_REPORT] / 1e6);
}

/* The symbolizer keeps pid's mappings past this interval (profile_keep_fn). */
static void keep_maps(void *sym, pid_t pid)
{
	symbolizer_keep(sym, pid);
}

int interval_run(struct interval *iv)
{
	int64_t start = iv->start_ns, end = real_ns();
	struct drain_result r[INTERVAL_TYPES_MAX];
	struct interval_totals tot = {};
	int rc = 0;

	iv->start_ns = end;
	/* every type at once: their drains then share one grace period */
	for (size_t i = 0; i < iv->n_types; i++)
		if (iv->types[i].type->flip)
			iv->types[i].type->flip(iv->types[i].src);
	check_length(iv, start, end);
	/* exits noted from here on may have samples in the new buffers: kept through their drain */
	symbolizer_flipped(iv->d.src.sym);
	proctable_flipped(iv->d.src.procs);
	/* samples to walk before exits (which drop their tables), then exits and first sights */
	if (owner_sampler(iv->d.src.owner))
		sampler_consume(owner_sampler(iv->d.src.owner));
	proctrack_consume(iv->d.src.proc); /* before the drains use them */
	step_end(iv, STEP_CAPTURE);
	for (size_t i = 0; i < iv->n_types; i++) {
		drain_type(iv, &iv->types[i], start, end, &r[i]);
		step_end(iv, STEP_DRAIN + i);
	}
	for (size_t i = 0; i < iv->n_types; i++)
		if (iv->types[i].type->keep)
			iv->types[i].type->keep(iv->types[i].src, keep_maps, iv->d.src.sym);
	symbolizer_end_interval(iv->d.src.sym);
	proctable_end_interval(iv->d.src.procs);
	step_end(iv, STEP_CAPTURE);
	store_flush(iv->store); /* what earlier intervals could not store goes first */
	for (size_t i = 0; i < iv->n_types; i++)
		if (store_type(iv, &r[i], start, end, &tot))
			rc = -EIO;
	if (store_end_interval(iv->store))
		rc = -EIO;
	step_end(iv, STEP_STORE);
	after_stores(iv, end, tot.apps > 0);
	step_end(iv, STEP_PRUNE);
	report(iv, &tot);
	step_end(iv, STEP_REPORT);
	log_steps(iv);
	memset(iv->step_ns, 0, sizeof(iv->step_ns));
	return rc;
}

/* The memory bound's hands: the symbolizer's caches and the report's memory figures. */
static void set_caps(void *arg, uint64_t limit)
{
	struct interval *iv = arg;
	struct symbolizer_caps caps;

	symbolizer_caps_for_limit(limit, &caps);
	symbolizer_set_caps(iv->d.src.sym, &caps);
	log_debug("memory_limit %" PRIu64 " MiB: caches of %" PRIu64 " MiB of binaries, %" PRIu64
		  " MiB of perf maps, %" PRIu64 " KiB of names",
		  limit >> 20, caps.files >> 20, caps.perfmaps >> 20, caps.names >> 10);
}

static uint64_t shrink(void *arg, uint64_t target)
{
	struct interval *iv = arg;

	return symbolizer_shrink(iv->d.src.sym, target);
}

static void measure(void *arg, struct interval_report *r)
{
	struct interval *iv = arg;

	report_measure_memory(r, &iv->d.src);
}

struct interval *interval_open(const struct interval_deps *deps)
{
	struct interval *iv = calloc(1, sizeof(*iv));

	if (!iv)
		return NULL;
	iv->d = *deps;
	iv->start_ns = real_ns();
	iv->timed = log_enabled(LOG_LVL_DEBUG);
	iv->step_t0 = iv->timed ? clock_ns(CLOCK_THREAD_CPUTIME_ID) : 0;
	iv->due_ns = deps->src.cfg->interval_ns;
	membound_init(
		&iv->mb,
		&(struct membound_ops){
			.set_caps = set_caps, .shrink = shrink, .measure = measure, .arg = iv},
		deps->src.cfg->memory_limit);
	iv->store = store_open(deps->src.hist, deps->src.cfg);
	iv->cost = iv->store ? selfcost_open(&deps->src) : NULL;
	if (!iv->cost) {
		store_close(iv->store);
		free(iv);
		return NULL;
	}
	iv->status = status_open(deps->src.cfg->runtime_dir);
	report_init(&iv->rep, &iv->d.src);
	report_gather_common(&iv->rep, &iv->d.src);
	status_write(iv->status, &iv->rep.st);
	return iv;
}

int interval_add_type(struct interval *iv, const struct profile_type *type, void *src)
{
	if (iv->n_types == INTERVAL_TYPES_MAX)
		return -ENOSPC;
	iv->types[iv->n_types++] = (struct interval_type){type, src};
	return 0;
}

uint64_t interval_profiles_stored(const struct interval *iv)
{
	return store_stored(iv->store);
}

void interval_close(struct interval *iv)
{
	if (!iv)
		return;
	store_close(iv->store); /* a last try, and what could not be stored is said */
	snprintf(iv->rep.st.state, sizeof(iv->rep.st.state), "stopped");
	report_gather_common(&iv->rep, &iv->d.src);
	status_write(iv->status, &iv->rep.st);
	status_close(iv->status);
	selfcost_close(iv->cost);
	free(iv);
}
