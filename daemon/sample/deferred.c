// SPDX-License-Identifier: MIT
/*
 * Deferred walks (deferred.h), all on the event loop. Records come from the
 * ring; a record whose process is loaded is walked at once, the others wait
 * in arrival order until the unwinder's message says their process is loaded
 * (or dropped: exit, exec, not loadable; a dropped one's entry and tables come
 * with it, lent until its samples are walked: outbox.h); until the daemon
 * reads its exit or finds it gone
 * (deferred_exited(): walked then, while its application is still known, but
 * for one the unwinder loads from the mappings its exit sent); or
 * until DEFERRED_WAIT_NS has passed. Walked samples wait for the next drain.
 * An off-CPU wait's copy is walked the same way; its end, a later record,
 * finds it waiting (and goes with it) or walked and open, which makes it a
 * walked sample; one ended without its copy is counted lost (the pairing:
 * waitpair.c). Nothing here is shared with another thread: the unwinder's
 * thread only posts its messages (unwinder_read_events()).
 */
#include <errno.h>
#include <search.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "clock.h"
#include "deferred.h"
#include "deferrec.h"
#include "hashtab.h"
#include "ember/offcpu.h"
#include "ember/proc.h"
#include "log.h"
#include "recentprocs.h"
#include "runtime.h"
#include "uwalk.h"
#include "waitpair.h"

/* Walked samples kept for the drain at once; beyond, they are counted lost. */
#define WALKED_MAX 8192
/*
 * Whose sample a record is, from its source and wait id (an off-CPU wait's
 * has one, a sample's none); DEFERRED_KINDS for a record not as the programs
 * write it.
 */
static enum deferred_kind kind_of(uint32_t source, uint64_t wait_id)
{
	switch (source) {
	case EMBER_PROC_SRC_CPU:
		return wait_id ? DEFERRED_KINDS : DEFERRED_CPU;
	case EMBER_PROC_SRC_GROWTH:
		return wait_id ? DEFERRED_KINDS : DEFERRED_GROWTH;
	case EMBER_PROC_SRC_OFFCPU:
		return wait_id ? DEFERRED_OFFCPU : DEFERRED_KINDS;
	default:
		return DEFERRED_KINDS;
	}
}

/*
 * A record waiting for its process's tables: the ring's, less the stack below
 * sp. The frames and stack bytes are apart (data), so that the scans of the
 * list by process or wait touch small nodes, not 17 KiB records.
 */
struct waiting {
	struct waiting *next;
	uint64_t hash;	  /* of what a walk reads (same_sample()), for merging repeats */
	uint32_t records; /* samples it stands for: 1, and its repeats */
	int64_t at_ns;	  /* CLOCK_MONOTONIC when read */
	uint32_t tgid, flags;
	enum deferred_kind kind;
	uint64_t wait_id;  /* 0: a cpu or growth sample; else an off-CPU wait */
	uint64_t ktime_ns; /* CLOCK_MONOTONIC when taken (the kernel's) */
	struct wait_end end;
	uint64_t n;
	struct uwalk_regs regs; /* the user registers at the sample */
	char comm[EMBER_COMM_LEN];
	uint32_t kstack_len;
	uint64_t stack_base; /* user address of stack[0]: sp, less the red zone the record holds */
	size_t stack_len;    /* bytes of stack from stack_base on */
	/*
	 * kstack_len frames, then CPython's chain as read at the sample (rt, its
	 * n words only; none when not read), then stack_len bytes of stack: one
	 * allocation
	 */
	uint64_t *kips;
	const struct ember_rt_trace *rt;
	size_t rt_bytes;
	const uint8_t *stack;
};

/* The bytes of stacks, user, kernel and runtime, a waiting record holds. */
static size_t held_bytes(const struct waiting *w)
{
	return w->stack_len + w->kstack_len * sizeof(uint64_t) + w->rt_bytes;
}

/* The bytes one process's waiting samples hold (DEFERRED_PROC_BYTES at most). */
struct proc_held {
	uint32_t tgid;
	size_t bytes;
};

static int cmp_held(const void *a, const void *b)
{
	const struct proc_held *x = a, *y = b;

	return x->tgid < y->tgid ? -1 : x->tgid > y->tgid;
}

/*
 * Samples (not waits) taken with the same registers, stack bytes and kernel
 * stack walk to the same frames: a repeat of one waiting adds its count to it
 * instead of waiting too. A process that faults in a loop before its tables
 * are built sends hundreds of such growth samples, which would otherwise fill
 * DEFERRED_WAITING_BYTES. Found through a direct-mapped index of this many.
 * (No repeat spans an exec, which builds a new stack.)
 */
#define REPEAT_SLOTS 1024

