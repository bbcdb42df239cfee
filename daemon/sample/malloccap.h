/* SPDX-License-Identifier: MIT */
/*
 * The emergency allocation capture: owns bpf/malloc.bpf.c's skeleton, attaches
 * its uprobes to one process's glibc malloc, calloc and realloc, and drains the
 * folded stacks as the "malloc" profile type.
 */
#ifndef EMBER_MALLOCCAP_H
#define EMBER_MALLOCCAP_H

#include <stddef.h>
#include <stdint.h>

#include "ember/malloc.h"
#include "profile_type.h"
#include "unwinder.h"

/* What to probe, and the maps shared with the daemon. */
struct malloccap_opts {
	uint32_t pid;		    /* the process (a tgid) */
	int events_fd, known_fd;    /* proctrack's shared maps, or -1 for private ones */
	struct unwinder_fds unwind; /* the unwinder's maps, or -1s: frame pointers only */
};

struct malloccap;

/*
 * Loads the programs and attaches them to the libc.so.6 that pid maps. 0, or a
 * negative errno with a one-line cause in err: -ENOENT when pid maps no glibc
 * (statically linked, or musl), -ESRCH when it is gone, what libbpf failed with.
 */
int malloccap_open(const struct malloccap_opts *o, struct malloccap **out, char *err,
		   size_t errlen);
/* Detaches the probes: the process runs at full speed again; the counts stay. */
void malloccap_detach(struct malloccap *m);
/* Detaches and frees everything; accepts NULL. */
void malloccap_close(struct malloccap *m);
/* Metrics summed over CPUs since load, indexed by enum ember_malloc_metric. */
int malloccap_metrics(struct malloccap *m, uint64_t out[EMBER_MALLOC_M_NR]);
/*
 * profile_drain_fn of the "malloc" type (src: a detached struct malloccap):
 * each folded stack with its calls and bytes, once; the maps are emptied.
 */
int malloccap_drain(void *src, int64_t period, profile_sample_cb cb, void *arg);

#endif
