// SPDX-License-Identifier: MIT
/*
 * emberd: samples every process's stacks with BPF and stores one pprof profile
 * per interval and type in the local history. main() sets up, then the loop
 * dispatches each event source to its handler; interval.c owns the interval.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "args.h"
#include "bpfload.h"
#include "cgroupid.h"
#include "config.h"
#include "control.h"
#include "daemon.h"
#include "history.h"
#include "interval.h"
#include "ksymbpf.h"
#include "log.h"
#include "membound.h"
#include "notify.h"
#include "owners.h"
#include "procevents.h"
#include "proctable.h"
#include "proctrack.h"
#include "reload.h"
#include "retention.h"
#include "rollups.h"
#include "sampler.h"
#include "startscan.h"
#include "symbolizer.h"
#include "timer.h"
#include "unwinder.h"
#include "uploader.h"

#define CAP_PERFMON_BIT 38
#define CAP_BPF_BIT 39
#define CAP_SYS_ADMIN_BIT 21

/* Effective capabilities from /proc/self/status; 0 when unreadable. */
static uint64_t effective_caps(void)
{
	char line[256];
	uint64_t caps = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %lx", &caps) == 1)
			break;
	fclose(f);
	return caps;
}

/* One line naming what is missing, or 0. */
static int check_host(void)
{
	uint64_t caps = effective_caps();
	bool admin = caps & (1ULL << CAP_SYS_ADMIN_BIT);

	if (!admin && !((caps & (1ULL << CAP_BPF_BIT)) && (caps & (1ULL << CAP_PERFMON_BIT)))) {
		log_err("missing privileges: emberd must run as root, or with CAP_BPF and "
			"CAP_PERFMON (it has%s%s)",
			caps & (1ULL << CAP_BPF_BIT) ? " CAP_BPF" : " neither",
			caps & (1ULL << CAP_PERFMON_BIT) ? " CAP_PERFMON" : "");
		return 1;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		log_err("this kernel has no BTF (/sys/kernel/btf/vmlinux: %s): emberd needs a "
			"kernel built with CONFIG_DEBUG_INFO_BTF",
			strerror(errno));
		return 1;
	}
	return 0;
}

/* --- handlers: one per event source ------------------------------------------- */

static int on_signal(struct daemon *d)
{
	struct signalfd_siginfo si;

	if (read(d->ev[EV_SIGNAL].fd, &si, sizeof(si)) != sizeof(si))
		return 0;
	if (si.ssi_signo == SIGHUP) {
		request_reload(d);
		return 0;
	}
	log_info("%s: storing the last interval", strsignal(si.ssi_signo));
	return 1;
}

/* The end of an interval: store it, then a reloaded configuration takes effect. */
static void run_interval(struct daemon *d)
{
	d->interval_held = false;
	timer_arm(d->ev[EV_NAMING].fd, 0, 0);
	interval_run(d->iv);
	procevents_late(d);
	if (d->reload_pending)
		apply_reload(d);
}

/* Runs the interval held for the symbol loader, saying how long and why it ends now. */
static void run_held(struct daemon *d, bool loader_idle)
{
	if (loader_idle)
		log_debug("interval held %.0f ms, until the symbol loader had parsed every binary",
			  (mono_ns() - d->held_since_ns) / 1e6);
	else
		log_debug("interval held %.0f ms, its limit: frames of binaries the symbol loader "
			  "still parses stay addresses",
			  (mono_ns() - d->held_since_ns) / 1e6);
	run_interval(d);
}

/*
 * The interval is due. While the symbol loader parses binaries (those of
 * processes first seen lately), it is held, up to SYMBOLIZER_WAIT_NS, until
 * the loader says it is idle (on_loader): its frames are then named, and the
 * loop never waits on the loader's thread meanwhile.
 */
