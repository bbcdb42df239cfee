// SPDX-License-Identifier: MIT
/*
 * uwalk: the user-space walk over a stack copy, on hand-built tables and
 * stacks whose frames are known: each rule kind, frame pointers where no
 * table is, a signal frame, the copy's end, and stacks that never end.
 */
#include <stdint.h>
#include <string.h>

#include "suites.h"
#include "uwalk.h"

/* The text mapping every test uses: table 0 covers it, row pcs = address - TEXT. */
#define TEXT 0x400000ull
#define TEXT_END 0x500000ull
/* Where the copy of the stack starts (sp's page). */
#define STACK 0x7ffc0000ull

/* A table of rows and a stack copy, built by each test. */
struct fixture {
	struct ember_unwind_row rows[16];
	uint32_t nrows;
	bool fail_reads; /* the row source fails every read */
	struct ember_unwind_proc proc;
	uint8_t stack[16384];
	uint64_t bx; /* rbx at the leaf */
	struct uwalk_result res;
};

static struct fixture fx;

static bool row_at(void *arg, uint32_t i, struct ember_unwind_row *out)
{
	struct fixture *f = arg;

	if (f->fail_reads || i >= f->nrows)
		return false;
	*out = f->rows[i];
	return true;
}

static bool find(void *arg, uint32_t table, uint64_t pc, struct ember_unwind_row *out)
{
	struct fixture *f = arg;
	uint64_t lo, hi;

	return table == 0 && uwalk_search(f->nrows, row_at, f, pc, out, &lo, &hi);
}

static void setup(void)
{
	memset(&fx, 0, sizeof(fx));
	fx.proc.nmaps = 1;
	fx.proc.maps[0] = (struct ember_unwind_map){.start = TEXT, .end = TEXT_END, .bias = TEXT};
}

static void add_row(uint32_t pc, uint8_t kind, int32_t off, uint8_t rbp_kind, int16_t rbp_off)
{
	fx.rows[fx.nrows++] = (struct ember_unwind_row){.pc = pc,
							.cfa_kind = kind,
							.cfa_off = off,
							.rbp_kind = rbp_kind,
							.rbp_off = rbp_off};
}

static void put(uint64_t addr, uint64_t v)
{
	ck_assert(addr >= STACK && addr + 8 <= STACK + sizeof(fx.stack));
	memcpy(fx.stack + (addr - STACK), &v, sizeof(v));
}

static void walk(bool with_proc, size_t len, uint64_t ip, uint64_t sp, uint64_t bp)
{
	struct uwalk_rows src = {find, &fx};
	struct uwalk_stack stk = {fx.stack, STACK, len};
	struct uwalk_regs regs = {.ip = ip, .sp = sp, .bp = bp, .bx = fx.bx};

	uwalk(with_proc ? &fx.proc : NULL, &src, &stk, &regs, &fx.res);
}

/* A walk over the copy's bytes from user address base on (sp's, say: no red zone). */
static void walk_from(uint64_t base, uint64_t ip, uint64_t sp, uint64_t bp)
{
	struct uwalk_rows src = {find, &fx};
	struct uwalk_stack stk = {fx.stack + (base - STACK), base,
				  sizeof(fx.stack) - (base - STACK)};
	struct uwalk_regs regs = {.ip = ip, .sp = sp, .bp = bp, .bx = fx.bx};

	uwalk(&fx.proc, &src, &stk, &regs, &fx.res);
}

static void expect_ips(const uint64_t *want, uint32_t n)
{
	ck_assert_uint_eq(fx.res.n, n);
	for (uint32_t i = 0; i < n; i++)
		ck_assert_msg(fx.res.ips[i] == want[i], "frame %u: %#lx, want %#lx", i,
			      (unsigned long)fx.res.ips[i], (unsigned long)want[i]);
}

/* Functions without frame pointers: CFA = rsp + offset, the return address below it. */
START_TEST(test_rsp_rules)
{
	uint64_t sp = STACK + 0x100;

	add_row(0x000, EMBER_CFA_RSP, 8, EMBER_RBP_SAME, 0);  /* entry: ra at [rsp] */
	add_row(0x100, EMBER_CFA_RSP, 16, EMBER_RBP_SAME, 0); /* after one push */
	add_row(0x200, EMBER_CFA_END, 0, EMBER_RBP_SAME, 0);  /* _start */
	/* leaf at 0x150 (one push): ra at sp + 8 -> 0x80 (entry rule); its ra at sp + 16 */
	put(sp + 8, TEXT + 0x81);
	put(sp + 16, TEXT + 0x250);
	walk(true, sizeof(fx.stack), TEXT + 0x150, sp, 0xdead);
	expect_ips((const uint64_t[]){TEXT + 0x150, TEXT + 0x81, TEXT + 0x250}, 3);
	ck_assert_uint_eq(fx.res.end, EMBER_SAMPLE_M_END_OUTERMOST);
	ck_assert_uint_eq(fx.res.by_table, 3);
	ck_assert_uint_eq(fx.res.by_fp, 0);
	ck_assert(!fx.res.truncated && !fx.res.copy_short);
}
END_TEST

/* A frame-pointer frame by its table: CFA = rbp + 16, the caller's rbp saved at CFA - 16. */
START_TEST(test_rbp_rule)
{
	uint64_t sp = STACK + 0x100, bp = STACK + 0x140, caller_bp = STACK + 0x200;

	add_row(0x000, EMBER_CFA_RBP, 16, EMBER_RBP_CFA, -16);
	add_row(0x100, EMBER_CFA_END, 0, EMBER_RBP_SAME, 0);
	put(bp, caller_bp);
	put(bp + 8, TEXT + 0x101);
	walk(true, sizeof(fx.stack), TEXT + 0x40, sp, bp);
	expect_ips((const uint64_t[]){TEXT + 0x40, TEXT + 0x101}, 2);
	ck_assert_uint_eq(fx.res.end, EMBER_SAMPLE_M_END_OUTERMOST);
}
END_TEST

/*
 * An epilogue after its pop of rbp, whose CFI still says rbp is saved (at CFA -
 * 24: below sp now). The caller keeps rbp as its frame pointer. The saved rbp
 * is read in the red zone where the copy holds it (the BPF walk reads it in
 * place), else it is the register's: the value just popped.
 */
