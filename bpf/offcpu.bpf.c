// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Off-CPU time: at sched_switch, a sampled user thread leaving the CPU has its
 * stacks walked and parked with why it left; when it runs again, the time it
 * was away (split at its wakeup into waiting and run-queue delay) is folded
 * under those stacks in the maps of bpf/fold.bpf.h.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "ember/offcpu.h"
#define FOLD_METRICS_NR EMBER_OFFCPU_M_NR
#define FOLD_PROC_SOURCE EMBER_PROC_SRC_OFFCPU
/* waits of processes not loaded yet go to the daemon with their stacks (the cpu object's ring) */
#define FOLD_DEFER
#include "fold.bpf.h"
#include "geometric.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* include/linux/sched.h */
#define PF_KTHREAD 0x00200000
#define TASK_INTERRUPTIBLE 0x1
#define TASK_UNINTERRUPTIBLE 0x2
#define TASK_DEAD 0x80

/* System calls that name an interruptible wait's reason (arch/x86/entry/syscalls, asm-generic). */
#if defined(__TARGET_ARCH_x86)
#define NR_POLL 7
#define NR_SELECT 23
#define NR_NANOSLEEP 35
#define NR_FUTEX 202
#define NR_CLOCK_NANOSLEEP 230
#define NR_EPOLL_WAIT 232
#define NR_PSELECT6 270
#define NR_PPOLL 271
#define NR_EPOLL_PWAIT 281
#elif defined(__TARGET_ARCH_arm64)
#define NR_POLL -1
#define NR_SELECT -1
#define NR_NANOSLEEP 101
#define NR_FUTEX 98
#define NR_CLOCK_NANOSLEEP 115
#define NR_EPOLL_WAIT -1
#define NR_PSELECT6 72
#define NR_PPOLL 73
#define NR_EPOLL_PWAIT 22
#endif
#define NR_EPOLL_PWAIT2 441
#define NR_FUTEX_WAITV 449

/* Set by the daemon before load: a switch-out is sampled 1 in this many (weight: this many). */
const volatile __u32 sample_period = 1;
/* Set by the daemon before load: sampled intervals shorter than this are left out. */
const volatile __u64 min_block_ns = 0;
/*
 * Set by the daemon before load: a thread's first switch-out this many ms
 * after its last sampled one is always sampled (weight 1), so that threads
 * that rarely leave the CPU, the long waits, are all seen. 0: never forced.
 */
const volatile __u64 forced_ms = 0;
/* The kernel's tick rate, for forced_ms in jiffies (read by libbpf from the kernel's config). */
extern unsigned int CONFIG_HZ __kconfig __weak;
/*
 * Set by the daemon before load: the addresses of __schedule and of
 * try_to_wake_up, where the kernel stacks of a switch and of a wakeup are cut.
 */
const volatile __u64 sched_lo = 0, sched_hi = 0;
const volatile __u64 wake_lo = 0, wake_hi = 0;

/*
 * Frames of the tracing path above them in bpf_get_stack(), at a switch and at
 * a wakeup ([0] and [1]): found at the first walk, known once [2 + i] is 1.
 */
__u32 kskip[4];

/*
 * What a thread left the CPU with, kept while it is away. Task storage: freed
 * with the thread, no table to size or clean.
 */
struct offcpu_task {
	__u64 off_ns;	  /* when it left, 0: the interval is not sampled */
	__u64 wake_ns;	  /* when it was woken, 0: not yet (or runnable) */
	__u64 user_stack; /* hashes of its stacks in parked, 0: none */
	__u64 kern_stack;
	__u64 waker_user; /* the stacks of the thread that woke it (parked), 0: none */
	__u64 waker_kern;
	__u32 waker_tgid;
	__u32 flags;  /* EMBER_KEY_*_LOST and the reason (EMBER_OFFCPU_KEY_REASON_*) */
	__u32 weight; /* switch-outs this one stands for */
	__u32 tgid;
	__u64 defer_id; /* its copy in the deferred ring, to end there; 0: its stacks are parked */
};

/* The last wait id given to a copy in the deferred ring (0: none). */
__u64 defer_seq;

/* The duty cycle cpu_budget sets, written by the daemon at any time (daemon/sample/offcpu.c). */
struct ember_offcpu_duty duty;

/*
 * Per slot of thread ids (the id modulo OPEN_SLOTS), kept in the program's
 * global data: how many of its threads have a sampled interval open, and the
 * jiffy (low 32 bits) of their last sampled switch-out. Every switch and
 * wakeup reads them and only a sampled one writes them, so their lines stay
 * shared in every CPU's cache where the task storage of a thread that last
 * ran on another CPU is a miss: a wakeup or a switch-in of a thread without an
 * open interval ends at the read. Threads that share a slot share its jiffy
 * (one's forced walk delays the other's by forced_ms at most: the weights
 * stay those known when deciding) and make each other look up their storage.
 */
