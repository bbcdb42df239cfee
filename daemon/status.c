// SPDX-License-Identifier: MIT
/*
 * emberd's status: what it sampled, lost and holds, its own CPU, RSS and BPF
 * map memory, and the memory bound that shrinks the caches. Written after
 * every drain to <runtime_dir>/status, atomically (a temporary file renamed).
 */
#include <dirent.h>
#include <errno.h>
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

#include "log.h"
#include "statusfile.h"
#include "status.h"

#ifndef EMBER_VERSION
#define EMBER_VERSION "0.1.0"
#endif
/* Lines of /proc/self/status and of an fdinfo file read at most. */
#define PROC_STATUS_LINES 64
#define FDINFO_LINES 32
/* Allocations this big are mapped and unmapped on their own (see status_open). */
#define MMAP_THRESHOLD (256 * 1024)
/* File descriptors looked at for BPF maps: emberd holds far fewer. */
#define MAX_FDS_SCANNED 65536

/* The status being kept, and what is needed to turn totals into deltas. */
struct status {
	struct status_sources src;
	struct ember_status st;
	char path[PATH_MAX + 16], tmp[PATH_MAX + 16];
	uint64_t last_cpu[EMBER_CPU_M_NR];
	uint64_t last_proc[EMBER_PROC_M_NR];
	uint64_t last_profiles;
	uint64_t applied_limit;		/* the memory_limit the caps were derived from */
	uint64_t rss_after_shrink;	/* still over after a shrink: RSS then, else 0 */
	bool write_failed;		/* warned once; warned again after a success */
};

static int64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void count(struct status_count *c, uint64_t delta)
{
	c->interval = delta;
	c->total += delta;
}

/* The caches' caps follow memory_limit, which a reload may change. */
static void apply_caps(struct status *s)
{
	struct symbolizer_caps caps;
	uint64_t limit = s->src.cfg->memory_limit;

	if (limit == s->applied_limit)
		return;
	symbolizer_caps_for_limit(limit, &caps);
	symbolizer_set_caps(s->src.sym, &caps);
	s->applied_limit = limit;
	log_debug("memory_limit %" PRIu64 " MiB: caches of %" PRIu64 " MiB of binaries, %" PRIu64
		  " MiB of perf maps, %" PRIu64 " KiB of names", limit >> 20, caps.files >> 20,
		  caps.perfmaps >> 20, caps.names >> 10);
}

/* The user stack walk's frames and ends, from the interval's BPF metric deltas. */
static void gather_walk(struct ember_status *st, const uint64_t d[EMBER_CPU_M_NR])
{
	static const struct {
		enum status_unwind to;
		enum ember_cpu_metric from;
	} m[] = {
		{ STATUS_UNWIND_FRAMES_TABLE, EMBER_CPU_M_FRAMES_TABLE },
		{ STATUS_UNWIND_FRAMES_FP, EMBER_CPU_M_FRAMES_FP },
		{ STATUS_UNWIND_FRAMES_BAD_RULE, EMBER_CPU_M_FRAMES_BAD_RULE },
		{ STATUS_UNWIND_NO_TABLES, EMBER_CPU_M_PROC_NO_TABLES },
		{ STATUS_UNWIND_END_OUTERMOST, EMBER_CPU_M_END_OUTERMOST },
		{ STATUS_UNWIND_END_SIGNAL, EMBER_CPU_M_END_SIGNAL },
		{ STATUS_UNWIND_END_NO_TABLE, EMBER_CPU_M_END_NO_TABLE },
		{ STATUS_UNWIND_END_BAD_RULE, EMBER_CPU_M_END_BAD_RULE },
		{ STATUS_UNWIND_END_UNREADABLE, EMBER_CPU_M_END_UNREADABLE },
		{ STATUS_UNWIND_END_DEPTH, EMBER_CPU_M_END_DEPTH },
	};

	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		count(&st->unwind[m[i].to], d[m[i].from]);
}

