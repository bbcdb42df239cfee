/* SPDX-License-Identifier: MIT */
/*
 * The user-space half of bpf/fold.bpf.h, shared by every stack-sampling
 * object (the cpu sampler, memory growth): the maps it shares with the other
 * objects, its per-CPU perf events, and the drain of its double buffer.
 */
#ifndef EMBER_FOLD_H
#define EMBER_FOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember/sample.h"
#include "stackparts.h"
#include "unwinder.h"

struct bpf_object;
struct bpf_program;
struct bpf_link;
struct perf_event_attr;

typedef int (*sampler_cb)(const struct ember_sample_key *key, uint64_t count,
			  const struct sampler_stack *user, const struct sampler_stack *kern,
			  void *arg);

/* Maps a folding object takes from the objects that own them; -1 for its own. */
struct fold_shared {
	int events_fd, known_fd;    /* proctrack's process-event ring buffer and known map */
	int drop_fd;		    /* the cpu sampler's drop_tgids */
	struct unwinder_fds unwind; /* the unwinder's maps, or -1s: frame pointers only */
};

/*
 * Between open and load: makes obj's maps of those names the shared ones (a
 * missing unwinder leaves tiny maps: frame pointers only). 0 or -errno, with
 * the cause in err.
 */
int fold_share_maps(struct bpf_object *obj, const struct fold_shared *sh, char *err, size_t errlen);

/*
 * Between open and load: sizes obj's counts0/1 (entries) and stacks0/1 (stack
 * parts: one holds a stack of up to 31 frames; include/ember/sample.h). 0 or -ENOENT.
 */
int fold_size_buffers(struct bpf_object *obj, uint32_t counts, uint32_t stacks);

/* One perf event per online CPU, each running prog. */
struct fold_perf {
	struct bpf_link **links; /* one per online CPU */
	int *pfds;		 /* perf event fds, same order */
	unsigned int n;
};

/*
 * Opens attr (its cpu set per event) on every online CPU and attaches prog to
 * each. 0 or -errno with the cause in err; fold_perf_close() undoes a partial one.
 */
int fold_perf_open(struct fold_perf *p, struct bpf_program *prog, struct perf_event_attr *attr,
		   const char *what, char *err, size_t errlen);
void fold_perf_close(struct fold_perf *p);

/*
 * Which of an object's two buffers its programs write to: its bss active_buf,
 * a generation whose low bit is the buffer (the programs' memo of stacks
 * stored is of one generation), and the flip that hands the other to a drain.
 * Every double-buffering object (the folding ones, allocs) flips through it.
 */
struct fold_gen {
	uint32_t *active_buf; /* the object's bss variable the programs read */
	uint32_t n;	      /* the generation written there; the buffer is n & 1 */
	bool flipped;	      /* fold_gen_flip() left the other buffer to the next drain */
	int64_t flipped_ns;   /* CLOCK_MONOTONIC of that flip */
};

/* The double buffer of one object: counts0/1, stacks0/1 and its active_buf. */
struct fold_buffers {
	int counts_fd[EMBER_SAMPLE_NBUF], stacks_fd[EMBER_SAMPLE_NBUF];
	struct fold_gen gen;	       /* the buffer the programs write to */
	uint32_t counts_max;	       /* entries of a counts map */
	struct ember_sample_key *keys; /* drain scratch: counts_max keys */
	uint64_t *counts;	       /* drain scratch: their counts */
	struct stack_parts stk;	       /* drain scratch: the old buffer's stack parts */
	bool keep_stacks;	       /* fold_drain leaves stk for another reader, who frees it */
	struct ember_stack join[2];    /* a key's user and kernel stacks joined from parts */
};

/*
 * Programs that read the buffer index just before a flip finish within
 * microseconds (perf-event programs run with preemption off; a raw tracepoint
 * or uprobe program may be preempted, and a count it adds late is drained with
 * the next interval); a drain waits this long after the flip, three orders of
 * magnitude longer.
 */
#define FOLD_FLIP_GRACE_NS (10 * 1000 * 1000)

/*
 * Turns the programs to the other buffer now; the next drain takes the one
 * left without flipping again. Flipping every type first lets one grace
 * period serve them all: an idle daemon's every sleep is a wakeup.
 */
void fold_gen_flip(struct fold_gen *g);

/*
 * The buffer a drain may read now: flips unless fold_gen_flip() did since the
 * last drain, then waits out what is left of FOLD_FLIP_GRACE_NS after the flip.
 */
uint32_t fold_gen_drainable(struct fold_gen *g);

/* After load: takes obj's counts0/1, stacks0/1 and active_buf. 0 or -errno. */
int fold_buffers_init(struct fold_buffers *b, struct bpf_object *obj, uint32_t *active_buf,
		      uint32_t counts_max);
void fold_buffers_free(struct fold_buffers *b);

/*
 * Switches the programs to the other buffer, waits for programs still writing
 * to the old one, then calls cb for every folded stack of the old buffer and
 * empties it (counts and stacks), so that nothing is lost or counted twice.
 */
int fold_drain(struct fold_buffers *b, sampler_cb cb, void *arg);

/*
 * Reads every entry of a hash map in batches (deleting them when del) into
 * room slots, returning the number read, or -errno. The map is not written
 * meanwhile. room must be at least max_entries: a call's room then always
 * covers what is left, so the kernel never refuses it for a bucket larger than
 * the room.
 */
long fold_read_all(int fd, bool del, void *keys, void *vals, size_t key_size, size_t val_size,
		   size_t room);

#endif
