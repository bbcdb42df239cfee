// SPDX-License-Identifier: MIT
/*
 * emberd: samples every process's on-CPU stacks with BPF and stores one pprof
 * profile per interval in the local history. main() reads top to bottom.
 */
#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "control.h"
#include "drain.h"
#include "ksymbpf.h"
#include "history.h"
#include "apps.h"
#include "log.h"
#include "notify.h"
#include "procinfo.h"
#include "proctable.h"
#include "proctrack.h"
#include "unwinder.h"
#include "retention.h"
#include "rollups.h"
#include "sampler.h"
#include "status.h"
#include "symbolizer.h"
#include "timeparse.h"
#include "uploader.h"

#ifndef EMBER_VERSION
#define EMBER_VERSION "0.1.0"
#endif
/*
 * A process first seen while the dynamic loader is still mapping its libraries
 * is captured again after these delays (ld.so takes 1-50 ms), so that a
 * short-lived one leaves a complete snapshot behind.
 */
#define RECAPTURE_FIRST_NS (20 * 1000000LL)
#define RECAPTURE_SECOND_NS (250 * 1000000LL)
#define RECAPTURE_MAX 4096
/*
 * Only a process that exec'd this recently can still be in ld.so when first
 * captured; one sampled later (or running before emberd started, or a fork
 * that did not exec) has all its startup libraries mapped and is captured
 * once. Exec times are remembered in a small table indexed by pid.
 */
#define RECENT_EXEC_NS (1000 * 1000000LL)
#define RECENT_EXEC_SLOTS 8192
#define CAP_PERFMON_BIT 38
#define CAP_BPF_BIT 39
#define CAP_SYS_ADMIN_BIT 21

/* What the command line asked for, on top of the configuration file. */
struct args {
	const char *config_path;	/* NULL: the default file if it exists */
	const char *data_dir, *hz, *interval;
	const char *runtime_dir;	/* --runtime-dir: the control socket and the status file */
	int64_t duration_ns;		/* 0: run until signalled */
	bool verbose, check_config;
};

/* Processes to capture again, in due order (a FIFO: the delays are fixed). */
struct recapture {
	struct {
		pid_t pid;
		int round;		/* 1: first recapture, 2: second */
		int64_t due_ns;		/* CLOCK_MONOTONIC */
	} q[RECAPTURE_MAX];
	size_t head, n;
	uint64_t dropped;		/* queue full: captured once only */
	struct {
		pid_t pid;
		int64_t ns;		/* CLOCK_MONOTONIC when its exec was reported */
	} exec[RECENT_EXEC_SLOTS];	/* by pid modulo the size; a collision forgets one */
};

