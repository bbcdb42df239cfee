// SPDX-License-Identifier: MIT
/*
 * Gathers the interval report: each source (BPF metrics, symbolizer, unwinder,
 * process table, history, uploader, /proc/self) read once per interval, and
 * the interval's log line written from it.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <curl/curl.h>
#include <sqlite3.h>

#include "allocs.h"
#include "bpfload.h"
#include "clock.h"
#include "counters.h"
#include "ember/growth.h"
#include "history.h"
#include "log.h"
#include "proctable.h"
#include "proctrack.h"
#include "report.h"
#include "sampler.h"
#include "unwinder.h"
#include "uploader.h"

#ifndef EMBER_VERSION
#define EMBER_VERSION "0.1.0"
#endif
/* Bytes of an fdinfo file read: a map's has some 300. */
#define FDINFO_BYTES 1024
/* File descriptors looked at for BPF maps: emberd holds far fewer. */
#define MAX_FDS_SCANNED 65536
/*
 * The BPF maps are scanned again when an object was loaded or closed (a
 * capture, a reload: bpfload_generation()), else every MAPS_RESCAN gathers: a
 * scan reads a link and an fdinfo file per fd, the dearest part of a report.
 * Between scans, only the maps whose memory follows their elements have their
 * fdinfo read again. The periodic scan (an hour at the default interval) is a
 * backstop for a map no load reported.
 */
#define MAPS_RESCAN 360

static void count(struct status_count *c, uint64_t delta)
{
	c->interval = delta;
	c->total += delta;
}

/* Metric totals now into the interval's deltas (out), now becoming the last totals. */
static void deltas(uint64_t *out, const uint64_t *now, uint64_t *last, size_t n)
{
	for (size_t m = 0; m < n; m++)
		out[m] = now[m] - last[m];
	memcpy(last, now, n * sizeof(*now));
}

/* A counter's interval delta from its BPF metrics: the sum of the owners' that count it. */
static uint64_t counter_delta(const struct interval_report *r, const struct counter *c)
{
	uint64_t n = 0;

	if (c->src == COUNTER_SRC_PROC)
		return c->metric < EMBER_PROC_M_NR ? r->proc[c->metric] : 0;
	for (int s = 0; s < PROFILE_SRC_NR; s++)
		if (owners[s].counters & 1u << c->src && c->metric < owners[s].n_metrics)
			n += r->m[s][c->metric];
	return n;
}

/* Every counter of the table read from BPF metrics: the interval's deltas and the totals. */
static void gather_counters(struct interval_report *r)
{
	for (size_t i = 0; i < counters_nr; i++) {
		struct status_count *n = counter_count(&r->st, &counters[i]);

		if (n && counters[i].src != COUNTER_SRC_HOST)
			count(n, counter_delta(r, &counters[i]));
	}
}

/* Binaries that got no table, whatever the reason. */
static uint64_t tables_failed(const struct unwinder_stats *us)
{
	uint64_t n = 0;

	for (int i = 0; i < UNWTAB_E_NR; i++)
		n += us->failed[i];
	return n;
}

/* The unwinder's tables and processes, and its builds since the last interval. */
static void gather_unwinder(struct interval_report *r, struct unwinder *unw)
{
	const struct unwinder_stats *us = &r->unw;
	struct ember_status *st = &r->st;

	unwinder_stats(unw, &r->unw);
	count(&st->unwind[STATUS_UNWIND_TABLES_BUILT],
	      us->built - st->unwind[STATUS_UNWIND_TABLES_BUILT].total);
	count(&st->unwind[STATUS_UNWIND_TABLES_FAILED],
	      tables_failed(us) - st->unwind[STATUS_UNWIND_TABLES_FAILED].total);
	st->caches[STATUS_CACHE_UNWIND_TABLES] =
		(struct status_cache_use){us->tables, us->used_bytes, us->cap_bytes, us->cap_full};
	st->caches[STATUS_CACHE_UNWIND_PROCS] =
		(struct status_cache_use){us->procs, 0, 0, us->procs_full};
}

