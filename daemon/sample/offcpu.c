// SPDX-License-Identifier: MIT
/*
 * Loads bpf/offcpu.bpf.c: the sched_switch and sched_waking tracepoints that
 * fold sampled off-CPU intervals by stack and reason. The only file that
 * includes its skeleton.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpfload.h"
#include "clock.h"
#include "config.h"
#include "fold.h"
#include "log.h"
#include "offcpu.h"
#include "percpu.h"

#include "offcpu.skel.h"

/*
 * Map sizes, preallocated. Two counts a stack and reason (time, intervals);
 * 8192 stack parts a buffer (2.1 MiB; a stack of up to 31 frames is one part,
 * an off-CPU stack, user and kernel, usually two). The parked stacks are
 * sized by offcpu_parked_stacks (whole stacks, 2.3 KiB each), the held ones
 * as many, allocated as used.
 */
#define OFFCPU_COUNTS 8192
#define OFFCPU_STACKS 8192
/* Most processes with a thread away whose mappings a drain keeps (others: read again if alive). */
#define OFFCPU_HELD_PIDS 4096
/* Distinct (wait, waker) pairs a buffer holds: 80 bytes each. */
#define OFFCPU_WAKERS 4096

struct offcpu {
	struct offcpu_bpf *skel;
	struct bpf_link *switch_link, *waking_link;
	struct bpf_link *hold_link; /* the drain's task iterator: stacks of threads away held */
	int held_fd[2];
	uint64_t *hkeys; /* hold scratch: the keys of the held map emptied */
	uint32_t *hpids; /* processes of the threads away at the last hold (repeats harmless) */
	size_t n_hpids;
	unsigned int parked; /* entries of parked, and most of each held map */
	int64_t hold_ns;     /* the last hold's duration */
	struct fold_buffers buf;
	struct deferred *defer;		  /* waits of processes not loaded walked there, or NULL */
	uint64_t last[EMBER_OFFCPU_M_NR]; /* metrics at the previous drain */
	int wakers_fd[EMBER_SAMPLE_NBUF];
	struct ember_offcpu_waker_key *wkeys; /* drain scratch: OFFCPU_WAKERS each */
	struct ember_offcpu_waker_val *wvals;
	struct ember_offcpu_parked *wstk; /* drain scratch: the 4 stacks of one waker entry */
	unsigned int duty_lo, duty_hi;	  /* the duty cycle's shifts since the last drain */
	uint64_t rng;			  /* draws the duty window's offsets (splitmix64) */
	char comment[160];		  /* the duty cycle, for the profiles (offcpu_comment()) */
};

/* A kernel function's addresses, found in /proc/kallsyms. */
struct ksym_range {
	const char *name;
	uint64_t lo, hi;
};

/*
 * The addresses of r's functions from /proc/kallsyms, where the kernel stacks
 * are cut (the frames above are the tracing path's); 0s when unreadable: no
 * cut. The core kernel's symbols are listed in address order: the next one
 * ends a function.
 */
static void ksym_ranges(struct ksym_range *r, size_t n)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[512], name[256], type;
	unsigned long long a;
	size_t open = 0, done = 0;

	if (!f)
		return;
	while (done < n && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3)
			continue;
		for (size_t i = 0; i < n; i++) {
			if (r[i].lo && !r[i].hi && a > r[i].lo) {
				r[i].hi = a;
				open--;
				done++;
			}
			if (!r[i].lo && !strcmp(name, r[i].name)) {
				r[i].lo = a;
				open++;
			}
		}
	}
	fclose(f);
	for (size_t i = 0; i < n; i++)
		if (!r[i].hi)
			r[i].lo = 0; /* not found, or addresses hidden (kptr_restrict) */
	(void)open;
}