/* The running daemon. */
struct daemon {
	struct ember_config cfg;
	struct history *hist;
	struct sampler *sampler;
	struct proctrack *proc;
	struct proctable *procs;
	struct symbolizer *sym;
	struct ksymbpf *ksym;		/* names kernel frames; NULL: /proc/kallsyms instead */
	struct unwinder *unw;		/* .eh_frame tables; NULL: frame pointers only */
	struct uploader *up;		/* NULL without a [collector] url */
	struct rollups *rollups;	/* NULL when the builder could not start */
	struct control *ctl;		/* the control socket: on-demand captures */
	struct capture_env cenv;	/* what captures share with the main sampler */
	const struct args *args;
	struct ember_config next_cfg;	/* a reloaded configuration, applied after the drain */
	bool reload_pending;
	int epfd, sigfd, tickfd, endfd, recapfd;
	struct recapture recap;
	int64_t interval_start_ns;
	uint64_t last_metrics[EMBER_CPU_M_NR];
	uint64_t last_proc_metrics[EMBER_PROC_M_NR];
	uint64_t profiles_stored;
	uint64_t processes_seen;
	struct status *status;		/* <runtime_dir>/status */
	int64_t capture_ns;		/* main thread CPU capturing processes this interval */
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: emberd [OPTIONS]\n"
"\n"
"Samples the on-CPU stacks of every process on this host with eBPF and writes\n"
"one pprof CPU profile per interval into the local history, where emberctl\n"
"reads it.\n"
"\n"
"Options:\n"
"  -c, --config FILE      configuration file (default " EMBER_DEFAULT_CONFIG " if it\n"
"                         exists, else built-in defaults)\n"
"  -d, --data-dir DIR     where the history lives (default " EMBER_DEFAULT_DATA_DIR ")\n"
"      --runtime-dir DIR  where the control socket and the status file live (default\n"
"                         " EMBER_DEFAULT_RUNTIME_DIR "); emberctl --runtime-dir DIR finds them\n"
"      --hz N             samples per second per CPU, %d..%d (default 19)\n"
"      --interval DUR     one profile per DUR, 1s..1h (default 10s)\n"
"      --duration DUR     stop after DUR, storing the last partial interval\n"
"      --check-config     validate the configuration, print 'configuration OK', exit\n"
"  -v, --verbose          debug logging (libbpf's messages included)\n"
"  -h, --help             this help\n"
"  -V, --version          print the version\n"
"\n"
"Durations: 500ms, 10s, 2m, 1h, or a number of seconds.\n"
"Signals: TERM and INT store the current partial interval and exit; HUP re-reads\n"
"the configuration (applied after the next interval is stored).\n"
"Under systemd (emberd.service, Type=notify): READY=1 once sampling, a STATUS=\n"
"line per interval, RELOADING=1/STOPPING=1, and WATCHDOG=1 every WATCHDOG_USEC/2;\n"
"log lines go to the journal with their priority. See emberd(8).\n"
"Needs root, or CAP_BPF and CAP_PERFMON (+ CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH\n"
"to read other processes' binaries), and a kernel with BTF.\n"
"\n"
"Look at what it stored, and at emberd itself (running, losses, CPU, memory):\n"
"  emberctl --data-dir DIR list\n"
"  emberctl --data-dir DIR status --runtime-dir RUNDIR\n"
"  emberctl --data-dir DIR export --type cpu --since -15m -o cpu.pb.gz\n"
"  go tool pprof -top cpu.pb.gz\n",
		EMBER_HZ_MIN, EMBER_HZ_MAX);
}

static int parse_args(int argc, char **argv, struct args *a)
{
	enum { OPT_HZ = 256, OPT_INTERVAL, OPT_DURATION, OPT_CHECK, OPT_RUNTIME_DIR };
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "data-dir", required_argument, NULL, 'd' },
		{ "runtime-dir", required_argument, NULL, OPT_RUNTIME_DIR },
		{ "hz", required_argument, NULL, OPT_HZ },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "check-config", no_argument, NULL, OPT_CHECK },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{},
	};
	int c;

	while ((c = getopt_long(argc, argv, "c:d:vhV", opts, NULL)) != -1) {
		switch (c) {
		case 'c': a->config_path = optarg; break;
		case 'd': a->data_dir = optarg; break;
		case OPT_RUNTIME_DIR: a->runtime_dir = optarg; break;
		case OPT_HZ: a->hz = optarg; break;
		case OPT_INTERVAL: a->interval = optarg; break;
		case OPT_DURATION:
			if (parse_duration(optarg, &a->duration_ns) || a->duration_ns <= 0) {
				fprintf(stderr, "emberd: --duration: '%s' is not a duration "
					"(e.g. 30s, 5m)\n", optarg);
				return 2;
			}
			break;
		case OPT_CHECK: a->check_config = true; break;
		case 'v': a->verbose = true; break;
		case 'h': usage(stdout); exit(0);
		case 'V': printf("emberd %s\n", EMBER_VERSION); exit(0);
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "emberd: unexpected argument '%s' (see --help)\n", argv[optind]);
		return 2;
	}
	return 0;
}

