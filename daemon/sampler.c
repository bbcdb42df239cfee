// SPDX-License-Identifier: MIT
/*
 * Loads bpf/cpu.bpf.c, opens one cpu-clock perf event per online CPU, and
 * drains the double-buffered counts and stacks. The only file that includes
 * the cpu skeleton.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "clock.h"
#include "log.h"
#include "percpu.h"
#include "sampler.h"

#include "cpu.skel.h"

/*
 * Programs run in hard-irq context from the cpu-clock hrtimer and cannot be
 * preempted; one that read the old buffer index finishes within microseconds.
 * This grace period after the flip is three orders of magnitude longer.
 */
#define FLIP_GRACE_NS (10 * 1000 * 1000)

/*
 * Map sizes, preallocated: room for every sample of an interval (two stacks
 * each), within bounds on kernel memory whatever the rate. A count entry is
 * ~100 bytes, a stack entry ~2.1 KiB: 4.2 MiB of stacks per buffer at the
 * defaults, 36 MiB at most (stacks are up to EMBER_MAX_STACK_DEPTH deep).
 */
#define COUNTS_MIN 1024
#define COUNTS_MAX 65536
#define STACKS_MIN 2048
#define STACKS_MAX 16384

/* Stacks read from the old buffer in one pass, with an index by hash. */
struct drained_stacks {
	uint64_t *hash;	       /* n hashes, then ... */
	struct ember_stack *v; /* ... their stacks */
	size_t n, cap;
	uint32_t *index; /* open addressing: 1 + position in v, 0 = free */
	size_t index_cap;
};

struct sampler {
	struct cpu_bpf *skel;
	struct bpf_link **links; /* one per online CPU */
	int *pfds;		 /* perf event fds, same order */
	unsigned int nlinks;
	unsigned int ncpus_possible;
	uint32_t counts_max, stacks_max;
	uint32_t active;	    /* buffer the programs write to */
	struct ember_cpu_key *keys; /* drain scratch: counts_max keys */
	uint64_t *counts;	    /* drain scratch: their counts */
	struct drained_stacks stk;  /* drain scratch: the old buffer's stacks */
};

static uint32_t roundup_pow2_clamp(uint64_t v, uint32_t lo, uint32_t hi)
{
	uint64_t p = 1;

	while (p < v && p < hi)
		p <<= 1;
	return p < lo ? lo : p > hi ? hi : p;
}

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* libbpf's own chatter (verifier logs included) only with -v */
	if (level == LIBBPF_DEBUG || !log_enabled(LOG_LVL_DEBUG))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* Parses /sys/devices/system/cpu/online ("0-3,5") into a bitmap of max CPUs. */
static int online_cpus(bool *online, unsigned int max)
{
	char buf[4096], *p, *end;
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (p = buf; *p && *p != '\n';) {
		unsigned long a = strtoul(p, &end, 10), b = a;

		if (end == p)
			return -EINVAL;
		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		for (unsigned long c = a; c <= b && c < max; c++)
			online[c] = true;
		p = *end == ',' ? end + 1 : end;
	}
	return 0;
}

static int open_cpu_clock(unsigned int cpu, unsigned int hz)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = hz,
		.freq = 1,
	};
	int fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static int attach_all(struct sampler *s, unsigned int hz, char *err, size_t errlen)
{
	bool *online = calloc(s->ncpus_possible, sizeof(*online));
	int rc = 0;

	s->links = calloc(s->ncpus_possible, sizeof(*s->links));
	s->pfds = calloc(s->ncpus_possible, sizeof(*s->pfds));
	if (!online || !s->links || !s->pfds) {
		free(online);
		return -ENOMEM;
	}
	rc = online_cpus(online, s->ncpus_possible);
	if (rc) {
		snprintf(err, errlen, "cannot read the online CPUs: %s", strerror(-rc));
		free(online);
		return rc;
	}
	for (unsigned int cpu = 0; cpu < s->ncpus_possible; cpu++) {
		struct bpf_link *link;
		int fd;

		if (!online[cpu])
			continue;
		fd = open_cpu_clock(cpu, hz);
		if (fd < 0) {
			snprintf(err, errlen,
				 "perf events unavailable: perf_event_open(cpu-clock, "
				 "cpu %u): %s",
				 cpu, strerror(-fd));
			rc = fd;
			break;
		}
		link = bpf_program__attach_perf_event(s->skel->progs.ember_cpu_sample, fd);
		if (!link) {
			rc = -errno;
			snprintf(err, errlen, "cannot attach the sampler to cpu %u: %s", cpu,
				 strerror(errno));
			close(fd);
			break;
		}
		s->pfds[s->nlinks] = fd;
		s->links[s->nlinks++] = link;
	}
	free(online);
	if (!rc && !s->nlinks) {
		snprintf(err, errlen, "no online CPU to sample");
		rc = -ENODEV;
	}
	return rc;
}

