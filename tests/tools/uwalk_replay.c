// SPDX-License-Identifier: MIT
/*
 * uwalk_replay: the shared user stack walk (bpf/uwalk.bpf.h, built for the host as uwalk.c)
 * against libdw's unwinder on a live fixture's recorded stacks. The fixture is stopped with
 * ptrace at spaced moments (or single-stepped, -s), its registers, stack and mappings are
 * recorded, walked by uwalk() with tables unwtab.c compiled, and unwound by libdw while still
 * stopped; the two are compared frame by frame. Prints counts for the integration test.
 *
 * uwalk_replay [-n SAMPLES] [-i MS] [-w MS] [-s K] [-v] [-d N] [-k KEY]... -- CMD [ARG...]
 *   -n  stops to take in user code (default 200; with those at system calls' exits, at most
 *       8 times as many); -i  ms between them (10); -w  ms before the first (500)
 *   -s  single-step CMD from its exec instead: every instruction in the executable is a
 *       sample, and every K-th elsewhere once main was entered (for code that runs too briefly
 *       to be caught by stopping it, such as PLT stubs)
 *   -v  show the first samples' stacks even where they agree; -d  how many (3)
 *   -k  also count the samples with a frame named KEY... (a prefix), "[vdso]" (a frame in the
 *       vDSO) or "[plt]" (the leaf in a .plt section)
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "procmaps.h"
#include "runtime.h"
#include "unwtab.h"
#include "uwalk.h"

/*
 * Stack bytes copied from rsp up (less the red zone, copied too): the fixtures' stacks are a
 * few KiB deep, and a walk that reads past the copy says so (copy_short in a disagreement).
 */
#define STACK_MAX (64u << 10)
/* Files whose tables are kept (one per binary a fixture maps: a handful). */
#define TABS_MAX 64
/* Stops taken at most for each one asked for in user code (-n) */
#define STOPS_MAX 8
/* Failed stops tolerated before giving up */
#define FAILED_MAX 10
/* Executable mappings of the program itself, under -s (ld.so maps its text once: 1) */
#define EXE_MAPS_MAX 16
/* -k keys */
#define KEYS_MAX 8
/* Disagreements printed in full, unless -d says */
#define SHOW_MAX 3

/* One compiled table, by the path of its file ("[vdso]" for the vDSO's image). */
struct tab {
	char *path;
	bool ok;
	struct unwtab t;
	struct ember_rt_proc rt; /* the runtime the file holds, if any (ELF vaddrs) */
};

struct key {
	const char *name;
	unsigned samples, equal, ember_main, syscall;
	unsigned dw_main, equal_dw_main; /* libdw reaches main; and ember equals it there */
};

/* What both unwinders gave for one stopped moment. */
struct sample {
	struct uwalk_result ember;
	__u64 dw[EMBER_MAX_STACK_DEPTH]; /* as ember.ips, to compare */
	size_t ndw;
	const char *dw_err; /* why libdw stopped, or NULL at an outermost frame */
};

struct replay {
	pid_t pid;
	struct tab tabs[TABS_MAX];
	size_t ntabs;
	struct ember_unwind_proc proc;
	uint8_t stack[STACK_MAX + UWALK_RED_ZONE];
	Dwfl *dwfl;
	bool attached;
	uint64_t maps_hash; /* of the maps text libdw was given last */
	uint64_t main_lo, main_hi;
	struct key keys[KEYS_MAX];
	size_t nkeys;
	unsigned samples, equal, dw_main, equal_dw_main, ember_main, shown;
	/*
	 * Samples stopped at a system call's exit (orig_rax set). A stop lands where the
	 * thread last left user mode, on a busy host mostly where it was preempted: often
	 * at the exit of a system call reading a CPU clock, whose read brings the
	 * scheduler's accounting up to date and so can end the thread's slice right there.
	 * Shares of user code are taken without them, and -n counts the others.
	 */
	unsigned syscall;
	unsigned show_max; /* samples shown in full */
	bool runtime;	   /* -R: walk the runtime's frames too (uwalk_mem) */
	struct rt_cache *rt_names;
	struct ember_py_ts_memo ts_memo; /* the stopped thread's, kept as the kernel keeps it */
	struct ember_v8_memo v8_memo[EMBER_V8_MEMO_SLOTS]; /* V8's functions, as a CPU's */
	struct ember_py_code_memo
		py_code_memo[EMBER_PY_CODE_MEMO_SLOTS]; /* CPython's, as a CPU's */
	unsigned rt_frames, rt_samples, rt_shown;
	/* the kernel's cost of the walks (struct uwalk_result's), summed: the runtime walk's under -R */
	uint64_t walks, stack_reads, mem_reads, mem_bytes, rules;
	bool verbose; /* -v: the first samples are shown, equal or not */
};