/* Errors go to stderr at start-up (plain lines) and to the log on reload. */
static void print_errors(const struct config_errors *errs, bool to_log)
{
	for (size_t i = 0; i < errs->n; i++) {
		if (to_log)
			log_warnx("%s", errs->msg[i]);
		else
			fprintf(stderr, "%s\n", errs->msg[i]);
	}
	if (errs->dropped && to_log)
		log_warnx("... and %zu more errors", errs->dropped);
	else if (errs->dropped)
		fprintf(stderr, "... and %zu more errors\n", errs->dropped);
}

/* Configuration file (explicit, default if present, or none) then command line. */
static int load_config(const struct args *a, struct ember_config *cfg, bool to_log)
{
	struct config_errors errs = {};
	const char *path = a->config_path;
	char err[256];

	config_defaults(cfg);
	if (!path && access(EMBER_DEFAULT_CONFIG, F_OK) == 0)
		path = EMBER_DEFAULT_CONFIG;
	if (path && config_load(path, cfg, &errs)) {
		print_errors(&errs, to_log);
		config_free(cfg);
		return 1;
	}
	if ((a->hz && config_set(cfg, "hz", a->hz, err, sizeof(err))) ||
	    (a->interval && config_set(cfg, "interval", a->interval, err, sizeof(err))) ||
	    (a->data_dir && config_set(cfg, "data_dir", a->data_dir, err, sizeof(err))) ||
	    (a->runtime_dir && config_set(cfg, "runtime_dir", a->runtime_dir, err, sizeof(err)))) {
		if (to_log)
			log_warnx("command line: %s", err);
		else
			fprintf(stderr, "emberd: command line: %s\n", err);
		config_free(cfg);
		return 1;
	}
	return 0;
}

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
			"kernel built with CONFIG_DEBUG_INFO_BTF", strerror(errno));
		return 1;
	}
	return 0;
}

static int64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * The symbolizer's figures: a summary with -v, and the perf maps refused (each
 * file is counted once) whenever more were, since they point at a hostile or
 * broken writer.
 */
static void report_symbols(struct daemon *d)
{
	static uint64_t last_refused;
	struct symbolizer_stats s;
	uint64_t refused;

	symbolizer_stats(d->sym, &s);
	refused = s.perfmap.refused_symlink + s.perfmap.refused_owner + s.perfmap.refused_size +
		  s.perfmap.refused_type;
	if (refused != last_refused)
		log_info("perf maps refused: symlink %lu, wrong owner %lu, too big %lu, "
			 "not a regular file %lu (malformed lines skipped %lu)",
			 s.perfmap.refused_symlink, s.perfmap.refused_owner,
			 s.perfmap.refused_size, s.perfmap.refused_type, s.perfmap.bad_lines);
	last_refused = refused;
	log_debug("symbols: %lu of %lu frames named, %lu demangled; file cache %lu binaries, "
		  "%lu of %lu MiB (%lu named from a debug file); perf maps %lu, %lu KiB, "
		  "%lu frames named, %lu malformed lines; kernel names asked %lu, cached %lu",
		  s.named, s.frames, s.demangled, s.files_cached, s.file_cache_bytes >> 20,
		  s.file_cache_bound >> 20, s.debug_build_id + s.debug_link, s.perfmap.maps,
		  s.perfmap.memory >> 10, s.perfmap.named, s.perfmap.bad_lines, s.kernel_asked,
		  s.kernel_cached);
}

