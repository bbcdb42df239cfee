// SPDX-License-Identifier: MIT
/*
 * emberctl status: the daemon (from the status file emberd writes into its
 * runtime directory after every interval), the history and the collector
 * (from history.db), as text or as Prometheus text exposition.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "counters.h"
#include "statusfile.h"

#define DEFAULT_RUNTIME_DIR "/run/ember"
/* A status file older than this many intervals is stale: emberd is stuck. */
#define STALE_INTERVALS 3

static const char status_help[] =
	"Usage: emberctl status [--format text|prometheus] [--runtime-dir DIR]\n"
	"\n"
	"Shows emberd, the history and the collector.\n"
	"\n"
	"emberd: read from the status file it rewrites after every interval\n"
	"(DIR/status): running or not, uptime, sampling rate, what the last interval\n"
	"sampled (samples, stacks, processes) and lost in BPF by cause (stacks that\n"
	"could not be read, full maps, lost process events), how user stacks were\n"
	"walked (frames by .eh_frame table or frame pointer, stacks complete or cut\n"
	"and why), the caches and their\n"
	"caps, its own CPU time and RSS, the memory of its BPF maps (charged to the\n"
	"memory cgroup, not part of RSS), and memory_limit with the times the caches\n"
	"were shrunk to stay under it. \"not running\" when the file is missing, says\n"
	"emberd stopped, or names a process that is gone; \"stale\" when it was not\n"
	"rewritten for 3 intervals (emberd is stuck).\n"
	"\n"
	"history and collector: read from history.db (works while emberd is down):\n"
	"size, profiles and time span; the collector's URL (credentials removed),\n"
	"whether it is reachable, the last success and error, the push queue, and\n"
	"how many profiles were sent, rejected or expired. Secrets are never shown.\n"
	"\n"
	"Options:\n"
	"  -f, --format FMT       text (default) or prometheus: the text exposition\n"
	"                         format, every name prefixed ember_, for\n"
	"                         node_exporter's textfile collector\n"
	"  -r, --runtime-dir DIR  where emberd writes its status file; default\n"
	"                         $EMBER_RUNTIME_DIR, else " DEFAULT_RUNTIME_DIR "\n"
	"                         ([daemon] runtime_dir, emberd --runtime-dir)\n"
	"  -h, --help             this help\n"
	"\n"
	"node_exporter (--collector.textfile.directory=/var/lib/node_exporter/textfile),\n"
	"e.g. from cron every minute; the rename makes the file appear whole:\n"
	"  emberctl status --format prometheus > /var/lib/node_exporter/textfile/ember.prom.$$ &&\n"
	"    mv /var/lib/node_exporter/textfile/ember.prom.$$ /var/lib/node_exporter/textfile/ember.prom\n"
	"Exit status: 0 when printed (also when emberd is not running: see ember_up),\n"
	"1 when the history cannot be read or is damaged (text format only).\n";

/* What the status file says about emberd, and whether to believe it. */
enum daemon_state {
	DAEMON_NO_FILE,	 /* never started with this runtime dir, or removed */
	DAEMON_BAD_FILE, /* unreadable or not a status file */
	DAEMON_STOPPED,	 /* emberd wrote "stopped" on its way out */
	DAEMON_GONE,	 /* its process is gone (killed, crashed) */
	DAEMON_STALE,	 /* alive, but the file was not rewritten in time */
	DAEMON_RUNNING,
};

/* The daemon as seen through its status file. */
struct daemon_view {
	enum daemon_state state;
	char path[PATH_MAX + 16];
	char why[200]; /* for BAD_FILE */
	struct ember_status st;
	int64_t now;
};

/* Reads at most STATUSFILE_MAX_BYTES + 1 bytes: more is refused by the parser. */
static int read_bounded(const char *path, char *buf, size_t cap, size_t *len)
{
	struct stat sb;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	*len = 0;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	while (*len < cap && (n = read(fd, buf + *len, cap - *len)) > 0)
		*len += (size_t)n;
	close(fd);
	return 0;
}

/* Whether pid is a live emberd (not another process that reused the pid). */
static bool emberd_alive(int64_t pid)
{
	char path[64], comm[32] = "";
	FILE *f;

	if (pid <= 0 || pid > INT32_MAX || (kill((pid_t)pid, 0) && errno == ESRCH))
		return false;
	snprintf(path, sizeof(path), "/proc/%" PRId64 "/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return true; /* no /proc to ask: trust kill() */
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = '\0';
	fclose(f);
	return !strncmp(comm, "emberd", 6);
}

static void load_daemon(const char *runtime_dir, struct daemon_view *v)
{
	static char buf[STATUSFILE_MAX_BYTES + 1];
	struct statusfile_errors errs;
	int64_t every;
	size_t len;
	int rc;

	v->now = real_ns();
	snprintf(v->path, sizeof(v->path), "%s/status", runtime_dir);
	rc = read_bounded(v->path, buf, sizeof(buf), &len);
	if (rc == -ENOENT) {
		v->state = DAEMON_NO_FILE;
		return;
	}
	if (!rc)
		rc = statusfile_parse(buf, len, &v->st, &errs);
	if (rc) {
		v->state = DAEMON_BAD_FILE;
		snprintf(v->why, sizeof(v->why), "%s",
			 rc == -EFBIG		? "too big" :
			 rc == -EPROTONOSUPPORT ? "written by another version of emberd" :
			 rc == -EINVAL		? "not a status file" :
						  strerror(-rc));
		return;
	}
	if (errs.n)
		note("%s: %zu bad line%s ignored (%s)", v->path, errs.n, errs.n == 1 ? "" : "s",
		     errs.first);
	every = v->st.interval_ns > 0 ? v->st.interval_ns : 10 * NS_PER_SEC;
	if (!strcmp(v->st.state, "stopped"))
		v->state = DAEMON_STOPPED;
	else if (!emberd_alive(v->st.pid))
		v->state = DAEMON_GONE;
	else if (v->now - v->st.updated_ns > STALE_INTERVALS * every)
		v->state = DAEMON_STALE;
	else
		v->state = DAEMON_RUNNING;
}

/* --- text ------------------------------------------------------------------------ */

static void print_when(const char *what, int64_t ns, int64_t now)
{
	char t[40], ago[32];

	if (!ns) {
		printf("  %-13s never\n", what);
		return;
	}
	format_time(ns, t, sizeof(t));
	format_ago(ns, now, ago, sizeof(ago));
	printf("  %-13s %s (%s)\n", what, t, ago);
}

/* "3d 4h", "2h 5m", "4m 10s", "12s" */
static void format_uptime(int64_t ns, char *buf, size_t len)
{
	int64_t s = ns > 0 ? ns / NS_PER_SEC : 0;

	if (s >= 86400)
		snprintf(buf, len, "%" PRId64 "d %" PRId64 "h", s / 86400, s % 86400 / 3600);
	else if (s >= 3600)
		snprintf(buf, len, "%" PRId64 "h %" PRId64 "m", s / 3600, s % 3600 / 60);
	else if (s >= 60)
		snprintf(buf, len, "%" PRId64 "m %" PRId64 "s", s / 60, s % 60);
	else
		snprintf(buf, len, "%" PRId64 "s", s);
}

static bool print_not_running(const struct daemon_view *v)
{
	char t[40], ago[32];

	format_time(v->st.updated_ns, t, sizeof(t));
	format_ago(v->st.updated_ns, v->now, ago, sizeof(ago));
	switch (v->state) {
	case DAEMON_NO_FILE:
		printf("emberd:        not running (no status file %s)\n", v->path);
		return true;
	case DAEMON_BAD_FILE:
		printf("emberd:        unknown: cannot read %s: %s\n", v->path, v->why);
		return true;
	case DAEMON_STOPPED:
		printf("emberd:        not running (pid %" PRId64 " stopped at %s, %s)\n",
		       v->st.pid, t, ago);
		return true;
	case DAEMON_GONE:
		printf("emberd:        not running (pid %" PRId64
		       " is gone; its last status is from "
		       "%s, %s: it was killed or crashed)\n",
		       v->st.pid, t, ago);
		return true;
	case DAEMON_STALE:
		printf("emberd:        STALE: pid %" PRId64
		       " is alive but last wrote its status at "
		       "%s (%s), more than %d intervals ago: it is stuck\n",
		       v->st.pid, t, ago, STALE_INTERVALS);
		return false;
	case DAEMON_RUNNING:
		break;
	}
	return false;
}

/* Appends "NAME N" to a list of counts in buf, ", "-separated; nothing for 0. */
static void append_count(char *buf, size_t len, size_t *off, const char *name, uint64_t n)
{
	if (n && *off < len)
		*off += snprintf(buf + *off, len - *off, "%s%s %" PRIu64, *off ? ", " : "", name,
				 n);
}

/* "none" or "stack_map_full 3, counts_map_full 1" for the interval or the total. */
static void format_drops(const struct ember_status *st, bool total, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < STATUS_DROP_NR; i++)
		append_count(buf, len, &off, statusfile_drop_name(i),
			     total ? st->drops[i].total : st->drops[i].interval);
	if (!off)
		snprintf(buf, len, "none");
}