static int load(struct offcpu *oc, const struct offcpu_opts *o, char *err, size_t errlen)
{
	struct ksym_range cut[] = {{"__schedule", 0, 0}, {"try_to_wake_up", 0, 0}};
	int rc;

	oc->skel = offcpu_bpf__open();
	if (!oc->skel) {
		rc = -errno;
		snprintf(err, errlen, "cannot open the offcpu BPF object: %s", strerror(errno));
		return rc;
	}
	/* set here, between open and load */
	oc->skel->rodata->sample_period = o->sample_period ? o->sample_period : 1;
	oc->skel->rodata->min_block_ns = o->min_block_ns;
	oc->skel->rodata->forced_ms = OFFCPU_FORCED_MS;
	oc->skel->rodata->cpu_walks_per_sec = OFFCPU_CPU_WALKS;
	oc->skel->rodata->cpu_sampled_per_sec = OFFCPU_CPU_SAMPLED;
	ksym_ranges(cut, 2);
	oc->skel->rodata->sched_lo = cut[0].lo;
	oc->skel->rodata->sched_hi = cut[0].hi;
	oc->skel->rodata->wake_lo = cut[1].lo;
	oc->skel->rodata->wake_hi = cut[1].hi;
	fold_size_buffers(oc->skel->obj, OFFCPU_COUNTS, OFFCPU_STACKS);
	bpf_map__set_max_entries(oc->skel->maps.parked, oc->parked);
	bpf_map__set_max_entries(oc->skel->maps.held0, oc->parked);
	bpf_map__set_max_entries(oc->skel->maps.held1, oc->parked);
	bpf_map__set_max_entries(oc->skel->maps.wakers0, OFFCPU_WAKERS);
	bpf_map__set_max_entries(oc->skel->maps.wakers1, OFFCPU_WAKERS);
	rc = fold_share_maps(oc->skel->obj, &o->shared, err, errlen);
	if (rc)
		return rc;
#if defined(__x86_64__)
	/* a wait of a process not loaded yet goes to the cpu sampler's deferred walks */
	oc->skel->rodata->defer_walks = o->defer != NULL;
	rc = deferred_share_ring(o->defer, oc->skel->maps.deferred, err, errlen);
	if (rc)
		return rc;
	oc->defer = o->defer;
#endif
	bpfload_prepare(oc->skel->obj, "offcpu");
	rc = offcpu_bpf__load(oc->skel);
	if (rc)
		return bpfload_error(rc, "offcpu", err, errlen);
	bpfload_report(oc->skel->obj, "offcpu");
	/* drop_tgids is the cpu sampler's, which knows when it is first used: look it up */
	oc->skel->bss->drops_used = o->shared.drop_fd >= 0;
	return 0;
}

int offcpu_start(struct offcpu *oc, char *err, size_t errlen)
{
	int rc;

	oc->switch_link = bpf_program__attach(oc->skel->progs.ember_offcpu_switch);
	if (!oc->switch_link) {
		rc = -errno;
		snprintf(err, errlen, "cannot attach the sched_switch tracepoint: %s",
			 strerror(errno));
		return rc;
	}
	oc->waking_link = bpf_program__attach(oc->skel->progs.ember_offcpu_waking);
	if (!oc->waking_link) {
		rc = -errno;
		snprintf(err, errlen, "cannot attach the sched_waking tracepoint: %s",
			 strerror(errno));
		return rc;
	}
	oc->hold_link = bpf_program__attach_iter(oc->skel->progs.ember_offcpu_hold, NULL);
	if (!oc->hold_link) {
		rc = -errno;
		snprintf(err, errlen, "cannot attach the task iterator that holds stacks: %s",
			 strerror(errno));
		return rc;
	}
	return 0;
}