/* The hash of what a walk of w reads, and whose sample it is. */
static uint64_t sample_hash(const struct waiting *w)
{
	const uint8_t *p = (const uint8_t *)w->kips; /* the kernel stack, runtime's, user stack */
	size_t len = held_bytes(w), i;
	uint64_t h = hash_mix(hash_mix(w->tgid, (uint64_t)w->kind << 32 | w->flags), w->regs.ip), v;

	h = hash_mix(hash_mix(hash_mix(hash_mix(h, w->regs.sp), w->regs.bp), w->regs.bx),
		     w->stack_base);
	for (i = 0; i + sizeof(v) <= len; i += sizeof(v)) {
		memcpy(&v, p + i, sizeof(v));
		h = hash_mix(h, v);
	}
	v = 0;
	memcpy(&v, p + i, len - i);
	return hash_mix(h, v);
}

/* Whether a and b, samples both, walk alike into one stack and key (their counts apart). */
static bool same_sample(const struct waiting *a, const struct waiting *b)
{
	return a->hash == b->hash && !a->wait_id && !b->wait_id && a->tgid == b->tgid &&
	       a->kind == b->kind && a->flags == b->flags &&
	       !memcmp(&a->regs, &b->regs, sizeof(a->regs)) && a->stack_base == b->stack_base &&
	       a->stack_len == b->stack_len && a->kstack_len == b->kstack_len &&
	       !memcmp(a->comm, b->comm, sizeof(a->comm)) &&
	       !memcmp(a->kips, b->kips, held_bytes(a));
}

static void free_waiting(struct waiting *w)
{
	wait_end_free(&w->end);
	free(w->kips);
	free(w);
}

/*
 * A walked sample: its key (stack hashes unused) and frames, user then
 * kernel. An off-CPU wait's n is its weight; it is open until it has ended.
 */
struct walked {
	struct wait_sample wait; /* its wait (wait_id 0: none) and end, as paired */
	enum deferred_kind kind;
	struct ember_sample_key key;
	uint64_t n;
	uint32_t ulen, klen;
	uint32_t uflags; /* EMBER_STACK_* of the user stack */
	uint64_t ips[];	 /* ulen user frames, then klen kernel frames */
};

static void free_walked(struct walked *s)
{
	wait_end_free(&s->wait.end);
	free(s);
}

/* The walked sample that holds w. */
static struct walked *walked_of(struct wait_sample *w)
{
	return (struct walked *)((char *)w - offsetof(struct walked, wait));
}

/* Frees the walked sample that holds w: the pairing's free_sample. */
static void free_wait(struct wait_sample *w)
{
	free_walked(walked_of(w));
}

/* Walked samples in order, at most WALKED_MAX; zero-initialized is empty. */
struct walked_vec {
	struct walked **v;
	size_t n, cap;
};

/* Appends s: false, s not taken, past WALKED_MAX or out of memory. */
static bool vec_push(struct walked_vec *a, struct walked *s)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 16;
		struct walked **v = cap > WALKED_MAX ? NULL : realloc(a->v, cap * sizeof(*v));

		if (!v)
			return false;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = s;
	return true;
}

struct deferred {
	struct ring_buffer *rb;
	int ring_fd;
	struct unwinder *unw;
	struct unwinder_fds fds;
	struct waiting *head, **tail; /* arrival order */
	uint32_t nwaiting;
	size_t waiting_bytes; /* of stacks the waiting records hold (held_bytes()) */
	void *held;	      /* tsearch tree of struct proc_held: those bytes by process */
	struct waiting *repeats[REPEAT_SLOTS]; /* waiting samples by hash, direct-mapped */
	void *loaded;			       /* tsearch set of pids the unwinder has loaded */
	struct walked_vec walked;	       /* for the drains */
	struct walked_vec woken; /* drained waits whose waker is known, for their wakers' drain */
	struct waitpair waits;	 /* off-CPU waits open for their end, ends early for their wait */
	uint64_t metrics[DEFERRED_KINDS]
			[EMBER_SAMPLE_M_NR]; /* the walks' frames and ends, COUNTED */
	struct deferred_stats st;	     /* but waiting, read from nwaiting */
	struct recent_procs recent;	     /* the exits and execs read lately */
	uint32_t late[DEFERRED_LATE_MAX];    /* processes whose samples waited too long, */
	size_t nlate;			     /* distinct, until deferred_take_late() */
};

/* The bytes tgid's waiting samples hold. */
static size_t held_by(const struct deferred *d, uint32_t tgid)
{
	struct proc_held key = {.tgid = tgid}, **p = tfind(&key, &d->held, cmp_held);

	return p ? (*p)->bytes : 0;
}