static void report_metrics(struct daemon *d, const struct drain_stats *st, uint64_t excluded,
			   size_t napps)
{
	static const char *const names[EMBER_CPU_M_NR] = {
		[EMBER_CPU_M_USTACK_FAILED] = "user stacks unreadable",
		[EMBER_CPU_M_KSTACK_FAILED] = "kernel stacks unreadable",
		[EMBER_CPU_M_STACKS_FULL] = "stacks lost (stack map full)",
		[EMBER_CPU_M_COUNTS_FULL] = "samples dropped (counts map full)",
		[EMBER_CPU_M_PROC_EVENT_LOST] = "new-process events retried (ring buffer full)",
	};
	uint64_t pnow[EMBER_PROC_M_NR] = {};
	uint64_t now[EMBER_CPU_M_NR], delta[EMBER_CPU_M_NR];
	char losses[512] = "";
	size_t off = 0;

	if (sampler_metrics(d->sampler, now))
		return;
	for (int m = 0; m < EMBER_CPU_M_NR; m++) {
		delta[m] = now[m] - d->last_metrics[m];
		if (names[m] && delta[m] && off < sizeof(losses))
			off += snprintf(losses + off, sizeof(losses) - off, ", %s %lu", names[m],
					delta[m]);
	}
	memcpy(d->last_metrics, now, sizeof(now));
	if (!proctrack_metrics(d->proc, pnow)) {
		uint64_t lost = pnow[EMBER_PROC_M_RINGBUF_FULL] -
				d->last_proc_metrics[EMBER_PROC_M_RINGBUF_FULL];

		if (lost && off < sizeof(losses))
			off += snprintf(losses + off, sizeof(losses) - off,
					", process events lost %lu", lost);
		memcpy(d->last_proc_metrics, pnow, sizeof(pnow));
	}
	if (off)
		log_warnx("interval: %lu samples in %lu stacks of %u processes in %zu apps%s",
			  st->samples, st->stacks, st->processes, napps, losses);
	else
		log_debug("interval: %lu samples in %lu stacks of %u processes in %zu apps "
			  "(excluded %lu, filtered in BPF %lu, idle skipped %lu)",
			  st->samples, st->stacks, st->processes, napps, excluded,
			  delta[EMBER_CPU_M_FILTERED], delta[EMBER_CPU_M_IDLE_SKIPPED]);
	report_symbols(d);
}

static int arm_timer(int fd, int64_t first_ns, int64_t every_ns);

static void recapture_arm(struct daemon *d)
{
	struct recapture *r = &d->recap;
	int64_t wait = 0;

	if (r->n) {
		wait = r->q[r->head].due_ns - now_ns(CLOCK_MONOTONIC);
		if (wait < 1000)
			wait = 1000; /* 0 would disarm the timer */
	}
	arm_timer(d->recapfd, wait, 0);
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
	r->q[tail].due_ns = now_ns(CLOCK_MONOTONIC) + delay_ns;
	if (r->n++ == 0)
		recapture_arm(d);
}