static const char *const end_names[] = {
	[EMBER_SAMPLE_M_END_OUTERMOST] = "outermost",	[EMBER_SAMPLE_M_END_SIGNAL] = "signal",
	[EMBER_SAMPLE_M_END_NO_TABLE] = "no-table",	[EMBER_SAMPLE_M_END_BAD_RULE] = "bad-rule",
	[EMBER_SAMPLE_M_END_UNREADABLE] = "unreadable", [EMBER_SAMPLE_M_END_DEPTH] = "depth",
	[EMBER_SAMPLE_M_END_EXITED] = "exited",
};

static const char *end_name(uint32_t end)
{
	if (end < sizeof(end_names) / sizeof(end_names[0]) && end_names[end])
		return end_names[end];
	return "?";
}

/* --- ember's side: tables for the mappings, the walk ------------------------------------ */

static bool row_at(void *arg, uint32_t i, struct ember_unwind_row *out)
{
	const struct unwtab *t = arg;

	if (i >= t->nrows)
		return false;
	*out = t->rows[i];
	return true;
}

/* uwalk's row source: the search the daemon's deferred walk makes, over the compiled rows. */
static bool find_rule(void *arg, uint32_t table, uint64_t pc, struct ember_unwind_row *out)
{
	struct replay *r = arg;
	uint64_t lo, hi;

	if (table >= r->ntabs || !r->tabs[table].ok)
		return false;
	return uwalk_search((uint32_t)r->tabs[table].t.nrows, row_at, &r->tabs[table].t, pc, out,
			    &lo, &hi);
}

/* Reads len bytes at addr of pid: the bytes read (short where memory ends). */
static size_t read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	return n > 0 ? (size_t)n : 0;
}

/*
 * The table of mapping m, compiled once per file: from the file for a path, from the
 * process's memory for the vDSO (the image the kernel mapped has no file). Its index, or
 * EMBER_UNWIND_NO_TABLE.
 */
static uint32_t table_of(struct replay *r, const struct proc_map *m)
{
	const char *key = m->path;
	struct tab *t;
	enum unwtab_err why = UNWTAB_E_NOT_ELF; /* unreadable, until a build says otherwise */
	int rc = -ENOENT;

	if (!key || (key[0] != '/' && strcmp(key, "[vdso]")))
		return EMBER_UNWIND_NO_TABLE;
	for (size_t i = 0; i < r->ntabs; i++)
		if (!strcmp(r->tabs[i].path, key))
			return r->tabs[i].ok ? (uint32_t)i : EMBER_UNWIND_NO_TABLE;
	if (r->ntabs == TABS_MAX)
		return EMBER_UNWIND_NO_TABLE;
	t = &r->tabs[r->ntabs];
	memset(t, 0, sizeof(*t));
	t->path = strdup(key);
	if (!t->path)
		return EMBER_UNWIND_NO_TABLE;
	if (key[0] == '/') {
		int fd = open(key, O_RDONLY | O_CLOEXEC);

		if (fd >= 0) {
			rc = unwtab_build_fd(fd, &t->t, &why);
			if (!rc) {
				Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);

				rt_detect(elf, fd, &t->rt);
				elf_end(elf);
			}
			close(fd);
		}
	} else {
		size_t len = m->end - m->start;
		void *image = len <= (16u << 20) ? malloc(len) : NULL;

		if (image && read_mem(r->pid, m->start, image, len) == len)
			rc = unwtab_build_mem(image, len, &t->t, &why);
		free(image);
	}
	/* as daemon/unwind/unwinder.c: a table the walk's search cannot cover is no table */
	t->ok = !rc && t->t.nrows && t->t.nrows <= EMBER_UNWIND_ROWS_PER_TABLE_MAX;
	if (rc)
		fprintf(stderr, "uwalk_replay: no table for %s: %s\n", key, unwtab_strerror(why));
	r->ntabs++; /* a file without a table is remembered too: tried once */
	return t->ok ? (uint32_t)(r->ntabs - 1) : EMBER_UNWIND_NO_TABLE;
}

