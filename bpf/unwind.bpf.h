/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The user stack walk shared by every sampling program: .eh_frame tables
 * (include/ember/unwind.h, loaded by daemon/unwinder.c) where a binary has
 * them, frame pointers where it has none (JIT code, a process not loaded yet).
 * x86-64: the CFA is found from rsp, rbp or rbx (ld.so's trampolines), the
 * return address is at CFA - 8.
 */
#ifndef EMBER_UNWIND_BPF_H
#define EMBER_UNWIND_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "core_fixes.bpf.h"
#include "ember/cpu.h"
#include "ember/unwind.h"
#include "unwind_procs.bpf.h"

/* One element of unwind_rows (EMBER_ROWS_PER_BLOCK rows). */
struct ember_unwind_block {
	struct ember_unwind_row r[EMBER_ROWS_PER_BLOCK];
};

/*
 * Rows of every loaded table back to back, EMBER_ROWS_PER_BLOCK an element,
 * each table from a block's first row. Created and sized (the table memory
 * cap) by daemon/unwinder.c, which writes a table's rows before any process
 * refers to it; reused by fd here.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ember_unwind_block);
} unwind_rows SEC(".maps");

/* Where each table's rows lie in unwind_rows, by table id; nrows 0 = unusable. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EMBER_UNWIND_TABLES_MAX);
	__type(key, __u32);
	__type(value, struct ember_unwind_table);
} unwind_tables SEC(".maps");

/*
 * Processes with a frame outside every mapping the daemon gave (a library
 * loaded since it read them): it reads their mappings again, at most every
 * few seconds. The value is EMBER_UNWIND_STALE_*. LRU: a flood of such
 * processes only delays some rescans.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} unwind_stale SEC(".maps");

/*
 * The rule last found for an address of a process, per CPU, direct-mapped by
 * the address's 16-byte block: steady workloads return to the same code again
 * and again, and one cached slot replaces two binary searches (~30 cache
 * misses when cold). A slot holds the whole address range its row covers, not
 * only the address looked up: the leaf frame's address is wherever the sample
 * hit, different at nearly every sample, and an exact key missed on it
 * (measured: 1.8 searches per walk at 19 Hz, 0.2 with ranges). A slot is valid
 * for the generation of the process's entry it was found under.
 */
struct uw_cached {
	__u64 lo, hi; /* the addresses [lo, hi) it holds for */
	__u32 tgid;
	__u32 gen;		     /* ember_unwind_proc.gen when it was found */
	struct ember_unwind_row row; /* the row, when has_row */
	__u16 has_row;		     /* a table covers ip */
	__u16 in_map;		     /* ip lies in one of the process's mappings */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EMBER_UNWIND_CACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct uw_cached);
} unwind_cache SEC(".maps");

/*
 * Bytes of the user stack read at once: each read from user memory has a
 * fixed cost (a fault-safe copy; under some hypervisors, trapped privileged
 * instructions) far above its per-byte cost, and one window holds the saved
 * registers of several frames. Never past the end of the window's page, which
 * may be the top of the stack.
 */
#define UW_WINDOW 512

/* The stack window of the walk running on this CPU. */
struct uw_window {
	__u64 base; /* user address of buf[0] */
	__u32 len;  /* valid bytes in buf; 0: empty */
	__u32 busy; /* a walk runs: one that interrupts it (an interrupt's) must not walk */
	__u8 buf[UW_WINDOW];
};

/* Per-CPU room for the window (too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct uw_window);
} unwind_window SEC(".maps");

/* Why a walk step ended the stack (EMBER_CPU_M_END_*), or 0 to go on. */
enum uw_end {
	UW_GO_ON = 0,
	UW_OUTERMOST = EMBER_CPU_M_END_OUTERMOST,
	UW_SIGNAL = EMBER_CPU_M_END_SIGNAL,
	UW_NO_TABLE = EMBER_CPU_M_END_NO_TABLE,
	UW_BAD_RULE = EMBER_CPU_M_END_BAD_RULE,
	UW_UNREADABLE = EMBER_CPU_M_END_UNREADABLE,
	UW_DEPTH = EMBER_CPU_M_END_DEPTH,
	UW_EXITED = EMBER_CPU_M_END_EXITED,
};