/* Each open owner's metric totals into interval deltas (zero for those not open). */
static void gather_owners(struct interval_report *r, const struct report_sources *src)
{
	for (int s = 0; s < PROFILE_SRC_NR; s++) {
		uint64_t now[OWNER_METRICS_MAX] = {};
		const struct owner *o = &owners[s];

		memset(r->m[s], 0, sizeof(r->m[s]));
		if (src->owner[s] && o->metrics && !o->metrics(src->owner[s], now))
			deltas(r->m[s], now, r->last_m[s], o->n_metrics);
	}
}

/* Sampled allocations: what is attached, and what was lost or refused since the start. */
static void gather_allocs(struct ember_status *st, const struct report_sources *src)
{
	struct allocs *a = owner_allocs(src->owner);
	struct allocs_stats s;

	memset(&st->allocs, 0, sizeof(st->allocs));
	if (!a)
		return;
	allocs_stats(a, &s);
	st->allocs = (struct status_allocs){
		.procs = s.procs,
		.files = s.files_attached,
		.live_map_full = s.m[EMBER_ALLOC_M_LIVE_FULL],
		.live_proc_cap = s.m[EMBER_ALLOC_M_LIVE_PROC_CAP],
		.counts_map_full = s.m[EMBER_ALLOC_M_COUNTS_FULL],
		.stack_map_full = s.m[EMBER_ALLOC_M_STACKS_FULL],
		.not_attached = s.attach_failed + s.procs_over_cap,
		.notes_malformed = s.notes_malformed,
	};
}

/* BPF metric totals into interval deltas, and those into the table's counters. */
static void gather_bpf(struct interval_report *r, const struct report_sources *src)
{
	uint64_t proc[EMBER_PROC_M_NR] = {};
	struct ember_status *st = &r->st;

	memset(r->proc, 0, sizeof(r->proc));
	gather_owners(r, src);
	count(&st->bpf_samples, r->m[PROFILE_SRC_SAMPLER][EMBER_SAMPLE_M_SAMPLES]);
	gather_allocs(st, src);
	if (!proctrack_metrics(src->proc, proc))
		deltas(r->proc, proc, r->last_proc, EMBER_PROC_M_NR);
	gather_counters(r);
}

/* The caches' use, from the symbolizer's statistics in r->sym and the process table's size. */
static void caches_from_stats(struct interval_report *r, const struct report_sources *src)
{
	struct ember_status *st = &r->st;
	const struct symbolizer_stats *ss = &r->sym;

	st->caches[STATUS_CACHE_BINARIES] = (struct status_cache_use){
		ss->files_cached, ss->file_cache_bytes, ss->file_cache_bound, ss->file_cache_full};
	st->caches[STATUS_CACHE_PERF_MAPS] =
		(struct status_cache_use){ss->perfmap.maps, ss->perfmap.memory,
					  ss->perfmap.max_bytes, ss->perfmap.cache_full};
	st->caches[STATUS_CACHE_NAMES] = (struct status_cache_use){
		ss->demangle_entries, ss->demangle_bytes, ss->demangle_bound, 0};
	st->caches[STATUS_CACHE_PROCESSES] =
		(struct status_cache_use){st->processes_tracked, 0, 0, 0};
	/* no cap of their own (PROCMAPS_MAX_* bound each process): counted in the memory bound */
	st->caches[STATUS_CACHE_PROCESS_MAPS] =
		(struct status_cache_use){ss->pids_held, ss->pids_bytes, 0, 0};
	gather_unwinder(r, src->unw);
}