/* The same for off-CPU time's losses. */
static void format_offcpu_losses(const struct ember_status *st, bool total, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < STATUS_OFFCPU_NR; i++)
		if (statusfile_offcpu_loss(i))
			append_count(buf, len, &off, statusfile_offcpu_name(i),
				     total ? st->offcpu[i].total : st->offcpu[i].interval);
	if (!off)
		snprintf(buf, len, "none");
}

/* Whether cache i's bytes are told: those with a cap, and the processes' maps (counted, no cap). */
static bool has_bytes(const struct ember_status *st, int i)
{
	return st->caches[i].cap || i == STATUS_CACHE_PROCESS_MAPS;
}

static void print_caches(const struct ember_status *st)
{
	for (int i = 0; i < STATUS_CACHE_NR; i++) {
		const struct status_cache_use *c = &st->caches[i];
		char held[32], cap[32], name[32];

		snprintf(name, sizeof(name), "%s", statusfile_cache_name(i));
		for (char *p = name; *p; p++)
			*p = *p == '_' ? ' ' : *p;
		format_bytes(c->bytes, held, sizeof(held));
		format_bytes(c->cap, cap, sizeof(cap));
		if (c->cap && c->full)
			printf("  %-13s %" PRIu64 " %s, %s of %s; FULL %" PRIu64 " times: not "
			       "cached then (raise memory_limit)\n",
			       i ? "" : "caches", c->entries, name, held, cap, c->full);
		else if (c->cap)
			printf("  %-13s %" PRIu64 " %s, %s of %s\n", i ? "" : "caches", c->entries,
			       name, held, cap);
		else if (has_bytes(st, i))
			printf("  %-13s %" PRIu64 " %s, %s\n", i ? "" : "caches", c->entries, name,
			       held);
		else
			printf("  %-13s %" PRIu64 " %s\n", i ? "" : "caches", c->entries, name);
	}
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * part / whole : 0.0;
}

/* Memory growth in processes' first growth_min_age, per application (counted, no stack). */
static void print_startup(const struct ember_status *st)
{
	char app[512];

	for (size_t i = 0; i < st->n_startup; i++)
		printf("  %-13s %s: %.1f MiB resident in its processes' first growth_min_age\n",
		       i ? "" : "start-ups", term_safe(st->startup[i].app, app, sizeof(app)),
		       st->startup[i].bytes / 1048576.0);
}

/* Off-CPU profiling's run-queue latency, per application: the mean wait for a CPU. */
static void print_runq(const struct ember_status *st)
{
	char app[512];

	for (size_t i = 0; i < st->n_runq; i++) {
		const struct status_runq *r = &st->runq[i];

		printf("  %-13s %s: %.1f us mean over %" PRIu64 " waits (%.1f ms in all)\n",
		       i ? "" : "run queue", term_safe(r->app, app, sizeof(app)),
		       r->waits ? r->ns / 1e3 / r->waits : 0.0, r->waits, r->ns / 1e6);
	}
}

/* Off-CPU time's sampler, when it ran: what it sampled, folded and held, and what it lost. */
static void print_offcpu(const struct ember_status *st)
{
	const struct status_count *o = st->offcpu;
	char lost[256];
	bool ran = false;

	for (int i = 0; i < STATUS_OFFCPU_NR; i++)
		ran |= o[i].total != 0;
	if (!ran)
		return;
	printf("  %-13s last interval: ~%" PRIu64 " switch-outs; %" PRIu64 " sampled (%" PRIu64
	       " at a period a storm raised), %" PRIu64 " walked with weight 1; %" PRIu64
	       " folded, %" PRIu64 " short, %" PRIu64 " wakeups; %" PRIu64
	       " stacks of threads away held (%" PRIu64 " held map full)\n",
	       "off-CPU", o[STATUS_OFFCPU_SWITCHES].interval, o[STATUS_OFFCPU_SAMPLED].interval,
	       o[STATUS_OFFCPU_RAISED].interval, o[STATUS_OFFCPU_FORCED].interval,
	       o[STATUS_OFFCPU_FOLDED].interval, o[STATUS_OFFCPU_SHORT].interval,
	       o[STATUS_OFFCPU_WAKEUPS].interval, o[STATUS_OFFCPU_HELD].interval,
	       o[STATUS_OFFCPU_HELD_MAP_FULL].interval);
	format_offcpu_losses(st, false, lost, sizeof(lost));
	printf("  %-13s last interval: %s\n", "off-CPU lost", lost);
	format_offcpu_losses(st, true, lost, sizeof(lost));
	printf("  %-13s since start: %s\n", "", lost);
}