/* State of one walk across bpf_loop() steps. */
struct uw_state {
	struct ember_stack *st;		      /* where frames go */
	const struct ember_unwind_proc *proc; /* the process's mappings, or NULL */
	__u64 ip, sp, bp, bx;		      /* registers of the frame being unwound */
	__u32 bx_lost;			      /* bx is not the frame's rbx (a rule not followed) */
	/*
	 * No hole in this struct, which bpf_loop() hands its steps: with one, 6.18's
	 * verifier refuses the program ("verifier bug: stack slot 0, total slots 0").
	 */
	__u32 pad;
	__u32 n;			 /* frames stored */
	__u32 end;			 /* enum uw_end, once the walk ended */
	__u32 by_table, by_fp, bad_rule; /* frames by how they were unwound */
	__u32 stale;	   /* a frame outside every known mapping: EMBER_UNWIND_STALE_* */
	__u32 interrupted; /* ip is where a signal hit, not a return address */
	__u32 tgid;
	struct uw_window *win; /* stack bytes read so far, or NULL */
};

/* Lowest address a frame may return to: the first page is never mapped. */
#define UW_MIN_IP 4096
/*
 * Addresses from here on are no user code (x86-64's user half ends below, with
 * 5-level paging too): a frame-pointer chain reaching one has left the stack's
 * frames (eight bytes of text read as an address are always up here).
 */
#define UW_MAX_IP (1ull << 56)

/*
 * Binary searches run as bpf_loop() steps: the verifier checks a step once,
 * where an open-coded search whose bounds depend on the data is explored
 * path by path ("the sequence of 8193 jumps is too complex").
 */
struct uw_search {
	const struct ember_unwind_proc *proc; /* mappings: searched when set */
	__u32 first;			      /* rows: the table's first row */
	__u32 lo, hi;			      /* the answer is lo: items <= key */
	__u64 key;
	bool failed; /* a row could not be read */
};

static long uw_map_step(__u32 i, void *arg)
{
	struct uw_search *q = arg;
	__u32 mid;

	if (q->lo >= q->hi)
		return 1;
	mid = (q->lo + q->hi) / 2;
	if (q->proc->maps[mid & (EMBER_UNWIND_MAPS_MAX - 1)].start <= q->key)
		q->lo = mid + 1;
	else
		q->hi = mid;
	return 0;
}

/* The mapping holding ip, or NULL. */
static __always_inline const struct ember_unwind_map *uw_find_map(const struct ember_unwind_proc *p,
								  __u64 ip)
{
	struct uw_search q = {.proc = p, .hi = p->nmaps, .key = ip};
	const struct ember_unwind_map *m;

	if (q.hi > EMBER_UNWIND_MAPS_MAX)
		q.hi = EMBER_UNWIND_MAPS_MAX;
	/* bound: 9 halvings cover EMBER_UNWIND_MAPS_MAX mappings */
	bpf_loop(9, uw_map_step, &q, 0);
	if (q.lo == 0)
		return NULL;
	m = &p->maps[(q.lo - 1) & (EMBER_UNWIND_MAPS_MAX - 1)];
	return ip < m->end ? m : NULL;
}

static __always_inline const struct ember_unwind_row *uw_row_at(__u32 idx)
{
	__u32 blk = idx / EMBER_ROWS_PER_BLOCK;
	const struct ember_unwind_block *b = bpf_map_lookup_elem(&unwind_rows, &blk);

	return b ? &b->r[idx % EMBER_ROWS_PER_BLOCK] : NULL;
}