/*
 * The bias of mapping m for table t (row pc = address - bias), as daemon/unwind/unwinder.c's
 * map_bias folds it: m's first byte is at ELF vaddr seg.vaddr + (m.offset - seg.offset) of
 * the executable segment whose file range holds m's offset.
 */
static bool map_bias(const struct unwtab *t, const struct proc_map *m, uint64_t *bias)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	for (size_t i = 0; i < t->nsegs; i++) {
		const struct unwtab_seg *s = &t->segs[i];
		uint64_t lo = s->offset & ~(page - 1);

		if (m->offset >= lo && m->offset < s->offset + s->filesz) {
			*bias = m->start - (s->vaddr + (m->offset - s->offset)) + t->base;
			return true;
		}
	}
	return false;
}

/* The process's entry as daemon/unwind/unwinder.c's fill_entry writes it, from its mappings. */
static void fill_proc(struct replay *r, const struct proc_maps *maps)
{
	struct ember_unwind_proc *e = &r->proc;
	uint32_t n = 0;

	memset(e, 0, sizeof(*e));
	for (size_t i = 0; i < maps->n && n < EMBER_UNWIND_MAPS_MAX; i++) {
		const struct proc_map *m = &maps->v[i];
		struct ember_unwind_map *em;
		uint32_t id;
		uint64_t bias;

		if (!(m->perms & PROCMAP_X) || m->start >= (1ull << 56))
			continue; /* [vsyscall] lies in the kernel's half */
		em = &e->maps[n++];
		em->start = m->start;
		em->end = m->end;
		em->table = EMBER_UNWIND_NO_TABLE;
		id = table_of(r, m);
		if (id != EMBER_UNWIND_NO_TABLE && map_bias(&r->tabs[id].t, m, &bias)) {
			em->bias = bias;
			em->table = id;
			if (r->tabs[id].rt.kind && !e->rt.kind) { /* as fill_entry */
				e->rt = r->tabs[id].rt;
				rt_relocate(&e->rt, bias - r->tabs[id].t.base);
			}
		}
	}
	e->nmaps = n;
	e->gen = 1;
}

static bool read_rt(void *arg, void *dst, size_t len, uint64_t addr)
{
	const struct replay *r = arg;

	return read_mem(r->pid, addr, dst, len) == len;
}

/* Adds the kernel's cost of one walk (res) to r's sums. */
static void count_cost(struct replay *r, const struct uwalk_result *res)
{
	r->walks++;
	r->stack_reads += res->stack_reads;
	r->mem_reads += res->mem_reads;
	r->mem_bytes += res->mem_bytes;
	r->rules += res->rules;
}

/*
 * -R: the walk again with the runtime's frames read from the process, as the
 * BPF walk reads them; the first show_max printed, leaf first, named.
 */