/* w's bytes join the waiting list's counts; false, none added, without memory. */
static bool hold(struct deferred *d, const struct waiting *w)
{
	struct proc_held key = {.tgid = w->tgid}, *n, **p = tfind(&key, &d->held, cmp_held);

	if (!p) {
		n = malloc(sizeof(*n));
		if (!n)
			return false;
		*n = key;
		p = tsearch(n, &d->held, cmp_held);
		if (!p || *p != n) {
			free(n);
			return false;
		}
	}
	(*p)->bytes += held_bytes(w);
	d->nwaiting++;
	d->waiting_bytes += held_bytes(w);
	return true;
}

/* w's bytes leave the waiting list's counts. */
static void release_held(struct deferred *d, const struct waiting *w)
{
	struct proc_held key = {.tgid = w->tgid}, *n, **p = tfind(&key, &d->held, cmp_held);
	size_t b = held_bytes(w);

	d->nwaiting--;
	d->waiting_bytes -= b;
	if (!p)
		return;
	n = *p;
	n->bytes -= b < n->bytes ? b : n->bytes;
	if (!n->bytes) {
		tdelete(&key, &d->held, cmp_held);
		free(n);
	}
}

/* uwalk's row source: the unwinder's tables, as the host holds them (unwinder_find_rule()). */
static bool find_rule(void *arg, uint32_t table, uint64_t pc, struct ember_unwind_row *out)
{
	struct deferred *d = arg;

	return unwinder_find_rule(d->unw, table, pc, out);
}

/* --- walking ------------------------------------------------------------------------------ */

static int cmp_pid(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

	return x < y ? -1 : x > y;
}

static void *pid_key(uint32_t pid)
{
	return (void *)(uintptr_t)pid;
}

/* Keeps a walked sample for the drain (beyond WALKED_MAX: lost, counted). */
static void keep_walked(struct deferred *d, struct walked *s)
{
	if (!vec_push(&d->walked, s)) {
		d->st.lost++;
		free_walked(s);
	}
}

/*
 * A drained wait whose waker is known, kept for deferred_drain_wakers()
 * (beyond WALKED_MAX of them, or out of memory: its waker is left out).
 */
static void keep_woken(struct deferred *d, struct walked *s)
{
	if (!vec_push(&d->woken, s))
		free_walked(s);
}

/* Takes a's samples, leaving it empty. */
static struct walked_vec vec_take(struct walked_vec *a)
{
	struct walked_vec out = *a;

	*a = (struct walked_vec){0};
	return out;
}

/* Which entry of its process a walk uses. */
enum walk_entry {
	ENTRY_ANY,    /* the procs map's now; none: frame pointers over the copy */
	ENTRY_NEEDED, /* the procs map's now; none: not walked */
	ENTRY_NONE,   /* frame pointers: the sample is of a program exec'd over since */
};

/* w could not be walked (no memory): counted lost. */
static void count_lost(struct deferred *d, const struct waiting *w)
{
	d->st.lost++;
	if (w->wait_id)
		d->st.waits_lost++;
}

/*
 * The procs map's entry of the process a list's walks are of, looked up once
 * for its consecutive records of one process, not once a record.
 */
struct entry_memo {
	uint32_t pid;
	bool valid, loaded; /* valid: looked up for pid */
	bool lent;	    /* a copy whose tables the unwinder keeps for the walks (DROPPING) */
	uint64_t drops;	    /* unwinder_tables_dropped() before the lookup */
	struct ember_unwind_proc proc;
};

/* proc: pid's entry (memo's, looked up if not yet), or NULL when it has none. */
static const struct ember_unwind_proc *entry_of(struct deferred *d, struct entry_memo *memo,
						uint32_t pid)
{
	if (!memo->valid || memo->pid != pid) {
		memo->pid = pid;
		memo->valid = true;
		memo->lent = false;
		memo->drops = unwinder_tables_dropped(d->unw); /* before: a drop after is seen */
		memo->loaded = !bpf_map_lookup_elem(d->fds.procs, &pid, &memo->proc);
	}
	return memo->loaded ? &memo->proc : NULL;
}

/* A walk's runtime frames and misses into the metrics m, as fold.bpf.h's rt_metrics(). */
static void count_runtime(uint64_t *m, uint32_t kind, const struct uwalk_result *res,
			  uint32_t records)
{
	if (kind == EMBER_RT_NONE)
		return;
	m[kind == EMBER_RT_PYTHON ? EMBER_SAMPLE_M_RT_PY_FRAMES : EMBER_SAMPLE_M_RT_V8_FRAMES] +=
		(uint64_t)res->rt_frames * records;
	m[EMBER_SAMPLE_M_RT_UNSUPPORTED] += (uint64_t)res->rt_unsupported * records;
	if (res->rt_miss == UWALK_RT_NO_THREAD)
		m[EMBER_SAMPLE_M_RT_NO_THREAD] += records;
	else if (res->rt_miss == UWALK_RT_BAD_FRAME)
		m[EMBER_SAMPLE_M_RT_BAD_FRAME] += records;
}