/* The unwinder's tables and processes, and its builds since the last interval. */
static void gather_unwinder(struct status *s)
{
	struct ember_status *st = &s->st;
	struct unwinder_stats us;
	uint64_t failed = 0;

	unwinder_stats(s->src.unw, &us);
	for (int i = 0; i < UNWTAB_E_NR; i++)
		failed += us.failed[i];
	count(&st->unwind[STATUS_UNWIND_TABLES_BUILT],
	      us.built - st->unwind[STATUS_UNWIND_TABLES_BUILT].total);
	count(&st->unwind[STATUS_UNWIND_TABLES_FAILED],
	      failed - st->unwind[STATUS_UNWIND_TABLES_FAILED].total);
	st->caches[STATUS_CACHE_UNWIND_TABLES] = (struct status_cache_use){
		us.tables, us.used_bytes, us.cap_bytes, us.cap_full };
	st->caches[STATUS_CACHE_UNWIND_PROCS] = (struct status_cache_use){
		us.procs, 0, 0, us.procs_full };
}

/* BPF metric totals into interval deltas and the named drop causes. */
static void gather_bpf(struct status *s)
{
	uint64_t cpu[EMBER_CPU_M_NR] = {}, proc[EMBER_PROC_M_NR] = {}, d[EMBER_CPU_M_NR];
	struct ember_status *st = &s->st;

	if (!sampler_metrics(s->src.sampler, cpu)) {
		for (int m = 0; m < EMBER_CPU_M_NR; m++)
			d[m] = cpu[m] - s->last_cpu[m];
		memcpy(s->last_cpu, cpu, sizeof(cpu));
		count(&st->bpf_samples, d[EMBER_CPU_M_SAMPLES]);
		count(&st->drops[STATUS_DROP_USER_STACK], d[EMBER_CPU_M_USTACK_FAILED]);
		count(&st->drops[STATUS_DROP_KERNEL_STACK], d[EMBER_CPU_M_KSTACK_FAILED]);
		count(&st->drops[STATUS_DROP_STACK_MAP_FULL], d[EMBER_CPU_M_STACKS_FULL]);
		count(&st->drops[STATUS_DROP_COUNTS_MAP_FULL], d[EMBER_CPU_M_COUNTS_FULL]);
		count(&st->drops[STATUS_DROP_FIRST_SAMPLE_RETRIED], d[EMBER_CPU_M_PROC_EVENT_LOST]);
		count(&st->skips[STATUS_SKIP_IDLE], d[EMBER_CPU_M_IDLE_SKIPPED]);
		count(&st->skips[STATUS_SKIP_FILTERED], d[EMBER_CPU_M_FILTERED]);
		gather_walk(st, d);
	}
	if (!proctrack_metrics(s->src.proc, proc)) {
		count(&st->drops[STATUS_DROP_PROC_EVENT_LOST],
		      proc[EMBER_PROC_M_RINGBUF_FULL] - s->last_proc[EMBER_PROC_M_RINGBUF_FULL]);
		memcpy(s->last_proc, proc, sizeof(proc));
	}
}

static void gather_caches(struct status *s)
{
	struct ember_status *st = &s->st;
	struct symbolizer_stats ss;

	symbolizer_stats(s->src.sym, &ss);
	st->caches[STATUS_CACHE_BINARIES] = (struct status_cache_use){
		ss.files_cached, ss.file_cache_bytes, ss.file_cache_bound, ss.file_cache_full };
	st->caches[STATUS_CACHE_PERF_MAPS] = (struct status_cache_use){
		ss.perfmap.maps, ss.perfmap.memory, ss.perfmap.max_bytes, ss.perfmap.cache_full };
	st->caches[STATUS_CACHE_NAMES] = (struct status_cache_use){
		ss.demangle_entries, ss.demangle_bytes, ss.demangle_bound, 0 };
	st->caches[STATUS_CACHE_PROCESSES] = (struct status_cache_use){
		proctable_size(s->src.procs), 0, 0, 0 };
	gather_unwinder(s);
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

static void gather_history_collector(struct status *s)
{
	struct status_collector *c = &s->st.collector;
	struct uploader *up = *s->src.up;
	struct uploader_stats us;
	char wal[PATH_MAX + 8];

	snprintf(wal, sizeof(wal), "%s-wal", history_path(s->src.hist));
	s->st.history_bytes = file_size(history_path(s->src.hist)) + file_size(wal);
	memset(c, 0, sizeof(*c));
	if (!up)
		return;
	uploader_stats(up, &us);
	c->configured = true;
	clean_url(s->src.cfg->collector.url, c->url, sizeof(c->url));
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
}

/* VmRSS and VmHWM of /proc/self/status, in bytes. */
static void read_rss(uint64_t *rss, uint64_t *peak)
{
	char line[256];
	unsigned long kb;
	FILE *f = fopen("/proc/self/status", "re");

	*rss = *peak = 0;
	if (!f)
		return;
	for (int i = 0; i < PROC_STATUS_LINES && fgets(line, sizeof(line), f); i++) {
		if (sscanf(line, "VmRSS: %lu kB", &kb) == 1)
			*rss = (uint64_t)kb << 10;
		else if (sscanf(line, "VmHWM: %lu kB", &kb) == 1)
			*peak = (uint64_t)kb << 10;
	}
	fclose(f);
}

static void gather_cpu(struct ember_status *st)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return;
	st->cpu_user_ns = ru.ru_utime.tv_sec * 1000000000LL + ru.ru_utime.tv_usec * 1000LL;
	st->cpu_system_ns = ru.ru_stime.tv_sec * 1000000000LL + ru.ru_stime.tv_usec * 1000LL;
}