static int on_tick(struct daemon *d)
{
	uint64_t ticks;

	if (read(d->ev[EV_TICK].fd, &ticks, sizeof(ticks)) <= 0)
		return 0;
	if (d->interval_held)
		run_held(d, false); /* the next one is due: the held one first */
	if (!symbolizer_loading(d->sym) || timer_arm(d->ev[EV_NAMING].fd, SYMBOLIZER_WAIT_NS, 0)) {
		run_interval(d);
		return 0;
	}
	d->interval_held = true;
	d->held_since_ns = mono_ns();
	return 0;
}

/* The loader is idle: a held interval runs now, and captures that end wait no more. */
static int on_loader(struct daemon *d)
{
	if (!symbolizer_loader_woke(d->sym))
		return 0;
	if (d->interval_held)
		run_held(d, true);
	control_loader_idle(d->ctl);
	return 0;
}

/* The held interval waited long enough: binaries still parsing name its frames by address. */
static int on_naming(struct daemon *d)
{
	uint64_t ticks;

	if (read(d->ev[EV_NAMING].fd, &ticks, sizeof(ticks)) <= 0)
		return 0;
	if (d->interval_held)
		run_held(d, false);
	return 0;
}

static int on_end(struct daemon *d)
{
	(void)d;
	log_info("duration reached: storing the last interval");
	return 1;
}

static int on_recapture(struct daemon *d)
{
	procevents_recapture_due(d);
	return 0;
}

static int on_proc(struct daemon *d)
{
	/* samples to walk first: an exit read before them would drop the tables they need */
	sampler_consume(owner_sampler(d->owner));
	proctrack_wakeup(d->proc);
	return 0;
}

static int on_defer(struct daemon *d)
{
	sampler_consume(owner_sampler(d->owner));
	/*
	 * and the process events they wait for, which wake emberd seldom (young
	 * processes): the exits that let their samples be walked, before
	 * those of many processes gone fill the waiting list
	 */
	proctrack_consume(d->proc);
	return 0;
}

static int on_control(struct daemon *d)
{
	control_dispatch(d->ctl);
	return 0;
}

static int on_watchdog(struct daemon *d)
{
	(void)d;
	notify_watchdog_pet();
	return 0;
}

/* --- set-up ------------------------------------------------------------------- */

static int open_fds(struct daemon *d)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL))
		return -errno;
	d->ev[EV_SIGNAL] =
		(struct event_source){signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK), on_signal};
	for (int i = EV_TICK; i <= EV_NAMING; i++)
		d->ev[i].fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	d->ev[EV_TICK].handle = on_tick;
	d->ev[EV_END].handle = on_end;
	d->ev[EV_RECAPTURE].handle = on_recapture;
	d->ev[EV_NAMING].handle = on_naming;
	d->ev[EV_WATCHDOG].handle = on_watchdog;
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	for (int i = EV_SIGNAL; i <= EV_NAMING; i++)
		if (d->ev[i].fd < 0)
			return -errno;
	if (d->epfd < 0)
		return -errno;
	return notify_watchdog_open(&d->ev[EV_WATCHDOG].fd);
}

/* The event sources, each with its handler; their timers are armed when sampling begins. */
static int setup_loop(struct daemon *d)
{
	int rc = open_fds(d);

	if (rc)
		return rc;
	/* proctrack's and the control socket's fds belong to them: not closed by teardown */
	d->ev[EV_PROC] = (struct event_source){proctrack_epoll_fd(d->proc), on_proc};
	d->ev[EV_DEFER] =
		(struct event_source){sampler_epoll_fd(owner_sampler(d->owner)), on_defer};
	/* their samples that waited are walked as the ring's are */
	d->ev[EV_UNWOUND] =
		(struct event_source){d->unw ? unwinder_events_fd(d->unw) : -1, on_defer};
	d->ev[EV_CONTROL] = (struct event_source){control_fd(d->ctl), on_control};
	d->ev[EV_LOADER] = (struct event_source){symbolizer_loader_fd(d->sym), on_loader};
	for (int i = 0; i < EV_NR; i++) {
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &d->ev[i]};

		if (d->ev[i].fd >= 0 && epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->ev[i].fd, &ev))
			return -errno;
	}
	return 0;
}