/* Walks of a sample at most, when the unwinder drops tables during each (walk_rows()). */
#define WALK_TRIES 3

/*
 * Walks w into res with proc, w's entry in memo (NULL: by frame pointers) and returns the
 * entry it walked with. The entry's tables are the unwinder's to drop once no entry names
 * them: a walk during which one was dropped may have read its rows gone, or another
 * table's under its id. Walked again with the entry looked up anew, WALK_TRIES times at
 * most, then by frame pointers (NULL). Entries lent with their tables need no check.
 */
static const struct ember_unwind_proc *walk_rows(struct deferred *d, struct waiting *w,
						 const struct ember_unwind_proc *proc,
						 struct entry_memo *memo, struct uwalk_result *res)
{
	struct uwalk_rows src = {find_rule, d};
	struct uwalk_stack stk = {w->stack, w->stack_base, w->stack_len};
	/*
	 * V8's frames are on the copy; the objects they point at live on in its
	 * heap. CPython's chain moved on: read at the sample (w->rt), if it was.
	 */
	struct uwalk_mem live = {.read = rt_read_pid, .arg = (void *)(intptr_t)w->tgid};

	for (int tries = 1;; tries++) {
		uwalk_traced(proc, &src, &stk, proc && proc->rt.kind == EMBER_RT_V8 ? &live : NULL,
			     w->rt, &w->regs, res);
		if (!proc || memo->lent || unwinder_tables_dropped(d->unw) == memo->drops)
			return proc;
		d->st.rewalked++;
		memo->valid = false;
		proc = tries < WALK_TRIES ? entry_of(d, memo, w->tgid) : NULL;
	}
}

/*
 * Walks w with its process's entry as how says (memo: the entry as last
 * looked up), and keeps the sample for the drain. False, with
 * nothing done, when ENTRY_NEEDED finds none.
 */
static bool walk_with(struct deferred *d, struct waiting *w, enum walk_entry how,
		      struct entry_memo *memo)
{
	const struct ember_unwind_proc *proc =
		how != ENTRY_NONE ? entry_of(d, memo, w->tgid) : NULL;
	struct uwalk_result *res;
	struct walked *s = NULL;
	uint64_t *m;
	bool loaded;

	if (!proc && how == ENTRY_NEEDED)
		return false;
	res = malloc(sizeof(*res));
	if (!res)
		goto fail;
	proc = walk_rows(d, w, proc, memo, res);
	loaded = proc != NULL;
	s = malloc(sizeof(*s) + (res->n + w->kstack_len) * sizeof(uint64_t));
	if (!s)
		goto fail;
	memset(&s->key, 0, sizeof(s->key));
	s->wait.next = NULL;
	s->wait.wait_id = w->wait_id;
	s->wait.tgid = w->tgid;
	s->wait.end = w->end; /* its waker's stacks go with it */
	w->end.waker_ips = NULL;
	s->kind = w->kind;
	s->key.tgid = w->tgid;
	s->key.flags = w->flags;
	memcpy(s->key.comm, w->comm, sizeof(s->key.comm));
	s->n = w->n;
	s->ulen = res->n;
	s->klen = w->kstack_len;
	/* callers missing: [truncated]; frame pointers where its tables were not in */
	s->uflags = res->truncated || res->copy_short ? EMBER_STACK_TRUNCATED : 0;
	if (res->fp_guessed) /* as the kernel's walk says it: uw_fp_guessed() */
		s->uflags |= EMBER_STACK_NO_TABLES;
	memcpy(s->ips, res->ips, res->n * sizeof(uint64_t));
	memcpy(s->ips + res->n, w->kips, w->kstack_len * sizeof(uint64_t));
	if (loaded)
		d->st.walked++;
	else
		d->st.unloaded++;
	m = d->metrics[w->kind]; /* per sample, as the programs count: repeats too */
	m[res->end] += w->records;
	m[EMBER_SAMPLE_M_FRAMES_TABLE] += (uint64_t)res->by_table * w->records;
	m[EMBER_SAMPLE_M_FRAMES_FP] += (uint64_t)res->by_fp * w->records;
	m[EMBER_SAMPLE_M_FRAMES_BAD_RULE] += (uint64_t)res->bad_rule * w->records;
	count_runtime(m, loaded ? proc->rt.kind : EMBER_RT_NONE, res, w->records);
	m[EMBER_SAMPLE_M_COUNTED] += w->records;
	if (waitpair_walked(&d->waits, &s->wait)) /* else open for its end, or dropped by it */
		keep_walked(d, s);
	free(res);
	return true;
fail:
	count_lost(d, w);
	free(res);
	return true;
}