static void gather_symbols(struct interval_report *r, const struct report_sources *src)
{
	const struct perfmap_stats *p = &r->sym.perfmap;

	symbolizer_stats(src->sym, &r->sym);
	r->perfmaps_refused_before = r->perfmaps_refused;
	r->perfmaps_refused = p->refused_symlink + p->refused_owner + p->refused_size +
			      p->refused_type + p->over_share;
	r->st.refused = (struct status_refused){
		.perfmap_symlink = p->refused_symlink,
		.perfmap_owner = p->refused_owner,
		.perfmap_size = p->refused_size,
		.perfmap_type = p->refused_type,
		.perfmap_over_share = p->over_share,
		.binaries_too_big = r->sym.files_too_big,
		.binaries_over_share = r->sym.files_over_share,
		.frames_wait_cut = r->sym.loader_waits_cut,
		.names_unread = r->sym.names_unread,
		.names_sanitized = proctable_names_sanitized(src->procs),
	};
	caches_from_stats(r, src);
}

static uint64_t file_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) ? 0 : (uint64_t)sb.st_size;
}

/* The collector's URL without user or password, as the uploader logs it. */
static void clean_url(const char *url, char *out, size_t len)
{
	CURLU *h = curl_url();
	char *u = NULL;

	out[0] = '\0';
	if (!h)
		return;
	if (curl_url_set(h, CURLUPART_URL, url, 0) == CURLUE_OK) {
		curl_url_set(h, CURLUPART_USER, NULL, 0);
		curl_url_set(h, CURLUPART_PASSWORD, NULL, 0);
		if (curl_url_get(h, CURLUPART_URL, &u, 0) == CURLUE_OK)
			snprintf(out, len, "%s", u);
		curl_free(u);
	}
	curl_url_cleanup(h);
}

static void gather_history_collector(struct ember_status *st, const struct report_sources *src)
{
	struct status_collector *c = &st->collector;
	struct uploader *up = *src->up;
	struct uploader_stats us;
	char wal[PATH_MAX + 8];

	snprintf(wal, sizeof(wal), "%s-wal", history_path(src->hist));
	st->history_bytes = file_size(history_path(src->hist)) + file_size(wal);
	memset(c, 0, sizeof(*c));
	if (!up)
		return;
	uploader_stats(up, &us);
	c->configured = true;
	clean_url(src->cfg->collector.url, c->url, sizeof(c->url));
	c->outage = us.outage;
	c->outage_since_ns = us.outage ? us.outage_since_ns : 0;
	c->last_success_ns = us.last_success_ns;
	c->last_status = us.last_status;
	snprintf(c->last_error, sizeof(c->last_error), "%s", us.last_error);
	c->pending = us.pending;
	c->sent = us.sent;
	c->rejected = us.rejected;
	c->expired = us.expired;
	c->retries = us.retries;
	c->labels_dropped = us.labels_dropped;
	c->samples_merged = us.samples_merged;
	c->profiles_folded = us.profiles_folded;
	c->stacks_folded = us.stacks_folded;
	c->unmarked = us.unmarked;
}

/*
 * Resident memory now (/proc/self/statm, far cheaper than /proc/self/status)
 * and at its peak (ru_maxrss, the VmHWM of /proc/self/status), in bytes.
 */
static void read_rss(uint64_t *rss, uint64_t *peak)
{
	unsigned long size, pages;
	struct rusage ru;
	FILE *f = fopen("/proc/self/statm", "re");

	*rss = *peak = 0;
	if (f) {
		if (fscanf(f, "%lu %lu", &size, &pages) == 2)
			*rss = (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
		fclose(f);
	}
	if (!getrusage(RUSAGE_SELF, &ru))
		*peak = (uint64_t)ru.ru_maxrss << 10;
}

static void gather_cpu(struct ember_status *st)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return;
	st->cpu_user_ns = ru.ru_utime.tv_sec * NS_PER_SEC + ru.ru_utime.tv_usec * NS_PER_US;
	st->cpu_system_ns = ru.ru_stime.tv_sec * NS_PER_SEC + ru.ru_stime.tv_usec * NS_PER_US;
}

/*
 * map_id and memlock of one BPF map fd, from its fdinfo (one read: a few
 * hundred bytes); false when it is no map.
 */