#define OPEN_SLOTS 16384
__u32 open_waits[OPEN_SLOTS];
__u32 walked_at[OPEN_SLOTS];

static __always_inline __u32 slot_of(const struct task_struct *t)
{
	return (__u32)t->pid & (OPEN_SLOTS - 1);
}

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_task);
} tasks SEC(".maps");

/*
 * Stacks of threads now off the CPU, by hash: a thread may sleep across many
 * intervals, and the buffer its stack would have gone to is drained and emptied
 * meanwhile. Copied into the active buffer when it returns. LRU (sized by the
 * daemon): a flood of new stacks within one interval evicts the oldest
 * sleeper's, counted; at a drain, those of threads still away are held.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct ember_offcpu_parked);
} parked SEC(".maps");

/*
 * Stacks of threads that were away at a drain, copied from parked by the
 * drain's task iterator (ember_offcpu_hold) so that no flood of new stacks
 * evicts them however long their thread sleeps: the iterator copies into
 * held[hold_buf], from parked or from the other held map, which the daemon
 * then empties. Written only there; looked up when parked misses. Sized by the
 * daemon as parked, allocated as used.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct ember_offcpu_parked);
} held0 SEC(".maps"), held1 SEC(".maps");

/* Set by the daemon before each drain's hold: the held map the iterator fills (0 or 1). */
__u32 hold_buf;
/*
 * A thread's stack hash once the hold found it evicted from parked (a stack
 * hash is this with probability 2^-64): the fold says it lost, uncounted.
 */
#define EVICTED (~0ULL)

/* Waits by the thread that ended them, buffer 0 and 1 (as counts0/1); sized by the daemon. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct ember_offcpu_waker_key);
	__type(value, struct ember_offcpu_waker_val);
} wakers0 SEC(".maps"), wakers1 SEC(".maps");

/*
 * Set by the daemon before load: each CPU walks up to this many switch-outs a
 * second with weight 1 before it samples 1 in its period: a host that
 * switches little is profiled exactly, a switch storm costs a bounded amount.
 */
const volatile __u32 cpu_walks_per_sec = 0;
/*
 * Set by the daemon before load: the switch-outs a CPU samples 1 in its period
 * a second, at most (about): past it, a storm raises the CPU's period above
 * sample_period, so that its walks, not only its fast path, stay bounded
 * however fast it switches. 0: the period stays sample_period.
 */
const volatile __u32 cpu_sampled_per_sec = 0;

/* The period is set again every quarter of a second, from the quarter before. */
#define WINDOWS_PER_SEC 4

/*
 * A CPU's sampling state. Its walks left (a token bucket refilled by the
 * jiffy) for cpu_walks_per_sec, in walks times hz: a jiffy adds
 * cpu_walks_per_sec, a walk takes hz, so that a CPU checking it at every jiffy
 * is refilled too (whole walks a jiffy would round 200/250 down to none). And
 * its period, with the walks it sampled in the window since win_at.
 */
struct cpu_sampling {
	__u64 tokens;
	__u64 at;	  /* jiffies of the last refill */
	__u64 win_at;	  /* jiffies the window began */
	__u32 win_walks;  /* switch-outs sampled 1 in period in it */
	__u32 period;	  /* this CPU's period now; 0: not set yet (sample_period) */
	__u32 skip;	  /* switch-outs past the budget to pass before the next sampled one */
	__u32 gap_period; /* the period skip was drawn at: its end's weight; 0: none drawn yet */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_sampling);
} cpu_sampling SEC(".maps");

/*
 * Takes one walk from the CPU's budget of rate a second (cpu_walks_per_sec,
 * over the duty cycle's 2^shift): false when it is spent.
 */
static __always_inline bool take_budget(struct cpu_sampling *c, __u64 now, __u64 hz, __u32 rate)
{
	__u64 cap = (__u64)rate * hz;

	if (!rate)
		return false;
	if (now != c->at) {
		__u64 add = now - c->at < hz ? (now - c->at) * rate : cap;

		c->tokens = add > cap - c->tokens ? cap : c->tokens + add;
		c->at = now;
	}
	if (c->tokens < hz)
		return false;
	c->tokens -= hz;
	return true;
}

/* Whether the CPU's window, begun at win_at, has lasted its quarter of a second at jiffy now. */
static __always_inline bool window_over(const struct cpu_sampling *c, __u64 now, __u64 hz)
{
	return now - c->win_at >= hz / WINDOWS_PER_SEC;
}

/*
 * The CPU's period for a switch-out at jiffy now. At the end of a window (a
 * quarter of a second, or sooner once it sampled its share: a storm is caught
 * within a few walks of its start), the next one's: the switch-outs of the
 * window in the sampled regime (its walks times the period, an unbiased
 * estimate), at that rate a window's worth of them, over the walks a window
 * may sample; never under sample_period or over EMBER_OFFCPU_PERIOD_MAX, and
 * at most 4 times lower than the last (a burst after a lull is not walked at
 * the lull's rate). It depends only on switch-outs before, so the weights,
 * each the period its switch-out was decided with, keep the sums unbiased.
 */