/* Captures again every process whose delay has passed. */
static void recapture_due(struct daemon *d)
{
	struct recapture *r = &d->recap;
	int64_t now = now_ns(CLOCK_MONOTONIC);
	uint64_t ticks;

	if (read(d->recapfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		return;
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
}

static void note_exec(struct daemon *d, pid_t pid)
{
	d->recap.exec[(uint32_t)pid % RECENT_EXEC_SLOTS].pid = pid;
	d->recap.exec[(uint32_t)pid % RECENT_EXEC_SLOTS].ns = now_ns(CLOCK_MONOTONIC);
}

static bool exec_recent(const struct daemon *d, pid_t pid)
{
	const struct recapture *r = &d->recap;
	uint32_t i = (uint32_t)pid % RECENT_EXEC_SLOTS;

	return r->exec[i].pid == pid && now_ns(CLOCK_MONOTONIC) - r->exec[i].ns < RECENT_EXEC_NS;
}

/* Tells the BPF program whether to sample a process, as its class says. */
static void apply_class(const struct proc_class *pc, void *arg)
{
	struct daemon *d = arg;

	if (sampler_drop(d->sampler, pc->pid, pc->match.excluded) == -E2BIG)
		log_debug("kernel filter full: pid %d is filtered in user space", pc->pid);
	control_proc_classified(d->ctl, pc);
}

/*
 * Captures a process while it lives and classifies it into an application;
 * forgets it after the drain that follows its exit.
 */
static void on_proc_event(const struct ember_proc_event *e, void *arg)
{
	struct daemon *d = arg;
	const struct proc_class *pc;

	if (e->type == EMBER_PROC_EXIT) {
		unwinder_exited(d->unw, e->tgid);
		symbolizer_exited(d->sym, e->tgid);
		proctable_exited(d->procs, e->tgid);
		sampler_drop(d->sampler, e->tgid, false);
		control_proc_exited(d->ctl, e->tgid);
	} else if (e->type == EMBER_PROC_NEW) {
		d->processes_seen++;
		pc = proctable_classify(d->procs, &d->cfg, e->tgid, NULL);
		if (pc)
			apply_class(pc, d);
		if (pc && pc->match.excluded)
			return;
		unwinder_add(d->unw, e->tgid); /* first sight, or first sample after an exec */
		if (symbolizer_capture(d->sym, e->tgid) == 0 && exec_recent(d, e->tgid))
			recapture_push(d, e->tgid, 1, RECAPTURE_FIRST_NS);
	} else if (e->type == EMBER_PROC_EXEC) {
		/* the first sample after it reports the process again, with its libraries */
		note_exec(d, e->tgid);
		unwinder_exec(d->unw, e->tgid);
	}
}

static const struct proc_class *classify_for_drain(uint32_t pid, const char *comm, void *arg)
{
	struct daemon *d = arg;

	return proctable_get(d->procs, &d->cfg, pid, comm);
}

/* Stores one application's profile of the interval. */
static int store_profile(struct daemon *d, const struct drain_profile *p, int64_t start,
			 int64_t end)
{
	char labels[CONFIG_MAX_SERIES_LABELS * (CONFIG_NAME_MAX + CONFIG_VALUE_MAX + 2)];
	struct history_meta m = {
		.start_ns = start, .end_ns = end, .type = "cpu", .app = p->service,
		.labels = labels, .samples = p->st.samples, .processes = p->st.processes,
	};
	uint8_t *buf = NULL;
	size_t len;
	int rc;

	rc = apps_labels_text(&d->cfg, p->app, p->service, procinfo_hostname(), labels,
			      sizeof(labels));
	if (!rc)
		rc = pprof_encode(p->b, &buf, &len);
	if (rc) {
		log_warnx("cannot encode the profile of %s: %s", p->service, strerror(-rc));
		return rc;
	}
	rc = history_put(d->hist, &m, buf, len, NULL);
	free(buf);
	if (rc)
		log_warnx("cannot store the profile of %s in %s: %s", p->service,
			  history_path(d->hist), strerror(-rc));
	else
		d->profiles_stored++;
	return rc;
}

static void apply_reload(struct daemon *d);

/*
 * Drains what was sampled since the interval began and stores one profile per
 * application; then a reloaded configuration takes effect.
 */
static int store_interval(struct daemon *d)
{
	int64_t start = d->interval_start_ns, end = now_ns(CLOCK_REALTIME);
	struct drain_result r;
	int rc, failed = 0;

	int64_t c0 = now_ns(CLOCK_THREAD_CPUTIME_ID), c1, c2;

	d->interval_start_ns = end;
	proctrack_consume(d->proc); /* exits and first sights before the drain uses them */
	c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	rc = drain_cpu_profiles(d->sampler, d->sym, d->cfg.hz, start, end, classify_for_drain, d,
				&r);
	proctable_end_interval(d->procs);
	c2 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	if (rc) {
		log_warnx("cannot drain the samples: %s", strerror(-rc));
		return rc;
	}
	report_metrics(d, &r.total, r.excluded, r.n);
	for (size_t i = 0; i < r.n; i++)
		if (store_profile(d, &r.v[i], start, end))
			failed = -EIO;
	retention_prune(d->hist, &d->cfg);
	rollups_interval(d->rollups, end, d->cfg.interval_ns);
	if (d->up && r.n)
		uploader_wake(d->up);
	notify_status("last interval: %lu samples of %u processes in %zu apps; %lu profiles stored",
		      r.total.samples, r.total.processes, r.n, d->profiles_stored);
	log_flush(false);
	status_interval(d->status, &r);
	drain_result_free(&r);
	log_debug("interval CPU (main thread): capturing processes %.1f ms, drain and symbols "
		  "%.1f ms, pprof and history %.1f ms", (d->capture_ns + c1 - c0) / 1e6,
		  (c2 - c1) / 1e6, (now_ns(CLOCK_THREAD_CPUTIME_ID) - c2) / 1e6);
	d->capture_ns = 0;
	if (d->reload_pending)
		apply_reload(d);
	return failed;
}

/* SIGHUP: a valid file is applied after the next drain; a bad one changes nothing. */
static void request_reload(struct daemon *d)
{
	struct ember_config next;

	notify_reloading();
	if (load_config(d->args, &next, true)) {
		log_warnx("configuration refused: keeping the running one");
		notify_ready("configuration refused: running with the previous one");
		return;
	}
	if (d->reload_pending)
		config_free(&d->next_cfg);
	d->next_cfg = next;
	d->reload_pending = true;
	log_info("configuration reloaded: %zu apps; it takes effect at the next interval",
		 next.n_apps);
}

/* Starts pushing to the configured collector, if any. 0 or -errno (logged). */
static int start_uploader(struct daemon *d)
{
	const struct collector_config *cc = &d->cfg.collector;
	char err[512];
	int rc;

	if (!cc->url[0])
		return 0;
	if (cc->insecure_skip_verify)
		log_warnx("[collector] insecure_skip_verify = yes: the collector's TLS certificate "
			  "is NOT checked; profiles and credentials can be intercepted");
	rc = uploader_start(cc, d->cfg.data_dir, &d->up, err, sizeof(err));
	if (rc)
		log_err("collector: %s", err);
	else
		log_info("pushing profiles to %s (%s)", cc->url,
			 cc->protocol == COLLECTOR_PUSH ? "push API" : "legacy ingest");
	return rc;
}

static void apply_reload(struct daemon *d)
{
	struct ember_config *n = &d->next_cfg;

	if (n->hz != d->cfg.hz || strcmp(n->data_dir, d->cfg.data_dir) ||
	    n->include_idle != d->cfg.include_idle || strcmp(n->runtime_dir, d->cfg.runtime_dir) ||
	    n->unwind_memory != d->cfg.unwind_memory) {
		log_warnx("hz, data_dir, include_idle, runtime_dir and unwind_memory change only "
			  "with a restart: keeping %u Hz, %s, include_idle=%s, %s, %" PRIu64 " MiB",
			  d->cfg.hz, d->cfg.data_dir, d->cfg.include_idle ? "yes" : "no",
			  d->cfg.runtime_dir, d->cfg.unwind_memory >> 20);
		n->unwind_memory = d->cfg.unwind_memory;
		n->hz = d->cfg.hz;
		snprintf(n->data_dir, sizeof(n->data_dir), "%s", d->cfg.data_dir);
		snprintf(n->runtime_dir, sizeof(n->runtime_dir), "%s", d->cfg.runtime_dir);
		n->include_idle = d->cfg.include_idle;
	}
	if (n->interval_ns != d->cfg.interval_ns)
		arm_timer(d->tickfd, n->interval_ns, n->interval_ns);
	bool collector_changed = memcmp(&n->collector, &d->cfg.collector, sizeof(n->collector));

	config_free(&d->cfg);
	d->cfg = *n;
	memset(n, 0, sizeof(*n));
	if (collector_changed) {
		uploader_stop(d->up);
		d->up = NULL;
		if (start_uploader(d))
			log_warnx("collector disabled until the next valid reload");
	}
	d->reload_pending = false;
	proctable_reclassify(d->procs, &d->cfg, apply_class, d);
	log_info("configuration applied: %zu apps, profile = %s", d->cfg.n_apps,
		 d->cfg.profile_matched ? "matched" : "all");
	notify_ready("configuration applied: %zu apps", d->cfg.n_apps);
}

static int add_fd(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static int arm_timer(int fd, int64_t first_ns, int64_t every_ns)
{
	struct itimerspec its = {
		.it_value = { first_ns / 1000000000LL, first_ns % 1000000000LL },
		.it_interval = { every_ns / 1000000000LL, every_ns % 1000000000LL },
	};

	return timerfd_settime(fd, 0, &its, NULL) ? -errno : 0;
}

static int setup_loop(struct daemon *d, int64_t duration_ns)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL))
		return -errno;
	d->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	d->tickfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	d->endfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	d->recapfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->sigfd < 0 || d->tickfd < 0 || d->endfd < 0 || d->recapfd < 0 || d->epfd < 0)
		return -errno;
	if (arm_timer(d->tickfd, d->cfg.interval_ns, d->cfg.interval_ns) ||
	    (duration_ns && arm_timer(d->endfd, duration_ns, 0)))
		return -errno;
	if (add_fd(d->epfd, d->sigfd) || add_fd(d->epfd, d->tickfd) || add_fd(d->epfd, d->endfd) ||
	    add_fd(d->epfd, d->recapfd) || add_fd(d->epfd, proctrack_epoll_fd(d->proc)) ||
	    add_fd(d->epfd, control_fd(d->ctl)))
		return -errno;
	return notify_watchdog_start(d->epfd);
}