static bool map_fdinfo(int fd, uint64_t *id, uint64_t *memlock)
{
	char path[64], buf[FDINFO_BYTES];
	bool is_map = false;
	ssize_t n;
	int f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return false;
	n = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	*id = *memlock = 0;
	for (char *line = buf, *nl; line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (!strncmp(line, "map_type:", 9))
			is_map = true;
		else if (sscanf(line, "map_id: %" SCNu64, id) != 1)
			sscanf(line, "memlock: %" SCNu64, memlock);
	}
	return is_map;
}

static bool seen_id(const uint64_t *ids, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/* Adds a map's bytes to its row (of its name) and the total; its row, or -1 when rows are full. */
static int add_map(struct ember_status *st, const struct bpf_map_info *info, uint64_t memlock)
{
	size_t i;

	st->mem.bpf_map_bytes += memlock;
	for (i = 0; i < st->n_maps; i++)
		if (!strncmp(st->maps[i].name, info->name, sizeof(info->name)))
			break;
	if (i == st->n_maps) {
		if (st->n_maps == STATUSFILE_MAX_MAPS)
			return -1;
		snprintf(st->maps[i].name, sizeof(st->maps[0].name), "%s", info->name);
		st->maps[i].max_entries = st->maps[i].bytes = 0;
		st->n_maps++;
	}
	st->maps[i].max_entries += info->max_entries;
	st->maps[i].bytes += memlock;
	return (int)i;
}

/*
 * Whether a map's memlock follows its elements: a hash made without
 * preallocation, a trie. (A local storage's counts itself alone: its elements
 * are charged to the tasks, sockets and inodes that hold them.)
 */
static bool counts_elements(const struct bpf_map_info *info)
{
	switch (info->type) {
	case BPF_MAP_TYPE_HASH:
	case BPF_MAP_TYPE_PERCPU_HASH:
		return info->map_flags & BPF_F_NO_PREALLOC;
	case BPF_MAP_TYPE_LPM_TRIE:
		return true;
	default:
		return false;
	}
}

/* Keeps a map whose memlock follows its elements, found in row slot, for the gathers until the next scan. */
static void keep_growing(struct interval_report *r, int fd, const struct bpf_map_info *info,
			 int slot, uint64_t memlock)
{
	if (!counts_elements(info) || r->n_growing == REPORT_GROWING_MAX)
		return;
	r->growing[r->n_growing++] = (struct report_growing_map){
		.fd = fd, .id = info->id, .slot = slot, .bytes = memlock};
}

static void scan_maps(struct interval_report *r)
{
	struct ember_status *st = &r->st;
	uint64_t ids[256];
	size_t n_ids = 0, scanned = 0;
	struct dirent *e;
	DIR *d = opendir("/proc/self/fd");

	st->n_maps = 0;
	st->mem.bpf_map_bytes = 0;
	r->n_growing = 0;
	if (!d)
		return;
	while ((e = readdir(d)) && scanned++ < MAX_FDS_SCANNED) {
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);
		char link[64], target[64];
		uint64_t id, memlock;
		ssize_t n;
		int fd;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		fd = atoi(e->d_name);
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (strcmp(target, "anon_inode:bpf-map") || !map_fdinfo(fd, &id, &memlock))
			continue;
		if (seen_id(ids, n_ids, id) || n_ids == sizeof(ids) / sizeof(ids[0]))
			continue;
		ids[n_ids++] = id;
		if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
			st->mem.bpf_map_bytes += memlock;
			continue;
		}
		keep_growing(r, fd, &info, add_map(st, &info, memlock), memlock);
	}
	closedir(d);
}

/*
 * The memlock of the maps that follow their elements, read again into their rows.
 * False when one is no longer at its fd (the maps changed unreported).
 */
static bool reread_growing(struct interval_report *r)
{
	struct ember_status *st = &r->st;

	for (size_t i = 0; i < r->n_growing; i++) {
		struct report_growing_map *g = &r->growing[i];
		uint64_t id, memlock;

		if (!map_fdinfo(g->fd, &id, &memlock) || id != g->id)
			return false;
		st->mem.bpf_map_bytes += memlock - g->bytes;
		if (g->slot >= 0)
			st->maps[g->slot].bytes += memlock - g->bytes;
		g->bytes = memlock;
	}
	return true;
}