/* How long a stop waits for the unwind tables the last interval's samples wait for. */
#define STOP_SETTLE_NS (10 * 1000000000ll)

/* Runs until a stop signal or the end of --duration; stores the last interval. */
static int run_loop(struct daemon *d)
{
	for (;;) {
		struct epoll_event ev;
		struct event_source *src;
		int n = epoll_wait(d->epfd, &ev, 1, -1), rc;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		src = ev.data.ptr;
		rc = src->handle(d);
		if (rc < 0)
			return rc;
		if (rc)
			break;
	}
	notify_stopping();
	/*
	 * the samples waiting for their process's tables: loaded now (those of
	 * processes gone, from the mappings their exits sent: read them), or
	 * walked without
	 */
	on_defer(d);
	/*
	 * not for every table still to build (seconds each for a large binary on
	 * a loaded host): the last interval must be stored well inside systemd's
	 * TimeoutStopSec (30 s in systemd/emberd.service)
	 */
	if (!unwinder_settle_until(d->unw, mono_ns() + STOP_SETTLE_NS)) {
		d->unw_busy_at_stop = true;
		log_info("stopping: unwind tables still building after %d s: the samples waiting "
			 "for them are walked by frame pointers",
			 (int)(STOP_SETTLE_NS / 1000000000));
	}
	sampler_flush(owner_sampler(d->owner));
	/* the last interval (with one held, if any: never flipped, they are one) named whole */
	d->interval_held = false;
	if (!symbolizer_settle_until(d->sym, mono_ns() + SYMBOLIZER_WAIT_NS))
		log_info("stopping: binaries still being parsed after %.0f s: their frames in the "
			 "last interval stay addresses",
			 SYMBOLIZER_WAIT_NS / 1e9);
	return interval_run(d->iv);
}

static void teardown(struct daemon *d)
{
	control_close(d->ctl);
	interval_close(d->iv);
	uploader_stop(d->up);
	rollups_stop(d->rollups);
	for (int s = PROFILE_SRC_NR - 1; s >= 0; s--)
		if (owners[s].close)
			owners[s].close(d->owner[s]);
	procevents_close(d);
	/* its thread joins between builds: one still running ends with the process */
	if (!d->unw_busy_at_stop || unwinder_idle(d->unw))
		unwinder_close(d->unw);
	proctrack_close(d->proc);
	proctable_free(d->procs);
	cgroup_names_close(d->cgroups);
	if (d->reload_pending)
		config_free(&d->next_cfg);
	config_free(&d->cfg);
	symbolizer_free(d->sym);
	ksymbpf_close(d->ksym);
	history_close(d->hist);
	notify_close();
	for (int i = EV_SIGNAL; i <= EV_NAMING; i++)
		if (d->ev[i].fd >= 0)
			close(d->ev[i].fd);
	if (d->epfd >= 0)
		close(d->epfd);
}

/* The history, its retention and rollups, and the control socket. 0 or 1 (said). */
static int open_store(struct daemon *d)
{
	const char *herr = NULL;
	char err[512];

	d->hist = history_open(d->cfg.data_dir, false, &herr);
	if (!d->hist) {
		log_err("cannot open the history in %s: %s", d->cfg.data_dir,
			herr ? herr : strerror(errno));
		return 1;
	}
	retention_opened(d->hist);
	d->rollups = rollups_start(d->cfg.data_dir);
	if (control_open(d->cfg.runtime_dir, &d->cenv, &d->ctl, err, sizeof(err))) {
		log_err("%s", err);
		return 1;
	}
	return 0;
}