/* Runs until a stop signal or the end of --duration; stores the last interval. */
static int run_loop(struct daemon *d)
{
	for (;;) {
		struct epoll_event ev;
		struct signalfd_siginfo si;
		uint64_t ticks;
		int n = epoll_wait(d->epfd, &ev, 1, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		int64_t c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);

		if (ev.data.fd == proctrack_epoll_fd(d->proc)) {
			proctrack_consume(d->proc);
			d->capture_ns += now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
		} else if (notify_is_watchdog(ev.data.fd)) {
			notify_watchdog_pet();
		} else if (ev.data.fd == control_fd(d->ctl)) {
			control_dispatch(d->ctl);
		} else if (ev.data.fd == d->recapfd) {
			recapture_due(d);
			d->capture_ns += now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
		} else if (ev.data.fd == d->tickfd) {
			if (read(d->tickfd, &ticks, sizeof(ticks)) > 0)
				store_interval(d);
		} else if (ev.data.fd == d->endfd) {
			log_info("duration reached: storing the last interval");
			break;
		} else if (read(d->sigfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGHUP) {
				request_reload(d);
				continue;
			}
			log_info("%s: storing the last interval", strsignal(si.ssi_signo));
			break;
		}
	}
	notify_stopping();
	return store_interval(d);
}

