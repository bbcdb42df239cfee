/* SPDX-License-Identifier: MIT */
/*
 * The profile types emberd writes, each described once: its name, what its
 * sample values mean in pprof, and the maps its drain reads. A new type is its
 * BPF program, its ABI header and one entry in profile_types.c.
 */
#ifndef EMBER_PROFILE_TYPE_H
#define EMBER_PROFILE_TYPE_H

#include <stddef.h>
#include <stdint.h>

#include "pprof.h"
#include "sampler.h"

/* Reads every folded stack of a source's maps once (cb for each), then empties them. */
typedef int (*profile_drain_fn)(void *src, sampler_cb cb, void *arg);

/* One profile type, shared by the interval, the drain and on-demand captures. */
struct profile_type {
	const char *name;		/* the history's type and emberctl's --type */
	struct pprof_value_type count;	/* sample value 0: a stack's count */
	struct pprof_value_type weight; /* sample value 1: count x period */
	struct pprof_value_type period_type;
	int64_t (*period)(unsigned int hz); /* what one count weighs, in weight's unit */
	profile_drain_fn drain;		    /* its maps, given the object that owns them */
};

/* Every type emberd knows, indexed by enum profile_type_id (profile_types.c). */
enum profile_type_id {
	PROFILE_CPU,
	PROFILE_TYPES_NR,
};
extern const struct profile_type profile_types[PROFILE_TYPES_NR];

#endif