START_TEST(test_epilogue_popped_rbp)
{
	uint64_t sp = STACK + 0x100, caller_bp = STACK + 0x200;
	const uint64_t want[] = {TEXT + 0x40, TEXT + 0x181, TEXT + 0x201};

	add_row(0x000, EMBER_CFA_RSP, 16, EMBER_RBP_CFA, -24); /* one pop and ret to go */
	add_row(0x100, EMBER_CFA_RBP, 16, EMBER_RBP_CFA, -16); /* the caller */
	add_row(0x200, EMBER_CFA_END, 0, EMBER_RBP_SAME, 0);
	put(sp + 8, TEXT + 0x181);
	put(sp - 8, caller_bp); /* the popped slot, in the red zone */
	put(caller_bp, 0);
	put(caller_bp + 8, TEXT + 0x201);
	/* the red zone in the copy: memory, even where the register says otherwise */
	walk(true, sizeof(fx.stack), TEXT + 0x40, sp, 0xbad0);
	expect_ips(want, 3);
	ck_assert_uint_eq(fx.res.end, EMBER_SAMPLE_M_END_OUTERMOST);
	/* a copy from sp on: the register */
	walk_from(sp, TEXT + 0x40, sp, caller_bp);
	expect_ips(want, 3);
	ck_assert_uint_eq(fx.res.end, EMBER_SAMPLE_M_END_OUTERMOST);
	ck_assert(!fx.res.copy_short);
	/* a slot above sp past the copy's end (a rule saving rbp above its ra) is unreadable */
	fx.rows[0].rbp_off = 8;
	walk(true, 0x100 + 16, TEXT + 0x40, sp, caller_bp);
	ck_assert_uint_eq(fx.res.n, 1);
	ck_assert_uint_eq(fx.res.end, EMBER_SAMPLE_M_END_UNREADABLE);
}
END_TEST

/* The last row added saves the caller's rbx at CFA + off (or loses it: EMBER_RBP_LOST). */
static void save_rbx(uint8_t kind, int16_t off)
{
	fx.rows[fx.nrows - 1].rbx_kind = kind;
	fx.rows[fx.nrows - 1].rbx_off = off;
}

/*
 * ld.so's lazy-binding trampoline (_dl_runtime_resolve): it saves rbx, keeps
 * its entry rsp there and realigns rsp, so its CFA is rbx + 32; its callees
 * save rbx in turn. The walk takes rbx from the registers, then from each save.
 */
START_TEST(test_rbx_rule)
{
	uint64_t sp = STACK + 0x100, cfa1 = sp + 0x200, tramp_bx = cfa1 - 32;
	const uint64_t want[] = {TEXT + 0x240, TEXT + 0x151, TEXT + 0x81, TEXT + 0x301};

	add_row(0x000, EMBER_CFA_RSP, 8, EMBER_RBP_SAME, 0);  /* the PLT call's caller */
	add_row(0x100, EMBER_CFA_RBX, 32, EMBER_RBP_SAME, 0); /* the trampoline */
	save_rbx(EMBER_RBP_CFA, -32);
	add_row(0x200, EMBER_CFA_RSP, 24, EMBER_RBP_SAME, 0); /* _dl_fixup: pushed rbx */
	save_rbx(EMBER_RBP_CFA, -16);
	add_row(0x300, EMBER_CFA_END, 0, EMBER_RBP_SAME, 0);
	put(sp + 16, TEXT + 0x151); /* the leaf's ra, into the trampoline */
	put(sp + 8, tramp_bx);	    /* the trampoline's rbx, saved by the leaf */
	put(cfa1 - 8, TEXT + 0x81); /* the trampoline's ra: the caller's */
	put(cfa1 - 32, 0x1234);	    /* the caller's rbx */
	put(cfa1, TEXT + 0x301);
	fx.bx = 0xbad0; /* the leaf's own rbx: not the trampoline's */
	walk(true, sizeof(fx.stack), TEXT + 0x240, sp, 0);
	expect_ips(want, 4);
	ck_assert_uint_eq(fx.res.end, EMBER_SAMPLE_M_END_OUTERMOST);
	ck_assert_uint_eq(fx.res.by_table, 4);

	/* the trampoline as the leaf: rbx from the registers */
	fx.bx = tramp_bx;
	walk(true, sizeof(fx.stack), TEXT + 0x150, cfa1 - 0x80, 0);
	expect_ips((const uint64_t[]){TEXT + 0x150, TEXT + 0x81, TEXT + 0x301}, 3);
	ck_assert_uint_eq(fx.res.end, EMBER_SAMPLE_M_END_OUTERMOST);

	/* a callee whose rule for rbx the walk cannot follow: the trampoline's CFA is unknown */
	fx.rows[2].rbx_kind = EMBER_RBP_LOST;
	fx.bx = 0xbad0;
	walk(true, sizeof(fx.stack), TEXT + 0x240, sp, 0);
	expect_ips(want, 2);
	ck_assert_uint_eq(fx.res.end, EMBER_SAMPLE_M_END_BAD_RULE);

	/* nor after a frame-pointer frame, which may have used rbx */
	fx.rows[2] = (struct ember_unwind_row){.pc = 0x200, .cfa_kind = EMBER_CFA_NONE};
	put(sp + 0x40, 0);
	put(sp + 0x48, TEXT + 0x151);
	fx.bx = tramp_bx;
	walk(true, sizeof(fx.stack), TEXT + 0x240, sp, sp + 0x40);
	expect_ips(want, 2);
	ck_assert_uint_eq(fx.res.by_fp, 1);
	ck_assert_uint_eq(fx.res.end, EMBER_SAMPLE_M_END_BAD_RULE);
}
END_TEST

/* The PLT's rule: CFA = rsp + 8, + 8 more past the threshold within its 16-byte entry. */
START_TEST(test_plt_rule)
{
	uint64_t sp = STACK + 0x100;

	add_row(0x000, EMBER_CFA_PLT, 11, EMBER_RBP_SAME, 0);
	add_row(0x100, EMBER_CFA_END, 0, EMBER_RBP_SAME, 0);
	put(sp, TEXT + 0x111);	   /* below the threshold: ra at [rsp] */
	put(sp + 8, TEXT + 0x121); /* past it: ra at [rsp + 8] */
	walk(true, sizeof(fx.stack), TEXT + 0x24, sp, 0);
	expect_ips((const uint64_t[]){TEXT + 0x24, TEXT + 0x111}, 2);
	walk(true, sizeof(fx.stack), TEXT + 0x2c, sp, 0);
	expect_ips((const uint64_t[]){TEXT + 0x2c, TEXT + 0x121}, 2);
}
END_TEST