static void runtime_walk(struct replay *r, const struct uwalk_rows *src,
			 const struct uwalk_stack *stk, struct uwalk_regs *uregs)
{
	static struct uwalk_result res;
	struct uwalk_mem mem = {.read = read_rt,
				.arg = r,
				.ts_memo = &r->ts_memo,
				.v8_memo = r->v8_memo,
				.py_code_memo = r->py_code_memo};
	struct rt_mem rmem = {read_rt, r, NULL};
	struct rt_name name;

	uregs->tid = (uint32_t)r->pid;
	uwalk_mem(&r->proc, src, stk, &mem, uregs, &res);
	r->rt_frames += res.rt_frames;
	r->rt_samples += res.rt_frames > 0;
	count_cost(r, &res);
	if (r->rt_shown >= r->show_max)
		return;
	r->rt_shown++;
	printf("runtime walk: %u frames (%u runtime), end %s, miss %u:", res.n, res.rt_frames,
	       end_name(res.end), res.rt_miss);
	for (uint32_t i = 0; i < res.n; i++) {
		if (!EMBER_RT_IS_WORD(res.ips[i])) {
			printf(" 0x%llx", (unsigned long long)res.ips[i]);
			continue;
		}
		rt_cache_name(r->rt_names, &rmem, &r->proc.rt, res.ips[i], &name);
		printf(" %s(%s:%u)", name.function, name.file, name.line);
	}
	printf("\n");
}

/*
 * Walks the stopped thread as the BPF program would: its registers, its stack from rsp
 * less the red zone up to the end of the stack's mapping (at most STACK_MAX).
 */
static void ember_walk(struct replay *r, const struct user_regs_struct *regs,
		       const struct proc_maps *maps, struct uwalk_result *out)
{
	struct uwalk_rows src = {find_rule, r};
	struct uwalk_regs uregs = {
		.ip = regs->rip, .sp = regs->rsp, .bp = regs->rbp, .bx = regs->rbx};
	uint64_t base = regs->rsp - UWALK_RED_ZONE, end = base + sizeof(r->stack);
	const struct proc_map *m = procmaps_find(maps, regs->rsp);
	struct uwalk_stack stk = {r->stack, base, 0};

	if (m && m->end < end)
		end = m->end;
	stk.len = read_mem(r->pid, base, r->stack, end - base);
	fill_proc(r, maps);
	uwalk(&r->proc, &src, &stk, &uregs, out);
	if (r->runtime && r->proc.rt.kind)
		runtime_walk(r, &src, &stk, &uregs);
	else
		count_cost(r, out);
}

/* --- libdw's side ------------------------------------------------------------------------ */

static char *debuginfo_path;
static const Dwfl_Callbacks dwfl_cbs = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

static int find_main(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
		     void *arg)
{
	struct replay *r = arg;
	int n = dwfl_module_getsymtab(mod);

	(void)userdata, (void)name, (void)start;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *s = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);

		if (s && !strcmp(s, "main") && GELF_ST_TYPE(sym.st_info) == STT_FUNC &&
		    sym.st_shndx != SHN_UNDEF && sym.st_size) {
			r->main_lo = addr;
			r->main_hi = addr + sym.st_size;
			return DWARF_CB_ABORT;
		}
	}
	return DWARF_CB_OK;
}

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ULL;
	return h;
}

/*
 * Gives libdw the process's modules (again when its mappings changed, as while ld.so
 * loads libraries under -s) and attaches it to the stopped process: ptrace stops are ours.
 */
static int dwfl_sync(struct replay *r, const char *maps_text, size_t len)
{
	uint64_t h = hash_bytes(maps_text, len);

	if (!r->dwfl) {
		r->dwfl = dwfl_begin(&dwfl_cbs);
		if (!r->dwfl)
			return -1;
	} else if (h == r->maps_hash) {
		return 0;
	}
	dwfl_report_begin(r->dwfl);
	if (dwfl_linux_proc_report(r->dwfl, r->pid) || dwfl_report_end(r->dwfl, NULL, NULL))
		return -1;
	r->maps_hash = h;
	r->main_lo = r->main_hi = 0;
	dwfl_getmodules(r->dwfl, find_main, r, 0);
	if (!r->attached) {
		if (dwfl_linux_proc_attach(r->dwfl, r->pid, true))
			return -1;
		r->attached = true;
	}
	return 0;
}