static __always_inline __u32 cpu_period(struct cpu_sampling *c, __u64 now, __u64 hz)
{
	__u64 win = hz / WINDOWS_PER_SEC, per_win = cpu_sampled_per_sec / WINDOWS_PER_SEC;
	__u64 p = c->period ? c->period : sample_period, elapsed = now - c->win_at, want;

	if (!per_win || !win || (!window_over(c, now, hz) && c->win_walks < per_win))
		return p;
	if (!elapsed)
		elapsed = 1;
	want = (__u64)c->win_walks * p * win / (elapsed * per_win);
	if (want < p / 4)
		want = p / 4;
	if (want < sample_period)
		want = sample_period;
	if (want > EMBER_OFFCPU_PERIOD_MAX)
		want = EMBER_OFFCPU_PERIOD_MAX;
	c->period = want;
	c->win_at = now;
	c->win_walks = 0;
	return want;
}

/* The next gap of the CPU's switch-outs past its budget, at period p: one random number. */
static __always_inline void draw_gap(struct cpu_sampling *c, __u32 p)
{
	c->gap_period = p;
	c->skip = p > 1 ? geom_gap(bpf_get_prandom_u32(), p) : 0; /* none drawn at period 1 */
}

/*
 * Whether a switch-out is sampled, and its weight: the inverse of the
 * probability it had, known when deciding (1 for a thread's first in forced_ms,
 * last_walk the jiffy of its slot's last walk, 0 for none, or within the CPU's
 * budget; 1/period after), so that the weighed sums are unbiased. In the order
 * of cost: the deterministic checks from jiffies (read inline, no helper call),
 * then the countdown of a geometric gap (bpf/geometric.bpf.h), which has the
 * law of a 1-in-period draw at each switch-out, with one random number per
 * sampled switch-out instead of one per switch-out.
 */
static __always_inline __u32 sample_weight(__u32 last_walk, __u64 now, __u32 shift)
{
	__u64 hz = CONFIG_HZ ? CONFIG_HZ : 250;
	struct cpu_sampling *c;
	__u32 zero = 0, period, weight;

	if (forced_ms && (__u64)((__u32)now - last_walk) * 1000 >= (forced_ms << shift) * hz) {
		metric_inc(EMBER_OFFCPU_M_FORCED);
		return 1;
	}
	c = bpf_map_lookup_elem(&cpu_sampling, &zero);
	if (!c)
		return 0;
	if (take_budget(c, now, hz, cpu_walks_per_sec >> shift)) {
		metric_inc(EMBER_OFFCPU_M_FORCED);
		return 1;
	}
	if (!c->gap_period) /* the first switch-out past the budget */
		draw_gap(c, cpu_period(c, now, hz));
	if (c->skip) {
		c->skip--;
		/* a window's new period draws the rest of the gap again (a geometric gap has no memory) */
		if (window_over(c, now, hz)) {
			period = cpu_period(c, now, hz);
			if (period != c->gap_period)
				draw_gap(c, period);
		}
		return 0;
	}
	/* the end of a gap drawn at gap_period: it stands for that many, on average */
	weight = c->gap_period;
	c->win_walks++;
	draw_gap(c, cpu_period(c, now, hz));
	metric_inc(EMBER_OFFCPU_M_SAMPLED);
	if (weight > sample_period)
		metric_inc(EMBER_OFFCPU_M_RAISED);
	return weight;
}

/*
 * A switch-out's weight under the duty cycle (0: not sampled). Outside its
 * window no new wait is sampled (those open still end at their switch-in),
 * inside every weight is 2^shift times more. The window's offset is uniform
 * and drawn apart from the workload, so a switch-out is in it with
 * probability 1/2^shift whatever came before, and the weighed sums stay
 * unbiased. A global subprogram: verified once, not in each caller's states.
 */
__noinline __u32 duty_weight(__u32 last_walk, __u64 now)
{
	__u32 shift = duty.shift;

	if (shift > EMBER_OFFCPU_DUTY_SHIFT_MAX)
		shift = EMBER_OFFCPU_DUTY_SHIFT_MAX;
	if (shift && (((__u32)now - duty.offset) & (EMBER_OFFCPU_DUTY_CYCLE - 1)) >=
			     (EMBER_OFFCPU_DUTY_CYCLE >> shift))
		return 0;
	return sample_weight(last_walk, now, shift) << shift;
}

/* The system call prev is in, from its saved registers; -1 outside one. */
static __always_inline long syscall_nr(struct task_struct *prev)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);

	if (!regs)
		return -1;