/* map_id and memlock of one BPF map fd, from its fdinfo; false when it is no map. */
static bool map_fdinfo(int fd, uint64_t *id, uint64_t *memlock)
{
	char path[64], line[128];
	bool is_map = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return false;
	*id = *memlock = 0;
	for (int i = 0; i < FDINFO_LINES && fgets(line, sizeof(line), f); i++) {
		if (!strncmp(line, "map_type:", 9))
			is_map = true;
		else if (sscanf(line, "map_id: %" SCNu64, id) != 1)
			sscanf(line, "memlock: %" SCNu64, memlock);
	}
	fclose(f);
	return is_map;
}

static bool seen_id(const uint64_t *ids, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/*
 * Every BPF map this process holds, once each (the cpu object reuses the proc
 * object's shared maps through a second fd): its memlock is what the kernel
 * charges to the cgroup for it, which RSS does not show.
 */
static void gather_maps(struct ember_status *st)
{
	uint64_t ids[256];
	size_t n_ids = 0, scanned = 0;
	struct dirent *e;
	DIR *d = opendir("/proc/self/fd");

	st->n_maps = 0;
	st->mem.bpf_map_bytes = 0;
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
		st->mem.bpf_map_bytes += memlock;
		if (st->n_maps == STATUSFILE_MAX_MAPS || bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		snprintf(st->maps[st->n_maps].name, sizeof(st->maps[0].name), "%s", info.name);
		st->maps[st->n_maps].max_entries = info.max_entries;
		st->maps[st->n_maps].bytes = memlock;
		st->n_maps++;
	}
	closedir(d);
}

static uint64_t caches_held(const struct ember_status *st)
{
	uint64_t n = 0;

	for (int i = 0; i < STATUS_CACHE_NR; i++)
		n += st->caches[i].bytes;
	return n;
}

/*
 * The memory bound: over memory_limit, the caches give back what RSS exceeds
 * it by (or all they can). Logged once per excursion over the limit, not
 * every interval it lasts. When a shrink could not bring RSS under the limit
 * (what is left is not cache), the next one waits until RSS grew by 1/16 of
 * the limit: emptying the caches every interval would only re-read the same
 * binaries and perf maps again and again.
 */
static void bound_memory(struct status *s)
{
	struct status_memory *m = &s->st.mem;
	uint64_t held, excess, freed, before = m->rss;

	m->limit = s->src.cfg->memory_limit;
	if (m->rss <= m->limit) {
		if (m->over)
			log_info("memory: RSS %" PRIu64 " MiB is under memory_limit %" PRIu64
				 " MiB again", m->rss >> 20, m->limit >> 20);
		m->over = false;
		s->rss_after_shrink = 0;
		return;
	}
	if (s->rss_after_shrink && m->rss <= s->rss_after_shrink + m->limit / 16)
		return;
	held = caches_held(&s->st);
	excess = m->rss - m->limit;
	freed = symbolizer_shrink(s->src.sym, held > excess ? held - excess : 0);
	m->shrink_runs++;
	m->last_shrink_ns = realtime_ns();
	m->last_freed = freed;
	m->freed_total += freed;
	read_rss(&m->rss, &m->rss_peak);
	gather_caches(s);
	s->rss_after_shrink = m->rss > m->limit ? m->rss : 0;
	if (m->over)
		return;
	m->over = true;
	m->shrink_events++;
	log_warnx("memory: RSS %" PRIu64 " MiB over memory_limit %" PRIu64 " MiB: freed %" PRIu64
		  " KiB of symbol caches, RSS now %" PRIu64 " MiB%s", before >> 20, m->limit >> 20,
		  freed >> 10, m->rss >> 20,
		  m->rss > m->limit ? " (still over: the rest is not cache; raise memory_limit)"
				    : "");
}

/* Creates the runtime directory and its missing parents (0755, like RuntimeDirectory=). */
static int make_dirs(const char *dir)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", dir);
	for (char *c = p + 1; *c; c++) {
		if (*c != '/')
			continue;
		*c = '\0';
		if (mkdir(p, 0755) && errno != EEXIST)
			return -errno;
		*c = '/';
	}
	return mkdir(p, 0755) && errno != EEXIST ? -errno : 0;
}