static long uw_row_step(__u32 i, void *arg)
{
	struct uw_search *q = arg;
	const struct ember_unwind_row *r;
	__u32 mid;

	if (q->lo >= q->hi)
		return 1;
	mid = (q->lo + q->hi) / 2;
	r = uw_row_at(q->first + mid);
	if (!r) {
		q->failed = true;
		return 1;
	}
	if (r->pc <= q->key)
		q->lo = mid + 1;
	else
		q->hi = mid;
	return 0;
}

/*
 * The row in force at ip, or NULL where there is no table; narrows [*lo, *hi)
 * to the addresses the row covers.
 */
static __always_inline const struct ember_unwind_row *uw_find_row(const struct ember_unwind_map *m,
								  __u64 ip, __u64 *lo, __u64 *hi)
{
	const struct ember_unwind_row *r, *next;
	const struct ember_unwind_table *t;
	struct uw_search q = {.key = ip - m->bias};
	__u32 table = m->table;

	if (table == EMBER_UNWIND_NO_TABLE || q.key > 0xffffffffULL)
		return NULL;
	t = bpf_map_lookup_elem(&unwind_tables, &table);
	if (!t || !t->nrows || t->nrows > EMBER_UNWIND_ROWS_PER_TABLE_MAX)
		return NULL;
	q.first = t->first;
	q.hi = t->nrows;
	/* bound: 25 halvings cover EMBER_UNWIND_ROWS_PER_TABLE_MAX rows */
	bpf_loop(25, uw_row_step, &q, 0);
	if (!q.lo || q.failed)
		return NULL;
	r = uw_row_at(q.first + q.lo - 1);
	if (!r)
		return NULL;
	if (r->pc + m->bias > *lo)
		*lo = r->pc + m->bias;
	next = q.lo < t->nrows ? uw_row_at(q.first + q.lo) : NULL;
	if (next && next->pc + m->bias < *hi)
		*hi = next->pc + m->bias;
	return r;
}

/* Reads the word at user address addr, through the window when there is one. */
static __always_inline bool uw_read(struct uw_state *w, __u64 *v, __u64 addr)
{
	struct uw_window *win = w->win;
	__u64 off, len;

	if (!win)
		return bpf_probe_read_user(v, sizeof(*v), (const void *)addr) == 0;
	off = addr - win->base;
	if (addr < win->base || off + sizeof(*v) > win->len) {
		/* refill from addr, up to UW_WINDOW bytes within its page */
		len = 4096 - (addr & 4095);
		if (len > UW_WINDOW)
			len = UW_WINDOW;
		if (len < sizeof(*v))
			return bpf_probe_read_user(v, sizeof(*v), (const void *)addr) == 0;
		win->len = 0;
		if (bpf_probe_read_user(win->buf, len & (UW_WINDOW * 2 - 1), (const void *)addr))
			return false;
		win->base = addr;
		win->len = len;
		off = 0;
	}
	if (off > UW_WINDOW - sizeof(*v))
		return false;
	*v = *(const __u64 *)(win->buf + off);
	return true;
}

/* One frame-pointer step: the caller of a frame that keeps rbp as its frame pointer. */
static __always_inline __u32 uw_fp_step(struct uw_state *w, __u32 fail)
{
	__u64 ra, bp;

	if (!w->bp)
		return UW_OUTERMOST; /* _start and thread starts clear rbp */
	if (w->bp < w->sp || !uw_read(w, &bp, w->bp) || !uw_read(w, &ra, w->bp + 8))
		return fail;
	w->sp = w->bp + 16;
	w->bp = bp;
	w->ip = ra;
	w->bx_lost = 1; /* the frame may have saved and used it: nothing says */
	return UW_GO_ON;
}

/*
 * Offsets in the signal frame the kernel pushed (arch/x86/include/uapi/asm/
 * sigcontext.h, ucontext.h): at a signal trampoline (__restore_rt) rsp points
 * at the struct ucontext, whose uc_mcontext (a struct sigcontext) follows
 * uc_flags, uc_link and uc_stack.
 */