/* A share of one CPU, in percent, of ns over wall ns. */
static double cpu_pct(int64_t ns, int64_t wall_ns)
{
	return wall_ns > 0 ? 100.0 * (double)ns / (double)wall_ns : 0.0;
}

/* cpu_budget: the budget, what the last interval cost, and what it lowered. */
static void print_budget(const struct ember_status *st)
{
	const struct status_budget *b = &st->budget;
	char bpf[64];

	if (!b->ns_per_s) {
		printf("  %-13s none\n", "cpu budget");
		return;
	}
	if (b->bpf_measured)
		snprintf(bpf, sizeof(bpf), "%.3f%% (off-CPU's %.3f%%)",
			 cpu_pct(b->bpf_ns, b->wall_ns), cpu_pct(b->offcpu_bpf_ns, b->wall_ns));
	else
		snprintf(bpf, sizeof(bpf), "not measured");
	printf("  %-13s %.3f%% of one CPU; last interval %.3f%%: its threads %.3f%%, its BPF "
	       "programs %s\n",
	       "cpu budget", cpu_pct(b->ns_per_s, NS_PER_SEC),
	       cpu_pct(b->self_ns + b->bpf_ns, b->wall_ns), cpu_pct(b->self_ns, b->wall_ns), bpf);
	printf("  %-13s off-CPU duty cycle 1/%u%s; since start %" PRIu64 " steps lowered, %" PRIu64
	       " restored%s\n",
	       "", 1u << (b->offcpu_duty_shift < 31 ? b->offcpu_duty_shift : 31),
	       b->offcpu_duty_shift ? " (LOWERED: new waits sampled part of the time, weighed up)" :
				      "",
	       b->lowered, b->restored, b->over ? "; OVER budget, nothing left to lower" : "");
}

/* How the last interval's user stacks were walked: complete, or why they were cut. */
static void print_walk(const struct ember_status *st)
{
	const struct status_count *u = st->unwind;
	uint64_t stacks = 0, frames = u[STATUS_UNWIND_FRAMES_TABLE].interval +
				      u[STATUS_UNWIND_FRAMES_FP].interval +
				      u[STATUS_UNWIND_FRAMES_BAD_RULE].interval;

	for (int i = STATUS_UNWIND_END_OUTERMOST; i <= STATUS_UNWIND_END_EXITED; i++)
		stacks += u[i].interval;
	printf("  %-13s last interval: %" PRIu64 " user stacks, %.1f%% complete (outermost "
	       "frame %" PRIu64 ", signal frame %" PRIu64 "); cut: no table %" PRIu64
	       ", bad rule %" PRIu64 ", unreadable %" PRIu64 ", depth limit %" PRIu64
	       "; exiting with its memory released: %" PRIu64
	       " the stack read at the exit, %" PRIu64 " the leaf only\n",
	       "stack walk", stacks,
	       pct(u[STATUS_UNWIND_END_OUTERMOST].interval + u[STATUS_UNWIND_END_SIGNAL].interval,
		   stacks),
	       u[STATUS_UNWIND_END_OUTERMOST].interval, u[STATUS_UNWIND_END_SIGNAL].interval,
	       u[STATUS_UNWIND_END_NO_TABLE].interval, u[STATUS_UNWIND_END_BAD_RULE].interval,
	       u[STATUS_UNWIND_END_UNREADABLE].interval, u[STATUS_UNWIND_END_DEPTH].interval,
	       u[STATUS_UNWIND_EXIT_STACKS].interval, u[STATUS_UNWIND_END_EXITED].interval);
	printf("  %-13s %.1f%% of %" PRIu64 " frames by .eh_frame table, %.1f%% by frame "
	       "pointer (%.1f%% where a rule was unusable); %" PRIu64 " samples of processes "
	       "not loaded yet (%" PRIu64 " walked from a copy of their stack once loaded, %" PRIu64
	       " by frame pointer: too many at once)\n",
	       "", pct(u[STATUS_UNWIND_FRAMES_TABLE].interval, frames), frames,
	       pct(u[STATUS_UNWIND_FRAMES_FP].interval + u[STATUS_UNWIND_FRAMES_BAD_RULE].interval,
		   frames),
	       pct(u[STATUS_UNWIND_FRAMES_BAD_RULE].interval, frames),
	       u[STATUS_UNWIND_NO_TABLES].interval, u[STATUS_UNWIND_DEFERRED].interval,
	       u[STATUS_UNWIND_DEFER_FULL].interval);
	printf("  %-13s since start: %" PRIu64 " built, %" PRIu64 " binaries without a usable "
	       "table\n",
	       "unwind tables", u[STATUS_UNWIND_TABLES_BUILT].total,
	       u[STATUS_UNWIND_TABLES_FAILED].total);
	printf("  %-13s last interval: %" PRIu64 " Python frames, %" PRIu64 " JavaScript "
	       "frames, %" PRIu64 " of unsupported versions; stacks without them: %" PRIu64
	       " thread state not found, %" PRIu64 " at a bad frame\n",
	       "runtimes", u[STATUS_UNWIND_RT_PY_FRAMES].interval,
	       u[STATUS_UNWIND_RT_V8_FRAMES].interval, u[STATUS_UNWIND_RT_UNSUPPORTED].interval,
	       u[STATUS_UNWIND_RT_NO_THREAD].interval, u[STATUS_UNWIND_RT_BAD_FRAME].interval);
}

static void print_memory(const struct ember_status *st, int64_t now)
{
	const struct status_memory *m = &st->mem;
	char rss[32], peak[32], lim[32], maps[32], freed[32], t[40], ago[32];
	double cpu = (double)(st->cpu_user_ns + st->cpu_system_ns) / NS_PER_SEC;
	double up = (double)(st->updated_ns - st->start_ns) / NS_PER_SEC;

	printf("  %-13s %.2fs user + %.2fs system (%.3f%% of one CPU since the start)\n", "cpu",
	       (double)st->cpu_user_ns / NS_PER_SEC, (double)st->cpu_system_ns / NS_PER_SEC,
	       up > 0 ? 100.0 * cpu / up : 0.0);
	format_bytes(m->rss, rss, sizeof(rss));
	format_bytes(m->rss_peak, peak, sizeof(peak));
	format_bytes(m->limit, lim, sizeof(lim));
	printf("  %-13s RSS %s (peak %s) of memory_limit %s%s\n", "memory", rss, peak, lim,
	       m->over ? ": OVER the limit" : "");
	format_bytes(m->bpf_map_bytes, maps, sizeof(maps));
	printf("  %-13s %s in %zu maps (charged to the memory cgroup, not in RSS)\n", "bpf maps",
	       maps, st->n_maps);
	if (!m->shrink_events) {
		printf("  %-13s never needed\n", "shrinks");
		return;
	}
	format_bytes(m->last_freed, freed, sizeof(freed));
	format_time(m->last_shrink_ns, t, sizeof(t));
	format_ago(m->last_shrink_ns, now, ago, sizeof(ago));
	printf("  %-13s %" PRIu64 " time%s over the limit (caches shrunk in %" PRIu64
	       " intervals); last at %s (%s), freed %s\n",
	       "shrinks", m->shrink_events, m->shrink_events == 1 ? "" : "s", m->shrink_runs, t,
	       ago, freed);
}