/* No proc, a mapping without a table, a source that fails: frame pointers, as in BPF. */
START_TEST(test_frame_pointers)
{
	uint64_t sp = STACK + 0x100, bp1 = STACK + 0x180, bp2 = STACK + 0x300;

	put(bp1, bp2);
	put(bp1 + 8, 0x7f0000001234ull);
	put(bp2, 0);
	put(bp2 + 8, 0x7f0000005678ull);
	walk(false, sizeof(fx.stack), 0x7f0000000010ull, sp, bp1);
	expect_ips((const uint64_t[]){0x7f0000000010ull, 0x7f0000001234ull, 0x7f0000005678ull}, 3);
	ck_assert_uint_eq(fx.res.end, EMBER_SAMPLE_M_END_OUTERMOST); /* rbp 0: the chain's end */
	ck_assert_uint_eq(fx.res.by_fp, 3);

	/* in a mapping with no table: the same */
	fx.proc.maps[0].table = EMBER_UNWIND_NO_TABLE;
	walk(true, sizeof(fx.stack), TEXT + 0x10, sp, bp1);
	ck_assert_uint_eq(fx.res.n, 3);
	ck_assert_uint_eq(fx.res.by_fp, 3);

	/* a chain that reaches text (eight ASCII bytes as a return address): ends before it */
	put(bp2, STACK + 0x400);
	put(bp2 + 8, 0x4f42444e41535f52ull); /* "R_SANDBO" */
	walk(false, sizeof(fx.stack), 0x7f0000000010ull, sp, bp1);
	expect_ips((const uint64_t[]){0x7f0000000010ull, 0x7f0000001234ull}, 2);
	ck_assert_uint_eq(fx.res.end, EMBER_SAMPLE_M_END_NO_TABLE);
	put(bp2, 0);
	put(bp2 + 8, 0x7f0000005678ull);

	/* a table whose rows cannot be read: the same */
	fx.proc.maps[0].table = 0;
	add_row(0x000, EMBER_CFA_RSP, 8, EMBER_RBP_SAME, 0);
	fx.fail_reads = true;
	walk(true, sizeof(fx.stack), TEXT + 0x10, sp, bp1);
	ck_assert_uint_eq(fx.res.n, 3);
	ck_assert_uint_eq(fx.res.by_table, 0);
}
END_TEST

/* A rule the walk cannot evaluate: frame pointers, counted as such. */
START_TEST(test_bad_rule)
{
	uint64_t sp = STACK + 0x100, bp = STACK + 0x180;

	add_row(0x000, EMBER_CFA_FP, 0, EMBER_RBP_SAME, 0);
	put(bp, 0x10); /* garbage rbp: the next step fails */
	put(bp + 8, 0x7f0000001234ull);
	walk(true, sizeof(fx.stack), TEXT + 0x10, sp, bp);
	expect_ips((const uint64_t[]){TEXT + 0x10, 0x7f0000001234ull}, 2);
	ck_assert_uint_eq(fx.res.bad_rule, 1);
	ck_assert_uint_eq(fx.res.end, EMBER_SAMPLE_M_END_NO_TABLE);
}
END_TEST

/* A signal trampoline: the interrupted code's registers from the frame the kernel pushed. */
START_TEST(test_signal_frame)
{
	uint64_t sp = STACK + 0x100, isp = STACK + 0x800;

	add_row(0x000, EMBER_CFA_SIGNAL, 0, EMBER_RBP_SAME, 0);
	add_row(0x100, EMBER_CFA_RSP, 8, EMBER_RBP_SAME, 0);
	add_row(0x200, EMBER_CFA_END, 0, EMBER_RBP_SAME, 0);
	put(sp + 40 + 128, TEXT + 0x180); /* uc_mcontext's rip: the interrupted instruction */
	put(sp + 40 + 120, isp);	  /* its rsp */
	put(sp + 40 + 80, 0);		  /* its rbp */
	put(isp, TEXT + 0x201);
	walk(true, sizeof(fx.stack), TEXT + 0x10, sp, 0);
	expect_ips((const uint64_t[]){TEXT + 0x10, TEXT + 0x180, TEXT + 0x201}, 3);
	ck_assert_uint_eq(fx.res.end, EMBER_SAMPLE_M_END_OUTERMOST);
}
END_TEST

/* A return address past the copy's end: the walk stops there, marked short. */
START_TEST(test_copy_short)
{
	uint64_t sp = STACK + 0x100;

	add_row(0x000, EMBER_CFA_RSP, 8, EMBER_RBP_SAME, 0);
	put(sp, TEXT + 0x10);
	put(sp + 8, TEXT + 0x10);
	walk(true, 0x108, TEXT + 0x10, sp, 0); /* the copy holds [sp - 0x100, sp + 8) */
	ck_assert_uint_eq(fx.res.n, 2);
	ck_assert_uint_eq(fx.res.end, EMBER_SAMPLE_M_END_UNREADABLE);
	ck_assert(fx.res.copy_short);

	/* below sp is no stack: a rule reading there is bad, not short */
	setup();
	add_row(0x000, EMBER_CFA_RSP, -64, EMBER_RBP_SAME, 0);
	walk(true, sizeof(fx.stack), TEXT + 0x10, sp, 0);
	ck_assert_uint_eq(fx.res.n, 1);
	ck_assert_uint_eq(fx.res.end, EMBER_SAMPLE_M_END_UNREADABLE);
	ck_assert(!fx.res.copy_short);
}
END_TEST

/* A stack that never ends (each frame returns to itself): cut at the depth limit. */
START_TEST(test_depth_limit)
{
	add_row(0x000, EMBER_CFA_RSP, 8, EMBER_RBP_SAME, 0);
	for (uint64_t a = STACK; a + 8 <= STACK + sizeof(fx.stack); a += 8)
		put(a, TEXT + 0x11);
	walk(true, sizeof(fx.stack), TEXT + 0x10, STACK, 0);
	ck_assert_uint_eq(fx.res.n, EMBER_MAX_STACK_DEPTH);
	ck_assert_uint_eq(fx.res.end, EMBER_SAMPLE_M_END_DEPTH);
	ck_assert(fx.res.truncated);
}
END_TEST

/* A frame-pointer loop (rbp pointing at itself) ends at once: rbp below the new sp. */
START_TEST(test_fp_loop)
{
	uint64_t bp = STACK + 0x200;

	put(bp, bp);
	put(bp + 8, 0x7f0000001234ull);
	walk(false, sizeof(fx.stack), 0x7f0000000010ull, STACK + 0x100, bp);
	ck_assert_uint_eq(fx.res.n, 2);
	ck_assert_uint_eq(fx.res.end, EMBER_SAMPLE_M_END_NO_TABLE);
}
END_TEST

/* A V8 heap of the test's own, at HEAP: the objects an interpreted frame names. */
#define HEAP 0x10000000ull
static uint8_t heap[4096];

static void heap_put(uint64_t addr, uint64_t v)
{
	ck_assert(addr >= HEAP && addr + 8 <= HEAP + sizeof(heap));
	memcpy(heap + (addr - HEAP), &v, sizeof(v));
}

/*
 * The live process's memory, moments after the sample: its heap as it was,
 * its stack moved on (every other byte reads as 0xee); the page after the
 * heap unmapped.
 */
static bool live_read(void *arg, void *dst, size_t len, uint64_t addr)
{
	(void)arg;
	if (addr >= HEAP && addr + len <= HEAP + sizeof(heap))
		memcpy(dst, heap + (addr - HEAP), len);
	else if (addr < HEAP + sizeof(heap) && addr + len > HEAP + sizeof(heap))
		return false; /* past the heap's end: unmapped */
	else
		memset(dst, 0xee, len);
	return true;
}