static int dw_frame(Dwfl_Frame *fr, void *arg)
{
	struct sample *s = arg;
	Dwarf_Addr pc;

	if (!dwfl_frame_pc(fr, &pc, NULL))
		return DWARF_CB_ABORT;
	if (s->ndw == EMBER_MAX_STACK_DEPTH)
		return DWARF_CB_ABORT;
	/* raw: a caller's pc is its return address, as ember's ips are */
	s->dw[s->ndw++] = pc;
	return DWARF_CB_OK;
}

static void dw_walk(struct replay *r, struct sample *s)
{
	s->ndw = 0;
	s->dw_err = NULL;
	if (dwfl_getthread_frames(r->dwfl, r->pid, dw_frame, s) && s->ndw < EMBER_MAX_STACK_DEPTH)
		s->dw_err = dwfl_errmsg(-1);
}

/* --- comparing --------------------------------------------------------------------------- */

/* Whether frame i of a stack (leaf: the pc itself, callers: their call) lies in main. */
static bool in_main(const struct replay *r, uint64_t pc, size_t i)
{
	uint64_t at = i ? pc - 1 : pc;

	return r->main_lo && at >= r->main_lo && at < r->main_hi;
}

static bool reaches_main(const struct replay *r, const __u64 *pcs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (in_main(r, pcs[i], i))
			return true;
	return false;
}

static const char *sym_name(Dwfl *d, uint64_t pc, size_t i, const char **mod)
{
	Dwfl_Module *m = dwfl_addrmodule(d, i ? pc - 1 : pc);
	const char *s;

	*mod = m ? dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, NULL, NULL) : NULL;
	s = m ? dwfl_module_addrname(m, i ? pc - 1 : pc) : NULL;
	return s ? s : "?";
}

/* The name of the section holding pc, or "". */
static const char *section_name(Dwfl *d, uint64_t pc)
{
	Dwfl_Module *m = dwfl_addrmodule(d, pc);
	Dwarf_Addr adr = pc, bias;
	Elf_Scn *scn = m ? dwfl_module_address_section(m, &adr, &bias) : NULL;
	Elf *elf = m ? dwfl_module_getelf(m, &bias) : NULL;
	size_t shstrndx;
	GElf_Shdr sh;
	const char *s;

	if (!scn || !elf || elf_getshdrstrndx(elf, &shstrndx) || !gelf_getshdr(scn, &sh))
		return "";
	s = elf_strptr(elf, shstrndx, sh.sh_name);
	return s ? s : "";
}

static bool frame_is(struct replay *r, const char *key, uint64_t pc, size_t i)
{
	const char *mod, *s = sym_name(r->dwfl, pc, i, &mod);

	if (!strcmp(key, "[vdso]"))
		return mod && !strncmp(mod, "[vdso", 5);
	if (!strcmp(key, "[plt]"))
		return i == 0 && !strncmp(section_name(r->dwfl, pc), ".plt", 4);
	return !strncmp(s, key, strlen(key));
}

static bool has_key(struct replay *r, const char *key, const __u64 *pcs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (frame_is(r, key, pcs[i], i))
			return true;
	return false;
}

/* Where pc lies, for a reader with readelf: "module+offset from its start" */
static void where(Dwfl *d, uint64_t pc, char *buf, size_t len)
{
	Dwfl_Module *m = dwfl_addrmodule(d, pc);
	Dwarf_Addr start = 0;
	const char *name =
		m ? dwfl_module_info(m, NULL, &start, NULL, NULL, NULL, NULL, NULL) : NULL;
	const char *base = name ? strrchr(name, '/') : NULL;

	snprintf(buf, len, "%s+%#" PRIx64, base ? base + 1 : name ? name : "?", pc - start);
}