/* Storing profiles: failing or not, the backlog kept in memory, damaged files moved aside. */
static void print_store(const struct ember_status *st, int64_t now)
{
	const struct status_store *s = &st->store;
	char t[40], ago[32], kept[32], cap[32];

	format_bytes(s->backlog_bytes, kept, sizeof(kept));
	format_bytes(s->backlog_cap, cap, sizeof(cap));
	if (s->failing) {
		format_time(s->failing_since_ns, t, sizeof(t));
		format_ago(s->failing_since_ns, now, ago, sizeof(ago));
		printf("  %-13s FAILING since %s (%s): %s\n", "store", t, ago, s->last_error);
	} else if (s->failed) {
		format_time(s->last_error_ns, t, sizeof(t));
		format_ago(s->last_error_ns, now, ago, sizeof(ago));
		printf("  %-13s working; last failure at %s (%s): %s\n", "store", t, ago,
		       s->last_error);
	} else {
		printf("  %-13s working, no failure\n", "store");
	}
	if (s->failed || s->backlog || s->dropped)
		printf("  %-13s %" PRIu64 " failed stores since the start; %" PRIu64
		       " profiles kept in memory (%s of %s), %" PRIu64 " dropped\n",
		       "store backlog", s->failed, s->backlog, kept, cap, s->dropped);
	if (s->pruned) {
		format_bytes(s->pruned_bytes, kept, sizeof(kept));
		printf("  %-13s %" PRIu64
		       " profiles deleted (%s), sent or expired ones, oldest first, "
		       "for stores that failed for room\n",
		       "made room", s->pruned, kept);
	}
	if (s->damaged)
		printf("  %-13s %" PRIu64 " damaged history moved aside, the last to %s\n",
		       "damaged", s->damaged, s->damaged_moved_to);
}

/* Sampled allocations, when an application asks for them (or something was lost). */
static void print_allocs(const struct ember_status *st)
{
	const struct status_allocs *a = &st->allocs;

	if (!a->procs && !a->files && !a->live_map_full && !a->live_proc_cap &&
	    !a->counts_map_full && !a->stack_map_full && !a->not_attached && !a->notes_malformed)
		return;
	printf("  %-13s %" PRIu64 " processes attached (%" PRIu64 " files since the start)\n",
	       "allocations", a->procs, a->files);
	printf("  %-13s since start: live pointers not kept %" PRIu64 " (live map full), %" PRIu64
	       " (per-process cap); samples lost %" PRIu64
	       " (counts map full), stacks lost %" PRIu64 "; not attached %" PRIu64
	       "; malformed .note.stapsdt %" PRIu64 "\n",
	       "", a->live_map_full, a->live_proc_cap, a->counts_map_full, a->stack_map_full,
	       a->not_attached, a->notes_malformed);
}

/* Hostile or broken input refused, when there was any: who wrote it is worth a look. */
static void print_refused(const struct ember_status *st)
{
	const struct status_refused *r = &st->refused;

	if (!r->perfmap_symlink && !r->perfmap_owner && !r->perfmap_size && !r->perfmap_type &&
	    !r->perfmap_over_share && !r->binaries_too_big && !r->binaries_over_share &&
	    !r->frames_wait_cut && !r->names_unread && !r->names_sanitized)
		return;
	printf("  %-13s since start: perf maps %" PRIu64 " symlink, %" PRIu64
	       " wrong owner, %" PRIu64 " too big, %" PRIu64 " not a file, %" PRIu64
	       " cut at their share; binaries %" PRIu64 " over their share, %" PRIu64
	       " over their process's or user's; frames %" PRIu64 " unnamed while parsing, %" PRIu64
	       " unnamed as their binary changed; names sanitized %" PRIu64 "\n",
	       "refused", r->perfmap_symlink, r->perfmap_owner, r->perfmap_size, r->perfmap_type,
	       r->perfmap_over_share, r->binaries_too_big, r->binaries_over_share,
	       r->frames_wait_cut, r->names_unread, r->names_sanitized);
}