#define UW_UC_MCONTEXT 40
#define UW_SC_RBP 80
#define UW_SC_RBX 88
#define UW_SC_RSP 120
#define UW_SC_RIP 128

/* Steps over a signal frame: the interrupted code's registers, as the kernel saved them. */
static __always_inline __u32 uw_signal_step(struct uw_state *w)
{
	__u64 sc = w->sp + UW_UC_MCONTEXT, ip, sp, bp, bx = 0;

	if (!uw_read(w, &ip, sc + UW_SC_RIP) || !uw_read(w, &sp, sc + UW_SC_RSP) ||
	    !uw_read(w, &bp, sc + UW_SC_RBP))
		return UW_SIGNAL;
	w->bx_lost = !uw_read(w, &bx, sc + UW_SC_RBX);
	w->bx = bx;
	w->ip = ip;
	w->sp = sp;
	w->bp = bp;
	w->interrupted = 1;
	return UW_GO_ON;
}

/*
 * The caller's rbx, where a row says the frame saved it (read as rbp is;
 * followed only for the rbx-based CFAs further out, so a save that cannot be
 * read marks it lost rather than ending the walk).
 */
static __always_inline void uw_restore_rbx(struct uw_state *w, const struct ember_unwind_row *r,
					   __u64 cfa)
{
	__u64 bx;

	if (r->rbx_kind == EMBER_RBP_LOST) {
		w->bx_lost = 1;
	} else if (r->rbx_kind == EMBER_RBP_CFA) {
		if (uw_read(w, &bx, cfa + r->rbx_off))
			w->bx = bx;
		else if (cfa + r->rbx_off >= w->sp)
			w->bx_lost = 1;
		/* else below sp, popped already: rbx holds it */
	}
}

/* One table step: the caller of a frame whose row says where its CFA is. */
static __always_inline __u32 uw_table_step(struct uw_state *w, const struct ember_unwind_row *r)
{
	__u64 cfa, ra, bp;

	switch (r->cfa_kind) {
	case EMBER_CFA_RSP:
		cfa = w->sp + r->cfa_off;
		break;
	case EMBER_CFA_RBP:
		cfa = w->bp + r->cfa_off;
		break;
	case EMBER_CFA_RBX:
		if (w->bx_lost)
			return UW_BAD_RULE;
		cfa = w->bx + r->cfa_off;
		break;
	case EMBER_CFA_PLT:
		cfa = w->sp + 8 + ((w->ip & 15) >= (__u64)r->cfa_off ? 8 : 0);
		break;
	case EMBER_CFA_END:
		return UW_OUTERMOST;
	case EMBER_CFA_SIGNAL:
		return uw_signal_step(w);
	default:
		return UW_BAD_RULE;
	}
	/* the caller's frame lies above this one: anything else is a bad rule or stack */
	if (cfa <= w->sp || !uw_read(w, &ra, cfa - 8))
		return UW_UNREADABLE;
	if (r->rbp_kind == EMBER_RBP_CFA) {
		if (uw_read(w, &bp, cfa + r->rbp_off))
			w->bp = bp;
		else if (cfa + r->rbp_off >= w->sp)
			return UW_UNREADABLE;
		/* else below sp, popped already (an epilogue's rule keeps the save): rbp holds it */
	}
	uw_restore_rbx(w, r, cfa);
	w->sp = cfa;
	w->ip = ra;
	return UW_GO_ON;
}

/*
 * A frame outside every mapping the process was given. Where it is the
 * interrupted instruction (the leaf), code runs there: a mapping is surely
 * missing. A caller's address may be frame-pointer garbage instead.
 */