/*
 * A V8 runtime's entry as the walk's tests use it: builtins at builtins
 * (0x1000 bytes), a frame's JSFunction at bp - 16 and its bytecode offset at
 * bp - 32, JSFunction types 2000-2010 with their shared info at shared,
 * BytecodeArrays of type 170; every other offset none.
 */
static void v8_rt(struct ember_rt_proc *rt, uint64_t builtins, uint16_t shared)
{
	rt->kind = EMBER_RT_V8;
	for (int i = 0; i < EMBER_RT_OFF_MAX; i++)
		rt->off[i] = EMBER_RT_OFF_NONE;
	rt->text[0] = builtins;
	rt->text[1] = builtins + 0x1000;
	rt->off[EMBER_V8_FP_FUNCTION] = 16;	   /* bp - 16: JSFunction, bp - 8: context */
	rt->off[EMBER_V8_FP_BYTECODE_OFFSET] = 32; /* bp - 32: offset, bp - 24: BytecodeArray */
	rt->off[EMBER_V8_MAP_TYPE] = 12;
	rt->off[EMBER_V8_JSFUNC_SHARED] = shared;
	rt->off[EMBER_V8_TYPE_JSFUNC_FIRST] = 2000;
	rt->off[EMBER_V8_TYPE_JSFUNC_LAST] = 2010;
	rt->off[EMBER_V8_TYPE_BYTECODE] = 170;
}

/*
 * V8 13.6's Code as the walk's tests lay it out (type 187): its instructions'
 * address at 40, flags 12 after it (the kind in their low 4 bits, baseline
 * 10), their size at 56.
 */
static void v8_code_rt(struct ember_rt_proc *rt)
{
	rt->off[EMBER_V8_TYPE_CODE] = 187;
	rt->off[EMBER_V8_CODE_START] = 40;
	rt->off[EMBER_V8_CODE_FLAGS] = 52;
	rt->off[EMBER_V8_CODE_SIZE] = 56;
	rt->off[EMBER_V8_CODE_KIND] = 15;
	rt->off[EMBER_V8_KIND_BASELINE] = 10;
}

/* A Code of kind at code, map map_code, its instructions at start, 0x1000 bytes. */
static void v8_code(uint64_t code, uint64_t map_code, uint64_t start, uint64_t kind)
{
	heap_put(code, map_code + 1);
	heap_put(code + 40, start);
	heap_put(code + 48, kind << 32);
	heap_put(code + 56, 0x1000);
}

/*
 * A deferred walk of a V8 process (daemon/sample/deferred.c): the JavaScript frame's
 * slots are read from the copy of the stack, as at the sample, not from the
 * live stack; the objects they point at from the live heap.
 */
START_TEST(test_v8_frame_from_copy)
{
	const uint64_t builtins = 0x7f0000100000ull, fn = HEAP + 0x100, map_fn = HEAP + 0x200;
	const uint64_t sfi = HEAP + 0x300, bca = HEAP + 0x400, map_bca = HEAP + 0x500;
	uint64_t sp = STACK + 0x100, bp = STACK + 0x180, word;
	struct uwalk_rows src = {find, &fx};
	struct uwalk_stack stk = {fx.stack, STACK, sizeof(fx.stack)};
	struct uwalk_mem live = {.read = live_read, .arg = NULL};
	struct uwalk_regs regs = {.ip = builtins + 0x40, .sp = sp, .bp = bp};
	struct ember_rt_proc *rt = &fx.proc.rt;

	memset(heap, 0, sizeof(heap));
	v8_rt(rt, builtins, 24);
	rt->off[EMBER_V8_BYTECODE_DATA] = 40;
	/* the heap: a JSFunction (type 2005) and its shared info, a BytecodeArray (170) */
	heap_put(fn, map_fn + 1);
	heap_put(map_fn + 12, 2005);
	heap_put(fn + 24, sfi + 1);
	heap_put(bca, map_bca + 1);
	heap_put(map_bca + 12, 170);
	/* the frame: bytecode 7 (a Smi: its offset from the array's tagged address) */
	put(bp - 32, (uint64_t)(7 + 40 - 1) << 32);
	put(bp - 24, bca + 1);
	put(bp - 16, fn + 1);
	put(bp - 8, HEAP + 0x801); /* a context: any object */
	put(bp, 0);
	put(bp + 8, 0x7f0000005678ull);
	fx.proc.nmaps = 0;
	word = EMBER_RT_WORD(EMBER_RT_V8, 7, sfi);

	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	expect_ips((const uint64_t[]){word, 0x7f0000005678ull}, 2);
	ck_assert_uint_eq(fx.res.rt_frames, 1);

	/* a copy that ends below the frame's slots: the live stack is never read instead */
	stk.len = bp - 32 - STACK;
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.rt_frames, 0);
	ck_assert_uint_eq(fx.res.ips[0], builtins + 0x40);
}
END_TEST

/*
 * V8 13.6 (Node 24): a JavaScript frame of optimised code, whose JSFunction
 * holds a dispatch handle: its Code is the handle's entry in the table the
 * isolate group holds (the group found through rt->addr[0]), named with the
 * pc's offset in it; an entry that holds no Code leaves the function alone.
 * V8 14.6 (Node 26): the same through the group's isolate, or the isolate the
 * walked thread runs (a worker's, with a table of its own).
 */