#if defined(__TARGET_ARCH_x86)
	return BPF_CORE_READ(regs, orig_ax);
#elif defined(__TARGET_ARCH_arm64)
	return BPF_CORE_READ(regs, syscallno);
#endif
}

/* Why prev leaves the CPU in state (sched_switch's prev_state). */
static __always_inline __u32 switch_reason(struct task_struct *prev, bool preempt, __u32 state)
{
	long nr;

	if (preempt || !state)
		return EMBER_OFFCPU_RUNQ;
	if (state & TASK_UNINTERRUPTIBLE)
		return EMBER_OFFCPU_IO;
	if (!(state & TASK_INTERRUPTIBLE))
		return EMBER_OFFCPU_UNKNOWN;
	nr = syscall_nr(prev);
	if (nr == NR_FUTEX || nr == NR_FUTEX_WAITV)
		return EMBER_OFFCPU_LOCK;
	if (nr == NR_NANOSLEEP || nr == NR_CLOCK_NANOSLEEP)
		return EMBER_OFFCPU_SLEEP;
	if (nr == NR_POLL || nr == NR_SELECT || nr == NR_PSELECT6 || nr == NR_PPOLL ||
	    nr == NR_EPOLL_WAIT || nr == NR_EPOLL_PWAIT || nr == NR_EPOLL_PWAIT2)
		return EMBER_OFFCPU_POLL;
	return EMBER_OFFCPU_WAIT;
}

/*
 * st parked: its hash, or 0 with *lost set (counted) when the map is full. A
 * new entry is looked up once inserted, which sets its LRU reference bit: the
 * kernel's LRU evicts unreferenced entries first, and steals from a CPU's
 * list of those just inserted, so a flood of new stacks evicted a new one,
 * before the drain could hold it, rather than the stacks of threads that
 * returned since (measured: 4 stacks lost in an interval of ~140 walks, on a
 * full LRU of 512).
 */
static __always_inline __u64 park_stack(struct ember_stack *st, bool *lost)
{
	__u64 h = keep_stack_m(st, &parked, EMBER_SAMPLE_M_STACKS_FULL, lost);

	if (h)
		bpf_map_lookup_elem(&parked, &h);
	return h;
}

/* Step of the search for the cut (lo, hi) in the first frames of a kernel stack. */
struct kskip_state {
	const struct ember_stack *st;
	__u64 lo, hi;
	__u32 found;
};

static long kskip_step(__u32 i, void *arg)
{
	struct kskip_state *k = arg;
	__u64 j = i, ip;

	if (j >= EMBER_MAX_STACK_DEPTH || j >= k->st->len)
		return 1;
	barrier_var(j); /* the checked register is the one that indexes */
	ip = k->st->ips[j];
	if (ip >= k->lo && ip < k->hi) {
		k->found = j;
		return 1;
	}
	return 0;
}

/*
 * The kernel stack from the function at [lo, hi) down, in the scratch stack
 * (NULL, with *lost set, when unreadable): bpf_get_stack() starts in the
 * tracing path (the program, the tracepoint's glue), the same frames at every
 * run of a program, which its first walk finds and the others skip (kskip[i]).
 */
static __always_inline struct ember_stack *read_kernel_stack(void *ctx, __u32 i, __u64 lo, __u64 hi,
							     bool *lost)
{
	struct ember_stack *st = scratch_stack();
	struct kskip_state k = {.lo = lo, .hi = hi};
	long bytes;

	if (!st)
		return NULL;
	bytes = bpf_get_stack(ctx, st->ips, sizeof(st->ips), kskip[i & 1] & BPF_F_SKIP_FIELD_MASK);
	if (bytes < 0) {
		metric_inc(EMBER_SAMPLE_M_KSTACK_FAILED);
		*lost = true;
		return NULL;
	}
	st->len = bytes / sizeof(__u64);
	st->flags = 0;
	if (!kskip[2 + (i & 1)] && lo) {
		k.st = st;
		/* bound: the tracing path is a handful of frames */
		bpf_loop(16, kskip_step, &k, 0);
		kskip[i & 1] = k.found;
		kskip[2 + (i & 1)] = 1;
	}
	return st;
}

/* The kernel stack from the function at [lo, hi) down (read_kernel_stack()), parked. */
static __always_inline __u64 park_kernel_stack(void *ctx, __u32 i, __u64 lo, __u64 hi, bool *lost)
{
	struct ember_stack *st = read_kernel_stack(ctx, i, lo, hi, lost);

	return st ? park_stack(st, lost) : 0;
}

/* The user stack walked from regs with proc (uw_proc()), parked whole: its hash, 0 when none or lost. */
static __always_inline __u64 park_user_stack(void *ctx, const struct ember_uregs *regs, __u32 tgid,
					     const struct ember_unwind_proc *proc, bool *lost)
{
	__u64 rt = 0;
	struct ember_stack *st = walk_user_stack(ctx, regs, tgid, proc, &rt);
	__u64 h = st ? park_stack(st, lost) : 0;

	if (h) /* whatever rt is: see user_stack() */
		rt_announce(tgid, st, rt, active_buf);
	return h;
}