static void print_daemon(const struct daemon_view *v)
{
	const struct ember_status *st = &v->st;
	char t[40], up[32], every[32], drops[256];

	if (print_not_running(v))
		return;
	format_time(st->start_ns, t, sizeof(t));
	format_uptime(v->now - st->start_ns, up, sizeof(up));
	if (v->state == DAEMON_RUNNING)
		printf("emberd:        %s, pid %" PRId64 ", version %s, up %s (since %s)\n",
		       st->store.failing ? "running, STORES FAILING" : "running", st->pid,
		       st->version, up, t);
	format_duration(st->interval_ns, every, sizeof(every));
	printf("  %-13s %" PRIu32 " Hz per CPU, one profile per app every %s; %" PRIu64
	       " intervals\n",
	       "sampling", st->hz, every, st->intervals);
	if (st->intervals_late) {
		char len[32], at[64];

		format_duration(st->late_last_ns, len, sizeof(len));
		format_time(st->late_last_end_ns, at, sizeof(at));
		printf("  %-13s %" PRIu64 " intervals over 1.5x their length (stopped or starved); "
		       "the last %s long, ended %s\n",
		       "late", st->intervals_late, len, at);
	}
	printf("  %-13s %" PRIu64 " samples in %" PRIu64 " stacks of %" PRIu64
	       " processes, %" PRIu64 " profiles of %" PRIu64 " apps\n",
	       "last interval", st->samples.interval, st->stacks.interval, st->processes.interval,
	       st->profiles.interval, st->apps);
	printf("  %-13s %" PRIu64 " samples, %" PRIu64 " profiles\n", "since start",
	       st->samples.total, st->profiles.total);
	printf("  %-13s %" PRIu64 " tracked, %" PRIu64 " seen since the start (%" PRIu64
	       " gone before emberd read them: %" PRIu64
	       " named from the mappings their exit sent, the others' frames unnamed)\n",
	       "processes", st->processes_tracked, st->processes_seen, st->processes_unread,
	       st->processes_at_exit);
	if (st->processes_late)
		printf("  %-13s %" PRIu64 " read late: their first sample's report was missed, "
		       "their samples waited 2 s (a fault: see emberd's log)\n",
		       "", st->processes_late);
	format_drops(st, false, drops, sizeof(drops));
	printf("  %-13s last interval: %s\n", "bpf losses", drops);
	format_drops(st, true, drops, sizeof(drops));
	printf("  %-13s since start: %s\n", "", drops);
	printf("  %-13s last interval: idle %" PRIu64 ", filtered %" PRIu64 ", excluded %" PRIu64
	       "\n",
	       "skipped", st->skips[STATUS_SKIP_IDLE].interval,
	       st->skips[STATUS_SKIP_FILTERED].interval, st->skips[STATUS_SKIP_EXCLUDED].interval);
	print_runq(st);
	print_startup(st);
	print_offcpu(st);
	print_budget(st);
	print_walk(st);
	print_allocs(st);
	print_refused(st);
	print_caches(st);
	print_memory(st, v->now);
	print_store(st, v->now);
	if (st->collector.configured)
		printf("  %-13s since the start: sent %" PRIu64 ", rejected %" PRIu64
		       ", expired %" PRIu64 ", retries %" PRIu64 "; %" PRIu64 " pending%s\n",
		       "pushes", st->collector.sent, st->collector.rejected, st->collector.expired,
		       st->collector.retries, st->collector.pending,
		       st->collector.outage ? "; collector UNREACHABLE" : "");
	if (st->collector.configured)
		printf("  %-13s since the start: %" PRIu64 " labels dropped, %" PRIu64
		       " samples merged (sample labels are not pushed), %" PRIu64
		       " profiles folded (%" PRIu64 " stacks into [truncated])\n",
		       "fitted", st->collector.labels_dropped, st->collector.samples_merged,
		       st->collector.profiles_folded, st->collector.stacks_folded);
	if (st->collector.unmarked)
		printf("  %-13s %" PRIu64 " verdicts not yet written: the history takes no writes "
		       "(disk full?); their profiles are not pushed again unless emberd restarts\n",
		       "push verdicts", st->collector.unmarked);
}

struct span {
	uint64_t profiles;
	int64_t first, last;
};

static int note_span(const struct history_row *row, void *arg)
{
	struct span *s = arg;

	if (!s->profiles++ || row->meta.start_ns < s->first)
		s->first = row->meta.start_ns;
	if (row->meta.end_ns > s->last)
		s->last = row->meta.end_ns;
	return 0;
}

static void history_span(struct history *h, struct span *sp)
{
	struct history_query q = {.since_ns = INT64_MIN, .until_ns = INT64_MAX};

	memset(sp, 0, sizeof(*sp));
	history_query(h, &q, false, note_span, sp);
}

/* A budget for the quick check: status stays quick on a large file (checked as far as it gets). */
#define STATUS_CHECK_NS (1000000000LL)

/*
 * Whether the history is damaged: what reading its span met, then a quick
 * check of the file's pages (bounded in time). d gets the figures.
 */
static bool history_damaged(struct history *h, struct history_damage *d)
{
	char why[128] = "";
	bool complete;

	history_damage_info(h, d);
	if (!d->damaged &&
	    history_check(h, STATUS_CHECK_NS, &complete, why, sizeof(why)) == -EBADMSG) {
		d->damaged = true;
		snprintf(d->first_error, sizeof(d->first_error), "%s", why);
	}
	return d->damaged;
}

/* 0, or 1 when the history is damaged (said). */
static int print_history(struct history *h, int64_t now)
{
	uint64_t rollups = 0, rollup_bytes = 0;
	char size[32], rsize[32];
	struct history_damage d;
	struct span sp;

	history_span(h, &sp);
	if (history_damaged(h, &d)) {
		format_bytes(history_disk_bytes(h), size, sizeof(size));
		printf("history:       %s, %s, DAMAGED (%s): %" PRIu64 " profiles readable, "
		       "about %" PRIu64 " not\n",
		       history_path(h), size, d.first_error, sp.profiles, d.unreadable);
		printf("  %-13s emberd moves a damaged history aside when it starts or a store "
		       "fails (see the README)\n",
		       "repair");
		return 1;
	}
	history_rollup_count(h, &rollups, &rollup_bytes); /* none before v4 */
	format_bytes(history_disk_bytes(h), size, sizeof(size));
	printf("history:       %s, %s, %" PRIu64 " profiles", history_path(h), size, sp.profiles);
	if (rollups) {
		format_bytes(rollup_bytes, rsize, sizeof(rsize));
		printf(" (and %" PRIu64 " rollups, %s)", rollups, rsize);
	}
	printf("\n");
	if (sp.profiles) {
		print_when("oldest", sp.first, now);
		print_when("newest", sp.last, now);
	}
	return 0;
}

static void print_collector(struct history *h, int64_t now)
{
	struct history_collector_state cs;
	struct history_push_counts pc;
	char t[40], ago[32], err[4 * sizeof(cs.last_error)]; /* term_safe's \xNN: 4 a byte */

	if (history_collector_load(h, &cs) || !cs.url[0]) {
		printf("collector:     none recorded (no [collector] url, or emberd has not "
		       "pushed yet)\n");
		return;
	}
	printf("collector:     %s\n", cs.url);
	if (cs.outage_since_ns) {
		format_time(cs.outage_since_ns, t, sizeof(t));
		format_ago(cs.outage_since_ns, now, ago, sizeof(ago));
		printf("  %-13s unreachable since %s (%s)\n", "state", t, ago);
	} else {
		printf("  %-13s reachable\n", "state");
	}
	print_when("last success", cs.last_success_ns, now);
	if (cs.last_error_ns) {
		format_time(cs.last_error_ns, t, sizeof(t));
		/* the collector's own words, kept in the history */
		term_safe(cs.last_error, err, sizeof(err));
		if (cs.last_status)
			printf("  %-13s %s: HTTP %ld: %s\n", "last error", t, cs.last_status, err);
		else
			printf("  %-13s %s: %s\n", "last error", t, err);
	} else {
		printf("  %-13s none\n", "last error");
	}
	if (history_push_counts(h, &pc))
		return;
	printf("  %-13s %" PRIu64 " pending", "queue", pc.pending);
	if (pc.pending) {
		format_ago(pc.oldest_pending_ns, now, ago, sizeof(ago));
		printf(", oldest from %s", ago);
	}
	printf("\n  %-13s sent %" PRIu64 ", rejected %" PRIu64 ", expired %" PRIu64 "\n",
	       "profiles", pc.sent, pc.rejected, pc.expired);
}