static __always_inline void uw_mark_stale(struct uw_state *w)
{
	__u32 how = w->n == 1 ? EMBER_UNWIND_STALE_LEAF : EMBER_UNWIND_STALE_CALLER;

	if (how > w->stale)
		w->stale = how;
}

/*
 * The row in force at address at of the walked process, copied into *row:
 * false where no table covers it. From the CPU's cache, or found and cached.
 */
static __always_inline bool uw_lookup(struct uw_state *w, __u64 at, struct ember_unwind_row *row)
{
	/*
	 * Direct-mapped by the address's 16-byte block, offset per process: a
	 * stack's frames in one binary's text fall in neighbouring slots, a few
	 * pages of the cache, where a scattering hash touched a page per frame,
	 * each a TLB and a cache miss at 19 Hz, when nothing stays cached.
	 */
	__u32 slot = (__u32)((at >> 4) + w->tgid * 0x9e3779b1u) % EMBER_UNWIND_CACHE_SLOTS;
	__u64 lo = at, hi = at + 1;
	struct uw_cached *c = bpf_map_lookup_elem(&unwind_cache, &slot);
	const struct ember_unwind_map *m;
	const struct ember_unwind_row *r;

	if (c && c->lo <= at && at < c->hi && c->tgid == w->tgid && c->gen == w->proc->gen) {
		if (!c->in_map)
			uw_mark_stale(w);
		*row = c->row;
		return c->has_row;
	}
	m = uw_find_map(w->proc, at);
	if (m) { /* the row's range, within the mapping; else this address alone */
		lo = m->start;
		hi = m->end;
	}
	r = m ? uw_find_row(m, at, &lo, &hi) : NULL;
	if (!r) {
		lo = at;
		hi = at + 1;
	}
	if (!m)
		uw_mark_stale(w);
	if (r)
		*row = *r;
	if (c) {
		c->lo = lo;
		c->hi = hi;
		c->tgid = w->tgid;
		c->gen = w->proc->gen;
		c->in_map = m != NULL;
		c->has_row = r != NULL;
		c->row = *row;
	}
	return r != NULL;
}

/* The rule for the frame at w->ip, then one step to its caller. */
static __always_inline __u32 uw_step(struct uw_state *w)
{
	/* a return address is after its call: look the call itself up */
	__u64 at = w->n > 1 && !w->interrupted ? w->ip - 1 : w->ip;
	struct ember_unwind_row row = {.cfa_kind = EMBER_CFA_NONE};
	bool found = w->proc && uw_lookup(w, at, &row);

	w->interrupted = 0;
	if (found && row.cfa_kind != EMBER_CFA_FP && row.cfa_kind != EMBER_CFA_NONE) {
		w->by_table++;
		return uw_table_step(w, &row);
	}
	if (found && row.cfa_kind == EMBER_CFA_FP) {
		w->bad_rule++;
		return uw_fp_step(w, UW_BAD_RULE);
	}
	w->by_fp++;
	return uw_fp_step(w, UW_NO_TABLE);
}

static long uw_loop_step(__u32 i, void *arg)
{
	struct uw_state *w = arg;
	__u32 n = w->n;

	if (n >= EMBER_MAX_STACK_DEPTH) {
		w->end = UW_DEPTH;
		return 1;
	}
	w->st->ips[n & (EMBER_MAX_STACK_DEPTH - 1)] = w->ip;
	w->n = n + 1;
	w->end = uw_step(w);
	if (!w->end && w->ip < UW_MIN_IP)
		w->end = UW_OUTERMOST; /* returns to 0: the end of a frame-pointer chain */
	else if (!w->end && w->ip >= UW_MAX_IP)
		w->end = UW_NO_TABLE; /* a chain through no frames (text read as an address) */
	return w->end ? 1 : 0;
}

/*
 * Marks tgid's mappings stale (how: EMBER_UNWIND_STALE_*). A new mark, or one
 * made surer, wakes the daemon (EMBER_PROC_STALE), whose unwinder reads the
 * process again; a mark already there waits for it (the unwinder keeps those
 * it read a moment ago for later, with a timer). Objects without the
 * process-event ring only mark: their owner reports.
 */
