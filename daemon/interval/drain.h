/* SPDX-License-Identifier: MIT */
/*
 * Turns one drained interval of folded stacks of one profile type into one
 * pprof profile per application.
 */
#ifndef EMBER_DRAIN_H
#define EMBER_DRAIN_H

#include <stdint.h>

#include "config.h"
#include "pprof.h"
#include "profile_type.h"
#include "proctable.h"
#include "sampler.h"
#include "symbolizer.h"

/*
 * Root frames saying why a stack is not whole: one walked without its
 * process's unwind tables (EMBER_STACK_NO_TABLES), and a sample of a task in
 * execve (EMBER_KEY_EXECVE), whose user registers belong to no program.
 */
#define DRAIN_NO_TABLES_FRAME "[incomplete: no unwind tables]"
#define DRAIN_EXECVE_FRAME "[execve]"
/* and one taken while its process tore down its memory at exit (EMBER_STACK_EXITED) */
#define DRAIN_EXITED_FRAME "[incomplete: memory released at exit]"

/* What a drain found, per profile and in total (the interval report reads it). */
struct drain_stats {
	uint64_t samples;      /* samples drained */
	uint64_t stacks;       /* distinct folded stacks (map entries) */
	uint32_t processes;    /* distinct processes */
	uint64_t lost_stacks;  /* samples whose user or kernel stack was lost */
	int64_t runq_ns;       /* off-CPU: run-queue delay ... */
	uint64_t runq_waits;   /* ... and the waits it is made of */
	int64_t startup_bytes; /* resident growth in processes' first growth_min_age */
};

/* A frame already turned into a location of one builder. */
struct drain_frame {
	uint64_t addr; /* adjusted address; 0 marks a free slot */
	uint32_t pid;  /* 0 for kernel frames: the same in every process */
	uint32_t kernel;
	uint64_t location; /* id in the profile's builder */
};

/* One application's profile of the interval, of the result's type. */
struct drain_profile {
	char service[CONFIG_NAME_MAX]; /* service_name */
	int app;		       /* index of its [app], or -1 when inferred */
	struct pprof_builder *b;
	struct drain_stats st;
	uint32_t *pids; /* every tgid seen, to count processes */
	size_t npids, cap;
	struct drain_frame *frames; /* open-addressing cache: frames repeat across stacks */
	size_t nframes, frames_cap;
};

/* A drain's profiles, handed to whoever stores or sends them. */
struct drain_result {
	const struct profile_type *type; /* what every profile in v holds */
	struct drain_profile *v;	 /* one per application sampled */
	size_t n, cap;
	struct drain_stats total; /* over all profiles */
	uint64_t excluded;	  /* samples of excluded processes, dropped */
};

/*
 * How the drain learns a process's application (NULL: out of memory), for a
 * sample whose user stack's leaf is user_leaf (0: none): a sample from before
 * an exec is its old image's.
 */
typedef const struct proc_class *(*drain_classify_fn)(uint32_t pid, const char *comm,
						      uint64_t user_leaf, void *arg);

/* One drain: which type, from whose maps, over which window, classified how. */
struct drain_request {
	const struct profile_type *type;
	void *src;		  /* the object owning the type's maps: type->drain's src */
	struct symbolizer *sym;	  /* names the frames */
	unsigned int hz;	  /* the source's rate, for type->period */
	int64_t start_ns, end_ns; /* the profiles' window, CLOCK_REALTIME */
	drain_classify_fn classify;
	void *arg;	     /* classify's */
	const char *comment; /* the profiles' comment (Profile.comment), or NULL */
};

/*
 * Drains q's source into one builder per application, each a profile of
 * q->type over [start_ns, end_ns) (its two sample types; labels pid and comm).
 * The caller ends the symbolizer's interval once every type is drained.
 */
int drain_profiles(const struct drain_request *q, struct drain_result *out);
/*
 * The same, adding to the profiles already in out (zeroed before the first
 * call): an on-demand capture drains several times into one profile.
 */
int drain_more(const struct drain_request *q, struct drain_result *out);
void drain_result_free(struct drain_result *r);

#endif