/* The BPF maps in the status: scanned again when due, else the growing ones read again. */
static void gather_maps(struct interval_report *r)
{
	uint64_t gen = bpfload_generation();

	if (r->st.n_maps && gen == r->maps_gen && ++r->maps_gathers < MAPS_RESCAN &&
	    reread_growing(r))
		return;
	scan_maps(r);
	r->maps_gen = gen;
	r->maps_gathers = 0;
}

void report_init(struct interval_report *r, const struct report_sources *src)
{
	struct ember_status *st = &r->st;

	memset(r, 0, sizeof(*r));
	st->format = STATUSFILE_VERSION;
	snprintf(st->version, sizeof(st->version), "%s", EMBER_VERSION);
	snprintf(st->state, sizeof(st->state), "running");
	st->pid = getpid();
	st->start_ns = real_ns();
	/* the BPF metrics since load count from here: the first interval's deltas are right */
	proctrack_metrics(src->proc, r->last_proc);
	for (int s = 0; s < PROFILE_SRC_NR; s++)
		if (src->owner[s] && owners[s].metrics)
			owners[s].metrics(src->owner[s], r->last_m[s]);
}

/* What the heap holds, SQLite's part apart: where RSS growth comes from (bench/soak.sh). */
static void read_heap(struct status_memory *m)
{
	struct mallinfo2 mi = mallinfo2();

	m->sqlite = (uint64_t)sqlite3_memory_used();
	m->heap_used = mi.uordblks + mi.hblkhd;
}

void report_measure_memory(struct interval_report *r, const struct report_sources *src)
{
	read_rss(&r->st.mem.rss, &r->st.mem.rss_peak);
	symbolizer_stats(src->sym, &r->sym);
	caches_from_stats(r, src);
}

void report_gather_common(struct interval_report *r, const struct report_sources *src)
{
	struct ember_status *st = &r->st;

	st->updated_ns = real_ns();
	st->hz = src->cfg->hz;
	st->interval_ns = src->cfg->interval_ns;
	st->processes_seen = *src->processes_seen;
	st->processes_unread = *src->processes_unread;
	st->processes_at_exit = *src->processes_at_exit;
	st->processes_late = *src->processes_late;
	proctrack_wakeups(src->proc, &st->proc_wakeups, &st->proc_exec_only_wakeups);
	st->processes_tracked = proctable_size(src->procs);
	gather_symbols(r, src);
	gather_history_collector(st, src);
	gather_cpu(st);
	read_rss(&st->mem.rss, &st->mem.rss_peak);
	read_heap(&st->mem);
	st->mem.limit = src->cfg->memory_limit;
	gather_maps(r);
}

void report_gather(struct interval_report *r, const struct report_sources *src,
		   const struct drain_stats *drained, uint64_t excluded, size_t apps,
		   uint64_t profiles_stored)
{
	struct ember_status *st = &r->st;
	struct sampler *sampler;
	uint64_t jit;

	r->drained = *drained;
	st->intervals++;
	count(&st->samples, drained->samples);
	count(&st->stacks, drained->stacks);
	count(&st->processes, drained->processes);
	count(&st->profiles, profiles_stored - r->last_profiles);
	r->last_profiles = profiles_stored;
	st->apps = apps;
	count(&st->skips[STATUS_SKIP_EXCLUDED], excluded);
	sampler = owner_sampler(src->owner);
	r->has_defer = sampler && sampler_deferred_stats(sampler, &r->defer);
	gather_bpf(r, src);
	report_gather_common(r, src);
	/* the JIT frames of a V8 without a layout are named so on the host, not in BPF */
	jit = r->sym.runtime_unsupported - r->last_rt_unsupported;
	r->last_rt_unsupported = r->sym.runtime_unsupported;
	st->unwind[STATUS_UNWIND_RT_UNSUPPORTED].interval += jit;
	st->unwind[STATUS_UNWIND_RT_UNSUPPORTED].total += jit;
}