int offcpu_open(const struct offcpu_opts *o, struct offcpu **out, char *err, size_t errlen)
{
	struct offcpu *oc = calloc(1, sizeof(*oc));
	int rc;

	if (!oc)
		return -ENOMEM;
	oc->parked = o->parked ? o->parked : EMBER_OFFCPU_PARKED_DEFAULT;
	if (getrandom(&oc->rng, sizeof(oc->rng), GRND_NONBLOCK) != sizeof(oc->rng))
		oc->rng = (uint64_t)mono_ns() ^ ((uint64_t)getpid() << 32);
	rc = load(oc, o, err, errlen);
	if (!rc)
		rc = fold_buffers_init(&oc->buf, oc->skel->obj, &oc->skel->bss->active_buf,
				       OFFCPU_COUNTS);
	oc->buf.keep_stacks = true; /* offcpu_drain_wakers() reads them too */
	if (!rc) {
		oc->wakers_fd[0] = bpf_map__fd(oc->skel->maps.wakers0);
		oc->wakers_fd[1] = bpf_map__fd(oc->skel->maps.wakers1);
		oc->wkeys = calloc(OFFCPU_WAKERS, sizeof(*oc->wkeys));
		oc->wvals = calloc(OFFCPU_WAKERS, sizeof(*oc->wvals));
		oc->wstk = calloc(4, sizeof(*oc->wstk));
		oc->held_fd[0] = bpf_map__fd(oc->skel->maps.held0);
		oc->held_fd[1] = bpf_map__fd(oc->skel->maps.held1);
		oc->hkeys = calloc(oc->parked, sizeof(*oc->hkeys));
		oc->hpids = calloc(OFFCPU_HELD_PIDS, sizeof(*oc->hpids));
		if (!oc->wkeys || !oc->wvals || !oc->wstk || !oc->hkeys || !oc->hpids)
			rc = -ENOMEM;
	}
	if (rc) {
		offcpu_close(oc);
		return rc;
	}
	*out = oc;
	return 0;
}

void offcpu_close(struct offcpu *oc)
{
	if (!oc)
		return;
	bpf_link__destroy(oc->hold_link);
	bpf_link__destroy(oc->waking_link);
	bpf_link__destroy(oc->switch_link);
	fold_buffers_free(&oc->buf);
	free(oc->wkeys);
	free(oc->wvals);
	free(oc->wstk);
	free(oc->hkeys);
	free(oc->hpids);
	offcpu_bpf__destroy(oc->skel);
	bpfload_closed();
	free(oc);
}

/*
 * The interval's metrics in one line: debug, or a warning when intervals or
 * stacks were lost. Off-CPU time is the only reader of these metrics.
 */
static void log_metrics(struct offcpu *oc)
{
	uint64_t m[EMBER_OFFCPU_M_NR], d[EMBER_OFFCPU_M_NR];
	uint64_t lost;

	if (offcpu_metrics(oc, m))
		return;
	for (int i = 0; i < EMBER_OFFCPU_M_NR; i++)
		d[i] = m[i] - oc->last[i];
	memcpy(oc->last, m, sizeof(m));
	lost = d[EMBER_OFFCPU_M_PARKED_LOST] + d[EMBER_OFFCPU_M_NO_STORAGE] +
	       d[EMBER_OFFCPU_M_WAKERS_FULL] + d[EMBER_SAMPLE_M_COUNTS_FULL] +
	       d[EMBER_SAMPLE_M_STACKS_FULL];
	log_emit(lost ? LOG_LVL_WARN : LOG_LVL_DEBUG, false, __FILE__, __LINE__, __func__,
		 "offcpu: ~%" PRIu64 " switch-outs (the weights' sum), %" PRIu64
		 " walked with weight 1 and %" PRIu64 " sampled (%" PRIu64
		 " at a period a storm raised), %" PRIu64 " folded, %" PRIu64
		 " short; lost: %" PRIu64 " parked stacks evicted, %" PRIu64
		 " without storage, %" PRIu64 " counts map full, %" PRIu64
		 " stacks map full, %" PRIu64 " wakers map full; held %" PRIu64
		 " new stacks of threads away (%.1f ms), %" PRIu64 " held map full",
		 d[EMBER_OFFCPU_M_SWITCHES], d[EMBER_OFFCPU_M_FORCED], d[EMBER_OFFCPU_M_SAMPLED],
		 d[EMBER_OFFCPU_M_RAISED], d[EMBER_SAMPLE_M_COUNTED], d[EMBER_OFFCPU_M_SHORT],
		 d[EMBER_OFFCPU_M_PARKED_LOST], d[EMBER_OFFCPU_M_NO_STORAGE],
		 d[EMBER_SAMPLE_M_COUNTS_FULL], d[EMBER_SAMPLE_M_STACKS_FULL],
		 d[EMBER_OFFCPU_M_WAKERS_FULL], d[EMBER_OFFCPU_M_HELD], oc->hold_ns / 1e6,
		 d[EMBER_OFFCPU_M_HELD_FULL]);
}