/*
 * The stack walk reads the unwinder's tables; without an unwinder, the
 * program's own tiny maps leave it frame pointers only.
 */
static int reuse_unwind_maps(struct sampler *s, const struct unwinder_fds *u)
{
	struct {
		struct bpf_map *map;
		int fd;
	} v[] = {
		{s->skel->maps.unwind_rows, u->rows},
		{s->skel->maps.unwind_tables, u->tables},
		{s->skel->maps.unwind_procs, u->procs},
		{s->skel->maps.unwind_stale, u->stale},
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		if (v[i].fd < 0)
			bpf_map__set_max_entries(v[i].map, 1);
		else if (bpf_map__reuse_fd(v[i].map, v[i].fd))
			return -errno;
	}
	return 0;
}

/* The map sizes for hz and interval_ns on ncpus CPUs (see COUNTS_MIN). */
static void map_sizes(unsigned int ncpus, unsigned int hz, int64_t interval_ns, uint32_t *counts,
		      uint32_t *stacks)
{
	uint64_t per_interval = (uint64_t)hz * (interval_ns / NS_PER_SEC + 1) * ncpus;

	*counts = roundup_pow2_clamp(per_interval + per_interval / 4, COUNTS_MIN, COUNTS_MAX);
	*stacks = roundup_pow2_clamp(2 * per_interval, STACKS_MIN, STACKS_MAX);
}

bool sampler_fits(const struct sampler *s, unsigned int hz, int64_t interval_ns)
{
	uint32_t counts, stacks;

	map_sizes(s->ncpus_possible, hz, interval_ns, &counts, &stacks);
	return counts <= s->counts_max && stacks <= s->stacks_max;
}

static int load(struct sampler *s, const struct sampler_opts *o, char *err, size_t errlen)
{
	int rc;

	s->skel = cpu_bpf__open();
	if (!s->skel) {
		rc = -errno;
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(errno));
		return rc;
	}
	/* rodata switches and map sizes: set here, between open and load, by the daemon */
	s->skel->rodata->include_idle = o->include_idle;
	s->skel->rodata->target_tgid = o->target_tgid;
	s->skel->rodata->allow_only = o->allow_list;
	if (!o->allow_list) /* unused: the smallest map the kernel accepts */
		bpf_map__set_max_entries(s->skel->maps.allow_tgids, 1);
	map_sizes(s->ncpus_possible, o->hz, o->interval_ns, &s->counts_max, &s->stacks_max);
	bpf_map__set_max_entries(s->skel->maps.counts0, s->counts_max);
	bpf_map__set_max_entries(s->skel->maps.counts1, s->counts_max);
	bpf_map__set_max_entries(s->skel->maps.stacks0, s->stacks_max);
	bpf_map__set_max_entries(s->skel->maps.stacks1, s->stacks_max);
	/* process events go to proctrack's ring buffer: reuse its maps */
	if ((o->events_fd >= 0 && bpf_map__reuse_fd(s->skel->maps.events, o->events_fd)) ||
	    (o->known_fd >= 0 && bpf_map__reuse_fd(s->skel->maps.known, o->known_fd))) {
		rc = -errno;
		snprintf(err, errlen, "cannot share the process-event maps: %s", strerror(errno));
		return rc;
	}
	rc = reuse_unwind_maps(s, &o->unwind);
	if (rc) {
		snprintf(err, errlen, "cannot share the unwind tables' maps: %s", strerror(-rc));
		return rc;
	}
	rc = cpu_bpf__load(s->skel);
	if (rc) {
		if (rc == -EPERM || rc == -EACCES)
			snprintf(err, errlen,
				 "the kernel refused to load BPF programs (%s): "
				 "emberd needs root, or CAP_BPF and CAP_PERFMON",
				 strerror(-rc));
		else
			snprintf(err, errlen,
				 "cannot load the BPF programs: %s (run with -v for "
				 "the verifier's log)",
				 strerror(-rc));
	}
	return rc;
}