static void teardown(struct daemon *d)
{
	control_close(d->ctl);
	status_close(d->status);
	uploader_stop(d->up);
	rollups_stop(d->rollups);
	sampler_close(d->sampler);
	unwinder_close(d->unw);
	proctrack_close(d->proc);
	proctable_free(d->procs);
	if (d->reload_pending)
		config_free(&d->next_cfg);
	config_free(&d->cfg);
	symbolizer_free(d->sym);
	ksymbpf_close(d->ksym);
	history_close(d->hist);
	notify_close();
	for (int *fd = &d->epfd; fd <= &d->recapfd; fd++)
		if (*fd >= 0)
			close(*fd);
}

int main(int argc, char **argv)
{
	struct daemon d = { .epfd = -1, .sigfd = -1, .tickfd = -1, .endfd = -1, .recapfd = -1 };
	struct sampler_opts so = {};
	struct args a = {};
	const char *herr = NULL;
	char err[512];
	int rc;

	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc;
	if (load_config(&a, &d.cfg, false))
		return 1;
	if (a.check_config) {
		printf("configuration OK\n");
		config_free(&d.cfg);
		return 0;
	}
	d.args = &a;
	log_init("emberd", a.verbose ? LOG_LVL_DEBUG : LOG_LVL_INFO);
	if (check_host())
		return 1;

	int64_t t0 = now_ns(CLOCK_PROCESS_CPUTIME_ID), t1, t2, t3, t4;

	d.hist = history_open(d.cfg.data_dir, false, &herr);
	if (!d.hist) {
		log_err("cannot open the history in %s: %s", d.cfg.data_dir,
			herr ? herr : strerror(errno));
		return 1;
	}
	t1 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	retention_opened(d.hist);
	d.rollups = rollups_start(d.cfg.data_dir);
	rc = control_open(d.cfg.runtime_dir, &d.cenv, &d.ctl, err, sizeof(err));
	if (rc) {
		log_err("%s", err);
		teardown(&d);
		return 1;
	}
	d.sym = symbolizer_new();
	rc = d.sym ? ksymbpf_open(&d.ksym) : 0;
	if (d.ksym)
		symbolizer_set_kernel_namer(d.sym, ksymbpf_name, d.ksym);
	else if (rc)
		log_debug("kernel frames named from /proc/kallsyms: %s", strerror(-rc));
	t2 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	d.procs = proctable_new();
	if (!d.sym || !d.procs) {
		log_err("cannot set up symbolization: %s", strerror(errno));
		teardown(&d);
		return 1;
	}
	rc = proctrack_open(on_proc_event, &d, &d.proc, err, sizeof(err));
	if (rc) {
		log_err("%s", err);
		teardown(&d);
		return 1;
	}
	t3 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	d.unw = unwinder_open(d.cfg.unwind_memory, err, sizeof(err));
	if (!d.unw)
		log_warnx("%s: user stacks are walked with frame pointers only", err);
	unwinder_fds(d.unw, &so.unwind);
	so.events_fd = proctrack_events_fd(d.proc);
	so.known_fd = proctrack_known_fd(d.proc);
	so.hz = d.cfg.hz;
	so.interval_ns = d.cfg.interval_ns;
	so.include_idle = d.cfg.include_idle;
	d.cenv = (struct capture_env){ .events_fd = so.events_fd, .known_fd = so.known_fd,
				      .unw = d.unw,
				      .sym = d.sym, .cfg = &d.cfg };
	rc = sampler_open(&so, &d.sampler, err, sizeof(err));
	if (rc) {
		log_err("%s", err);
		teardown(&d);
		return 1;
	}
	t4 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	log_debug("start-up CPU: %.1f ms before, history %.1f, symbolizer %.1f, proc BPF %.1f, "
		  "cpu BPF %.1f", t0 / 1e6, (t1 - t0) / 1e6, (t2 - t1) / 1e6, (t3 - t2) / 1e6,
		  (t4 - t3) / 1e6);
	d.interval_start_ns = now_ns(CLOCK_REALTIME);
	rc = setup_loop(&d, a.duration_ns);
	if (rc) {
		log_err("cannot set up the event loop: %s", strerror(-rc));
		teardown(&d);
		return 1;
	}
	if (start_uploader(&d)) {
		teardown(&d);
		return 1;
	}
	d.status = status_open(&(struct status_sources){
		.cfg = &d.cfg, .sampler = d.sampler, .proc = d.proc, .procs = d.procs, .sym = d.sym,
		.unw = d.unw,
		.hist = d.hist, .up = &d.up, .profiles_stored = &d.profiles_stored,
		.processes_seen = &d.processes_seen });
	log_info("sampling %u CPUs at %u Hz; one profile every %.3gs into %s",
		 sampler_ncpus(d.sampler), d.cfg.hz, d.cfg.interval_ns / 1e9, history_path(d.hist));
	notify_ready("sampling %u CPUs at %u Hz into %s", sampler_ncpus(d.sampler), d.cfg.hz,
		     history_path(d.hist));
	log_info("look at it: emberctl --data-dir %s top --since -15m (or list, tree, "
		 "flamegraph -o cpu.html, export -o cpu.pb.gz for go tool pprof); "
		 "emberctl status --runtime-dir %s",
		 d.cfg.data_dir, d.cfg.runtime_dir);

	rc = run_loop(&d);
	log_flush(true);
	log_info("stopped after storing %lu profile%s", d.profiles_stored,
		 d.profiles_stored == 1 ? "" : "s");
	teardown(&d);
	return rc ? 1 : 0;
}
