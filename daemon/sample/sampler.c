// SPDX-License-Identifier: MIT
/*
 * Loads bpf/cpu.bpf.c, opens one cpu-clock perf event per online CPU, and
 * drains the double-buffered counts and stacks (daemon/sample/fold.c). The only file
 * that includes the cpu skeleton.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpfload.h"
#include "deferred.h"
#include "fold.h"
#include "log.h"
#include "mapsize.h"
#include "percpu.h"
#include "sampler.h"

#include "cpu.skel.h"

struct sampler {
	struct cpu_bpf *skel;
	struct fold_perf perf; /* one cpu-clock event per online CPU */
	unsigned int ncpus_possible;
	struct map_sizes size; /* daemon/sample/mapsize.h: from hz, interval and CPUs */
	struct fold_buffers buf;
	struct deferred *defer;	    /* samples of processes not loaded yet; NULL: none sent */
	struct unwinder *unw;	    /* which defer listens to */
	struct bpf_link *exit_link; /* ember_cpu_exit, or NULL */
	unsigned int hz;	    /* of the perf events sampler_start() opens */
};

/*
 * Address space from which a process's user stack is read at its exit, for
 * its samples in the teardown after (bpf/cpu.bpf.c's ember_cpu_exit): a
 * process that maps less tears down in well under a sampling period.
 */
#define EXIT_STACK_BYTES (32ll << 20)

bool sampler_fits(const struct sampler *s, unsigned int hz, int64_t interval_ns)
{
	struct map_sizes want;

	map_sizes_for(s->ncpus_possible, hz, interval_ns, &want);
	return want.counts <= s->size.counts && want.stack_parts <= s->size.stack_parts;
}

static int load(struct sampler *s, const struct sampler_opts *o, bool exit_walk, char *err,
		size_t errlen)
{
	/* the daemon's sampler, or an on-demand capture's */
	const char *what = o->target_tgid || o->allow_list ? "capture" : "cpu";
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
#if defined(__x86_64__)
	/* the main sampler's: a process's stack at its exit, for the teardown's samples */
	s->skel->rodata->exit_stack_pages =
		o->unw && exit_walk ? EXIT_STACK_BYTES / sysconf(_SC_PAGESIZE) : 0;
	bpf_program__set_autoload(s->skel->progs.ember_cpu_exit, o->unw && exit_walk);
	/* a process's samples before its tables are loaded: walked here, or by frame pointers */
	s->skel->rodata->defer_walks = o->unw != NULL;
	if (!o->unw) /* unused: one page */
		bpf_map__set_max_entries(s->skel->maps.deferred, 4096);
#endif
	map_sizes_for(s->ncpus_possible, o->hz, o->interval_ns, &s->size);
	fold_size_buffers(s->skel->obj, s->size.counts, s->size.stack_parts);
	/* process events go to proctrack's ring buffer, stacks walk the unwinder's tables */
	rc = fold_share_maps(s->skel->obj,
			     &(struct fold_shared){.events_fd = o->events_fd,
						   .known_fd = o->known_fd,
						   .drop_fd = -1,
						   .unwind = o->unwind},
			     err, errlen);
	if (rc)
		return rc;
	bpfload_prepare(s->skel->obj, what);
	rc = cpu_bpf__load(s->skel);
	if (rc)
		return bpfload_error(rc, what, err, errlen);
	bpfload_report(s->skel->obj, what);
	return 0;
}

int sampler_open(const struct sampler_opts *o, struct sampler **out, char *err, size_t errlen)
{
	struct sampler *s = calloc(1, sizeof(*s));
	int rc, ncpus;

	if (!s)
		return -ENOMEM;
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0) {
		snprintf(err, errlen, "cannot count the possible CPUs");
		free(s);
		return ncpus ? ncpus : -ENODEV;
	}
	s->ncpus_possible = ncpus;
	s->unw = o->unw;
	rc = load(s, o, true, err, errlen);
	if (rc && o->unw && !strcmp(bpfload_refused(), "ember_cpu_exit")) {
		/* the rest samples without it: a kernel that refuses one program keeps the others */
		log_warnx("%s: samples of a process tearing down its memory keep their leaf alone",
			  err);
		cpu_bpf__destroy(s->skel);
		s->skel = NULL;
		rc = load(s, o, false, err, errlen);
	}
	if (!rc)
		rc = fold_buffers_init(&s->buf, s->skel->obj, &s->skel->bss->active_buf,
				       s->size.counts);
