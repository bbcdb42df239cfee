/* SPDX-License-Identifier: MIT */
/*
 * Deferred walks: samples of a process whose unwind tables were not loaded
 * when it was sampled (its first, those until the unwinder has read its
 * mappings, and those while tables of them are compiled) come from the cpu
 * program with their registers and a copy of their stack (struct
 * ember_deferred_sample). They wait here (a repeat of one waiting, taken with the
 * same registers and stack, adds to its count) until the unwinder has loaded
 * the process, are walked then with its tables (lib/symbols/uwalk.c), and join
 * the interval's samples at the next drain. Sampled page faults and mmaps of
 * such processes come the same way (bpf/growth.bpf.c, through the same ring),
 * and so do sampled off-CPU waits (bpf/offcpu.bpf.c): the
 * copy at the switch-out, then the wait's end (struct ember_offcpu_wait_end)
 * at the thread's return, with its waker's stacks; the two are folded
 * together once both are here.
 */
#ifndef EMBER_DEFERRED_H
#define EMBER_DEFERRED_H

#include <stdbool.h>
#include <stdint.h>

#include "ember/sample.h"
#include "fold.h"
#include "unwinder.h"

/*
 * Samples waiting at once, and the bytes of stack they hold (a record holds up
 * to 64 KiB of user stack, kept from sp on up to the stack's top: 8-64 KiB
 * seen, a main thread's arguments and environment above its frames, and 1 KiB
 * of kernel stack); beyond either, a sample is walked at once with what is
 * loaded. A process that faults in 512 MiB in its first 300 ms sends 800 growth
 * samples before its tables are built.
 */
#define DEFERRED_WAITING_MAX 4096
#define DEFERRED_WAITING_BYTES (8u << 20)
/*
 * The bytes one process's waiting samples may hold: beyond, its samples are
 * walked at once. A busy host's few processes whose tables take long (a
 * compiler's, a runtime's) filled the whole budget, and every young process
 * after them was walked with frame pointers (measured: 3,168 samples in 5 s,
 * a third of a build's short children's stacks cut at their leaf).
 */
#define DEFERRED_PROC_BYTES (1u << 20)
/* How long a sample waits for its process's tables before it is walked without them. */
#define DEFERRED_WAIT_NS (2ll * 1000 * 1000 * 1000)
/* Processes whose samples waited too long, remembered between two deferred_take_late(). */
#define DEFERRED_LATE_MAX 16

/* Whose samples: the cpu program's, the growth program's, or the offcpu program's waits. */
enum deferred_kind {
	DEFERRED_CPU,
	DEFERRED_GROWTH,
	DEFERRED_OFFCPU,
	DEFERRED_KINDS,
};

/* What the deferred walks did since the start (the log and status read it). */
struct deferred_stats {
	uint64_t received;  /* records read from the ring */
	uint64_t walked;    /* walked with the process's tables loaded */
	uint64_t unloaded;  /* walked without: gone first, waited too long, or too many waiting */
	uint64_t bad;	    /* records not as the programs write them: walked as far as sound,
			    * or left out when of no sampler */
	uint64_t lost;	    /* walked samples lost: out of memory, or WALKED_MAX before a drain */
	uint64_t repeats;   /* of the received, added to one alike waiting (not walked again) */
	uint64_t rewalked;  /* walks done again: the unwinder dropped a table during them */
	uint64_t rt_traced; /* of the received, with CPython's frames read at the sample */
	uint64_t walk_ns;   /* CPU time spent walking (walked and unloaded) */
	uint32_t waiting;   /* waiting now */
	/* of the records, off-CPU waits: */
	uint64_t waits;	     /* copies of waits read (their ends are not records here) */
	uint64_t waits_lost; /* ended without their copy, or never: ring full, too many open */
	uint32_t waits_open; /* walked, waiting for their end now */
};

struct deferred;
struct bpf_map;

/*
 * Reads ring_fd (the cpu object's deferred ring) and walks its samples with
 * u's tables, listening to its messages of the processes it loads or drops
 * (unwinder_listen()). NULL with errno set.
 */
struct deferred *deferred_open(int ring_fd, struct unwinder *u);
void deferred_close(struct deferred *d);
/* Readable when records wait in the ring. */
int deferred_epoll_fd(const struct deferred *d);
/*
 * Before its object is loaded, ring (another object's deferred map) becomes
 * d's ring, or, d NULL (none read), one page left unused. 0, or a negative
 * errno and a one-line cause in err.
 */
int deferred_share_ring(const struct deferred *d, struct bpf_map *ring, char *err, size_t errlen);
/*
 * Reads the ring: a record whose process is loaded is walked now, the others
 * wait; then the unwinder's messages (unwinder_events_fd() readable), which
 * walk those of the processes loaded or dropped since.
 */
int deferred_consume(struct deferred *d);
/*
 * Reads the ring, walks what waited DEFERRED_WAIT_NS or more, then hands every
 * walked sample of kind to cb (the drain's), as fold_drain() does the
 * kernel's: an off-CPU wait as offcpu_drain()'s keys (nanoseconds, then
 * EMBER_OFFCPU_KEY_EVENTS; its run-queue delay apart), once it has ended.
 */
int deferred_drain(struct deferred *d, enum deferred_kind kind, sampler_cb cb, void *arg);
/*
 * A deferred wait's waker, as offcpu_drain_wakers() gives the kernel's: the
 * wait's key (its reason in flags), the waker's process, the time waited and
 * the waits (weighed), and the stacks: the wait's user and kernel ones, then
 * the waker's.
 */
typedef int (*deferred_waker_cb)(const struct ember_sample_key *wait, uint32_t waker_tgid,
				 uint64_t ns, uint64_t events, const struct sampler_stack st[4],
				 void *arg);
/*
 * Hands cb the wakers of the waits deferred_drain() has given since its last
 * call (the waits whose end named one), once.
 */
int deferred_drain_wakers(struct deferred *d, deferred_waker_cb cb, void *arg);
/*
 * pid exited (its event is read): its waiting samples are walked now, with
 * what is loaded, unless loading (the unwinder loads it from the mappings the
 * kernel read at its exit: they wait for its message, as a live process's); its
 * waits still open will not end (left out, counted).
 */
void deferred_exited(struct deferred *d, uint32_t pid, bool loading);
/*
 * pid exec'd at ktime_ns (CLOCK_MONOTONIC, its event is read): its samples
 * taken before, waiting or read later, are walked with frame pointers (the
 * exec deleted its old program's entry); those after wait for the new one's.
 */
void deferred_exec(struct deferred *d, uint32_t pid, uint64_t ktime_ns);
/*
 * The processes (at most max, distinct) whose samples the drains walked since
 * the last call because they waited DEFERRED_WAIT_NS for tables; forgotten.
 */
size_t deferred_take_late(struct deferred *d, uint32_t *pids, size_t max);
/* Reads the ring and walks every waiting sample now, with what is loaded (at the end). */
void deferred_flush(struct deferred *d);
/* Adds kind's deferred walks' frames and ends since the start to m (the cpu metrics). */
void deferred_metrics(struct deferred *d, enum deferred_kind kind, uint64_t m[EMBER_SAMPLE_M_NR]);
void deferred_stats(struct deferred *d, struct deferred_stats *out);

#endif