/*
 * Raises the soft limit on descriptors towards the hard one, as far as the
 * symbolizer's own (SYMBOLIZER_MAX_FDS) and ~1000 more need: systemd's default
 * soft limit is 1024, and emberd polls with epoll, never select().
 */
static void raise_nofile(void)
{
	rlim_t want = SYMBOLIZER_MAX_FDS + 1024;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want ? rl.rlim_max : want;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		log_debug("cannot raise the limit on open files: %s", strerror(errno));
}

/*
 * Tests only: EMBER_TEST_SLOW_BINARY=PART:MS has the symbol loader wait MS
 * (at most 60 s) before parsing each binary whose path contains PART.
 */
static void slow_binaries(struct symbolizer *s)
{
	const char *v = getenv("EMBER_TEST_SLOW_BINARY"), *colon = v ? strrchr(v, ':') : NULL;
	char part[64];
	long ms;

	if (!colon || colon == v || (size_t)(colon - v) >= sizeof(part))
		return;
	ms = strtol(colon + 1, NULL, 10);
	if (ms <= 0 || ms > 60000)
		return;
	snprintf(part, sizeof(part), "%.*s", (int)(colon - v), v);
	symbolizer_slow_loads(s, part, ms * 1000000ll);
	log_info("tests: binaries whose path holds \"%s\" are parsed %ld ms late", part, ms);
}

/* The symbolizer (with kernel names from BPF when it can), the process table. 0 or 1. */
static int open_symbols(struct daemon *d)
{
	int rc;

	raise_nofile();
	d->sym = symbolizer_new();
	if (d->sym)
		slow_binaries(d->sym);
	rc = d->sym ? ksymbpf_open(&d->ksym) : 0;
	if (d->ksym)
		symbolizer_set_kernel_namer(d->sym, ksymbpf_name, d->ksym);
	else if (rc)
		log_debug("kernel frames named from /proc/kallsyms: %s", strerror(-rc));
	d->cgroups = cgroup_names_open();
	d->procs = d->cgroups ? proctable_new(cgroup_names_lookup, d->cgroups) : NULL;
	if (!d->sym || !d->procs) {
		log_err("cannot set up symbolization: %s", strerror(errno));
		return 1;
	}
	return 0;
}

/* Says why owner o failed and what goes with it; true when emberd stops for it. */
static bool owner_failed(const struct owner *o, const char *err)
{
	if (o->fatal)
		log_err("%s: %s", err, o->without);
	else
		log_warnx("%s: %s", err, o->without);
	return o->fatal;
}

/*
 * Opens every owner the configuration wants, in the sources' order (the CPU
 * sampler first: the others share its maps). One emberd cannot do without
 * stops it (said); the rest goes on without another (said). 0 or 1.
 */
static int open_owners(struct daemon *d, struct owner_env *env)
{
	char err[512];

	for (int s = 0; s < PROFILE_SRC_NR; s++) {
		const struct owner *o = &owners[s];

		if (!o->open || (o->wanted && !o->wanted(&d->cfg)))
			continue;
		if (!o->open(env, &d->owner[s], err, sizeof(err)))
			continue;
		d->owner[s] = NULL;
		if (owner_failed(o, err))
			return 1;
	}
	return 0;
}