/* The stack of hash h where a thread away keeps it: parked, or held across a drain. */
static __always_inline const struct ember_stack *parked_stack(__u64 h)
{
	const struct ember_stack *st = bpf_map_lookup_elem(&parked, &h);

	if (!st)
		st = bpf_map_lookup_elem(&held0, &h);
	if (!st)
		st = bpf_map_lookup_elem(&held1, &h);
	return st;
}

#if defined(__TARGET_ARCH_x86)
/*
 * A sampled wait of a process whose tables are not loaded yet (or are being
 * compiled): instead of a frame-pointer walk, its registers, kernel stack and
 * user stack's pages go to the deferred ring, for the daemon to walk with the
 * tables (bpf/fold.bpf.h's defer_sample() for CPU samples); s->defer_id says
 * so, and the thread's return ends it there (end_deferred()). False, nothing
 * sent, to walk it here. Not a thread on its way out (as defer_sample()).
 */
static __always_inline bool defer_wait(void *ctx, struct offcpu_task *s,
				       const struct ember_uregs *regs,
				       const struct ember_unwind_proc *proc)
{
	struct ember_deferred_sample *d;
	struct ember_stack *ks;
	struct defer_rec rec;
	bool lost = false;
	__u32 klen;

	if (!defer_walks || bpf_get_current_task_btf()->flags & PF_EXITING)
		return false;
	if (proc && !proc->pending)
		return false;
	d = defer_reserve(regs, &rec);
	if (!d)
		return false;
	d->tgid = s->tgid;
	d->flags = s->flags;
	d->n = s->weight;
	d->source = EMBER_PROC_SRC_OFFCPU;
	d->pad = 0;
	d->wait_id = __sync_fetch_and_add(&defer_seq, 1) + 1;
	d->ktime_ns = bpf_ktime_get_ns();
	d->kstack_len = 0;
	ks = read_kernel_stack(ctx, 0, sched_lo, sched_hi, &lost);
	if (ks) {
		klen = ks->len < EMBER_DEFER_KSTACK_MAX ? ks->len : EMBER_DEFER_KSTACK_MAX;
		if (!bpf_probe_read_kernel(d->kips, sizeof(d->kips), ks->ips))
			d->kstack_len = klen;
	}
	if (lost)
		d->flags |= EMBER_KEY_KSTACK_LOST;
	defer_rt_trace(&rec, proc);
	defer_user_stack(&rec, regs);
	s->defer_id = d->wait_id;
	defer_submit_rec(&rec);
	metric_inc(EMBER_SAMPLE_M_DEFERRED);
	metric_add(EMBER_SAMPLE_M_PROC_NO_TABLES, !proc);
	return true;
}

/* Parked stack h into st (the deferred ring's), or an empty stack: none, or evicted. */
static __always_inline void copy_parked(struct ember_stack *st, __u64 h)
{
	const struct ember_stack *p = h && h != EVICTED ? parked_stack(h) : NULL;

	if (!p || bpf_probe_read_kernel(st, sizeof(*st), p)) {
		st->len = 0;
		st->flags = 0;
	}
}

/*
 * Ends s's deferred wait: away wait_ns until its wakeup, then runq_ns queued
 * (both 0: left out), with its waker's stacks, copied from where they are
 * parked. Its own stacks and weight went with its copy.
 */
static __always_inline void end_deferred(struct offcpu_task *s, __u64 wait_ns, __u64 runq_ns)
{
	struct ember_offcpu_wait_end *e = bpf_ringbuf_reserve(&deferred, sizeof(*e), 0);

	if (!e) {
		metric_inc(EMBER_SAMPLE_M_DEFER_FULL); /* the daemon counts the wait lost */
	} else {
		e->wait_id = s->defer_id;
		e->wait_ns = wait_ns;
		e->runq_ns = runq_ns;
		e->tgid = s->tgid;
		e->waker_tgid = s->waker_tgid;
		copy_parked(&e->waker_user, s->waker_user);
		copy_parked(&e->waker_kern, s->waker_kern);
		defer_submit(e);
	}
	s->defer_id = 0;
	s->waker_user = s->waker_kern = 0;
	s->waker_tgid = 0;
}
#else
static __always_inline bool defer_wait(void *ctx, struct offcpu_task *s,
				       const struct ember_uregs *regs,
				       const struct ember_unwind_proc *proc)
{
	return false;
}

static __always_inline void end_deferred(struct offcpu_task *s, __u64 wait_ns, __u64 runq_ns)
{
	s->defer_id = 0;
}
#endif