/* Writes the file atomically: readers see the old one or the new one, whole. */
static int write_file(struct status *s)
{
	static char buf[STATUSFILE_MAX_BYTES];
	int n = statusfile_format(&s->st, buf, sizeof(buf)), fd, rc = 0;

	if (n < 0)
		return n;
	/* a fresh file, never one planted there (a link to another file) */
	unlink(s->tmp);
	fd = open(s->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, (size_t)n) != n)
		rc = errno ? -errno : -EIO;
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && rename(s->tmp, s->path))
		rc = -errno;
	if (rc)
		unlink(s->tmp);
	return rc;
}

static void write_status(struct status *s)
{
	int rc;

	s->st.updated_ns = realtime_ns();
	rc = write_file(s);
	if (rc && !s->write_failed)
		log_warnx("cannot write the status file %s: %s (emberctl status will say emberd "
			  "is not running)", s->path, strerror(-rc));
	s->write_failed = rc != 0;
}

/* What does not need a drain: configuration, processes, history, own costs. */
static void gather_common(struct status *s)
{
	struct ember_status *st = &s->st;

	st->hz = s->src.cfg->hz;
	st->interval_ns = s->src.cfg->interval_ns;
	st->processes_seen = *s->src.processes_seen;
	st->processes_tracked = proctable_size(s->src.procs);
	gather_caches(s);
	gather_history_collector(s);
	gather_cpu(st);
	read_rss(&st->mem.rss, &st->mem.rss_peak);
	st->mem.limit = s->src.cfg->memory_limit;
	gather_maps(st);
}

struct status *status_open(const struct status_sources *src)
{
	struct status *s = calloc(1, sizeof(*s));
	const char *dir = src->cfg->runtime_dir;
	int rc;

	if (!s)
		return NULL;
	s->src = *src;
	snprintf(s->path, sizeof(s->path), "%s/status", dir);
	snprintf(s->tmp, sizeof(s->tmp), "%s/.status.tmp", dir);
	s->st.format = STATUSFILE_VERSION;
	snprintf(s->st.version, sizeof(s->st.version), "%s", EMBER_VERSION);
	snprintf(s->st.state, sizeof(s->st.state), "running");
	s->st.pid = getpid();
	s->st.start_ns = realtime_ns();
	/*
	 * Parsing a binary reads its symbol sections into buffers that are freed
	 * once its symbols are kept. A fixed mmap threshold hands such big buffers
	 * back to the system at once (glibc's moving threshold would keep them in
	 * the arena), so that RSS follows what the caches account for.
	 */
	mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
	apply_caps(s);
	/* the BPF metrics since load count from here: the first interval's deltas are right */
	sampler_metrics(src->sampler, s->last_cpu);
	proctrack_metrics(src->proc, s->last_proc);
	rc = make_dirs(dir);
	if (rc) {
		log_warnx("cannot create the runtime directory %s: %s", dir, strerror(-rc));
		s->write_failed = true;
	}
	gather_common(s);
	write_status(s);
	return s;
}

void status_interval(struct status *s, const struct drain_result *r)
{
	struct ember_status *st;
	uint64_t stored;

	if (!s)
		return;
	st = &s->st;
	st->intervals++;
	count(&st->samples, r->total.samples);
	count(&st->stacks, r->total.stacks);
	count(&st->processes, r->total.processes);
	stored = *s->src.profiles_stored;
	count(&st->profiles, stored - s->last_profiles);
	s->last_profiles = stored;
	st->apps = r->n;
	count(&st->skips[STATUS_SKIP_EXCLUDED], r->excluded);
	gather_bpf(s);
	apply_caps(s);
	gather_common(s);
	bound_memory(s);
	write_status(s);
}

void status_close(struct status *s)
{
	if (!s)
		return;
	snprintf(s->st.state, sizeof(s->st.state), "stopped");
	gather_common(s);
	write_status(s);
	free(s);
}