/* The BPF side: process events, unwind tables, then the owners of the samplers. 0 or 1 (said). */
static int open_bpf(struct daemon *d)
{
	struct owner_env env = {.cfg = &d->cfg, .drop_fd = -1};
	char err[512];

	d->unw = unwinder_open(d->cfg.unwind_memory, err, sizeof(err));
	if (!d->unw)
		log_warnx("%s: user stacks are walked with frame pointers only", err);
	else
		symbolizer_set_runtime(d->sym, unwinder_runtime, d->unw);
	unwinder_fds(d->unw, &env.unwind);
	if (proctrack_open(procevents_on_event, d, env.unwind.procs, env.unwind.execs, &d->proc,
			   err, sizeof(err))) {
		log_err("%s", err);
		return 1;
	}
	env.events_fd = proctrack_events_fd(d->proc);
	env.known_fd = proctrack_known_fd(d->proc);
	env.unw = d->unw; /* the main sampler walks what it samples before a process is loaded */
	d->cenv = (struct capture_env){.events_fd = env.events_fd,
				       .known_fd = env.known_fd,
				       .unw = d->unw,
				       .sym = d->sym,
				       .cfg = &d->cfg};
	if (open_owners(d, &env))
		return 1;
	/* allocations are attached at exec: then every exec is handled at once */
	proctrack_wake_on_every_exec(d->proc, owner_allocs(d->owner) != NULL);
	return 0;
}

/* The interval's owner, reading the parts opened above; each type drains its source. */
static int open_interval(struct daemon *d)
{
	d->iv = interval_open(
		&(struct interval_deps){.src = {.cfg = &d->cfg,
						.owner = d->owner,
						.proc = d->proc,
						.procs = d->procs,
						.sym = d->sym,
						.unw = d->unw,
						.hist = d->hist,
						.up = &d->up,
						.processes_seen = &d->processes_seen,
						.processes_unread = &d->processes_unread,
						.processes_at_exit = &d->processes_at_exit,
						.processes_late = &d->processes_late},
					.rollups = d->rollups,
					.classify = procevents_classify,
					.classify_arg = d});
	if (!d->iv)
		goto fail;
	/* in the table's order, which is the drains' (profile_type.h) */
	for (int i = 0; i < PROFILE_TYPES_NR; i++) {
		const struct profile_type *t = &profile_types[i];
		void *src = d->owner[t->source];

		if (src && interval_add_type(d->iv, t, src))
			goto fail;
	}
	return 0;
fail:
	log_err("cannot set up the interval: %s", strerror(ENOMEM));
	return 1;
}

/*
 * Processes running at start: sampling begins once their tables are loaded,
 * or after this long anyway (those still being built then wait in the
 * deferred walks, as a new process's do). Measured on a 2-CPU host: 12
 * processes (cc1, node, python), 1 s of CPU, 3.2 s while it ran 7 others.
 */
#define STARTUP_TABLES_NS (10 * NS_PER_SEC)
/* How often that wait reads the process events (exits, execs) that come meanwhile. */
#define STARTUP_POLL_MS 20

/*
 * Gives the unwinder the processes that ran while emberd set up (startscan.h)
 * and waits for their tables, so that their first samples are walked with
 * them in the kernel: walked from stack copies instead, a whole host's first
 * second overflowed the deferred walks' budget, and its stacks stopped at
 * their leaf.
 */
static void load_running(struct daemon *d, const struct startscan *scan)
{
	int64_t t0 = mono_ns(), c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	size_t n;

	if (!scan || !d->unw)
		return;
	n = startscan_load(scan, d->unw);
	while (!unwinder_idle(d->unw) && mono_ns() - t0 < STARTUP_TABLES_NS) {
		proctrack_consume(d->proc);
		poll(NULL, 0, STARTUP_POLL_MS);
	}
	if (unwinder_idle(d->unw))
		log_info("unwind tables of the %zu processes running at start loaded in %.0f ms "
			 "(%.0f ms of CPU)",
			 n, (mono_ns() - t0) / 1e6,
			 (clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0) / 1e6);
	else
		log_info("unwind tables of the %zu processes running at start: not all loaded "
			 "after %.1f s; samples of those still waiting wait for them",
			 n, STARTUP_TABLES_NS / 1e9);
}

/*
 * Sampling begins, every sampler at once and once emberd is set up, so that
 * its own start-up (the kernel's verifier, the tables of the processes
 * running) is in no profile; the interval and --duration count from here.
 * An owner emberd can do without goes on without its own (said). 0 or 1 (said).
 */