/* Adds the loop's CPU time since t0 to the walks' (two clock reads per call, not per walk). */
static void walk_time(struct deferred *d, int64_t t0)
{
	int64_t ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;

	d->st.walk_ns += ns;
}

/* walk_with() for one record: its entry looked up for it alone. */
static bool walk(struct deferred *d, struct waiting *w, enum walk_entry how)
{
	struct entry_memo *memo = malloc(sizeof(*memo));
	int64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	bool done;

	if (!memo) {
		count_lost(d, w);
		return true;
	}
	memo->valid = false;
	done = walk_with(d, w, how, memo);
	free(memo);
	walk_time(d, t0);
	return done;
}

/*
 * Walks (as how says) and frees a list of records, most often all of one
 * process: its entry is looked up once for each run of its records (memo:
 * the last one, NULL: no memory, each counted lost).
 */
static void walk_list_with(struct deferred *d, struct waiting *w, enum walk_entry how,
			   struct entry_memo *memo)
{
	int64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	while (w) {
		struct waiting *next = w->next;

		if (memo) {
			walk_with(d, w, how, memo);
		} else {
			count_lost(d, w);
		}
		free_waiting(w);
		w = next;
	}
	walk_time(d, t0);
}

/* walk_list_with(), the entries looked up as the walks go. */
static void walk_list(struct deferred *d, struct waiting *w, enum walk_entry how)
{
	struct entry_memo *memo;

	if (!w)
		return;
	memo = malloc(sizeof(*memo));
	if (memo)
		memo->valid = false;
	walk_list_with(d, w, how, memo);
	free(memo);
}

/* w leaves the waiting list, and the index of repeats. */
static void forget_repeat(struct deferred *d, const struct waiting *w)
{
	struct waiting **slot = &d->repeats[w->hash % REPEAT_SLOTS];

	if (*slot == w)
		*slot = NULL;
}

/*
 * Takes out the waiting records of pid taken before taken_ns,
 * and those read before before.
 */
static struct waiting *take_waiting(struct deferred *d, uint32_t pid, uint64_t taken_ns,
				    int64_t before)
{
	struct waiting *out = NULL, **otail = &out, **pp = &d->head;

	while (*pp) {
		struct waiting *w = *pp;

		if ((w->tgid == pid && w->ktime_ns < taken_ns) || w->at_ns < before) {
			forget_repeat(d, w);
			*pp = w->next;
			w->next = NULL;
			*otail = w;
			otail = &w->next;
			release_held(d, w);
		} else {
			pp = &w->next;
		}
	}
	d->tail = pp;
	return out;
}

/*
 * The unwinder's message, read on the loop in order: pid loaded, its samples
 * are walked with its entry, unless it went since (a later message drops it,
 * and takes them); its tables being built, they wait; dropped, they are walked
 * with the entry it had, whose tables the unwinder keeps until this returns;
 * forgotten at an exec, those left (the new program's) wait for its tables.
 */
static void on_unwinder(void *arg, const struct outbox_msg *m)
{
	struct deferred *d = arg;
	struct entry_memo *memo;
	uint32_t pid = (uint32_t)m->pid;

	if (m->ev == UNWINDER_LOADED) {
		if (!tsearch(pid_key(pid), &d->loaded, cmp_pid))
			log_debug("deferred: out of memory: pid %u's samples wait", pid);
	} else {
		tdelete(pid_key(pid), &d->loaded, cmp_pid);
	}
	if (m->ev != UNWINDER_LOADED && m->ev != UNWINDER_DROPPING)
		return;
	memo = malloc(sizeof(*memo)); /* none: they wait for its exit, or DEFERRED_WAIT_NS */
	if (!memo)
		return;
	memo->valid = false;
	if (m->entry) { /* the entry it had: the map's is gone */
		memo->pid = pid;
		memo->valid = memo->loaded = memo->lent = true;
		memo->proc = *m->entry;
	}
	if (entry_of(d, memo, pid) || m->ev == UNWINDER_DROPPING)
		walk_list_with(d, take_waiting(d, pid, UINT64_MAX, INT64_MIN), ENTRY_ANY, memo);
	free(memo);
}

/* --- the ring ---------------------------------------------------------------------------- */

/*
 * A record of size bytes turned into a waiting one: NULL when it is shorter
 * than its header, or on ENOMEM. One not as the program writes it is counted
 * and walked as far as it is sound (deferrec_view); a stack whose first page
 * could not be read (stack_len 0) is no fault of the record.
 */
