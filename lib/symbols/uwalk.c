// SPDX-License-Identifier: MIT
/*
 * The user stack walk of bpf/unwind.bpf.h over a copy of the stack (uwalk.h).
 * Each function here mirrors the BPF helper of the same role (uw_find_map,
 * uw_find_row, uw_table_step, uw_fp_step, uw_signal_step, uw_step). The
 * stack window, which only saves the BPF walk time, has no counterpart; a row
 * cache is the rule source's business (uwalk_rows).
 */
#include <string.h>

#include "uwalk.h"

/* Lowest address a frame may return to: the first page is never mapped (UW_MIN_IP). */
#define UWALK_MIN_IP 4096
/* Addresses from here on are no user code: a frame-pointer chain left the frames (UW_MAX_IP). */
#define UWALK_MAX_IP (1ull << 56)

/* Offsets in the signal frame (UW_UC_MCONTEXT, UW_SC_*: asm/sigcontext.h, ucontext.h). */
#define UC_MCONTEXT 40
#define SC_RBP 80
#define SC_RBX 88
#define SC_RSP 120
#define SC_RIP 128

struct walk {
	bool beyond; /* a read went past the copy's end: a deeper stack than it holds */
	const struct ember_unwind_proc *proc;
	const struct uwalk_rows *src;
	const struct uwalk_stack *stk;
	uint64_t ip, sp, bp, bx;
	bool bx_lost; /* bx is not the frame's rbx (a rule not followed) */
	uint32_t n;
	bool interrupted; /* ip is where a signal hit, not a return address */
	struct uwalk_result *out;
};

/* The word at user address addr, from the copy only. */
static bool read_word(struct walk *w, uint64_t *v, uint64_t addr)
{
	const struct uwalk_stack *s = w->stk;

	if (!s->bytes || addr < s->base || addr - s->base > s->len ||
	    s->len - (addr - s->base) < sizeof(*v)) {
		/* above the copy, within reach of a stack: what a longer copy would hold */
		w->beyond = addr >= s->base && addr - s->base < (64u << 20);
		return false;
	}
	memcpy(v, s->bytes + (addr - s->base), sizeof(*v));
	return true;
}