static void show(struct replay *r, const struct sample *s, size_t first)
{
	size_t n = s->ember.n > s->ndw ? s->ember.n : s->ndw;

	printf("%s at sample %u, frame %zu: ember %u frames (end %s%s), libdw %zu (%s)\n",
	       first == n ? "agreement" : "disagreement", r->samples, first, s->ember.n,
	       end_name(s->ember.end), s->ember.copy_short ? ", copy short" : "", s->ndw,
	       s->dw_err ? s->dw_err : "end");
	for (size_t i = 0; i < n && i < 40; i++) {
		const char *me = "", *md = "";
		const char *ne = i < s->ember.n ? sym_name(r->dwfl, s->ember.ips[i], i, &me) : "";
		const char *nd = i < s->ndw ? sym_name(r->dwfl, s->dw[i], i, &md) : "";
		char at[96] = "";

		if (i < s->ember.n)
			where(r->dwfl, s->ember.ips[i], at, sizeof(at));
		printf("  %c %2zu ember %016" PRIx64 " %-34.34s %-24.24s libdw %016" PRIx64 " %s\n",
		       i == first ? '>' : ' ', i, i < s->ember.n ? (uint64_t)s->ember.ips[i] : 0,
		       at, ne, i < s->ndw ? (uint64_t)s->dw[i] : 0, nd);
	}
}

/* Walks the stopped process both ways and counts how they compare. */
static int sample(struct replay *r, struct sample *s)
{
	struct user_regs_struct regs;
	struct proc_maps maps = {0};
	char path[64], *text = NULL;
	size_t len = 0, first;
	bool equal, dmain, emain, in_sys;
	FILE *f;

	if (ptrace(PTRACE_GETREGS, r->pid, NULL, &regs))
		return -errno;
	/* the maps once as text: its hash says when libdw must be given them again */
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)r->pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (getdelim(&text, &len, '\0', f) < 0) {
		fclose(f);
		free(text);
		return -EIO;
	}
	fclose(f);
	len = strlen(text);
	if (procmaps_parse(text, len, &maps) || dwfl_sync(r, text, len)) {
		fprintf(stderr, "uwalk_replay: cannot read pid %d: %s\n", (int)r->pid,
			dwfl_errmsg(-1));
		free(text);
		procmaps_free(&maps);
		return -EIO;
	}
	free(text);
	ember_walk(r, &regs, &maps, &s->ember);
	procmaps_free(&maps);
	dw_walk(r, s);

	r->samples++;
	in_sys = (int64_t)regs.orig_rax >= 0;
	r->syscall += in_sys;
	for (first = 0; first < s->ember.n && first < s->ndw; first++)
		if (s->ember.ips[first] != s->dw[first])
			break;
	equal = s->ember.n == s->ndw && first == s->ndw;
	dmain = reaches_main(r, s->dw, s->ndw);
	emain = reaches_main(r, s->ember.ips, s->ember.n);
	r->equal += equal;
	r->dw_main += dmain;
	r->equal_dw_main += dmain && equal;
	r->ember_main += emain;
	for (size_t k = 0; k < r->nkeys; k++) {
		struct key *key = &r->keys[k];

		if (!has_key(r, key->name, s->dw, s->ndw) &&
		    !has_key(r, key->name, s->ember.ips, s->ember.n))
			continue;
		key->samples++;
		key->equal += equal;
		key->ember_main += emain;
		key->syscall += in_sys;
		key->dw_main += dmain;
		key->equal_dw_main += dmain && equal;
	}
	if ((!equal || r->verbose) && r->shown < r->show_max) {
		r->shown++;
		show(r, s, first);
	}
	return 0;
}

/* --- driving the fixture ----------------------------------------------------------------- */

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * Stops pid (PTRACE_SEIZE, PTRACE_INTERRUPT), samples it, lets it go. A signal arriving
 * meanwhile stops it first (a signal-delivery stop: its user registers are as good), and is
 * delivered at the detach. -ESRCH once it is gone.
 */