static __always_inline void uw_note_stale(__u32 tgid, __u8 how)
{
	__u8 *was = bpf_map_lookup_elem(&unwind_stale, &tgid);

	if (was && *was >= how)
		return;
	if (bpf_map_update_elem(&unwind_stale, &tgid, &how, BPF_ANY))
		return;
#ifdef EMBER_PROC_MAPS_BPF_H
	if (proc_event(EMBER_PROC_STALE, tgid, EMBER_PROC_SRC_OTHER, BPF_RB_FORCE_WAKEUP))
		bpf_map_delete_elem(&unwind_stale, &tgid); /* ring full: marked again later */
#endif
}

/* What a walk did, for the caller's metrics (EMBER_CPU_M_*). */
struct uw_result {
	__u32 end;     /* EMBER_CPU_M_END_*: why the stack ended */
	__u32 no_proc; /* 1: the process's tables were not loaded (all frame pointers) */
	__u32 by_table, by_fp, bad_rule; /* frames by how they were unwound */
};

/* tgid's mappings and their tables, or NULL while the daemon has not loaded them. */
static __always_inline const struct ember_unwind_proc *uw_proc(__u32 tgid)
{
	return bpf_map_lookup_elem(&unwind_procs, &tgid);
}

/*
 * Walks the user stack whose registers are regs into st, leaf first, with
 * proc (uw_proc(tgid); NULL: frame pointers), and says in res how it went.
 * lib/symbols/uwalk.c walks a copy of a stack by the same rules.
 */
static __always_inline void uw_walk(struct ember_stack *st, __u32 tgid,
				    const struct ember_unwind_proc *proc,
				    const struct ember_uregs *regs, struct uw_result *res)
{
	struct uw_state w = {.st = st,
			     .ip = regs->ip,
			     .sp = regs->sp,
			     .bp = regs->bp,
			     .bx = regs->bx,
			     .tgid = tgid,
			     .proc = proc};
	__u32 zero = 0;

	st->ips[0] = regs->ip;
	st->len = 1;
	st->flags = 0;
	/*
	 * A task that has no memory any more: a process exiting, its address
	 * space torn down after exit_mm. Nothing is there to read (and its
	 * tables may be dropped already: frame pointers would read rbp as the
	 * end of the chain); the walk and its tables are not at fault.
	 */
	if (!bpf_get_current_task_btf()->mm) {
		*res = (struct uw_result){.end = UW_EXITED, .no_proc = !proc};
		return;
	}
	w.win = bpf_map_lookup_elem(&unwind_window, &zero);
	if (w.win && w.win->busy) {
		/*
		 * A sample taken while a tracepoint's walk runs on this CPU (the
		 * cpu object's exit walk): the window and the row cache are that
		 * walk's. The leaf alone, as unreadable; a rare sample.
		 */
		*res = (struct uw_result){.end = UW_UNREADABLE, .no_proc = !proc};
		return;
	}
	if (w.win) {
		w.win->len = 0;
		w.win->busy = 1;
	}

	/* bound: the deepest stack kept, and one more step that notices the limit */
	bpf_loop(EMBER_MAX_STACK_DEPTH + 1, uw_loop_step, &w, 0);
	if (w.win)
		w.win->busy = 0;
	if (w.stale)
		uw_note_stale(tgid, w.stale);
	st->len = w.n;
	st->flags = w.end == UW_DEPTH ? EMBER_STACK_TRUNCATED : 0;
	res->end = w.end ? w.end : UW_DEPTH;
	res->no_proc = !w.proc;
	res->by_table = w.by_table;
	res->by_fp = w.by_fp;
	res->bad_rule = w.bad_rule;
}

#endif /* EMBER_UNWIND_BPF_H */