/* --- Prometheus text exposition (format 0.0.4) ---------------------------------------- */

/* Declares a family: every one has HELP and TYPE, before its samples. */
static void family(const char *name, const char *type, const char *help)
{
	printf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/*
 * A label value with \, " and newline escaped as the exposition format wants;
 * bytes outside ASCII become '?' (the format wants UTF-8; the file may not be).
 */
static void escape_value(const char *s, char *out, size_t len)
{
	size_t o = 0;

	for (; *s && o + 3 < len; s++) {
		if ((unsigned char)*s >= 0x80) {
			out[o++] = '?';
		} else if (*s == '\\' || *s == '"') {
			out[o++] = '\\';
			out[o++] = *s;
		} else if (*s == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else {
			out[o++] = *s;
		}
	}
	out[o] = '\0';
}

static void sample_u64(const char *name, const char *label, const char *value, uint64_t v)
{
	char esc[256];

	if (label) {
		escape_value(value, esc, sizeof(esc));
		printf("%s{%s=\"%s\"} %" PRIu64 "\n", name, label, esc, v);
	} else {
		printf("%s %" PRIu64 "\n", name, v);
	}
}

static void sample_f(const char *name, double v)
{
	printf("%s %.9g\n", name, v);
}

static void gauge(const char *name, const char *help, uint64_t v)
{
	family(name, "gauge", help);
	sample_u64(name, NULL, NULL, v);
}

static void counter(const char *name, const char *help, uint64_t v)
{
	family(name, "counter", help);
	sample_u64(name, NULL, NULL, v);
}

/* A timestamp gauge in seconds; omitted while it is 0 (never). */
static void gauge_time(const char *name, const char *help, int64_t ns)
{
	if (ns <= 0)
		return;
	family(name, "gauge", help);
	printf("%s %" PRId64 ".%03" PRId64 "\n", name, (int64_t)(ns / NS_PER_SEC),
	       (int64_t)(ns % NS_PER_SEC / 1000000));
}

static void prom_bpf(const struct ember_status *st)
{
	counter("ember_bpf_samples_total", "Samples that reached emberd's BPF program.",
		st->bpf_samples.total);
	gauge("ember_bpf_map_memory_bytes",
	      "Memory of emberd's BPF maps, charged to its memory cgroup, not part of RSS.",
	      st->mem.bpf_map_bytes);
	family("ember_bpf_map_bytes", "gauge", "Memory of one BPF map of emberd.");
	for (size_t i = 0; i < st->n_maps; i++)
		sample_u64("ember_bpf_map_bytes", "map", st->maps[i].name, st->maps[i].bytes);
	family("ember_bpf_map_max_entries", "gauge", "Capacity of one BPF map of emberd.");
	for (size_t i = 0; i < st->n_maps; i++)
		sample_u64("ember_bpf_map_max_entries", "map", st->maps[i].name,
			   st->maps[i].max_entries);
}

/* One family of the counter table's, and its last interval's gauge if it has one. */
static void prom_family(const struct ember_status *st, enum counter_family_id f, bool interval)
{
	const struct counter_family *fam = &counter_families[f];
	const char *name = interval ? fam->interval : fam->name;

	family(name, interval ? "gauge" : "counter", interval ? fam->interval_help : fam->help);
	for (size_t i = 0; i < counters_nr; i++) {
		struct status_count v = counter_value(st, &counters[i]);

		if (counters[i].family == f)
			sample_u64(name, fam->label, counters[i].label,
				   interval ? v.interval : v.total);
	}
}

/* Every counter of the table (lib/proto/counters.c): losses, skips, the walk's, off-CPU's. */
static void prom_counters(const struct ember_status *st)
{
	for (int f = 0; f < FAMILY_NR; f++) {
		prom_family(st, f, false);
		if (counter_families[f].interval)
			prom_family(st, f, true);
	}
}

/* cpu_budget: the budget, the last interval's cost by part, and what it lowered. */
static void prom_budget(const struct ember_status *st)
{
	const struct status_budget *b = &st->budget;
	const struct {
		const char *part;
		int64_t ns;
		bool known;
	} cost[] = {
		{"threads", b->self_ns, true},
		{"bpf", b->bpf_ns, b->bpf_measured},
		{"bpf_offcpu", b->offcpu_bpf_ns, b->bpf_measured},
	};

	family("ember_cpu_budget_ratio", "gauge",
	       "[daemon] cpu_budget: the share of one CPU emberd may cost (0: none).");
	sample_f("ember_cpu_budget_ratio", (double)b->ns_per_s / NS_PER_SEC);
	family("ember_last_interval_cpu_cost_ratio", "gauge",
	       "What emberd cost in the last interval, in shares of one CPU: its threads, and its "
	       "BPF programs' run time (when the kernel counted it), off-CPU's of which apart.");
	for (size_t i = 0; i < sizeof(cost) / sizeof(cost[0]); i++)
		if (b->wall_ns > 0 && cost[i].known)
			printf("ember_last_interval_cpu_cost_ratio{part=\"%s\"} %.9g\n",
			       cost[i].part, (double)cost[i].ns / b->wall_ns);
	family("ember_offcpu_duty_ratio", "gauge",
	       "The share of the time off-CPU profiling samples new waits (1: always; lowered by "
	       "cpu_budget, each wait then weighed by its inverse).");
	sample_f("ember_offcpu_duty_ratio",
		 1.0 / (double)(1u << (b->offcpu_duty_shift < 31 ? b->offcpu_duty_shift : 31)));
	family("ember_cpu_budget_steps_total", "counter",
	       "Steps cpu_budget lowered (off-CPU's duty cycle halved) or restored since emberd "
	       "started.");
	sample_u64("ember_cpu_budget_steps_total", "change", "lowered", b->lowered);
	sample_u64("ember_cpu_budget_steps_total", "change", "restored", b->restored);
	gauge("ember_cpu_budget_over",
	      "1 while emberd is over cpu_budget with nothing left that it may lower.", b->over);
}

static void prom_caches(const struct ember_status *st)
{
	family("ember_cache_entries", "gauge", "Entries held by one of emberd's caches.");
	for (int i = 0; i < STATUS_CACHE_NR; i++)
		sample_u64("ember_cache_entries", "cache", statusfile_cache_name(i),
			   st->caches[i].entries);
	family("ember_cache_bytes", "gauge", "Heap bytes held by one of emberd's caches.");
	for (int i = 0; i < STATUS_CACHE_NR; i++)
		if (has_bytes(st, i))
			sample_u64("ember_cache_bytes", "cache", statusfile_cache_name(i),
				   st->caches[i].bytes);
	family("ember_cache_full_total", "counter",
	       "Times one of emberd's caches was at its cap when something new had to go in "
	       "(binaries: not named then; perf maps: not read then).");
	for (int i = 0; i < STATUS_CACHE_NR; i++)
		if (st->caches[i].cap)
			sample_u64("ember_cache_full_total", "cache", statusfile_cache_name(i),
				   st->caches[i].full);
	family("ember_cache_limit_bytes", "gauge",
	       "Bytes one of emberd's caches may hold (derived from memory_limit).");
	for (int i = 0; i < STATUS_CACHE_NR; i++)
		if (st->caches[i].cap)
			sample_u64("ember_cache_limit_bytes", "cache", statusfile_cache_name(i),
				   st->caches[i].cap);
}

static void prom_memory(const struct ember_status *st)
{
	const struct status_memory *m = &st->mem;

	family("ember_process_cpu_seconds_total", "counter",
	       "CPU time emberd used since it started, by mode.");
	printf("ember_process_cpu_seconds_total{mode=\"user\"} %.9g\n",
	       (double)st->cpu_user_ns / NS_PER_SEC);
	printf("ember_process_cpu_seconds_total{mode=\"system\"} %.9g\n",
	       (double)st->cpu_system_ns / NS_PER_SEC);
	gauge("ember_process_resident_memory_bytes", "emberd's resident set size.", m->rss);
	gauge("ember_process_resident_memory_peak_bytes", "emberd's peak resident set size.",
	      m->rss_peak);
	gauge("ember_memory_limit_bytes",
	      "[daemon] memory_limit: caches shrink to keep RSS under it.", m->limit);
	gauge("ember_memory_over_limit", "1 while emberd's RSS is over memory_limit.", m->over);
	counter("ember_memory_shrinks_total",
		"Times emberd's RSS went over memory_limit and its caches were shrunk.",
		m->shrink_events);
	counter("ember_memory_shrink_freed_bytes_total",
		"Cache bytes freed by shrinking to stay under memory_limit.", m->freed_total);
	gauge_time("ember_memory_last_shrink_timestamp_seconds",
		   "When emberd last shrank its caches (Unix time).", m->last_shrink_ns);
}

static void prom_allocs(const struct ember_status *st)
{
	gauge("ember_alloc_processes", "Processes whose otel_memory probes emberd is attached to.",
	      st->allocs.procs);
}

/*
 * Writes application i's value of a per-application gauge into val and
 * returns the application's name; NULL: it has none this interval (no series).
 */
typedef const char *(*app_value_fn)(const struct ember_status *st, size_t i, char *val, size_t len);

/*
 * One gauge with a series per application of the status file's n entries. An
 * application whose name escapes like an earlier one's is left out (a series
 * appears once).
 */
static void prom_per_app(const struct ember_status *st, size_t n, const char *name,
			 const char *help, app_value_fn value)
{
	char esc[256], prev[256], val[64], other[64];
	const char *app, *earlier;

	family(name, "gauge", help);
	for (size_t i = 0; i < n && i < STATUSFILE_MAX_RUNQ; i++) {
		bool dup = false;

		if (!(app = value(st, i, val, sizeof(val))))
			continue;
		escape_value(app, esc, sizeof(esc));
		for (size_t j = 0; j < i && !dup; j++) {
			if (!(earlier = value(st, j, other, sizeof(other))))
				continue;
			escape_value(earlier, prev, sizeof(prev));
			dup = !strcmp(esc, prev);
		}
		if (!dup)
			printf("%s{app=\"%s\"} %s\n", name, esc, val);
	}
}

/* Off-CPU's mean run-queue wait of application i (the status file's runq lines). */
static const char *runq_latency(const struct ember_status *st, size_t i, char *val, size_t len)
{
	const struct status_runq *r = &st->runq[i];

	if (!r->waits)
		return NULL;
	snprintf(val, len, "%.9g", (double)r->ns / r->waits / NS_PER_SEC);
	return r->app;
}

/* Memory growth of application i's start-ups (the status file's startup lines). */
static const char *startup_bytes(const struct ember_status *st, size_t i, char *val, size_t len)
{
	snprintf(val, len, "%" PRIu64, st->startup[i].bytes);
	return st->startup[i].app;
}

/* The gauges per application: run-queue latency and start-up growth. */
static void prom_apps(const struct ember_status *st)
{
	prom_per_app(st, st->n_runq, "ember_last_interval_run_queue_latency_seconds",
		     "Mean time the application's threads waited for a CPU once runnable, in the "
		     "last interval (off-CPU profiling).",
		     runq_latency);
	prom_per_app(st, st->n_startup, "ember_last_interval_startup_growth_bytes",
		     "Resident memory growth of the application's processes in their first "
		     "growth_min_age, counted without a stack, in the last interval.",
		     startup_bytes);
}

static void prom_daemon(const struct daemon_view *v)
{
	const struct ember_status *st = &v->st;

	family("ember_info", "gauge", "emberd's version, as a label; always 1.");
	sample_u64("ember_info", "version", st->version, 1);
	gauge_time("ember_start_time_seconds", "When emberd started (Unix time).", st->start_ns);
	gauge_time("ember_status_updated_timestamp_seconds",
		   "When emberd last wrote its status (Unix time).", st->updated_ns);
	gauge("ember_sampling_frequency_hertz", "Samples per second per CPU.", st->hz);
	family("ember_interval_seconds", "gauge", "One profile per application per interval.");
	sample_f("ember_interval_seconds", (double)st->interval_ns / NS_PER_SEC);
	counter("ember_intervals_total", "Intervals drained since emberd started.", st->intervals);
	counter("ember_intervals_late_total",
		"Intervals longer than 1.5 times their length: emberd stopped or starved.",
		st->intervals_late);
	gauge("ember_store_failing", "1 while storing profiles in the history fails.",
	      st->store.failing);
	counter("ember_store_failures_total", "Profile stores that failed since the start.",
		st->store.failed);
	gauge_time("ember_store_last_failure_timestamp_seconds",
		   "When a store last failed (Unix time).", st->store.last_error_ns);
	if (st->store.last_error[0]) {
		family("ember_store_last_error_info", "gauge",
		       "The last store failure's message, as a label; always 1.");
		sample_u64("ember_store_last_error_info", "error", st->store.last_error, 1);
	}
	gauge("ember_store_backlog_profiles", "Profiles kept in memory until they can be stored.",
	      st->store.backlog);
	gauge("ember_store_backlog_bytes", "Memory the store backlog holds.",
	      st->store.backlog_bytes);
	counter("ember_store_dropped_total",
		"Profiles dropped from a full store backlog (lost) since the start.",
		st->store.dropped);
	counter("ember_store_pruned_total",
		"Profiles that may go (sent or expired), deleted to make room for a store.",
		st->store.pruned);
	counter("ember_history_damaged_moved_total",
		"Damaged history files moved aside since the start.", st->store.damaged);
	gauge("ember_processes_tracked", "Processes in emberd's process table.",
	      st->processes_tracked);
	counter("ember_processes_seen_total", "Processes first seen since emberd started.",
		st->processes_seen);
	counter("ember_processes_unread_total",
		"Processes first seen but gone before emberd read their mappings.",
		st->processes_unread);
	counter("ember_processes_at_exit_total",
		"Processes gone before emberd read them, named from the mappings their exit sent.",
		st->processes_at_exit);
	counter("ember_processes_late_total",
		"Processes read only once their samples had waited 2 s: a first report missed.",
		st->processes_late);
	counter("ember_samples_total", "Samples drained into profiles since emberd started.",
		st->samples.total);
	counter("ember_profiles_stored_total", "Profiles written to the history since the start.",
		st->profiles.total);
	gauge("ember_last_interval_samples", "Samples drained in the last interval.",
	      st->samples.interval);
	gauge("ember_last_interval_stacks", "Distinct stacks of the last interval.",
	      st->stacks.interval);
	gauge("ember_last_interval_processes", "Processes sampled in the last interval.",
	      st->processes.interval);
	gauge("ember_last_interval_profiles", "Profiles stored for the last interval.",
	      st->profiles.interval);
	prom_bpf(st);
	prom_caches(st);
	prom_memory(st);
	prom_allocs(st);
	prom_counters(st);
	prom_apps(st);
	prom_budget(st);
	if (!st->collector.configured)
		return;
	family("ember_collector_pushes_total", "counter",
	       "Profiles the collector took (sent), refused (rejected) or that expired "
	       "unsent, since emberd started.");
	sample_u64("ember_collector_pushes_total", "result", "sent", st->collector.sent);
	sample_u64("ember_collector_pushes_total", "result", "rejected", st->collector.rejected);
	sample_u64("ember_collector_pushes_total", "result", "expired", st->collector.expired);
	counter("ember_collector_retries_total", "Pushes retried since emberd started.",
		st->collector.retries);
	counter("ember_collector_labels_dropped_total",
		"Labels left out of pushes (invalid, or over the 30 a series holds).",
		st->collector.labels_dropped);
	counter("ember_collector_stacks_folded_total",
		"Stacks folded into [truncated] to fit the collector's size limits.",
		st->collector.stacks_folded);
	gauge("ember_collector_unmarked_verdicts",
	      "Push verdicts kept in memory: the history could not take them (a full disk).",
	      st->collector.unmarked);
}

static void prom_history(struct history *h)
{
	uint64_t rollups = 0, rollup_bytes = 0;
	struct history_collector_state cs;
	struct history_push_counts pc;
	struct span sp;

	struct history_damage d;

	history_span(h, &sp);
	gauge("ember_history_damaged", "1 when history.db is damaged (pages that do not read).",
	      history_damaged(h, &d));
	gauge("ember_history_unreadable_rows",
	      "Rows of a damaged history.db that could not be read.", d.unreadable);
	gauge("ember_history_size_bytes", "Size of history.db and its write-ahead log.",
	      history_disk_bytes(h));
	gauge("ember_history_profiles", "Profiles kept in the local history (raw, not rollups).",
	      sp.profiles);
	history_rollup_count(h, &rollups, &rollup_bytes); /* none before v4 */
	gauge("ember_history_rollups", "Rollups kept in the local history (never pushed).",
	      rollups);
	gauge_time("ember_history_oldest_timestamp_seconds",
		   "Start of the oldest profile in the history (Unix time).", sp.first);
	gauge_time("ember_history_newest_timestamp_seconds",
		   "End of the newest profile in the history (Unix time).", sp.last);
	if (history_collector_load(h, &cs) || !cs.url[0])
		return;
	gauge("ember_collector_up", "1 when the collector was reachable at the last push.",
	      cs.outage_since_ns == 0);
	gauge_time("ember_collector_last_success_timestamp_seconds",
		   "Last push the collector accepted (Unix time).", cs.last_success_ns);
	gauge_time("ember_collector_last_error_timestamp_seconds",
		   "Last push that failed (Unix time).", cs.last_error_ns);
	if (history_push_counts(h, &pc))
		return;
	family("ember_history_push_profiles", "gauge",
	       "Profiles in the history by push state (pending: waiting for the collector).");
	sample_u64("ember_history_push_profiles", "state", "pending", pc.pending);
	sample_u64("ember_history_push_profiles", "state", "sent", pc.sent);
	sample_u64("ember_history_push_profiles", "state", "rejected", pc.rejected);
	sample_u64("ember_history_push_profiles", "state", "expired", pc.expired);
}

static void print_prometheus(const struct daemon_view *v, struct history *h)
{
	bool up = v->state == DAEMON_RUNNING;

	gauge("ember_up", "1 when emberd runs and rewrote its status file in time.", up);
	if (up || v->state == DAEMON_STALE)
		prom_daemon(v);
	gauge("ember_history_readable", "1 when emberctl could read the history.", h != NULL);
	if (h)
		prom_history(h);
}

/* --- the command ----------------------------------------------------------------- */

int cmd_status(const char *data_dir, int argc, char **argv)
{
	static const struct option opts[] = {
		{"format", required_argument, NULL, 'f'},
		{"runtime-dir", required_argument, NULL, 'r'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	const char *runtime_dir = getenv("EMBER_RUNTIME_DIR"), *format = "text";
	static struct daemon_view v;
	struct history *h;
	int c, damaged;

	if (!runtime_dir || !*runtime_dir)
		runtime_dir = DEFAULT_RUNTIME_DIR;
	optind = 0;
	while ((c = getopt_long(argc, argv, "+:f:r:h", opts, NULL)) != -1) {
		if (c == 'h')
			show(status_help);
		else if (c == 'f')
			format = optarg;
		else if (c == 'r')
			runtime_dir = optarg;
		else
			bad_option(c, argv);
	}
	no_operands(argc, argv);
	if (strcmp(format, "text") && strcmp(format, "prometheus"))
		usage_error("--format: '%s' is not text or prometheus", format);
	load_daemon(runtime_dir, &v);
	if (!strcmp(format, "prometheus")) {
		h = open_history(data_dir);
		print_prometheus(&v, h);
		close_history(h);
		return fflush(stdout) || ferror(stdout) ? EXIT_RUNTIME : EXIT_SUCCESS;
	}
	print_daemon(&v);
	h = open_history(data_dir);
	if (!h)
		return EXIT_RUNTIME;
	damaged = print_history(h, v.now);
	print_collector(h, v.now);
	history_close(h); /* print_history said the damage */
	return fflush(stdout) || ferror(stdout) || damaged ? EXIT_RUNTIME : EXIT_SUCCESS;
}