static void note_duty(struct offcpu *oc);

void offcpu_flip(struct offcpu *oc)
{
	fold_gen_flip(&oc->buf.gen);
	note_duty(oc); /* the interval that ends, for the drains that follow */
}

/* Empties map fd, whose keys are stack hashes: at most oc->parked of them. */
static void empty_held(struct offcpu *oc, int fd)
{
	uint64_t *prev = NULL;
	__u32 n = 0;

	while (n < oc->parked && !bpf_map_get_next_key(fd, prev, &oc->hkeys[n])) {
		prev = &oc->hkeys[n];
		n++;
	}
	if (n && bpf_map_delete_batch(fd, oc->hkeys, &n, NULL))
		for (__u32 i = 0; i < n; i++) /* a kernel without batch deletes */
			bpf_map_delete_elem(fd, &oc->hkeys[i]);
}

/* The iterator's output, n bytes of process ids, into oc->hpids (*part: a split id). */
static void add_pids(struct offcpu *oc, const unsigned char *b, size_t n, uint32_t *part,
		     size_t *have)
{
	for (size_t i = 0; i < n; i++) {
		((unsigned char *)part)[(*have)++] = b[i];
		if (*have < sizeof(*part))
			continue;
		*have = 0;
		if (oc->n_hpids && oc->hpids[oc->n_hpids - 1] == *part)
			continue; /* the threads of a process are mostly in a row */
		if (oc->n_hpids < OFFCPU_HELD_PIDS)
			oc->hpids[oc->n_hpids++] = *part;
	}
}

/*
 * Holds the stacks of every thread still away (ember_offcpu_hold, a task
 * iterator): copied into one held map, from parked or the other held map,
 * which is then emptied. Run at each drain: a thread asleep across it keeps
 * its stacks however many new ones the parked LRU takes before it returns.
 */
static void hold_sleepers(struct offcpu *oc)
{
	unsigned int to = !(oc->skel->bss->hold_buf & 1);
	int64_t t0 = mono_ns();
	unsigned char buf[4096];
	uint32_t part = 0;
	size_t have = 0;
	ssize_t r;
	int fd;

	oc->skel->bss->hold_buf = to;
	fd = bpf_iter_create(bpf_link__fd(oc->hold_link));
	if (fd < 0) {
		log_warnx("off-CPU: cannot run the task iterator that holds stacks: %s",
			  strerror(errno));
		return;
	}
	oc->n_hpids = 0;
	while ((r = read(fd, buf, sizeof(buf))) > 0 || (r < 0 && errno == EINTR))
		if (r > 0)
			add_pids(oc, buf, (size_t)r, &part, &have);
	if (r < 0)
		log_warnx("off-CPU: the task iterator that holds stacks failed: %s",
			  strerror(errno));
	close(fd);
	empty_held(oc, oc->held_fd[!to]);
	oc->hold_ns = mono_ns() - t0;
}

void offcpu_held_pids(struct offcpu *oc, void (*keep)(void *arg, pid_t pid), void *arg)
{
	for (size_t i = 0; i < oc->n_hpids; i++)
		keep(arg, (pid_t)oc->hpids[i]);
}