static int start_sampling(struct daemon *d)
{
	char err[512];

	for (int s = 0; s < PROFILE_SRC_NR; s++) {
		const struct owner *o = &owners[s];

		if (!d->owner[s] || !o->start || !o->start(d->owner[s], err, sizeof(err)))
			continue;
		if (owner_failed(o, err))
			return 1;
		o->close(d->owner[s]);
		d->owner[s] = NULL;
	}
	return 0;
}

/* The interval's and --duration's timers, from when sampling began. 0 or 1 (said). */
static int arm_timers(struct daemon *d, int64_t duration_ns)
{
	if (timer_arm(d->ev[EV_TICK].fd, d->cfg.interval_ns, d->cfg.interval_ns) ||
	    (duration_ns && timer_arm(d->ev[EV_END].fd, duration_ns, 0))) {
		log_err("cannot arm the interval's timer: %s", strerror(errno));
		return 1;
	}
	return 0;
}

static int setup(struct daemon *d, const struct args *a)
{
	int64_t t0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID), t1, t2;
	struct startscan *scan;
	int rc;

	if (open_store(d))
		return 1;
	t1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	if (open_symbols(d))
		return 1;
	/* the processes' CPU time before the BPF load, to tell those that run during it */
	scan = startscan_begin();
	t2 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	if (open_bpf(d)) {
		startscan_free(scan);
		return 1;
	}
	log_debug("start-up CPU: %.1f ms before, history and control %.1f, symbolizer %.1f, "
		  "BPF %.1f",
		  t0 / 1e6, (t1 - t0) / 1e6, (t2 - t1) / 1e6,
		  (clock_ns(CLOCK_PROCESS_CPUTIME_ID) - t2) / 1e6);
	rc = setup_loop(d);
	if (rc) {
		startscan_free(scan);
		log_err("cannot set up the event loop: %s", strerror(-rc));
		return 1;
	}
	load_running(d, scan);
	startscan_free(scan);
	if (start_sampling(d) || reload_start_uploader(d) || open_interval(d) ||
	    arm_timers(d, a->duration_ns))
		return 1;
	return 0;
}

int main(int argc, char **argv)
{
	static struct daemon d = {.epfd = -1};
	struct args a = {};
	uint64_t stored;
	int rc;

	membound_malloc_setup();
	for (int i = 0; i < EV_NR; i++)
		d.ev[i].fd = -1;
	rc = args_parse(argc, argv, &a);
	if (rc)
		return rc;
	if (reload_load(&a, &d.cfg, false))
		return 1;
	if (a.check_config) {
		printf("configuration OK\n");
		config_free(&d.cfg);
		return 0;
	}
	d.args = &a;
	log_init("emberd", a.verbose ? LOG_LVL_DEBUG : LOG_LVL_INFO);
	bpfload_init();
	if (check_host())
		return 1;
	if (setup(&d, &a)) {
		teardown(&d);
		return 1;
	}
	log_info("sampling %u CPUs at %u Hz; one profile every %.3gs into %s",
		 sampler_ncpus(owner_sampler(d.owner)), d.cfg.hz, d.cfg.interval_ns / 1e9,
		 history_path(d.hist));
	notify_ready("sampling %u CPUs at %u Hz into %s", sampler_ncpus(owner_sampler(d.owner)),
		     d.cfg.hz, history_path(d.hist));
	log_info("look at it: emberctl --data-dir %s top --since -15m (or list, tree, "
		 "flamegraph -o cpu.html, export -o cpu.pb.gz for go tool pprof); "
		 "emberctl status --runtime-dir %s",
		 d.cfg.data_dir, d.cfg.runtime_dir);
	rc = run_loop(&d);
	log_flush(true);
	stored = interval_profiles_stored(d.iv);
	log_info("stopped after storing %lu profile%s", stored, stored == 1 ? "" : "s");
	teardown(&d);
	return rc ? 1 : 0;
}