START_TEST(test_v8_dispatch)
{
	const uint64_t jit = 0x7f0000200000ull, fn = HEAP + 0x100, map_fn = HEAP + 0x200;
	const uint64_t sfi = HEAP + 0x300, group_ptr = HEAP + 0x600, group = HEAP + 0x700;
	const uint64_t table = HEAP + 0x800, code = HEAP + 0x900, map_code = HEAP + 0xa00;
	const uint64_t isolate = HEAP + 0xb00;
	uint64_t sp = STACK + 0x100, bp = STACK + 0x180;
	struct uwalk_rows src = {find, &fx};
	struct uwalk_stack stk = {fx.stack, STACK, sizeof(fx.stack)};
	struct uwalk_mem live = {.read = live_read, .arg = NULL};
	struct uwalk_regs regs = {.ip = jit + 0x40, .sp = sp, .bp = bp};
	struct ember_rt_proc *rt = &fx.proc.rt;
	uint32_t handle = 2 << EMBER_V8_DISPATCH_SHIFT;

	memset(heap, 0, sizeof(heap));
	v8_rt(rt, 0x7f0000100000ull, 32); /* the builtins: elsewhere */
	rt->addr[0] = group_ptr;
	rt->off[EMBER_V8_JSFUNC_DISPATCH] = 24;
	rt->off[EMBER_V8_GROUP_TABLE] = 0x10;
	v8_code_rt(rt);
	/* the function, its group and table; the entry: its Code << 16 | a parameter count */
	heap_put(fn, map_fn + 1);
	heap_put(map_fn + 12, 2005);
	heap_put(fn + 24, handle);
	heap_put(fn + 32, sfi + 1);
	heap_put(group_ptr, group);
	heap_put(group + 0x10, table);
	heap_put(table + 2 * EMBER_V8_DISPATCH_ENTRY + 8, (code + 1) << 16 | 2);
	/* a TurboFan Code (kind 12): its instructions at jit, 0x1000 bytes */
	v8_code(code, map_code, jit, 12);
	heap_put(map_code + 12, 187);
	put(bp - 16, fn + 1);
	put(bp - 8, HEAP + 0x801);
	put(bp, 0);
	put(bp + 8, 0x7f0000005678ull);
	fx.proc.nmaps = 0;

	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	expect_ips((const uint64_t[]){EMBER_RT_WORD(EMBER_RT_V8, 0x40, code), 0x7f0000005678ull},
		   2);
	/* an entry that holds no Code (a group laid out otherwise): the function alone */
	heap_put(table + 2 * EMBER_V8_DISPATCH_ENTRY + 8, (fn + 1) << 16 | 2);
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	expect_ips((const uint64_t[]){EMBER_RT_WORD(EMBER_RT_V8, EMBER_RT_AUX_MAX, sfi),
				      0x7f0000005678ull},
		   2);
	/* no group known (a process walked by its executable's runtime): the same */
	rt->addr[0] = 0;
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.ips[0], EMBER_RT_WORD(EMBER_RT_V8, EMBER_RT_AUX_MAX, sfi));
	rt->addr[0] = group_ptr;
	/*
	 * the pc outside the Code's instructions (on-stack-replaced code): the
	 * JSFunction with the pc's low bits, the host to find the code holding it
	 */
	heap_put(table + 2 * EMBER_V8_DISPATCH_ENTRY + 8, (code + 1) << 16 | 2);
	regs.ip = jit + 0x12345;
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.ips[0], EMBER_RT_WORD(EMBER_RT_WORD_V8_OSR, 0x2345, fn));
	/*
	 * ... but in a builtin that built no frame (its pc in a mapping: the
	 * builtins' copy), called from the Code: its return there; a return
	 * address there above the sp of JIT code is not one (OSR code's frame
	 * holds the call that entered it)
	 */
	put(sp + 8, jit + 0x88);
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.ips[0], EMBER_RT_WORD(EMBER_RT_WORD_V8_OSR, 0x2345, fn));
	fx.proc.nmaps = 1;
	fx.proc.maps[0] = (struct ember_unwind_map){.start = jit + 0x10000,
						    .end = jit + 0x20000,
						    .bias = jit,
						    .table = EMBER_UNWIND_NO_TABLE};
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.ips[0], EMBER_RT_WORD(EMBER_RT_V8, 0x88, code));
	ck_assert_uint_eq(fx.res.ips[1], 0x7f0000005678ull);
	/* baseline code (kind 10): the function with the pc's offset, its Code unnamed */
	heap_put(code + 48, (uint64_t)10 << 32);
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.ips[0], EMBER_RT_WORD(EMBER_RT_WORD_V8_BASELINE, 0x88, sfi));
	heap_put(code + 48, (uint64_t)12 << 32);
	put(sp + 8, 0);
	fx.proc.nmaps = 0;
	regs.ip = jit + 0x40;
	/*
	 * V8 14.6 (Node 26): the table is the isolate's, the group holding its
	 * first isolate; a worker's function meets another table's entry, whose
	 * Code does not hold its pc (above): the function alone.
	 */
	rt->off[EMBER_V8_GROUP_TABLE] = 0x20;
	rt->off[EMBER_V8_ISOLATE_TABLE] = 0x30;
	heap_put(group + 0x20, isolate);
	heap_put(isolate + 0x30, table);
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.ips[0], EMBER_RT_WORD(EMBER_RT_V8, 0x40, code));
	heap_put(group + 0x20, 0); /* no isolate yet */
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.ips[0], EMBER_RT_WORD(EMBER_RT_V8, EMBER_RT_AUX_MAX, sfi));
	heap_put(group + 0x20, isolate);
	/*
	 * A worker: the isolate its thread runs, from its thread pointer
	 * (EMBER_V8_ISOLATE_TLS below it), holds a table of its own, whose entry
	 * for the same handle is the worker's Code: named by the pc's offset in it.
	 */
	{
		const uint64_t tp = HEAP + 0xd00, worker = HEAP + 0xc00, table2 = HEAP + 0xd80;
		const uint64_t code2 = HEAP + 0xe00, jit2 = 0x7f0000300000ull;
		const uint64_t osr = EMBER_RT_WORD(EMBER_RT_WORD_V8_OSR, 0x80, fn);

		rt->off[EMBER_V8_ISOLATE_TLS] = 0x178;
		heap_put(tp - 0x178, worker);
		heap_put(worker + 0x30, table2);
		heap_put(table2 + 2 * EMBER_V8_DISPATCH_ENTRY + 8, (code2 + 1) << 16 | 2);
		v8_code(code2, map_code, jit2, 12);
		regs.ip = jit2 + 0x80;
		live.tp = tp;
		uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
		ck_assert_uint_eq(fx.res.ips[0], EMBER_RT_WORD(EMBER_RT_V8, 0x80, code2));
		/* the main thread's pointer leads to the group's first isolate: its Code */
		heap_put(tp - 0x178, isolate);
		regs.ip = jit + 0x40;
		uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
		ck_assert_uint_eq(fx.res.ips[0], EMBER_RT_WORD(EMBER_RT_V8, 0x40, code));
		/*
		 * a thread in no isolate (0 there), or no pointer known (a copy): the
		 * group's, whose Code does not hold the pc: the function and the pc's
		 * low bits, as for on-stack-replaced code
		 */
		heap_put(tp - 0x178, 0);
		regs.ip = jit2 + 0x80;
		uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
		ck_assert_uint_eq(fx.res.ips[0], osr);
		heap_put(tp - 0x178, worker);
		live.tp = 0;
		uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
		ck_assert_uint_eq(fx.res.ips[0], osr);
		/* a pointer below the offset (garbage): never read under address 0 */
		live.tp = 0x100;
		uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
		ck_assert_uint_eq(fx.res.ips[0], osr);
	}
}
END_TEST

/*
 * The V8 memo (struct ember_v8_memo), kept between walks as the kernel keeps
 * it per CPU: a frame of a function met again that runs the Code kept (its pc
 * there), or an interpreted frame of the BytecodeArray kept, costs no read of
 * the heap, and its words are the same as when read whole; another frame of it
 * costs the read of its header (V8 13.6: and of its dispatch entry), and what
 * changed in between (its code, shared info, map, an interpreted frame's
 * BytecodeArray, the process) is read anew, never taken from the memo.
 */
static struct ember_v8_memo v8_memo[EMBER_V8_MEMO_SLOTS];

