/* SPDX-License-Identifier: MIT */
/*
 * The interval report: every counter and statistic of emberd, read once per
 * interval from its sources (BPF maps, symbolizer, unwinder, process table,
 * history, uploader, the kernel). The log line, the status file, sd_notify
 * and the memory bound all read it; none of them reads a source again.
 */
#ifndef EMBER_REPORT_H
#define EMBER_REPORT_H

#include <stdint.h>

#include "config.h"
#include "drain.h"
#include "ember/sample.h"
#include "ember/proc.h"
#include "owners.h"
#include "statusfile.h"
#include "symbolizer.h"
#include "unwinder.h"

struct history;
struct proctrack;
struct rollups;
struct unwinder;
struct uploader;

/* Where the figures come from: the daemon's parts, owned by main and read at every gather. */
struct report_sources {
	const struct ember_config *cfg; /* the running configuration (reloads in place) */
	void *const
		*owner; /* each source's owner by enum profile_source (owners.h); NULL: not open */
	struct proctrack *proc; /* the process events' BPF metrics */
	struct proctable *procs;
	struct symbolizer *sym;
	struct unwinder *unw; /* NULL: frame pointers only */
	struct history *hist;
	struct uploader *const *up;	   /* NULL inside without a collector */
	const uint64_t *processes_seen;	   /* first sights since the start */
	const uint64_t *processes_unread;  /* of them, gone before their mappings were read */
	const uint64_t *processes_at_exit; /* of those, named from the mappings their exit sent */
	const uint64_t *processes_late; /* read when their samples had waited (a report missed) */
};

/* Maps whose memlock follows their elements, read between scans: emberd makes two. */
#define REPORT_GROWING_MAX 16

/* A BPF map whose memlock follows its elements (counts_elements()), as the last scan found it. */
struct report_growing_map {
	int fd;		/* its fd, which holds while bpfload_generation() does */
	uint32_t id;	/* the kernel's id: another id at fd means the maps changed */
	int slot;	/* its row in ember_status.maps, or -1 (rows full) */
	uint64_t bytes; /* its memlock, as last read */
};

/* One interval's figures (cumulative ones since the start), filled by report_gather(). */
struct interval_report {
	struct ember_status st; /* what the status file holds, as it holds it */
	/* each owner's BPF metrics of this interval, by enum profile_source (zero: not open) */
	uint64_t m[PROFILE_SRC_NR][OWNER_METRICS_MAX];
	uint64_t proc[EMBER_PROC_M_NR];	  /* the process events' metrics of this interval */
	struct symbolizer_stats sym;	  /* the symbolizer's, at the end of the interval */
	struct drain_stats drained;	  /* every type's drains of the interval, summed */
	uint64_t perfmaps_refused;	  /* perf map files refused since the start */
	uint64_t perfmaps_refused_before; /* the same at the previous interval */
	/* totals at the previous gather, to turn totals into interval deltas */
	uint64_t last_m[PROFILE_SRC_NR][OWNER_METRICS_MAX];
	uint64_t last_proc[EMBER_PROC_M_NR], last_profiles;
	uint64_t last_rt_unsupported; /* the symbolizer's runtime_unsupported */
	struct unwinder_stats unw;    /* the unwinder's since the start (zero without one) */
	struct deferred_stats defer;  /* the deferred walks' since the start ... */
	bool has_defer;		      /* ... when the sampler sends any */
	uint64_t maps_gen;	      /* bpfload_generation() at the last scan of the BPF maps */
	uint32_t maps_gathers;	      /* gathers since that scan */
	/* the maps whose memlock follows their elements, read again at each gather */
	struct report_growing_map growing[REPORT_GROWING_MAX];
	size_t n_growing;
};

/* The report's fixed fields, and the BPF metrics' baselines: the first deltas count from here. */
void report_init(struct interval_report *r, const struct report_sources *src);
/*
 * Reads every source once: the interval's drains (drained, excluded samples,
 * apps), profiles stored since the start, BPF metrics, caches, history,
 * collector, CPU and memory.
 */
void report_gather(struct interval_report *r, const struct report_sources *src,
		   const struct drain_stats *drained, uint64_t excluded, size_t apps,
		   uint64_t profiles_stored);
/* What does not need a drain (at start and stop): configuration, processes, caches, costs. */
void report_gather_common(struct interval_report *r, const struct report_sources *src);
/* RSS and the caches' use again, after the memory bound shrank them. */
void report_measure_memory(struct interval_report *r, const struct report_sources *src);
/* The interval's line: a warning naming the losses when there were any, else debug. */
void report_log(const struct interval_report *r);

#endif