/*
 * The symbolizer's figures: a summary with -v, and the perf maps refused (each
 * file is counted once) whenever more were, since they point at a hostile or
 * broken writer.
 */
static void log_symbols(const struct interval_report *r)
{
	const struct symbolizer_stats *s = &r->sym;

	if (r->perfmaps_refused != r->perfmaps_refused_before)
		log_info("perf maps refused: symlink %lu, wrong owner %lu, too big %lu, "
			 "not a regular file %lu, cut at their share %lu (malformed lines "
			 "skipped %lu)",
			 s->perfmap.refused_symlink, s->perfmap.refused_owner,
			 s->perfmap.refused_size, s->perfmap.refused_type, s->perfmap.over_share,
			 s->perfmap.bad_lines);
	log_debug("symbols: %lu of %lu frames named, %lu demangled; file cache %lu binaries, "
		  "%lu of %lu MiB (%lu named from a debug file), names read back %lu (%lu "
		  "unreadable); perf maps %lu, %lu KiB, "
		  "%lu frames named, %lu malformed lines; kernel names asked %lu, cached %lu; "
		  "runtime frames %lu, read as sampled %lu in %lu stacks (%lu could not be; %lu "
		  "code objects checked, %lu read again: another at the address), %lu code "
		  "objects named from another process's read (%lu KiB)",
		  s->named, s->frames, s->demangled, s->files_cached, s->file_cache_bytes >> 20,
		  s->file_cache_bound >> 20, s->debug_build_id + s->debug_link, s->names_read,
		  s->names_unread, s->perfmap.maps, s->perfmap.memory >> 10, s->perfmap.named,
		  s->perfmap.bad_lines, s->kernel_asked, s->kernel_cached, s->runtime_frames,
		  s->runtime_seen, s->runtime_seen_stacks, s->runtime_seen_unread,
		  s->runtime_checked, s->runtime_reread, s->runtime_shared,
		  s->runtime_shared_bytes >> 10);
}

/* Memory growth's line: a warning when it lost samples or stacks, else debug. */
static void log_growth(const struct interval_report *r)
{
	const uint64_t *g = r->m[PROFILE_SRC_GROWTH];
	uint64_t lost = g[EMBER_SAMPLE_M_COUNTS_FULL] + g[EMBER_SAMPLE_M_STACKS_FULL] +
			g[EMBER_SAMPLE_M_KSTACK_FAILED];
	char line[896];

	snprintf(
		line, sizeof(line),
		"growth: %" PRIu64 " faults sampled, %" PRIu64
		" samples folded with the mmaps' (file-backed left out %" PRIu64
		", kernel threads %" PRIu64 ", mapping unknown %" PRIu64
		", processes younger than growth_min_age %" PRIu64 " (%" PRIu64
		" of their faults not classified: 1 in 4 is, weighing 4); %" PRIu64
		" classified by the heap, stack and executable's ranges, without a lookup), %" PRIu64
		" of %" PRIu64 " anonymous mmaps sampled; %" PRIu64
		" of processes not loaded yet sent to the "
		"deferred walks (%" PRIu64 " walked here: the ring full); lost: %" PRIu64
		" samples (counts map full), %" PRIu64 " stacks",
		g[EMBER_SAMPLE_M_SAMPLES], g[EMBER_SAMPLE_M_COUNTED], g[EMBER_GROWTH_M_FILE],
		g[EMBER_GROWTH_M_KTHREAD], g[EMBER_GROWTH_M_VMA_UNKNOWN], g[EMBER_GROWTH_M_YOUNG],
		g[EMBER_GROWTH_M_YOUNG_UNCLASSIFIED], g[EMBER_GROWTH_M_BY_RANGE],
		g[EMBER_GROWTH_M_MAP_SAMPLED], g[EMBER_GROWTH_M_MAP_CALLS],
		g[EMBER_SAMPLE_M_DEFERRED], g[EMBER_SAMPLE_M_DEFER_FULL],
		g[EMBER_SAMPLE_M_COUNTS_FULL],
		g[EMBER_SAMPLE_M_STACKS_FULL] + g[EMBER_SAMPLE_M_KSTACK_FAILED]);
	if (lost)
		log_warnx("%s", line);
	else
		log_debug("%s", line);
}