/*
 * The frame at bp returns to ra in a frame of fn's 0x40 above it, which
 * returns to ret (ra 0: the frame at bp returns to ret, the outermost).
 */
static void recurse(uint64_t bp, uint64_t ra, uint64_t fn, uint64_t ctx, uint64_t ret)
{
	put(bp, ra ? bp + 0x40 : 0);
	put(bp + 8, ra ? ra : ret);
	put(bp + 0x40 - 16, fn + 1);
	put(bp + 0x40 - 8, ctx);
	put(bp + 0x40, 0);
	put(bp + 0x48, ret);
}

START_TEST(test_v8_memo)
{
	const uint64_t builtins = 0x7f0000100000ull, jit = 0x7f0000200000ull;
	const uint64_t fn = HEAP + 0x100, map_fn = HEAP + 0x200, sfi = HEAP + 0x300;
	const uint64_t sfi2 = HEAP + 0x380, bca = HEAP + 0x400, map_bca = HEAP + 0x500;
	const uint64_t code = HEAP + 0x900, map_code = HEAP + 0xa00, code2 = HEAP + 0xb00;
	const uint64_t table = HEAP + 0xc00, group_ptr = HEAP + 0xd00, group = HEAP + 0xd80;
	const uint64_t code3 = HEAP + 0xe00;
	const uint64_t ret = 0x7f0000005678ull, ctx = HEAP + 0x801;
	uint64_t sp = STACK + 0x100, bp = STACK + 0x180;
	struct uwalk_rows src = {find, &fx};
	struct uwalk_stack stk = {fx.stack, STACK, sizeof(fx.stack)};
	struct uwalk_mem live = {.read = live_read, .v8_memo = v8_memo};
	struct uwalk_regs regs = {.ip = jit + 0x40, .sp = sp, .bp = bp};
	struct ember_rt_proc *rt = &fx.proc.rt;
	uint32_t whole;

	memset(heap, 0, sizeof(heap));
	memset(v8_memo, 0, sizeof(v8_memo));
	v8_rt(rt, builtins, 32); /* Node 22's: code at 24, shared info at 32 */
	rt->off[EMBER_V8_JSFUNC_CODE] = 24;
	v8_code_rt(rt);
	rt->off[EMBER_V8_BYTECODE_DATA] = 40;
	heap_put(fn, map_fn + 1);
	heap_put(map_fn + 12, 2005);
	heap_put(fn + 24, code + 1);
	heap_put(fn + 32, sfi + 1);
	/* two TurboFan Codes (kind 12) of 0x1000 bytes: at jit, and at jit + 0x1000 */
	v8_code(code, map_code, jit, 12);
	v8_code(code2, map_code, jit + 0x1000, 12);
	heap_put(map_code + 12, 187);
	put(bp - 16, fn + 1);
	put(bp - 8, ctx);
	put(bp, 0);
	put(bp + 8, ret);
	fx.proc.nmaps = 0;

	/* read whole, then again from the memo: its pc in the Code kept, no read, the same words */
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	expect_ips((const uint64_t[]){EMBER_RT_WORD(EMBER_RT_V8, 0x40, code), ret}, 2);
	whole = fx.res.mem_reads;
	ck_assert_uint_ge(whole, 3);
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	expect_ips((const uint64_t[]){EMBER_RT_WORD(EMBER_RT_V8, 0x40, code), ret}, 2);
	ck_assert_uint_eq(fx.res.mem_reads, 0);
	/* a recursion: the function's frame under its own */
	recurse(bp, jit + 0x80, fn, ctx, ret);
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	expect_ips((const uint64_t[]){EMBER_RT_WORD(EMBER_RT_V8, 0x40, code),
				      EMBER_RT_WORD(EMBER_RT_V8, 0x80, code), ret},
		   3);
	ck_assert_uint_eq(fx.res.mem_reads, 0);
	/* its header read once a walk where its frames' pcs lie outside the Code kept */
	recurse(bp, jit + 0x12345, fn, ctx, ret);
	regs.ip = jit + 0x12340;
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.ips[1], EMBER_RT_WORD(EMBER_RT_WORD_V8_OSR, 0x2345, fn));
	ck_assert_uint_eq(fx.res.mem_reads, 1);
	regs.ip = jit + 0x40;
	recurse(bp, 0, 0, 0, ret);
	/* a function at the end of readable memory: its words read one by one */
	{
		const uint64_t end_fn = HEAP + sizeof(heap) - 40;

		heap_put(end_fn, map_fn + 1);
		heap_put(end_fn + 24, code + 1);
		heap_put(end_fn + 32, sfi + 1);
		put(bp - 16, end_fn + 1);
		uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
		ck_assert_uint_eq(fx.res.ips[0], EMBER_RT_WORD(EMBER_RT_V8, 0x40, code));
		put(bp - 16, fn + 1);
	}
	/* on-stack-replaced code (a pc outside it) from the memo too */
	regs.ip = jit + 0x12345;
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.ips[0], EMBER_RT_WORD(EMBER_RT_WORD_V8_OSR, 0x2345, fn));
	ck_assert_uint_eq(fx.res.mem_reads, 1);
	/* optimised anew: its code field holds the other Code, whose offset names it */
	heap_put(fn + 24, code2 + 1);
	regs.ip = jit + 0x1040;
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.ips[0], EMBER_RT_WORD(EMBER_RT_V8, 0x40, code2));
	ck_assert_uint_eq(fx.res.mem_reads, 2);
	/*
	 * another shared info, seen where the header is read (a pc outside the
	 * Code kept): the Code read anew (a baseline one, named by the shared
	 * info), then kept
	 */
	heap_put(code2 + 48, (uint64_t)10 << 32);
	heap_put(fn + 32, sfi2 + 1);
	regs.ip = jit + 0x12345;
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.mem_reads, 2);
	regs.ip = jit + 0x1040;
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.ips[0], EMBER_RT_WORD(EMBER_RT_WORD_V8_BASELINE, 0x40, sfi2));
	ck_assert_uint_eq(fx.res.mem_reads, 0);
	/*
	 * the same address now another object (a map of no function's type),
	 * read where the pc is not in the Code kept: no word
	 */
	heap_put(fn, map_bca + 1);
	heap_put(map_bca + 12, 170);
	regs.ip = jit + 0x12345;
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.ips[0], regs.ip);
	ck_assert_uint_eq(fx.res.rt_frames, 0);
	regs.ip = jit + 0x1040;
	heap_put(fn, map_fn + 1);
	/* another process (or its entry's next generation): the function read whole again */
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.mem_reads, 3); /* header, map's type, Code's fields */
	fx.proc.gen++;
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.ips[0], EMBER_RT_WORD(EMBER_RT_WORD_V8_BASELINE, 0x40, sfi2));
	ck_assert_uint_eq(fx.res.mem_reads, 3);

	/*
	 * An interpreted frame (in the builtins): its BytecodeArray's type read
	 * once; another object in its slot is checked, and is no BytecodeArray
	 */
	heap_put(fn + 24, code3 + 1); /* the interpreter's entry, a builtin (kind 1) */
	v8_code(code3, map_code, builtins, 1);
	heap_put(bca, map_bca + 1);
	put(bp - 32, (uint64_t)(7 + 40 - 1) << 32);
	put(bp - 24, bca + 1);
	regs.ip = builtins + 0x40;
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.ips[0], EMBER_RT_WORD(EMBER_RT_V8, 7, sfi2));
	ck_assert_uint_eq(fx.res.mem_reads, 3); /* header, the array's map and type */
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.ips[0], EMBER_RT_WORD(EMBER_RT_V8, 7, sfi2));
	ck_assert_uint_eq(fx.res.mem_reads, 0); /* the BytecodeArray kept: nothing read */
	/* another BytecodeArray in its slot: its header read again (here, another shared info) */
	{
		const uint64_t bca2 = HEAP + 0x600;

		heap_put(bca2, map_bca + 1);
		heap_put(fn + 32, sfi + 1);
		put(bp - 24, bca2 + 1);
		uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
		ck_assert_uint_eq(fx.res.ips[0], EMBER_RT_WORD(EMBER_RT_V8, 7, sfi));
		heap_put(fn + 32, sfi2 + 1);
		put(bp - 24, bca + 1);
	}
	/*
	 * a baseline frame (its feedback vector where the offset was) calling a
	 * builtin: its header read, and the Code its function runs
	 */
	put(bp - 32, bca + 0x41);
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.mem_reads, 2);
	put(bp - 32, (uint64_t)(7 + 40 - 1) << 32);
	put(bp - 24, ctx);
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.ips[0], builtins + 0x40);

	/*
	 * V8 13.6: the dispatch entry is read at each walk (its code changes in
	 * place when the function is optimised), the table kept
	 */
	memset(v8_memo, 0, sizeof(v8_memo));
	rt->off[EMBER_V8_JSFUNC_CODE] = EMBER_RT_OFF_NONE;
	rt->off[EMBER_V8_JSFUNC_DISPATCH] = 24;
	rt->off[EMBER_V8_GROUP_TABLE] = 0x10;
	rt->addr[0] = group_ptr;
	heap_put(fn + 24, 2 << EMBER_V8_DISPATCH_SHIFT);
	heap_put(group_ptr, group);
	heap_put(group + 0x10, table);
	heap_put(table + 2 * EMBER_V8_DISPATCH_ENTRY + 8, (code + 1) << 16 | 2);
	regs.ip = jit + 0x40;
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.ips[0], EMBER_RT_WORD(EMBER_RT_V8, 0x40, code));
	ck_assert_uint_gt(fx.res.mem_reads, 2);
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.ips[0], EMBER_RT_WORD(EMBER_RT_V8, 0x40, code));
	ck_assert_uint_eq(fx.res.mem_reads, 0);	  /* its pc in the Code kept */
	recurse(bp, jit + 0x12345, fn, ctx, ret); /* elsewhere: header and entry, once a walk */
	regs.ip = jit + 0x12340;
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.ips[1], EMBER_RT_WORD(EMBER_RT_WORD_V8_OSR, 0x2345, fn));
	ck_assert_uint_eq(fx.res.mem_reads, 2);
	regs.ip = jit + 0x40;
	recurse(bp, 0, 0, 0, ret);
	heap_put(code2 + 48, (uint64_t)12 << 32);
	heap_put(table + 2 * EMBER_V8_DISPATCH_ENTRY + 8, (code2 + 1) << 16 | 2);
	regs.ip = jit + 0x1040;
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	ck_assert_uint_eq(fx.res.ips[0], EMBER_RT_WORD(EMBER_RT_V8, 0x40, code2));
}
END_TEST