int sampler_open(const struct sampler_opts *o, struct sampler **out, char *err, size_t errlen)
{
	struct sampler *s = calloc(1, sizeof(*s));
	int rc, ncpus;

	if (!s)
		return -ENOMEM;
	libbpf_set_print(libbpf_log);
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0) {
		snprintf(err, errlen, "cannot count the possible CPUs");
		free(s);
		return ncpus ? ncpus : -ENODEV;
	}
	s->ncpus_possible = ncpus;
	rc = load(s, o, err, errlen);
	if (!rc) {
		s->keys = calloc(s->counts_max, sizeof(*s->keys));
		s->counts = calloc(s->counts_max, sizeof(*s->counts));
		if (!s->keys || !s->counts)
			rc = -ENOMEM;
	}
	if (!rc)
		rc = attach_all(s, o->hz, err, errlen);
	if (rc) {
		sampler_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

void sampler_close(struct sampler *s)
{
	if (!s)
		return;
	for (unsigned int i = 0; i < s->nlinks; i++) {
		bpf_link__destroy(s->links[i]);
		close(s->pfds[i]);
	}
	free(s->links);
	free(s->pfds);
	free(s->keys);
	free(s->counts);
	cpu_bpf__destroy(s->skel);
	free(s);
}

unsigned int sampler_ncpus(const struct sampler *s)
{
	return s->nlinks;
}

void sampler_sizes(const struct sampler *s, uint32_t *counts, uint32_t *stacks)
{
	*counts = s->counts_max;
	*stacks = s->stacks_max;
}

static void sleep_ns(long ns)
{
	struct timespec ts = ns_to_timespec(ns);

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Batch size of map reads: one syscall per this many entries. */
#define DRAIN_BATCH 256

/*
 * Reads and deletes every entry of a hash map in batches into room slots,
 * returning the number read, or -errno. The map is not written meanwhile.
 * room must be at least max_entries: a call's room then always covers what is
 * left, so the kernel never refuses it for a bucket larger than the room.
 */
static long take_all(int fd, void *keys, void *vals, size_t key_size, size_t val_size, size_t room)
{
	uint32_t in = 0, out = 0, count;
	bool first = true;
	size_t n = 0;
	int err;

	do {
		count = room - n < DRAIN_BATCH ? room - n : DRAIN_BATCH;
		if (!count)
			return n; /* full: what remains is left for the next drain */
		err = bpf_map_lookup_and_delete_batch(fd, first ? NULL : &in, &out,
						      (char *)keys + n * key_size,
						      (char *)vals + n * val_size, &count, NULL);
		if (err && errno != ENOENT)
			return -errno;
		n += count;
		in = out;
		first = false;
	} while (!err);
	return n;
}

static bool stacks_reserve(struct drained_stacks *d, size_t want)
{
	uint64_t *h;
	struct ember_stack *v;

	if (want <= d->cap)
		return true;
	h = realloc(d->hash, want * sizeof(*h));
	if (h)
		d->hash = h;
	v = h ? realloc(d->v, want * sizeof(*v)) : NULL;
	if (!v)
		return false;
	d->v = v;
	d->cap = want;
	return true;
}

static size_t index_slot(const struct drained_stacks *d, uint64_t hash)
{
	size_t i = (hash >> 7) & (d->index_cap - 1);

	while (d->index[i] && d->hash[d->index[i] - 1] != hash)
		i = (i + 1) & (d->index_cap - 1);
	return i;
}

/*
 * Takes every stack of the old buffer and indexes them by hash. Each batch
 * call gets room for a full DRAIN_BATCH: the kernel refuses (ENOSPC) a call
 * whose room is smaller than the next hash bucket, so the room never shrinks.
 */
static int read_stacks(struct sampler *s, int fd)
{
	struct drained_stacks *d = &s->stk;
	uint32_t in = 0, out = 0, count;
	bool first = true;
	int err;

	d->n = 0;
	do {
		if (!stacks_reserve(d, d->n + DRAIN_BATCH))
			return -ENOMEM;
		count = DRAIN_BATCH;
		err = bpf_map_lookup_and_delete_batch(fd, first ? NULL : &in, &out, d->hash + d->n,
						      d->v + d->n, &count, NULL);
		if (err && errno != ENOENT)
			return -errno;
		d->n += count;
		in = out;
		first = false;
	} while (!err);
	free(d->index);
	for (d->index_cap = 64; d->index_cap < 2 * d->n; d->index_cap <<= 1)
		;
	d->index = calloc(d->index_cap, sizeof(*d->index));
	if (!d->index)
		return -ENOMEM;
	for (size_t i = 0; i < d->n; i++)
		d->index[index_slot(d, d->hash[i])] = i + 1;
	return 0;
}

/* Frees the drain's stacks: large and transient, not worth keeping in RSS. */
static void drop_stacks(struct drained_stacks *d)
{
	free(d->hash);
	free(d->v);
	free(d->index);
	memset(d, 0, sizeof(*d));
}

/* The stack of hash; 0 (none) yields an empty stack, one not found a lost one. */
static void find_stack(const struct drained_stacks *d, uint64_t hash, bool lost,
		       struct sampler_stack *st)
{
	size_t i;

	st->ips = NULL;
	st->n = 0;
	st->lost = lost;
	st->truncated = false;
	if (!hash)
		return;
	i = d->index[index_slot(d, hash)];
	if (!i) {
		st->lost = true;
		return;
	}
	st->ips = (const uint64_t *)d->v[i - 1].ips;
	st->n = d->v[i - 1].len < EMBER_MAX_STACK_DEPTH ? d->v[i - 1].len : EMBER_MAX_STACK_DEPTH;
	st->truncated = d->v[i - 1].flags & EMBER_STACK_TRUNCATED;
}

int sampler_drain(struct sampler *s, sampler_cb cb, void *arg)
{
	uint32_t old = s->active;
	struct bpf_map *cmap = old ? s->skel->maps.counts1 : s->skel->maps.counts0;
	struct bpf_map *smap = old ? s->skel->maps.stacks1 : s->skel->maps.stacks0;
	int rc;
	long n;

	s->active = !old;
	__atomic_store_n(&s->skel->bss->active_buf, s->active, __ATOMIC_SEQ_CST);
	sleep_ns(FLIP_GRACE_NS);

	n = take_all(bpf_map__fd(cmap), s->keys, s->counts, sizeof(*s->keys), sizeof(*s->counts),
		     s->counts_max);
	rc = n < 0 ? (int)n : read_stacks(s, bpf_map__fd(smap));
	for (long i = 0; !rc && i < n; i++) {
		const struct ember_cpu_key *k = &s->keys[i];
		struct sampler_stack us, ks;

		find_stack(&s->stk, k->user_stack, k->flags & EMBER_KEY_USTACK_LOST, &us);
		find_stack(&s->stk, k->kern_stack, k->flags & EMBER_KEY_KSTACK_LOST, &ks);
		rc = cb(k, s->counts[i], &us, &ks, arg);
	}
	drop_stacks(&s->stk);
	return rc;
}

int sampler_drop(struct sampler *s, uint32_t tgid, bool drop)
{
	int fd = bpf_map__fd(s->skel->maps.drop_tgids);
	uint8_t one = 1;

	if (!drop) {
		/* nothing was ever dropped: no system call per process */
		if (!s->skel->bss->drops_used)
			return 0;
		return bpf_map_delete_elem(fd, &tgid) && errno != ENOENT ? -errno : 0;
	}
	/* published before the entry: the program then always looks the map up */
	__atomic_store_n(&s->skel->bss->drops_used, 1, __ATOMIC_SEQ_CST);
	return bpf_map_update_elem(fd, &tgid, &one, BPF_ANY) ? -errno : 0;
}

int sampler_allow(struct sampler *s, uint32_t tgid, bool allow)
{
	int fd = bpf_map__fd(s->skel->maps.allow_tgids);
	uint8_t one = 1;

	if (!allow)
		return bpf_map_delete_elem(fd, &tgid) && errno != ENOENT ? -errno : 0;
	return bpf_map_update_elem(fd, &tgid, &one, BPF_ANY) ? -errno : 0;
}

int sampler_metrics(struct sampler *s, uint64_t out[EMBER_CPU_M_NR])
{
	return percpu_array_sum(bpf_map__fd(s->skel->maps.metrics), EMBER_CPU_M_NR, out);
}