static int sample_live(struct replay *r, struct sample *s)
{
	int st, sig = 0, rc;

	if (ptrace(PTRACE_SEIZE, r->pid, NULL, NULL))
		return -errno;
	if (ptrace(PTRACE_INTERRUPT, r->pid, NULL, NULL)) {
		rc = -errno;
		ptrace(PTRACE_DETACH, r->pid, NULL, NULL);
		return rc;
	}
	if (waitpid(r->pid, &st, __WALL) < 0)
		return -errno;
	if (!WIFSTOPPED(st))
		return -ESRCH;
	if (st >> 16 != PTRACE_EVENT_STOP && WSTOPSIG(st) != SIGTRAP)
		sig = WSTOPSIG(st);
	rc = sample(r, s);
	ptrace(PTRACE_DETACH, r->pid, NULL, (void *)(uintptr_t)sig);
	return rc;
}

static int run_sampled(struct replay *r, struct sample *s, unsigned n, unsigned interval,
		       unsigned warmup)
{
	unsigned failed = 0;
	int st;

	sleep_ms(warmup);
	/* n in user code: under load most stops can come at a system call's exit (struct replay) */
	while (r->samples - r->syscall < n && r->samples < STOPS_MAX * n) {
		int rc;

		if (waitpid(r->pid, &st, WNOHANG) == r->pid)
			return 0; /* it ended: what was taken is the answer */
		rc = sample_live(r, s);
		if (rc == -ESRCH)
			return 0;
		if (rc == -EPERM)
			return rc; /* no ptrace here (Yama, a seccomp policy): nothing to measure */
		if (rc) {
			fprintf(stderr, "uwalk_replay: sample: %s\n", strerror(-rc));
			/* a bound: every stop failing would otherwise loop for ever */
			if (++failed == FAILED_MAX)
				return rc;
		}
		sleep_ms(interval);
	}
	return 0;
}

/*
 * Single-steps the fixture from its exec to its end (-s): every instruction in the
 * executable's own mappings is sampled, and every every-th elsewhere once main was entered.
 */
static int run_stepped(struct replay *r, struct sample *s, unsigned n, unsigned every)
{
	struct proc_maps maps = {0};
	uint64_t exe_lo[EXE_MAPS_MAX], exe_hi[EXE_MAPS_MAX], steps = 0;
	char exe[4096], link[64];
	size_t nexe = 0;
	bool in_main_yet = false;
	ssize_t len;
	int st, sig = 0, rc;

	if (waitpid(r->pid, &st, 0) < 0)
		return -errno;
	if (!WIFSTOPPED(st)) /* the stop at its exec, or the child's 77: no PTRACE_TRACEME */
		return WIFEXITED(st) && WEXITSTATUS(st) == 77 ? -EPERM : -ECHILD;
	ptrace(PTRACE_SETOPTIONS, r->pid, NULL, (void *)(uintptr_t)PTRACE_O_EXITKILL);
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)r->pid);
	len = readlink(link, exe, sizeof(exe) - 1);
	if (len < 0)
		return -errno;
	exe[len] = '\0';
	rc = procmaps_read(r->pid, &maps);
	if (rc)
		return rc;
	for (size_t i = 0; i < maps.n && nexe < EXE_MAPS_MAX; i++) {
		if ((maps.v[i].perms & PROCMAP_X) && maps.v[i].path &&
		    !strcmp(maps.v[i].path, exe)) {
			exe_lo[nexe] = maps.v[i].start;
			exe_hi[nexe++] = maps.v[i].end;
		}
	}
	procmaps_free(&maps);
	for (;;) {
		struct user_regs_struct regs;
		bool in_exe = false;

		if (ptrace(PTRACE_SINGLESTEP, r->pid, NULL, (void *)(uintptr_t)sig) ||
		    waitpid(r->pid, &st, __WALL) < 0)
			return -errno;
		if (WIFEXITED(st) || WIFSIGNALED(st))
			return 0;
		sig = WSTOPSIG(st) == SIGTRAP ? 0 : WSTOPSIG(st);
		if (sig || ptrace(PTRACE_GETREGS, r->pid, NULL, &regs))
			continue;
		steps++;
		for (size_t i = 0; i < nexe; i++)
			in_exe |= regs.rip >= exe_lo[i] && regs.rip < exe_hi[i];
		if (!in_exe && (!in_main_yet || steps % every))
			continue;
		if (r->samples >= n)
			continue; /* runs to its end all the same */
		sample(r, s);
		if (!in_main_yet && r->main_lo && regs.rip == r->main_lo)
			in_main_yet = true;
	}
}