/*
 * The stack just parked (still in scratch) into the active buffer's stacks
 * too: a thread that returns within the interval, the common case, finds it
 * there, whatever the parked LRU evicted meanwhile. A miss costs nothing:
 * unpark() copies it at the return.
 */
static __always_inline void store_active(__u64 h)
{
	struct ember_stack *st = scratch_stack();

	if (h && st)
		store_stack_gen(st, h, active_buf);
}

/*
 * prev leaves the CPU: decides whether to sample it, and parks its stacks if
 * so. Every context switch of the host runs this: the path of a switch-out not
 * sampled reads its slot's open_waits and walked_at, jiffies and the CPU's
 * sampling state, and writes nothing but that per-CPU state (the budget's
 * refill, the gap's countdown). Switch-outs are
 * counted by the sampled ones' weights (an unbiased estimate), kernel threads'
 * not at all: a counter bumped at every switch is a cost of its own.
 */
static __always_inline void switch_out(void *ctx, struct task_struct *prev, bool preempt,
				       __u32 state)
{
	__u32 tgid, reason, weight;
	const struct ember_unwind_proc *proc;
	struct offcpu_task *s = NULL;
	struct ember_uregs regs;
	__u32 slot = slot_of(prev);
	bool lost = false;
	__u64 now;

	/* the idle task; a thread's last switch; kernel threads */
	if (!prev->pid || state & TASK_DEAD || prev->flags & PF_KTHREAD)
		return;
	now = bpf_jiffies64();
	/*
	 * An interval its switch-in did not close (never, in practice: both are
	 * in this program) is dropped. Storage is read only when its slot says
	 * one may be open: a store at every switch would dirty the line every
	 * lookup of the thread's storage reads, which the waker's CPU then pulls
	 * back (two cross-CPU misses a wait).
	 */
	if (open_waits[slot]) {
		s = bpf_task_storage_get(&tasks, prev, 0, 0);
		if (s && s->off_ns) {
			s->off_ns = 0;
			if (s->defer_id)
				end_deferred(s, 0, 0);
			__sync_fetch_and_add(&open_waits[slot], -1);
		}
	}
	weight = duty_weight(walked_at[slot], now);
	if (!weight)
		return;
	/* storage is created at a thread's first sampled switch-out */
	if (!s)
		s = bpf_task_storage_get(&tasks, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!s) {
		metric_inc(EMBER_OFFCPU_M_NO_STORAGE);
		return;
	}
	s->off_ns = 0;
	walked_at[slot] = (__u32)now;
	s->weight = weight;
	metric_add(EMBER_OFFCPU_M_SWITCHES, weight);
	tgid = prev->tgid;
	note_process(tgid);
	if (fold_dropped(tgid))
		return;
	reason = switch_reason(prev, preempt, state);
	s->flags = reason << EMBER_OFFCPU_KEY_REASON_SHIFT;
	s->tgid = tgid;
	s->user_stack = s->kern_stack = 0;
	s->wake_ns = 0;
	s->waker_user = s->waker_kern = 0;
	s->waker_tgid = 0;
	s->defer_id = 0;
	if (ember_task_uregs(prev, &regs)) {
		proc = uw_proc(tgid);
		if (defer_wait(ctx, s, &regs, proc))
			goto open;
		s->user_stack = park_user_stack(ctx, &regs, tgid, proc, &lost);
	}
	store_active(s->user_stack);
	if (lost)
		s->flags |= EMBER_KEY_USTACK_LOST;
	lost = false;
	s->kern_stack = park_kernel_stack(ctx, 0, sched_lo, sched_hi, &lost);
	store_active(s->kern_stack);
	if (lost)
		s->flags |= EMBER_KEY_KSTACK_LOST;
open:
	s->off_ns = bpf_ktime_get_ns();
	__sync_fetch_and_add(&open_waits[slot], 1);
}

/* A parked stack into the active buffer's stacks: its hash there, or 0 with *lost set. */
static __always_inline __u64 unpark(__u64 h, void *stacks, bool *lost)
{
	const struct ember_stack *st;

	if (h == EVICTED) { /* found so, and counted, by a drain's hold */
		*lost = true;
		return 0;
	}
	if (!h || bpf_map_lookup_elem(stacks, &h))
		return h;
	st = parked_stack(h);
	if (!st) {
		metric_inc(EMBER_OFFCPU_M_PARKED_LOST);
		*lost = true;
		return 0;
	}
	if (!store_stack_parts(st, h, stacks, EMBER_SAMPLE_M_STACKS_FULL)) {
		*lost = true;
		return 0;
	}
	return h;
}