static struct waiting *from_record(struct deferred *d, const struct ember_deferred_sample *r,
				   size_t size)
{
	struct deferrec_view v;
	struct waiting *w;

	if (!deferrec_view(r, size, &v))
		return NULL;
	w = malloc(sizeof(*w));
	if (!w)
		return NULL;
	w->end = (struct wait_end){0};
	w->kstack_len = v.kstack_len;
	w->rt_bytes = v.rt_bytes;
	w->kips = malloc(w->kstack_len * sizeof(uint64_t) + w->rt_bytes + v.stack_len + 1);
	if (!w->kips) {
		free_waiting(w);
		return NULL;
	}
	w->rt = w->rt_bytes ? (const struct ember_rt_trace *)(w->kips + w->kstack_len) : NULL;
	w->stack = (const uint8_t *)(w->kips + w->kstack_len) + w->rt_bytes;
	w->next = NULL;
	w->at_ns = mono_ns();
	w->tgid = r->tgid;
	w->flags = r->flags;
	w->kind = kind_of(r->source, r->wait_id);
	w->wait_id = r->wait_id;
	w->n = r->n;
	w->regs = (struct uwalk_regs){.ip = r->ip, .sp = r->sp, .bp = r->bp, .bx = r->bx};
	w->stack_base = v.stack_base;
	memcpy(w->comm, r->comm, sizeof(w->comm));
	w->ktime_ns = r->ktime_ns;
	if (v.bad_kstack)
		w->flags |= EMBER_KEY_KSTACK_LOST;
	memcpy(w->kips, v.kips, w->kstack_len * sizeof(uint64_t));
	w->stack_len = v.stack_len;
	if (w->rt_bytes)
		memcpy(w->kips + w->kstack_len, v.rt, w->rt_bytes);
	memcpy((uint8_t *)(w->kips + w->kstack_len) + w->rt_bytes, v.stack, v.stack_len);
	w->hash = w->wait_id ? 0 : sample_hash(w); /* waits are never merged: no pass over them */
	w->records = 1;
	if (v.bad_stack || v.bad_kstack)
		d->st.bad++;
	return w;
}

/*
 * The end of an off-CPU wait (which it takes: its waker's
 * stacks) onto its copy still waiting, or, a drop (both times 0), freeing
 * both. False when the copy is not waiting, the end left to the caller.
 */
static bool end_waiting(struct deferred *d, const struct ember_offcpu_wait_end *e,
			struct wait_end *end)
{
	for (struct waiting **pp = &d->head; *pp; pp = &(*pp)->next) {
		struct waiting *w = *pp;

		if (w->wait_id != e->wait_id || w->tgid != e->tgid)
			continue;
		if (wait_end_drops(end)) {
			forget_repeat(d, w);
			*pp = w->next;
			if (!*pp)
				d->tail = pp;
			release_held(d, w);
			free_waiting(w);
			wait_end_free(end);
		} else {
			w->end = *end;
		}
		return true;
	}
	return false;
}

/*
 * A record that ends an off-CPU wait (struct ember_offcpu_wait_end): onto its
 * copy waiting, or its wait walked and open, which makes it a walked sample;
 * or kept early for a wait not walked yet (waitpair.h).
 */
static void on_wait_end(struct deferred *d, const struct ember_offcpu_wait_end *e)
{
	struct wait_end end;
	bool bad = !wait_end_read(e, &end);
	struct wait_sample *s;

	if (bad)
		d->st.bad++; /* the wait is kept, without its waker */
	if (!e->wait_id) {   /* not as the program writes it: 0 is a sample's, not a wait's */
		d->st.bad++;
		wait_end_free(&end);
	} else if (!end_waiting(d, e, &end)) {
		s = waitpair_end(&d->waits, e->wait_id, e->tgid, &end);
		if (s)
			keep_walked(d, walked_of(s));
	}
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct deferred *d = ctx;
	const struct ember_deferred_sample *r = data;
	struct waiting *w, **slot;
	bool loaded, now, old_program;

	if (size == sizeof(struct ember_offcpu_wait_end)) {
		on_wait_end(d, data);
		return 0;
	}
	/* too short, or of no sampler (no profile to go to) */
	if (size < sizeof(*r) || kind_of(r->source, r->wait_id) == DEFERRED_KINDS) {
		d->st.bad++;
		return 0;
	}
	w = from_record(d, data, size);
	if (!w) {
		d->st.lost++;
		return 0;
	}
	d->st.received++;
	if (w->rt)
		d->st.rt_traced++;
	if (w->wait_id)
		d->st.waits++;
	loaded = tfind(pid_key(w->tgid), &d->loaded, cmp_pid);
	old_program = recent_execd_after(&d->recent, w->tgid, w->ktime_ns);
	/* taken before an exec read already: no entry is of its program any more */
	if (old_program) {
		walk(d, w, ENTRY_NONE);
		free_waiting(w);
		return 0;
	}
	/*
	 * Loaded, yet its entry gone: an exec the unwinder has not handled yet,
	 * whose new program it will load; that sample waits like the others.
	 */
	if (loaded && walk(d, w, ENTRY_NEEDED)) {
		free_waiting(w);
		return 0;
	}
	/* queued: the unwinder's message of its process takes it, or it is walked now */
	slot = &d->repeats[w->hash % REPEAT_SLOTS];
	if (*slot && same_sample(*slot, w)) { /* waits already: counted there */
		(*slot)->n += w->n;
		(*slot)->records++;
		d->st.repeats++;
		free_waiting(w);
		return 0;
	}
	/* past its share of the bytes a process's samples are walked at once: no slow one fills the budget */
	now = d->nwaiting >= DEFERRED_WAITING_MAX ||
	      d->waiting_bytes + held_bytes(w) > DEFERRED_WAITING_BYTES ||
	      held_by(d, w->tgid) + held_bytes(w) > DEFERRED_PROC_BYTES ||
	      recent_exited(&d->recent, w->tgid) || !hold(d, w);
	if (now) {
		walk(d, w, ENTRY_ANY);
		free_waiting(w);
		return 0;
	}
	*d->tail = w;
	d->tail = &w->next;
	if (!w->wait_id)
		*slot = w;
	return 0;
}