/*
 * Two functions of one stack whose addresses hash to the same slots are both
 * kept (two slots a hash): the next walk reads neither.
 */
START_TEST(test_v8_memo_ways)
{
	const uint64_t builtins = 0x7f0000100000ull, jit = 0x7f0000200000ull;
	const uint64_t map_fn = HEAP + 0x200, sfi = HEAP + 0x300, code = HEAP + 0x900;
	const uint64_t map_code = HEAP + 0xa00, ret = 0x7f0000005678ull, ctx = HEAP + 0x801;
	uint64_t f1 = 0, f2 = 0, bp = STACK + 0x180;
	struct uwalk_rows src = {find, &fx};
	struct uwalk_stack stk = {fx.stack, STACK, sizeof(fx.stack)};
	struct uwalk_mem live = {.read = live_read, .v8_memo = v8_memo};
	struct uwalk_regs regs = {.ip = jit + 0x40, .sp = STACK + 0x100, .bp = bp};
	struct ember_rt_proc *rt = &fx.proc.rt;

	/* two places for a function's 40 bytes, above the other objects, of one slot */
	for (uint64_t a = HEAP + 0xb00; a < HEAP + 0xfd8 && !f2; a += 8)
		for (uint64_t b = a + 40; b <= HEAP + 0xfd8 && !f2; b += 8)
			if (ember_rt_memo_slot(a + 1, EMBER_V8_MEMO_BITS) ==
			    ember_rt_memo_slot(b + 1, EMBER_V8_MEMO_BITS)) {
				f1 = a;
				f2 = b;
			}
	ck_assert_uint_ne(f2, 0);
	memset(heap, 0, sizeof(heap));
	memset(v8_memo, 0, sizeof(v8_memo));
	v8_rt(rt, builtins, 32);
	rt->off[EMBER_V8_JSFUNC_CODE] = 24;
	v8_code_rt(rt);
	heap_put(map_fn + 12, 2005);
	heap_put(map_code + 12, 187);
	v8_code(code, map_code, jit, 12);
	for (int i = 0; i < 2; i++) {
		uint64_t fn = i ? f2 : f1;

		heap_put(fn, map_fn + 1);
		heap_put(fn + 24, code + 1);
		heap_put(fn + 32, sfi + 1);
	}
	put(bp - 16, f1 + 1);
	put(bp - 8, ctx);
	recurse(bp, jit + 0x80, f2, ctx, ret);
	fx.proc.nmaps = 0;

	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	expect_ips((const uint64_t[]){EMBER_RT_WORD(EMBER_RT_V8, 0x40, code),
				      EMBER_RT_WORD(EMBER_RT_V8, 0x80, code), ret},
		   3);
	ck_assert_uint_gt(fx.res.mem_reads, 4);
	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	expect_ips((const uint64_t[]){EMBER_RT_WORD(EMBER_RT_V8, 0x40, code),
				      EMBER_RT_WORD(EMBER_RT_V8, 0x80, code), ret},
		   3);
	ck_assert_uint_eq(fx.res.mem_reads, 0);
	recurse(bp, 0, 0, 0, ret);
}
END_TEST