/* Adds ns (weighed) and one event of weight to key's stacks, for one reason. */
static __always_inline void add_wait(void *counts, struct ember_sample_key *key, __u32 reason,
				     __u64 ns, __u32 weight)
{
	__u32 flags = key->flags & (EMBER_KEY_USTACK_LOST | EMBER_KEY_KSTACK_LOST);

	key->flags = flags | reason << EMBER_OFFCPU_KEY_REASON_SHIFT;
	add_count(counts, key, ns * weight);
	key->flags |= EMBER_OFFCPU_KEY_EVENTS;
	add_count(counts, key, weight);
}

/* The wait s ended by its waker, ns long, into the buffer wakers. */
static __always_inline void add_waker(void *wakers, const struct offcpu_task *s,
				      const struct ember_sample_key *key, __u64 ns)
{
	struct ember_offcpu_waker_key k = {
		.tgid = s->tgid,
		.waker_tgid = s->waker_tgid,
		.user_stack = s->user_stack,
		.kern_stack = s->kern_stack,
		.waker_user = s->waker_user,
		.waker_kern = s->waker_kern,
		.flags = s->flags,
	};
	struct ember_offcpu_waker_val v = {ns * s->weight, s->weight}, *cur;

	__builtin_memcpy(k.comm, key->comm, sizeof(k.comm));
	cur = bpf_map_lookup_elem(wakers, &k);
	if (!cur) {
		if (!bpf_map_update_elem(wakers, &k, &v, BPF_NOEXIST))
			return;
		cur = bpf_map_lookup_elem(wakers, &k); /* another CPU inserted it meanwhile */
		if (!cur) {
			metric_inc(EMBER_OFFCPU_M_WAKERS_FULL);
			return;
		}
	}
	__sync_fetch_and_add(&cur->ns, v.ns);
	__sync_fetch_and_add(&cur->events, v.events);
}

/*
 * The end of s's wait proper, away since off_ns, back at now: woken, it
 * waited until the wakeup and was then queued for a CPU; else all of it.
 */
static __always_inline __u64 wait_end_ns(const struct offcpu_task *s, __u64 now)
{
	if (EMBER_OFFCPU_REASON(s->flags) != EMBER_OFFCPU_RUNQ && s->wake_ns > s->off_ns &&
	    s->wake_ns < now)
		return s->wake_ns;
	return now;
}

/* next's sampled interval, away from off_ns to now, into the buffer counts/stacks/wakers. */
static __always_inline void fold_interval(struct offcpu_task *s, struct task_struct *next,
					  __u64 now, void *counts, void *stacks, void *wakers)
{
	__u32 reason = EMBER_OFFCPU_REASON(s->flags);
	struct ember_sample_key key = {.tgid = s->tgid, .flags = s->flags};
	__u64 end = wait_end_ns(s, now);
	bool lost = false;

	key.user_stack = unpark(s->user_stack, stacks, &lost);
	if (lost)
		key.flags |= EMBER_KEY_USTACK_LOST;
	lost = false;
	key.kern_stack = unpark(s->kern_stack, stacks, &lost);
	if (lost)
		key.flags |= EMBER_KEY_KSTACK_LOST;
	bpf_probe_read_kernel(key.comm, sizeof(key.comm), next->comm);
	add_wait(counts, &key, reason, end - s->off_ns, s->weight);
	if (end < now)
		add_wait(counts, &key, EMBER_OFFCPU_RUNQ, now - end, s->weight);
	if (s->waker_user || s->waker_kern) {
		/* the waker's stacks too, read with the wakers at the drain (or lost, counted) */
		lost = false;
		unpark(s->waker_user, stacks, &lost);
		unpark(s->waker_kern, stacks, &lost);
		add_waker(wakers, s, &key, end - s->off_ns);
	}
}

/* next returns to the CPU: folds its interval if it was sampled. */
static __always_inline void switch_in(struct task_struct *next)
{
	__u32 slot = slot_of(next);
	struct offcpu_task *s;
	__u64 now, end;

	if (!next->pid || next->flags & PF_KTHREAD || !open_waits[slot])
		return;
	s = bpf_task_storage_get(&tasks, next, 0, 0);
	if (!s || !s->off_ns)
		return;
	now = bpf_ktime_get_ns();
	if (now - s->off_ns < min_block_ns) {
		metric_inc(EMBER_OFFCPU_M_SHORT);
		if (s->defer_id)
			end_deferred(s, 0, 0);
	} else if (s->defer_id) {
		end = wait_end_ns(s, now);
		end_deferred(s, end - s->off_ns, now - end);
	} else if ((active_buf & 1) == 0) {
		fold_interval(s, next, now, &counts0, &stacks0, &wakers0);
	} else {
		fold_interval(s, next, now, &counts1, &stacks1, &wakers1);
	}
	s->off_ns = 0;
	__sync_fetch_and_add(&open_waits[slot], -1);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(ember_offcpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	switch_out(ctx, prev, preempt, prev_state);
	switch_in(next);
	return 0;
}

/*
 * The stacks of the thread waking a sampled wait (current, in its context),
 * parked: bounded by the sampled waits, one walk each at most. A wakeup from
 * an interrupt is charged to whatever it interrupted: its kernel stack says so.
 */
static __always_inline void note_waker(void *ctx, struct offcpu_task *s)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct ember_uregs regs;
	bool lost = false;

	s->waker_kern = park_kernel_stack(ctx, 1, wake_lo, wake_hi, &lost);
	if (!task->pid || task->flags & PF_KTHREAD)
		return;
	s->waker_tgid = task->tgid;
	note_process(s->waker_tgid);
	if (ember_task_uregs(task, &regs))
		s->waker_user =
			park_user_stack(ctx, &regs, s->waker_tgid, uw_proc(s->waker_tgid), &lost);
}

