// SPDX-License-Identifier: MIT
/*
 * Loads bpf/growth.bpf.c: a page-faults perf event per online CPU sampling 1
 * fault in N, and the raw tracepoint vm_unmapped_area that samples anonymous
 * mmaps by bytes. The only file that includes its skeleton.
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
#include "growth.h"
#include "percpu.h"

#include "growth.skel.h"

/*
 * Map sizes, preallocated. Growth folds far fewer distinct stacks than CPU
 * samples (allocation sites are few): 4096 stack parts (a stack of up to 31
 * frames is one), 1.3 MiB per buffer.
 */
#define GROWTH_COUNTS 4096
#define GROWTH_STACKS 4096

struct growth {
	struct growth_bpf *skel;
	struct fold_perf perf;	   /* one page-faults event per online CPU */
	struct bpf_link *map_link; /* the mmap raw tracepoint */
	unsigned int fault_period; /* 1 page fault sampled in this many (growth_start()) */
	int64_t fault_bytes;	   /* fault_period pages */
	struct deferred *defer;	   /* samples of processes not loaded walked there, or NULL */
	struct fold_buffers buf;
};

/* A sample of a process not loaded yet goes to the cpu sampler's deferred walks, if any. */
static int share_deferred(struct growth *g, const struct growth_opts *o, char *err, size_t errlen)
{
#if defined(__x86_64__)
	g->skel->rodata->defer_walks = o->defer != NULL;
	g->defer = o->defer;
	return deferred_share_ring(o->defer, g->skel->maps.deferred, err, errlen);
#else
	(void)g, (void)o, (void)err, (void)errlen;
	return 0;
#endif
}

static int load(struct growth *g, const struct growth_opts *o, char *err, size_t errlen)
{
	int rc;

	g->skel = growth_bpf__open();
	if (!g->skel) {
		rc = -errno;
		snprintf(err, errlen, "cannot open the growth BPF object: %s", strerror(errno));
		return rc;
	}
	/* set here, between open and load: mmaps sampled at the faults' resolution */
	g->skel->rodata->map_sample_bytes = g->fault_bytes;
	g->skel->rodata->min_age_ns = (uint64_t)o->min_age_ns;
	fold_size_buffers(g->skel->obj, GROWTH_COUNTS, GROWTH_STACKS);
	rc = fold_share_maps(g->skel->obj, &o->shared, err, errlen);
	if (!rc)
		rc = share_deferred(g, o, err, errlen);
	if (rc)
		return rc;
	bpfload_prepare(g->skel->obj, "growth");
	rc = growth_bpf__load(g->skel);
	if (rc)
		return bpfload_error(rc, "growth", err, errlen);
	bpfload_report(g->skel->obj, "growth");
	/* drop_tgids is the cpu sampler's, which knows when it is first used: look it up */
	g->skel->bss->drops_used = o->shared.drop_fd >= 0;
	return 0;
}

int growth_start(struct growth *g, char *err, size_t errlen)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_PAGE_FAULTS,
		.sample_period = g->fault_period,
		.exclude_kernel = 0, /* faults taken in kernel mode (copy_to_user) are growth too */
	};
	int rc = fold_perf_open(&g->perf, g->skel->progs.ember_growth_fault, &attr, "page-faults",
				err, errlen);

	if (rc)
		return rc;
	g->map_link = bpf_program__attach(g->skel->progs.ember_growth_map);
	if (!g->map_link) {
		rc = -errno;
		snprintf(err, errlen, "cannot attach the mmap tracepoint: %s", strerror(errno));
	}
	return rc;
}

int growth_open(const struct growth_opts *o, struct growth **out, char *err, size_t errlen)
{
	struct growth *g = calloc(1, sizeof(*g));
	int rc;

	if (!g)
		return -ENOMEM;
	g->fault_period = o->fault_period;
	g->fault_bytes = (int64_t)o->fault_period * sysconf(_SC_PAGESIZE);
	rc = load(g, o, err, errlen);
	if (!rc)
		rc = fold_buffers_init(&g->buf, g->skel->obj, &g->skel->bss->active_buf,
				       GROWTH_COUNTS);
	if (rc) {
		growth_close(g);
		return rc;
	}
	*out = g;
	return 0;
}

void growth_close(struct growth *g)
{
	if (!g)
		return;
	bpf_link__destroy(g->map_link);
	fold_perf_close(&g->perf);
	fold_buffers_free(&g->buf);
	growth_bpf__destroy(g->skel);
	bpfload_closed();
	free(g);
}

int growth_drain(struct growth *g, sampler_cb cb, void *arg)
{
	int rc = fold_drain(&g->buf, cb, arg);

	/* the samples the daemon walked join the kernel's */
	if (!rc && g->defer)
		rc = deferred_drain(g->defer, DEFERRED_GROWTH, cb, arg);
	return rc;
}

void growth_flip(struct growth *g)
{
	fold_gen_flip(&g->buf.gen);
}

int64_t growth_fault_bytes(const struct growth *g)
{
	return g->fault_bytes;
}

int growth_metrics(struct growth *g, uint64_t out[EMBER_GROWTH_M_NR])
{
	int rc = percpu_array_sum(bpf_map__fd(g->skel->maps.metrics), EMBER_GROWTH_M_NR, out);

	if (!rc && g->defer)
		deferred_metrics(g->defer, DEFERRED_GROWTH,
				 out); /* its walks count as the program's */
	return rc;
}

int64_t growth_run_ns(const struct growth *g)
{
	return bpfload_run_ns(g->skel->obj);
}
