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

#include "log.h"
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
 * ~100 bytes, a stack entry ~1.1 KiB: 2.2 MiB of stacks per buffer at the
 * defaults, 18 MiB at most.
 */
#define COUNTS_MIN 1024
#define COUNTS_MAX 65536
#define STACKS_MIN 2048
#define STACKS_MAX 16384

struct sampler {
	struct cpu_bpf *skel;
	struct bpf_link **links;	/* one per online CPU */
	int *pfds;			/* perf event fds, same order */
	unsigned int nlinks;
	unsigned int ncpus_possible;
	uint32_t counts_max, stacks_max;
	uint32_t active;		/* buffer the programs write to */
	struct ember_cpu_key *keys;	/* drain scratch: counts_max keys */
	uint64_t *stack_ids;		/* drain scratch: stacks_max stack hashes */
	uint64_t *metric_vals;		/* ncpus_possible values of one metric */
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
			snprintf(err, errlen, "perf events unavailable: perf_event_open(cpu-clock, "
				 "cpu %u): %s", cpu, strerror(-fd));
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

static int load(struct sampler *s, const struct sampler_opts *o, char *err, size_t errlen)
{
	uint64_t per_interval = (uint64_t)o->hz * (o->interval_ns / 1000000000LL + 1) *
				s->ncpus_possible;
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
	s->counts_max = roundup_pow2_clamp(per_interval + per_interval / 4, COUNTS_MIN, COUNTS_MAX);
	s->stacks_max = roundup_pow2_clamp(2 * per_interval, STACKS_MIN, STACKS_MAX);
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
	rc = cpu_bpf__load(s->skel);
	if (rc) {
		if (rc == -EPERM || rc == -EACCES)
			snprintf(err, errlen, "the kernel refused to load BPF programs (%s): "
				 "emberd needs root, or CAP_BPF and CAP_PERFMON", strerror(-rc));
		else
			snprintf(err, errlen, "cannot load the BPF programs: %s (run with -v for "
				 "the verifier's log)", strerror(-rc));
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
		s->stack_ids = calloc(s->stacks_max, sizeof(*s->stack_ids));
		s->metric_vals = calloc(s->ncpus_possible, sizeof(*s->metric_vals));
		if (!s->keys || !s->stack_ids || !s->metric_vals)
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
	free(s->stack_ids);
	free(s->metric_vals);
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
	struct timespec ts = { .tv_sec = ns / 1000000000L, .tv_nsec = ns % 1000000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Reads one stack into buf; hash 0 yields an empty stack. */
static void read_stack(int fd, uint64_t hash, bool lost, struct ember_stack *buf,
		       struct sampler_stack *st)
{
	st->ips = (const uint64_t *)buf->ips;
	st->n = 0;
	st->lost = lost;
	if (!hash)
		return;
	if (bpf_map_lookup_elem(fd, &hash, buf)) {
		st->lost = true;
		return;
	}
	st->n = buf->len < EMBER_MAX_STACK_DEPTH ? buf->len : EMBER_MAX_STACK_DEPTH;
}

/* Empties a stack map, including stacks no count refers to (dropped samples). */
static void clear_stacks(struct sampler *s, int fd)
{
	uint64_t key, *prev = NULL;
	uint32_t n = 0;

	while (n < s->stacks_max && !bpf_map_get_next_key(fd, prev, &key)) {
		s->stack_ids[n] = key;
		prev = &s->stack_ids[n++];
	}
	for (uint32_t i = 0; i < n; i++)
		bpf_map_delete_elem(fd, &s->stack_ids[i]);
}

int sampler_drain(struct sampler *s, sampler_cb cb, void *arg)
{
	uint32_t old = s->active, n = 0;
	struct bpf_map *cmap = old ? s->skel->maps.counts1 : s->skel->maps.counts0;
	struct bpf_map *smap = old ? s->skel->maps.stacks1 : s->skel->maps.stacks0;
	int cfd = bpf_map__fd(cmap), sfd = bpf_map__fd(smap), rc = 0;
	struct ember_stack ubuf, kbuf;
	struct ember_cpu_key *prev = NULL;

	s->active = !old;
	__atomic_store_n(&s->skel->bss->active_buf, s->active, __ATOMIC_SEQ_CST);
	sleep_ns(FLIP_GRACE_NS);

	while (n < s->counts_max && !bpf_map_get_next_key(cfd, prev, &s->keys[n]))
		prev = &s->keys[n++];
	for (uint32_t i = 0; i < n; i++) {
		struct sampler_stack us, ks;
		uint64_t count;

		if (bpf_map_lookup_elem(cfd, &s->keys[i], &count))
			continue;
		read_stack(sfd, s->keys[i].user_stack, s->keys[i].flags & EMBER_KEY_USTACK_LOST,
			   &ubuf, &us);
		read_stack(sfd, s->keys[i].kern_stack, s->keys[i].flags & EMBER_KEY_KSTACK_LOST,
			   &kbuf, &ks);
		if (!rc)
			rc = cb(&s->keys[i], count, &us, &ks, arg);
	}
	for (uint32_t i = 0; i < n; i++)
		bpf_map_delete_elem(cfd, &s->keys[i]);
	clear_stacks(s, sfd);
	return rc;
}

int sampler_drop(struct sampler *s, uint32_t tgid, bool drop)
{
	int fd = bpf_map__fd(s->skel->maps.drop_tgids);
	uint8_t one = 1;

	if (!drop)
		return bpf_map_delete_elem(fd, &tgid) && errno != ENOENT ? -errno : 0;
	return bpf_map_update_elem(fd, &tgid, &one, BPF_ANY) ? -errno : 0;
}

int sampler_metrics(struct sampler *s, uint64_t out[EMBER_CPU_M_NR])
{
	int fd = bpf_map__fd(s->skel->maps.metrics);

	for (uint32_t m = 0; m < EMBER_CPU_M_NR; m++) {
		out[m] = 0;
		if (bpf_map_lookup_elem(fd, &m, s->metric_vals))
			return -errno;
		for (unsigned int c = 0; c < s->ncpus_possible; c++)
			out[m] += s->metric_vals[c];
	}
	return 0;
}