/* A number from oc's generator (splitmix64): the duty window's offsets, apart from any workload. */
static uint64_t next_random(struct offcpu *oc)
{
	uint64_t z = (oc->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A new offset for the duty window: uniform in the cycle, so that no wait is sampled more. */
static void draw_duty_offset(struct offcpu *oc)
{
	oc->skel->bss->duty.offset = (uint32_t)(next_random(oc) % EMBER_OFFCPU_DUTY_CYCLE);
}

void offcpu_set_duty(struct offcpu *oc, unsigned int shift)
{
	if (shift > EMBER_OFFCPU_DUTY_SHIFT_MAX)
		shift = EMBER_OFFCPU_DUTY_SHIFT_MAX;
	draw_duty_offset(oc);
	oc->skel->bss->duty.shift = shift;
	if (shift < oc->duty_lo)
		oc->duty_lo = shift;
	if (shift > oc->duty_hi)
		oc->duty_hi = shift;
}

unsigned int offcpu_duty(const struct offcpu *oc)
{
	return oc->skel->bss->duty.shift;
}

int64_t offcpu_run_ns(const struct offcpu *oc)
{
	return bpfload_run_ns(oc->skel->obj);
}

/* The duty cycle of the interval that ends, in words, for its profiles' comment. */
static void note_duty(struct offcpu *oc)
{
	unsigned int lo = oc->duty_lo, hi = oc->duty_hi;

	if (!hi)
		oc->comment[0] = '\0';
	else if (lo == hi)
		snprintf(oc->comment, sizeof(oc->comment),
			 "off-CPU duty cycle 1/%u (cpu_budget): waits sampled 1/%u of the time, "
			 "each weighed %u times more",
			 1u << hi, 1u << hi, 1u << hi);
	else
		snprintf(oc->comment, sizeof(oc->comment),
			 "off-CPU duty cycle 1/%u to 1/%u (cpu_budget): each wait weighed by the "
			 "inverse of the duty it was sampled at",
			 1u << lo, 1u << hi);
	oc->duty_lo = oc->duty_hi = offcpu_duty(oc);
}

const char *offcpu_comment(const struct offcpu *oc)
{
	return oc->comment[0] ? oc->comment : NULL;
}

int offcpu_drain(struct offcpu *oc, sampler_cb cb, void *arg)
{
	int rc = fold_drain(&oc->buf, cb, arg);

	/* the waits the daemon walked join the kernel's, in the interval they ended in */
	if (!rc && oc->defer)
		rc = deferred_drain(oc->defer, DEFERRED_OFFCPU, cb, arg);
	hold_sleepers(oc);
	log_metrics(oc);
	/* a new window every interval: a workload in step with the cycle is not always left out */
	draw_duty_offset(oc);
	return rc;
}

/*
 * The stack of hash h into p and out: from the drained buffer (where a fold
 * copies the stacks of a wait and of its waker), else parked or held; empty
 * for 0, lost when evicted.
 */
static void parked_stack(struct offcpu *oc, uint64_t h, bool lost, struct ember_offcpu_parked *p,
			 struct sampler_stack *out)
{
	const struct ember_stack *st = &p->st;

	stack_parts_find(&oc->buf.stk, h, lost, &p->st, out);
	if (!h || out->n)
		return;
	memset(out, 0, sizeof(*out));
	out->lost = lost;
	if (bpf_map_lookup_elem(bpf_map__fd(oc->skel->maps.parked), &h, p) &&
	    bpf_map_lookup_elem(oc->held_fd[0], &h, p) &&
	    bpf_map_lookup_elem(oc->held_fd[1], &h, p)) {
		out->lost = true;
		return;
	}
	out->ips = (const uint64_t *)st->ips;
	out->n = st->len < EMBER_MAX_STACK_DEPTH ? st->len : EMBER_MAX_STACK_DEPTH;
	sampler_stack_flags(out, st->flags);
}

/* The waiter's cb, for the wakers of the waits the daemon walked (deferred_waker_cb). */
struct deferred_wakers_ctx {
	offcpu_waker_cb cb;
	void *arg;
};

static int deferred_waker(const struct ember_sample_key *wait, uint32_t waker_tgid, uint64_t ns,
			  uint64_t events, const struct sampler_stack st[4], void *arg)
{
	const struct deferred_wakers_ctx *c = arg;
	struct ember_offcpu_waker_key k = {
		.tgid = wait->tgid, .waker_tgid = waker_tgid, .flags = wait->flags};
	struct ember_offcpu_waker_val v = {ns, events};

	memcpy(k.comm, wait->comm, sizeof(k.comm));
	return c->cb(&k, &v, st, c->arg);
}

int offcpu_drain_wakers(struct offcpu *oc, offcpu_waker_cb cb, void *arg)
{
	/* offcpu_drain() flipped the buffers and waited: the other one is still */
	int fd = oc->wakers_fd[!(oc->buf.gen.n & 1)], rc = 0;
	long n = fold_read_all(fd, true, oc->wkeys, oc->wvals, sizeof(*oc->wkeys),
			       sizeof(*oc->wvals), OFFCPU_WAKERS);

	if (n < 0) {
		stack_parts_free(&oc->buf.stk);
		return (int)n;
	}
	for (long i = 0; !rc && i < n; i++) {
		const struct ember_offcpu_waker_key *k = &oc->wkeys[i];
		struct sampler_stack st[4];

		parked_stack(oc, k->user_stack, k->flags & EMBER_KEY_USTACK_LOST, &oc->wstk[0],
			     &st[0]);
		parked_stack(oc, k->kern_stack, k->flags & EMBER_KEY_KSTACK_LOST, &oc->wstk[1],
			     &st[1]);
		parked_stack(oc, k->waker_user, false, &oc->wstk[2], &st[2]);
		parked_stack(oc, k->waker_kern, false, &oc->wstk[3], &st[3]);
		rc = cb(k, &oc->wvals[i], st, arg);
	}
	/* offcpu_drain() left the drained stacks for this read: large, not kept in RSS */
	stack_parts_free(&oc->buf.stk);
	if (!rc && oc->defer) {
		struct deferred_wakers_ctx c = {cb, arg};

		rc = deferred_drain_wakers(oc->defer, deferred_waker, &c);
	}
	return rc;
}

int offcpu_metrics(struct offcpu *oc, uint64_t out[EMBER_OFFCPU_M_NR])
{
	int rc = percpu_array_sum(bpf_map__fd(oc->skel->maps.metrics), EMBER_OFFCPU_M_NR, out);

	if (!rc && oc->defer)
		deferred_metrics(oc->defer, DEFERRED_OFFCPU,
				 out); /* its walks count as the program's */
	return rc;
}

const char *offcpu_reason_frame(unsigned int reason)
{
	static const char *const names[EMBER_OFFCPU_REASONS_NR] = {
		[EMBER_OFFCPU_UNKNOWN] = "[off-CPU: other]",
		[EMBER_OFFCPU_IO] = "[off-CPU: I/O]",
		[EMBER_OFFCPU_LOCK] = "[off-CPU: lock (futex)]",
		[EMBER_OFFCPU_SLEEP] = "[off-CPU: sleep]",
		[EMBER_OFFCPU_POLL] = "[off-CPU: poll]",
		[EMBER_OFFCPU_WAIT] = "[off-CPU: wait]",
		[EMBER_OFFCPU_RUNQ] = "[off-CPU: run queue]",
	};

	return reason < EMBER_OFFCPU_REASONS_NR ? names[reason] : names[EMBER_OFFCPU_UNKNOWN];
}