int deferred_consume(struct deferred *d)
{
	int rc = ring_buffer__consume(d->rb);

	/* then the unwinder's news: a process dropped takes the samples just read with it */
	unwinder_read_events(d->unw, on_unwinder, d);
	return rc < 0 ? rc : 0;
}

void deferred_exec(struct deferred *d, uint32_t pid, uint64_t ktime_ns)
{
	struct waiting *w;

	recent_exec(&d->recent, pid, ktime_ns);
	w = take_waiting(d, pid, ktime_ns, INT64_MIN);
	walk_list(d, w, ENTRY_NONE);
}

void deferred_exited(struct deferred *d, uint32_t pid, bool loading)
{
	struct waiting *w = NULL;

	if (!loading) {
		recent_exit(&d->recent, pid);
		w = take_waiting(d, pid, UINT64_MAX, INT64_MIN);
	}
	walk_list(d, w, ENTRY_ANY);
	waitpair_exited(&d->waits, pid);
}

void deferred_flush(struct deferred *d)
{
	struct waiting *all;

	deferred_consume(d);
	all = take_waiting(d, 0, 0, INT64_MAX);
	walk_list(d, all, ENTRY_ANY);
}

/*
 * An ended off-CPU wait as the offcpu program folds one (fold_interval()):
 * its time and one event (both weighed), until its wakeup under its reason,
 * then as run-queue delay.
 */
static int wait_samples(struct walked *s, const struct sampler_stack *us,
			const struct sampler_stack *ks, sampler_cb cb, void *arg)
{
	const struct {
		uint32_t reason;
		uint64_t ns;
	} seg[2] = {{EMBER_OFFCPU_REASON(s->key.flags), s->wait.end.wait_ns},
		    {EMBER_OFFCPU_RUNQ, s->wait.end.runq_ns}};
	uint32_t lost = s->key.flags & (EMBER_KEY_USTACK_LOST | EMBER_KEY_KSTACK_LOST);
	int rc = 0;

	for (int i = 0; i < 2 && !rc; i++) {
		if (!seg[i].ns && i)
			continue;
		s->key.flags = lost | seg[i].reason << EMBER_OFFCPU_KEY_REASON_SHIFT;
		rc = cb(&s->key, seg[i].ns * s->n, us, ks, arg);
		s->key.flags |= EMBER_OFFCPU_KEY_EVENTS;
		if (!rc)
			rc = cb(&s->key, s->n, us, ks, arg);
	}
	return rc;
}

/* The processes of list, samples that waited too long, noted once each. */
static void note_late(struct deferred *d, const struct waiting *list)
{
	for (const struct waiting *w = list; w && d->nlate < DEFERRED_LATE_MAX; w = w->next) {
		size_t i = 0;

		while (i < d->nlate && d->late[i] != w->tgid)
			i++;
		if (i == d->nlate)
			d->late[d->nlate++] = w->tgid;
	}
}

size_t deferred_take_late(struct deferred *d, uint32_t *pids, size_t max)
{
	size_t n;

	n = d->nlate < max ? d->nlate : max;
	memcpy(pids, d->late, n * sizeof(*pids));
	d->nlate = 0;
	return n;
}

/* A walked sample's user and kernel stacks, as the drains' callbacks take them. */
static void walked_stacks(const struct walked *s, struct sampler_stack *us,
			  struct sampler_stack *ks)
{
	*us = (struct sampler_stack){.ips = s->ips, .n = s->ulen};
	sampler_stack_flags(us, s->uflags);
	*ks = (struct sampler_stack){.ips = s->ips + s->ulen,
				     .n = s->klen,
				     .lost = s->key.flags & EMBER_KEY_KSTACK_LOST};
}