/*
 * In the waker's context, before the wakee is queued: the end of a sampled
 * wait, after which the wakee's time off the CPU is run-queue delay; and who
 * ended it.
 */
SEC("tp_btf/sched_waking")
int BPF_PROG(ember_offcpu_waking, struct task_struct *p)
{
	struct offcpu_task *s;

	if (p->flags & PF_KTHREAD || !open_waits[slot_of(p)])
		return 0;
	s = bpf_task_storage_get(&tasks, p, 0, 0);
	if (!s || !s->off_ns || s->wake_ns)
		return 0;
	s->wake_ns = bpf_ktime_get_ns();
	metric_inc(EMBER_OFFCPU_M_WAKEUPS);
	note_waker(ctx, s); /* a deferred wait's end copies its waker's stacks */
	return 0;
}

/*
 * Stack h of a thread away into the held map to, from parked or from the
 * other one: true when there, false when already evicted. An LRU entry may be
 * evicted and reused by another CPU while it is copied: the copy is checked
 * against its hash (once per stack: later drains copy it from held).
 */
static __always_inline bool hold(__u64 h, void *to, void *from)
{
	const struct ember_offcpu_parked *p;

	if (!h || h == EVICTED || bpf_map_lookup_elem(to, &h))
		return true;
	p = bpf_map_lookup_elem(from, &h);
	if (p) {
		if (bpf_map_update_elem(to, &h, p, BPF_NOEXIST) && !bpf_map_lookup_elem(to, &h))
			metric_inc(EMBER_OFFCPU_M_HELD_FULL);
		return true;
	}
	p = bpf_map_lookup_elem(&parked, &h);
	if (!p)
		return false;
	if (bpf_map_update_elem(to, &h, p, BPF_NOEXIST)) {
		if (!bpf_map_lookup_elem(to, &h))
			metric_inc(EMBER_OFFCPU_M_HELD_FULL);
		return true;
	}
	p = bpf_map_lookup_elem(to, &h);
	if (p && stack_hash(&p->st) != h) {
		bpf_map_delete_elem(to, &h);
		return false;
	}
	metric_inc(EMBER_OFFCPU_M_HELD);
	return true;
}

/*
 * A stack found evicted by the hold: its hash *hp becomes EVICTED (unless its
 * thread moved on to another wait meanwhile), counted once, here.
 */
static __always_inline void hold_lost(__u64 *hp, __u64 h)
{
	if (__sync_val_compare_and_swap(hp, h, EVICTED) == h)
		metric_inc(EMBER_OFFCPU_M_PARKED_LOST);
}

/* Holds the stack whose hash is at hp, or marks it lost. */
static __always_inline void hold_one(__u64 *hp, void *to, void *from)
{
	__u64 h = *hp;

	if (!hold(h, to, from))
		hold_lost(hp, h);
}

/* Holds a thread's stacks and its waker's. */
static __always_inline void hold_all(struct offcpu_task *s, void *to, void *from)
{
	hold_one(&s->user_stack, to, from);
	hold_one(&s->kern_stack, to, from);
	hold_one(&s->waker_user, to, from);
	hold_one(&s->waker_kern, to, from);
}

/*
 * Run by the daemon at each drain over every task: a thread with a sampled
 * interval open has its stacks (and its waker's, when woken) copied into
 * held[hold_buf]. A thread that returns before the iterator reaches it finds
 * them where they were; after, in held[hold_buf]; the other held map, emptied
 * after the run, keeps only stacks of waits that ended. Writes the thread's
 * process id (4 bytes): the daemon keeps its mappings to name those frames.
 */
SEC("iter/task")
int ember_offcpu_hold(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct offcpu_task *s;
	__u32 tgid;

	if (!task || !open_waits[slot_of(task)])
		return 0;
	s = bpf_task_storage_get(&tasks, task, 0, 0);
	if (!s || !s->off_ns)
		return 0;
	if (hold_buf & 1)
		hold_all(s, &held1, &held0);
	else
		hold_all(s, &held0, &held1);
	tgid = s->tgid;
	bpf_seq_write(ctx->meta->seq, &tgid, sizeof(tgid));
	return 0;
}