void report_log(const struct interval_report *r)
{
	const struct drain_stats *st = &r->drained;
	char losses[512] = "";
	size_t off = 0;

	for (size_t i = 0; i < counters_nr; i++) {
		struct status_count v = counter_value(&r->st, &counters[i]);

		if (counters[i].log && v.interval && off < sizeof(losses))
			off += snprintf(losses + off, sizeof(losses) - off, ", %s %" PRIu64,
					counters[i].log, v.interval);
	}
	if (off)
		log_warnx("interval: %lu samples in %lu stacks of %u processes in %" PRIu64
			  " apps%s",
			  st->samples, st->stacks, st->processes, r->st.apps, losses);
	else
		log_debug("interval: %lu samples in %lu stacks of %u processes in %" PRIu64
			  " apps (excluded %lu, filtered in BPF %lu, idle skipped %lu)",
			  st->samples, st->stacks, st->processes, r->st.apps,
			  r->st.skips[STATUS_SKIP_EXCLUDED].interval,
			  r->m[PROFILE_SRC_SAMPLER][EMBER_SAMPLE_M_FILTERED],
			  r->m[PROFILE_SRC_SAMPLER][EMBER_SAMPLE_M_IDLE_SKIPPED]);
	if (r->m[PROFILE_SRC_GROWTH][EMBER_SAMPLE_M_SAMPLES] ||
	    r->m[PROFILE_SRC_GROWTH][EMBER_GROWTH_M_MAP_CALLS])
		log_growth(r);
	if (r->proc[EMBER_PROC_M_EXIT_MAPS] || r->proc[EMBER_PROC_M_EXIT_MAPS_LOCKED])
		log_debug("process exits: %lu sent the mappings of a process emberd had not "
			  "loaded, %lu could not (their lock was taken)",
			  r->proc[EMBER_PROC_M_EXIT_MAPS], r->proc[EMBER_PROC_M_EXIT_MAPS_LOCKED]);
	if (r->unw.built || r->unw.procs || r->unw.open_failed)
		log_debug("unwinder since the start: %lu tables built in %.1f ms (%u loaded, %lu "
			  "evicted), %lu binaries without one, %lu files that could not be "
			  "opened; %u processes loaded, %lu read again, %lu not loaded (map full), "
			  "%lu requests dropped (queue full)",
			  r->unw.built, r->unw.build_ns / 1e6, r->unw.tables, r->unw.evicted,
			  tables_failed(&r->unw), r->unw.open_failed, r->unw.procs, r->unw.rescans,
			  r->unw.procs_full, r->unw.queue_full);
	if (r->has_defer && r->defer.received)
		log_debug(
			"deferred walks since the start: %lu samples of processes not loaded yet, "
			"%lu walked with their tables, %lu without (gone first, or waited too "
			"long), %lu walked again (a table dropped during the walk), %lu added to one "
			"alike, %u waiting; %lu lost, %lu malformed; %lu "
			"with CPython's frames read at the sample; %.0f us "
			"of CPU a walk; of them %lu off-CPU waits, %u open, %lu lost",
			r->defer.received, r->defer.walked, r->defer.unloaded, r->defer.rewalked,
			r->defer.repeats, r->defer.waiting, r->defer.lost, r->defer.bad,
			r->defer.rt_traced,
			r->defer.walked + r->defer.unloaded ?
				r->defer.walk_ns / 1e3 / (r->defer.walked + r->defer.unloaded) :
				0.0,
			r->defer.waits, r->defer.waits_open, r->defer.waits_lost);
	if (r->unw.host_finds)
		log_debug(
			"deferred walks' rules since the start: %lu searches, %lu blocks read from "
			"the rows map; %lu KiB of indexes and blocks held",
			r->unw.host_finds, r->unw.host_reads, r->unw.host_bytes >> 10);
	log_symbols(r);
}