#if defined(__x86_64__)
	if (!rc && o->unw &&
	    !(s->defer = deferred_open(bpf_map__fd(s->skel->maps.deferred), o->unw))) {
		rc = -errno;
		snprintf(err, errlen, "cannot read the deferred samples' ring buffer: %s",
			 strerror(errno));
	}
	if (!rc && o->unw && bpf_program__fd(s->skel->progs.ember_cpu_exit) >= 0 &&
	    !(s->exit_link = bpf_program__attach(s->skel->progs.ember_cpu_exit)))
		log_warnx("cannot attach to process exits (%s): samples of a process tearing down "
			  "its memory keep their leaf alone",
			  strerror(errno));
#endif
	if (rc) {
		sampler_close(s);
		return rc;
	}
	s->hz = o->hz;
	*out = s;
	return 0;
}

int sampler_start(struct sampler *s, char *err, size_t errlen)
{
	return fold_perf_open(&s->perf, s->skel->progs.ember_cpu_sample,
			      &(struct perf_event_attr){.type = PERF_TYPE_SOFTWARE,
							.size = sizeof(struct perf_event_attr),
							.config = PERF_COUNT_SW_CPU_CLOCK,
							.sample_freq = s->hz,
							.freq = 1},
			      "cpu-clock", err, errlen);
}

void sampler_close(struct sampler *s)
{
	if (!s)
		return;
	fold_perf_close(&s->perf);
	bpf_link__destroy(s->exit_link);
	if (s->defer) {
		unwinder_listen(s->unw, false);
		deferred_close(s->defer);
	}
	fold_buffers_free(&s->buf);
	cpu_bpf__destroy(s->skel);
	bpfload_closed();
	free(s);
}

unsigned int sampler_ncpus(const struct sampler *s)
{
	return s->perf.n;
}

void sampler_sizes(const struct sampler *s, uint32_t *counts, uint32_t *stack_parts)
{
	*counts = s->size.counts;
	*stack_parts = s->size.stack_parts;
}

int sampler_drain(struct sampler *s, sampler_cb cb, void *arg)
{
	int rc = fold_drain(&s->buf, cb, arg);

	/* the samples the daemon walked join the kernel's, in the interval they were walked in */
	if (!rc && s->defer)
		rc = deferred_drain(s->defer, DEFERRED_CPU, cb, arg);
	return rc;
}

int sampler_epoll_fd(const struct sampler *s)
{
	return s->defer ? deferred_epoll_fd(s->defer) : -1;
}

int sampler_consume(struct sampler *s)
{
	return s->defer ? deferred_consume(s->defer) : 0;
}

void sampler_exited(struct sampler *s, uint32_t tgid, bool loading)
{
	if (s->defer)
		deferred_exited(s->defer, tgid, loading);
}

void sampler_exec(struct sampler *s, uint32_t tgid, uint64_t ktime_ns)
{
	if (s->defer)
		deferred_exec(s->defer, tgid, ktime_ns);
}

void sampler_flush(struct sampler *s)
{
	if (s->defer)
		deferred_flush(s->defer);
}

struct deferred *sampler_deferred(struct sampler *s)
{
	return s->defer;
}

bool sampler_deferred_stats(struct sampler *s, struct deferred_stats *out)
{
	if (!s->defer)
		return false;
	deferred_stats(s->defer, out);
	return true;
}

void sampler_flip(struct sampler *s)
{
	fold_gen_flip(&s->buf.gen);
}

int sampler_drop_fd(const struct sampler *s)
{
	return bpf_map__fd(s->skel->maps.drop_tgids);
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

int sampler_metrics(struct sampler *s, uint64_t out[EMBER_SAMPLE_M_NR])
{
	int rc = percpu_array_sum(bpf_map__fd(s->skel->maps.metrics), EMBER_SAMPLE_M_NR, out);

	if (!rc && s->defer)
		deferred_metrics(s->defer, DEFERRED_CPU,
				 out); /* the daemon's walks count as the program's */
	return rc;
}

int64_t sampler_run_ns(const struct sampler *s)
{
	return bpfload_run_ns(s->skel->obj);
}