int deferred_drain(struct deferred *d, enum deferred_kind kind, sampler_cb cb, void *arg)
{
	struct walked_vec all;
	struct waiting *late;
	size_t kept = 0;
	int rc = deferred_consume(d);

	late = take_waiting(d, 0, 0, mono_ns() - DEFERRED_WAIT_NS);
	note_late(d, late);
	walk_list(d, late, ENTRY_ANY);
	all = vec_take(&d->walked);
	for (size_t i = 0; i < all.n; i++) {
		struct walked *s = all.v[i];
		struct sampler_stack us, ks;

		walked_stacks(s, &us, &ks);
		if (s->kind != kind) {
			all.v[kept++] = s; /* the other drain's */
			continue;
		}
		if (!rc && s->wait.wait_id) {
			uint32_t flags = s->key.flags;

			rc = wait_samples(s, &us, &ks, cb, arg);
			s->key.flags = flags;
		} else if (!rc) {
			rc = cb(&s->key, s->n, &us, &ks, arg);
		}
		if (!rc && wait_end_has_waker(&s->wait.end))
			keep_woken(d, s); /* for deferred_drain_wakers() */
		else
			free_walked(s);
	}
	for (size_t i = 0; i < kept; i++)
		keep_walked(d, all.v[i]);
	free(all.v);
	return rc;
}

int deferred_drain_wakers(struct deferred *d, deferred_waker_cb cb, void *arg)
{
	struct walked_vec all = vec_take(&d->woken);
	int rc = 0;

	for (size_t i = 0; i < all.n; i++) {
		struct walked *s = all.v[i];
		const struct wait_end *e = &s->wait.end;
		struct sampler_stack st[4] = {
			[2] = {.ips = e->waker_ips, .n = e->waker_ulen},
			[3] = {.ips = e->waker_ips + e->waker_ulen, .n = e->waker_klen},
		};

		sampler_stack_flags(&st[2], e->waker_uflags);
		walked_stacks(s, &st[0], &st[1]);
		if (!rc)
			rc = cb(&s->key, e->waker_tgid, e->wait_ns * s->n, s->n, st, arg);
		free_walked(s);
	}
	free(all.v);
	return rc;
}

/* --- set-up and figures ------------------------------------------------------------------ */

struct deferred *deferred_open(int ring_fd, struct unwinder *u)
{
	struct deferred *d = calloc(1, sizeof(*d));
	int rc;

	if (!d)
		return NULL;
	d->tail = &d->head;
	d->waits.free_sample = free_wait;
	d->unw = u;
	d->ring_fd = ring_fd;
	unwinder_fds(u, &d->fds);
	d->rb = ring_buffer__new(ring_fd, on_record, d, NULL);
	if (!d->rb) {
		rc = errno;
		free(d);
		errno = rc;
		return NULL;
	}
	unwinder_listen(u, true);
	return d;
}

static void no_free(void *p)
{
	(void)p;
}

/* The unwinder must no longer be listened to (unwinder_listen(u, false)) or be closed. */
void deferred_close(struct deferred *d)
{
	if (!d)
		return;
	ring_buffer__free(d->rb);
	for (struct waiting *w = d->head, *next; w; w = next) {
		next = w->next;
		free_waiting(w);
	}
	for (size_t i = 0; i < d->walked.n; i++)
		free_walked(d->walked.v[i]);
	free(d->walked.v);
	for (size_t i = 0; i < d->woken.n; i++)
		free_walked(d->woken.v[i]);
	free(d->woken.v);
	waitpair_clear(&d->waits);
	tdestroy(d->loaded, no_free);
	tdestroy(d->held, free);
	free(d);
}

int deferred_epoll_fd(const struct deferred *d)
{
	return ring_buffer__epoll_fd(d->rb);
}

int deferred_share_ring(const struct deferred *d, struct bpf_map *ring, char *err, size_t errlen)
{
	int rc;

	if (!d) /* unused: one page */
		return bpf_map__set_max_entries(ring, 4096);
	if (!bpf_map__reuse_fd(ring, d->ring_fd))
		return 0;
	rc = -errno;
	snprintf(err, errlen, "cannot share the deferred samples' ring buffer: %s",
		 strerror(errno));
	return rc;
}

void deferred_metrics(struct deferred *d, enum deferred_kind kind, uint64_t m[EMBER_SAMPLE_M_NR])
{
	for (int i = 0; i < EMBER_SAMPLE_M_NR; i++)
		m[i] += d->metrics[kind][i];
}

void deferred_stats(struct deferred *d, struct deferred_stats *out)
{
	*out = d->st;
	out->waiting = d->nwaiting;
	out->waits_lost += d->waits.lost;
	out->waits_open = d->waits.nopen;
}