/*
 * Where the stack window is refilled (the kernel's and the host's count, one
 * source): from 64 bytes below the word asked for, never outside its page.
 */
START_TEST(test_window_at)
{
	const __u64 page = STACK;
	__u64 lo, len;

	/* mid-page: the frame slots below a frame pointer come along */
	ember_unwind_window_at(page + 0x800, &lo, &len);
	ck_assert_uint_eq(lo, page + 0x800 - EMBER_UNWIND_WINDOW_BELOW);
	ck_assert_uint_eq(len, EMBER_UNWIND_WINDOW);
	/* near the page's start: from its start, never from the page below (maybe unmapped) */
	ember_unwind_window_at(page + 0x10, &lo, &len);
	ck_assert_uint_eq(lo, page);
	ck_assert_uint_eq(len, EMBER_UNWIND_WINDOW);
	/* near its end: up to its end, never into the next page */
	ember_unwind_window_at(page + 0xf80, &lo, &len);
	ck_assert_uint_eq(lo, page + 0xf40);
	ck_assert_uint_eq(len, 0xc0);
	ember_unwind_window_at(page + 0xff8, &lo, &len); /* the page's last word */
	ck_assert_uint_eq(lo, page + 0xfb8);
	ck_assert_uint_eq(len, 0x48);
	/* a word across the page's end: no window, read on its own */
	ember_unwind_window_at(page + 0xffc, &lo, &len);
	ck_assert_uint_eq(len, 0);
	/* the first page: no wrap below 0 */
	ember_unwind_window_at(0x20, &lo, &len);
	ck_assert_uint_eq(lo, 0);
	ck_assert_uint_eq(len, EMBER_UNWIND_WINDOW);
}
END_TEST

/*
 * A native frame's return address is read before its saved rbp, 8 below it,
 * and the JavaScript frame it returns to has its slots below its frame
 * pointer: one window, refilled at the return address, holds them all.
 */
START_TEST(test_window_below)
{
	const uint64_t builtins = 0x7f0000100000ull, jit = 0x7f0000200000ull;
	const uint64_t fn = HEAP + 0x100, map_fn = HEAP + 0x200, sfi = HEAP + 0x300;
	const uint64_t code = HEAP + 0x900, map_code = HEAP + 0xa00;
	const uint64_t ret = 0x7f0000005678ull, ctx = HEAP + 0x801;
	/* the leaf's frame: CFA = rsp + 0x890, rbp saved below its return address */
	uint64_t sp = STACK + 0x100, cfa = sp + 0x890, bp2 = cfa + 0x30;
	struct uwalk_rows src = {find, &fx};
	struct uwalk_stack stk = {fx.stack, STACK, sizeof(fx.stack)};
	struct uwalk_mem live = {.read = live_read, .v8_memo = v8_memo};
	struct uwalk_regs regs = {.ip = TEXT + 0x10, .sp = sp};
	struct ember_rt_proc *rt = &fx.proc.rt;

	memset(heap, 0, sizeof(heap));
	memset(v8_memo, 0, sizeof(v8_memo));
	v8_rt(rt, builtins, 32);
	rt->off[EMBER_V8_JSFUNC_CODE] = 24;
	v8_code_rt(rt);
	heap_put(fn, map_fn + 1);
	heap_put(map_fn + 12, 2005);
	heap_put(fn + 24, code + 1);
	heap_put(fn + 32, sfi + 1);
	v8_code(code, map_code, jit, 12);
	heap_put(map_code + 12, 187);
	add_row(0x000, EMBER_CFA_RSP, 0x890, EMBER_RBP_CFA, -16);
	put(cfa - 8, jit + 0x40);
	put(cfa - 16, bp2);
	put(bp2 - 16, fn + 1);
	put(bp2 - 8, ctx);
	put(bp2, 0);
	put(bp2 + 8, ret);

	uwalk_mem(&fx.proc, &src, &stk, &live, &regs, &fx.res);
	expect_ips((const uint64_t[]){TEXT + 0x10, EMBER_RT_WORD(EMBER_RT_V8, 0x40, code), ret}, 3);
	ck_assert_uint_eq(fx.res.by_table, 1);
	/* one window from 64 bytes below the return address: its frame's and the next's words */
	ck_assert_uint_eq(fx.res.stack_reads, 1);
}
END_TEST

/* The search: the row in force and the pcs it covers. */
START_TEST(test_search)
{
	struct ember_unwind_row r;
	uint64_t lo, hi;

	add_row(0x100, EMBER_CFA_RSP, 8, EMBER_RBP_SAME, 0);
	add_row(0x140, EMBER_CFA_RSP, 16, EMBER_RBP_SAME, 0);
	add_row(0x200, EMBER_CFA_RSP, 24, EMBER_RBP_SAME, 0);
	ck_assert(!uwalk_search(fx.nrows, row_at, &fx, 0xff, &r, &lo, &hi));
	ck_assert(uwalk_search(fx.nrows, row_at, &fx, 0x100, &r, &lo, &hi));
	ck_assert_int_eq(r.cfa_off, 8);
	ck_assert_uint_eq(lo, 0x100);
	ck_assert_uint_eq(hi, 0x140);
	ck_assert(uwalk_search(fx.nrows, row_at, &fx, 0x1ff, &r, &lo, &hi));
	ck_assert_int_eq(r.cfa_off, 16);
	ck_assert(uwalk_search(fx.nrows, row_at, &fx, 0x5000, &r, &lo, &hi));
	ck_assert_int_eq(r.cfa_off, 24);
	ck_assert_uint_eq(hi, UINT64_MAX);
	ck_assert(!uwalk_search(0, row_at, &fx, 0x100, &r, &lo, &hi));
}
END_TEST

Suite *uwalk_suite(void)
{
	Suite *s = suite_create("uwalk");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_rsp_rules);
	tcase_add_test(tc, test_rbp_rule);
	tcase_add_test(tc, test_epilogue_popped_rbp);
	tcase_add_test(tc, test_rbx_rule);
	tcase_add_test(tc, test_plt_rule);
	tcase_add_test(tc, test_frame_pointers);
	tcase_add_test(tc, test_bad_rule);
	tcase_add_test(tc, test_signal_frame);
	tcase_add_test(tc, test_copy_short);
	tcase_add_test(tc, test_depth_limit);
	tcase_add_test(tc, test_fp_loop);
	tcase_add_test(tc, test_search);
	tcase_add_test(tc, test_v8_frame_from_copy);
	tcase_add_test(tc, test_v8_dispatch);
	tcase_add_test(tc, test_v8_memo);
	tcase_add_test(tc, test_v8_memo_ways);
	tcase_add_test(tc, test_window_at);
	tcase_add_test(tc, test_window_below);
	suite_add_tcase(s, tc);
	return s;
}