/* The mapping holding ip, or NULL. */
static const struct ember_unwind_map *find_map(const struct ember_unwind_proc *p, uint64_t ip)
{
	uint32_t lo = 0, hi = p->nmaps < EMBER_UNWIND_MAPS_MAX ? p->nmaps : EMBER_UNWIND_MAPS_MAX;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (p->maps[mid].start <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	return ip < p->maps[lo - 1].end ? &p->maps[lo - 1] : NULL;
}

bool uwalk_search(uint32_t nrows, uwalk_row_fn row, void *arg, uint64_t pc,
		  struct ember_unwind_row *out, uint64_t *lo, uint64_t *hi)
{
	struct ember_unwind_row next;
	uint32_t l = 0, h = nrows;

	if (!nrows || nrows > EMBER_UNWIND_ROWS_PER_TABLE_MAX)
		return false;
	while (l < h) {
		uint32_t mid = l + (h - l) / 2;
		struct ember_unwind_row r;

		if (!row(arg, mid, &r))
			return false;
		if (r.pc <= pc)
			l = mid + 1;
		else
			h = mid;
	}
	if (!l || !row(arg, l - 1, out))
		return false;
	*lo = out->pc;
	*hi = UINT64_MAX;
	if (l < nrows) /* an unreadable next row: the rule holds for pc alone */
		*hi = row(arg, l, &next) ? next.pc : pc + 1;
	return true;
}

/* The row in force at ip within mapping m: false where there is none. */
static bool find_row(const struct walk *w, const struct ember_unwind_map *m, uint64_t ip,
		     struct ember_unwind_row *row)
{
	uint64_t key = ip - m->bias;

	if (m->table == EMBER_UNWIND_NO_TABLE || key > 0xffffffffULL)
		return false;
	return w->src->find(w->src->arg, m->table, key, row);
}

static uint32_t fp_step(struct walk *w, uint32_t fail)
{
	uint64_t ra, bp;

	if (!w->bp)
		return EMBER_CPU_M_END_OUTERMOST;
	if (w->bp < w->sp || !read_word(w, &bp, w->bp) || !read_word(w, &ra, w->bp + 8))
		return fail;
	w->sp = w->bp + 16;
	w->bp = bp;
	w->ip = ra;
	w->bx_lost = true;
	return 0;
}

static uint32_t signal_step(struct walk *w)
{
	uint64_t sc = w->sp + UC_MCONTEXT, ip, sp, bp, bx = 0;

	if (!read_word(w, &ip, sc + SC_RIP) || !read_word(w, &sp, sc + SC_RSP) ||
	    !read_word(w, &bp, sc + SC_RBP))
		return EMBER_CPU_M_END_SIGNAL;
	w->bx_lost = !read_word(w, &bx, sc + SC_RBX);
	w->bx = bx;
	w->ip = ip;
	w->sp = sp;
	w->bp = bp;
	w->interrupted = true;
	return 0;
}

/* The caller's rbx where the frame saved it (uw_restore_rbx). */
static void restore_rbx(struct walk *w, const struct ember_unwind_row *r, uint64_t cfa)
{
	uint64_t bx;

	if (r->rbx_kind == EMBER_RBP_LOST) {
		w->bx_lost = true;
	} else if (r->rbx_kind == EMBER_RBP_CFA) {
		if (read_word(w, &bx, cfa + (int64_t)r->rbx_off))
			w->bx = bx;
		else if (cfa + (int64_t)r->rbx_off >= w->sp)
			w->bx_lost = true;
	}
}

static uint32_t table_step(struct walk *w, const struct ember_unwind_row *r)
{
	uint64_t cfa, ra, bp;

	switch (r->cfa_kind) {
	case EMBER_CFA_RSP:
		cfa = w->sp + (int64_t)r->cfa_off;
		break;
	case EMBER_CFA_RBP:
		cfa = w->bp + (int64_t)r->cfa_off;
		break;
	case EMBER_CFA_RBX:
		if (w->bx_lost)
			return EMBER_CPU_M_END_BAD_RULE;
		cfa = w->bx + (int64_t)r->cfa_off;
		break;
	case EMBER_CFA_PLT:
		cfa = w->sp + 8 + ((w->ip & 15) >= (uint64_t)(int64_t)r->cfa_off ? 8 : 0);
		break;
	case EMBER_CFA_END:
		return EMBER_CPU_M_END_OUTERMOST;
	case EMBER_CFA_SIGNAL:
		return signal_step(w);
	default:
		return EMBER_CPU_M_END_BAD_RULE;
	}
	if (cfa <= w->sp || !read_word(w, &ra, cfa - 8))
		return EMBER_CPU_M_END_UNREADABLE;
	if (r->rbp_kind == EMBER_RBP_CFA) {
		if (read_word(w, &bp, cfa + (int64_t)r->rbp_off))
			w->bp = bp;
		else if (cfa + (int64_t)r->rbp_off >= w->sp)
			return EMBER_CPU_M_END_UNREADABLE;
		/* else popped already (an epilogue's rule keeps the save): rbp holds it */
	}
	restore_rbx(w, r, cfa);
	w->sp = cfa;
	w->ip = ra;
	return 0;
}

/* The rule for the frame at w->ip, then one step to its caller (uw_step). */
static uint32_t step(struct walk *w)
{
	uint64_t at = w->n > 1 && !w->interrupted ? w->ip - 1 : w->ip;
	struct ember_unwind_row row = {.cfa_kind = EMBER_CFA_NONE};
	const struct ember_unwind_map *m = w->proc ? find_map(w->proc, at) : NULL;
	bool found = m && find_row(w, m, at, &row);

	w->interrupted = false;
	if (found && row.cfa_kind != EMBER_CFA_FP && row.cfa_kind != EMBER_CFA_NONE) {
		w->out->by_table++;
		return table_step(w, &row);
	}
	if (found && row.cfa_kind == EMBER_CFA_FP) {
		w->out->bad_rule++;
		return fp_step(w, EMBER_CPU_M_END_BAD_RULE);
	}
	w->out->by_fp++;
	return fp_step(w, EMBER_CPU_M_END_NO_TABLE);
}

void uwalk(const struct ember_unwind_proc *proc, const struct uwalk_rows *src,
	   const struct uwalk_stack *stk, const struct uwalk_regs *regs, struct uwalk_result *out)
{
	struct walk w = {.proc = proc,
			 .src = src,
			 .stk = stk,
			 .ip = regs->ip,
			 .sp = regs->sp,
			 .bp = regs->bp,
			 .bx = regs->bx,
			 .out = out};
	uint32_t end = 0;

	memset(out, 0, sizeof(*out));
	while (!end) {
		if (w.n >= EMBER_MAX_STACK_DEPTH) {
			end = EMBER_CPU_M_END_DEPTH;
			out->truncated = true;
			break;
		}
		out->ips[w.n++] = w.ip;
		end = step(&w);
		if (!end && w.ip < UWALK_MIN_IP)
			end = EMBER_CPU_M_END_OUTERMOST;
		else if (!end && w.ip >= UWALK_MAX_IP)
			end = EMBER_CPU_M_END_NO_TABLE; /* text read as an address */
	}
	out->n = w.n;
	out->end = end;
	out->copy_short =
		w.beyond && end != EMBER_CPU_M_END_OUTERMOST && end != EMBER_CPU_M_END_DEPTH;
}