int main(int argc, char **argv)
{
	static struct replay r;
	static struct sample s;
	unsigned n = 200, interval = 10, warmup = 500, every = 0;
	int opt, st, rc;

	r.show_max = SHOW_MAX;
	while ((opt = getopt(argc, argv, "+n:i:w:s:k:vd:R")) != -1) {
		switch (opt) {
		case 'n':
			n = (unsigned)atoi(optarg);
			break;
		case 'i':
			interval = (unsigned)atoi(optarg);
			break;
		case 'w':
			warmup = (unsigned)atoi(optarg);
			break;
		case 's':
			every = (unsigned)atoi(optarg);
			break;
		case 'v':
			r.verbose = true;
			break;
		case 'R':
			r.runtime = true;
			r.rt_names = rt_cache_new();
			break;
		case 'd':
			r.show_max = (unsigned)atoi(optarg);
			break;
		case 'k':
			if (r.nkeys < KEYS_MAX)
				r.keys[r.nkeys++].name = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (optind >= argc)
		goto usage;
	r.pid = fork();
	if (r.pid < 0)
		return perror("fork"), 1;
	if (!r.pid) {
		if (every && ptrace(PTRACE_TRACEME, 0, NULL, NULL))
			_exit(77);
		execvp(argv[optind], argv + optind);
		perror(argv[optind]);
		_exit(127);
	}
	rc = every ? run_stepped(&r, &s, n, every) : run_sampled(&r, &s, n, interval, warmup);
	kill(r.pid, SIGKILL);
	waitpid(r.pid, &st, 0);
	if (rc) {
		fprintf(stderr, "uwalk_replay: %s\n", strerror(-rc));
		return rc == -EPERM ? 77 : 1;
	}
	printf("samples %u\n", r.samples);
	printf("equal %u\n", r.equal);
	printf("libdw_main %u\n", r.dw_main);
	printf("equal_where_libdw_main %u\n", r.equal_dw_main);
	printf("ember_main %u\n", r.ember_main);
	printf("syscall %u\n", r.syscall);
	if (r.runtime)
		printf("runtime_frames %u runtime_samples %u\n", r.rt_frames, r.rt_samples);
	printf("cost walks %" PRIu64 " stack_reads %" PRIu64 " mem_reads %" PRIu64
	       " mem_bytes %" PRIu64 " rules %" PRIu64 "\n",
	       r.walks, r.stack_reads, r.mem_reads, r.mem_bytes, r.rules);
	for (size_t k = 0; k < r.nkeys; k++)
		printf("key %s samples %u equal %u ember_main %u syscall %u libdw_main %u "
		       "equal_where_libdw_main %u\n",
		       r.keys[k].name, r.keys[k].samples, r.keys[k].equal, r.keys[k].ember_main,
		       r.keys[k].syscall, r.keys[k].dw_main, r.keys[k].equal_dw_main);
	if (r.dwfl)
		dwfl_end(r.dwfl);
	for (size_t i = 0; i < r.ntabs; i++) {
		unwtab_free(&r.tabs[i].t);
		free(r.tabs[i].path);
	}
	return 0;
usage:
	fprintf(stderr,
		"usage: uwalk_replay [-n SAMPLES] [-i MS] [-w MS] [-s K] [-v] [-R] [-d N] [-k KEY]... -- "
		"CMD [ARG...]\n");
	return 2;
}
