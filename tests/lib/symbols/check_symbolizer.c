// SPDX-License-Identifier: MIT
/*
 * symbolizer: frames of this process (its own code, libc), of a fixture
 * process, and of the kernel, checked against nm and /proc/kallsyms.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "nm.h"
#include <ember/runtime.h>

#include "procmaps.h"
#include "suites.h"
#include "symbolizer.h"

#define FX(name) FIXTURE_DIR "/" name

__attribute__((noinline)) static int symbolizer_test_target(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

/*
 * Names addr as emberd's drain does: a frame whose binary the loader still
 * parses is an address (counted), and the loop holds the drain until the
 * loader is idle; so the frame is named again once it is.
 */
static unsigned frames_asked_again; /* by frame(): each counts in the stats twice */

static void frame(struct symbolizer *s, pid_t pid, uint64_t addr, bool kernel, struct sym_frame *f)
{
	struct symbolizer_stats before, after;

	symbolizer_stats(s, &before);
	symbolizer_frame(s, pid, addr, kernel, f);
	symbolizer_stats(s, &after);
	if (after.loader_waits_cut == before.loader_waits_cut)
		return;
	ck_assert(!f->function);
	ck_assert(symbolizer_settle_until(s, mono_ns() + 30 * NS_PER_SEC));
	frames_asked_again++;
	symbolizer_frame(s, pid, addr, kernel, f);
}

static struct symbolizer *new_symbolizer(void)
{
	struct symbolizer *s = symbolizer_new();

	frames_asked_again = 0;
	ck_assert_ptr_nonnull(s);
	return s;
}

START_TEST(test_self)
{
	uint64_t addr = (uint64_t)(uintptr_t)&symbolizer_test_target + 1;
	struct symbolizer *s = new_symbolizer();
	struct sym_frame f;

	frame(s, getpid(), addr, false, &f);
	ck_assert_str_eq(f.function, "symbolizer_test_target");
	ck_assert_ptr_nonnull(strstr(f.file, "check_ember"));
	ck_assert_uint_eq(strlen(f.build_id), 40);
	ck_assert(!f.kernel);
	ck_assert_uint_eq(f.address, addr);
	ck_assert(f.map_start <= addr && addr < f.map_limit);
	symbolizer_free(s);
}
END_TEST

START_TEST(test_libc)
{
	uint64_t addr = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "getpid");
	struct symbolizer *s = new_symbolizer();
	struct sym_frame f;

	ck_assert_uint_ne(addr, 0);
	frame(s, getpid(), addr + 1, false, &f);
	ck_assert_str_eq(f.function, "getpid");
	ck_assert_ptr_nonnull(strstr(f.file, "libc"));
	symbolizer_free(s);
}
END_TEST

START_TEST(test_kernel)
{
	unsigned long long addr = 0;
	char line[1024], name[512] = "", type;
	struct symbolizer *s = new_symbolizer();
	struct sym_frame f;
	FILE *kf = fopen("/proc/kallsyms", "r");

	ck_assert_ptr_nonnull(kf);
	while (fgets(line, sizeof(line), kf))
		if (sscanf(line, "%llx %c %511s", &addr, &type, name) == 3 &&
		    !strcmp(name, "schedule"))
			break;
	fclose(kf);
	frame(s, getpid(), addr + 4, true, &f);
	ck_assert(f.kernel);
	ck_assert_str_eq(f.file, "[kernel.kallsyms]");
	if (addr == 0)
		ck_assert_ptr_null(f.function); /* kallsyms hidden */
	else
		ck_assert_str_eq(f.function, "schedule");
	frame(s, getpid(), 0x10, true, &f);
	ck_assert_ptr_null(f.function);
	ck_assert_str_eq(f.file, "[kernel.kallsyms]");
	symbolizer_free(s);
}
END_TEST

/* A fake kernel namer with known answers; counts how often it is asked. */
struct fake_namer {
	int asked;
	bool fail;
};

static int fake_name(void *arg, uint64_t addr, char *buf, size_t len)
{
	struct fake_namer *fn = arg;

	fn->asked++;
	if (fn->fail)
		return -EIO;
	if (addr == 0x1000)
		return snprintf(buf, len, "do_work"), 1;
	if (addr == 0x2000)
		return snprintf(buf, len, "mod_fn [some_module]"), 1;
	buf[0] = '\0';
	return 0;
}

/* The namer is asked once per address; module suffixes go; unknown stays NULL. */
START_TEST(test_kernel_namer)
{
	struct symbolizer *s = new_symbolizer();
	struct fake_namer fn = {0};
	struct symbolizer_stats st;
	struct sym_frame f;

	symbolizer_set_kernel_namer(s, fake_name, &fn);
	for (int round = 0; round < 3; round++) {
		frame(s, getpid(), 0x1000, true, &f);
		ck_assert_str_eq(f.function, "do_work");
		ck_assert_str_eq(f.file, "[kernel.kallsyms]");
		frame(s, getpid(), 0x2000, true, &f);
		ck_assert_str_eq(f.function, "mod_fn");
		frame(s, getpid(), 0x3000, true, &f);
		ck_assert_ptr_null(f.function);
		symbolizer_end_interval(s);
	}
	ck_assert_int_eq(fn.asked, 3);
	symbolizer_stats(s, &st);
	ck_assert_uint_eq(st.kernel_asked, 3);
	ck_assert_uint_eq(st.kernel_cached, 3);
	symbolizer_free(s);
}
END_TEST

/* A namer that fails is dropped for good: /proc/kallsyms names the frames. */
START_TEST(test_kernel_namer_fails)
{
	struct symbolizer *s = new_symbolizer();
	struct fake_namer fn = {.fail = true};
	struct sym_frame f;

	symbolizer_set_kernel_namer(s, fake_name, &fn);
	frame(s, getpid(), 0x10, true, &f);
	ck_assert_ptr_null(f.function);
	ck_assert(f.kernel);
	frame(s, getpid(), 0x1000, true, &f);
	ck_assert_ptr_null(f.function); /* kallsyms has nothing at 0x1000 */
	ck_assert_int_eq(fn.asked, 1);
	symbolizer_free(s);
}
END_TEST

/* Anonymous memory, nothing mapped, no such process, a file that is not ELF. */
START_TEST(test_unnamed)
{
	struct symbolizer *s = new_symbolizer();
	struct symbolizer_stats st;
	struct sym_frame f;
	void *anon = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fd = open(FIXTURE_SRC_DIR "/pie_main.c", O_RDONLY | O_CLOEXEC);
	/* executable, as any mapping a frame can lie in (the only ones the symbolizer reads) */
	void *text = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);

	ck_assert(anon != MAP_FAILED && text != MAP_FAILED);
	frame(s, getpid(), (uint64_t)(uintptr_t)anon + 8, false, &f);
	ck_assert_ptr_null(f.file);
	ck_assert_ptr_null(f.function);
	ck_assert_str_eq(f.build_id, "");
	frame(s, getpid(), 8, false, &f);
	ck_assert_ptr_null(f.file);
	frame(s, getpid(), (uint64_t)(uintptr_t)text + 8, false, &f);
	ck_assert_ptr_nonnull(strstr(f.file, "pie_main.c"));
	ck_assert_ptr_null(f.function);
	ck_assert_uint_eq(f.map_start, (uint64_t)(uintptr_t)text);
	/* No such process: read once, then remembered as failed. */
	frame(s, 0x3ffffff0, 0x400000, false, &f);
	frame(s, 0x3ffffff0, 0x400010, false, &f);
	ck_assert_ptr_null(f.file);
	symbolizer_stats(s, &st);
	ck_assert_uint_eq(st.frames, 5 + frames_asked_again);
	ck_assert_uint_eq(st.unnamed, 5 + frames_asked_again);
	ck_assert_uint_eq(st.maps_read, 1);
	ck_assert_uint_eq(st.maps_failed, 1);
	ck_assert_uint_eq(st.files_cached, 1); /* the negative entry of pie_main.c */
	munmap(anon, 4096);
	munmap(text, 4096);
	close(fd);
	symbolizer_free(s);
}
END_TEST

/* A paused child of this process (its code), its mappings read by s. */
static pid_t spawn_captured(struct symbolizer *s)
{
	pid_t pid = spawn_paused();

	ck_assert_int_eq(symbolizer_capture(s, pid), 0);
	return pid;
}

/* pid's frame at addr is named function (NULL: unnamed). */
static void check_named(struct symbolizer *s, pid_t pid, uint64_t addr, const char *function)
{
	struct sym_frame f;

	frame(s, pid, addr, false, &f);
	if (function)
		ck_assert_str_eq(f.function, function);
	else
		ck_assert_ptr_null(f.function);
}

/*
 * A process idle for 2 intervals is dropped (its mappings read again when
 * seen); one kept at each interval (a thread of it away, its stack held by
 * the off-CPU sampler) keeps them, and its frames are still named after it
 * exited.
 */
START_TEST(test_keep)
{
	uint64_t addr = (uint64_t)(uintptr_t)&symbolizer_test_target;
	struct symbolizer *s = new_symbolizer();
	pid_t idle = spawn_captured(s), kept = spawn_captured(s);
	struct symbolizer_stats st;

	for (int i = 0; i < 3; i++) {
		symbolizer_keep(s, kept);
		symbolizer_keep(s, getpid()); /* never read: nothing to keep, nothing read */
		symbolizer_end_interval(s);
	}
	symbolizer_stats(s, &st);
	ck_assert_uint_eq(st.pids_held, 1);
	ck_assert_uint_eq(st.maps_read, 2);
	reap_killed(idle);
	reap_killed(kept);
	symbolizer_exited(s, kept);
	check_named(s, kept, addr, "symbolizer_test_target");
	check_named(s, idle, addr, NULL); /* dropped, then gone: unnamed */
	symbolizer_free(s);
}
END_TEST

/*
 * An exit noted after the buffers flipped: the process may have samples in
 * the new ones, and its frames are still named at the next interval's drain,
 * then dropped. One noted before the flip is dropped at this interval's end.
 */
START_TEST(test_exit_after_flip)
{
	uint64_t addr = (uint64_t)(uintptr_t)&symbolizer_test_target;
	struct symbolizer *s = new_symbolizer();
	pid_t early = spawn_captured(s), late = spawn_captured(s);
	struct symbolizer_stats st;

	reap_killed(early);
	reap_killed(late);
	symbolizer_exited(s, early);
	symbolizer_flipped(s);
	symbolizer_exited(s, late);
	symbolizer_end_interval(s);
	check_named(s, late, addr, "symbolizer_test_target");
	check_named(s, early, addr, NULL);
	symbolizer_flipped(s);
	symbolizer_end_interval(s);
	symbolizer_stats(s, &st);
	ck_assert_uint_eq(st.pids_held, 0);
	symbolizer_free(s);
}
END_TEST

/*
 * A binary is parsed once for all intervals; a process's maps are read once,
 * and again only when an address falls outside them (once per interval).
 */
START_TEST(test_cache)
{
	uint64_t addr = (uint64_t)(uintptr_t)&symbolizer_test_target;
	struct symbolizer *s = new_symbolizer();
	struct symbolizer_stats st, st2;
	struct sym_frame f;
	int i;

	for (i = 0; i < 3; i++)
		frame(s, getpid(), addr + (uint64_t)i, false, &f);
	symbolizer_stats(s, &st);
	ck_assert_uint_eq(st.maps_read, 1);
	ck_assert_uint_eq(st.named, 3);
	ck_assert_uint_eq(st.files_cached, 1);
	ck_assert_uint_gt(st.file_cache_bytes, 0);
	symbolizer_end_interval(s);
	frame(s, getpid(), addr, false, &f);
	ck_assert_str_eq(f.function, "symbolizer_test_target");
	symbolizer_stats(s, &st2);
	ck_assert_uint_eq(st2.maps_read, 1);
	ck_assert_uint_eq(st2.files_cached, 1);
	ck_assert_uint_eq(st2.file_cache_bytes, st.file_cache_bytes);

	/* a mapping made since: the miss re-reads the maps, once per interval */
	int fd = open("/proc/self/exe", O_RDONLY);
	void *late = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);

	ck_assert_ptr_ne(late, MAP_FAILED);
	frame(s, getpid(), (uint64_t)(uintptr_t)late + 16, false, &f);
	ck_assert_ptr_nonnull(f.file);
	frame(s, getpid(), 16, false, &f); /* unmapped: no second read */
	ck_assert_ptr_null(f.file);
	symbolizer_stats(s, &st2);
	ck_assert_uint_eq(st2.maps_read, 2);
	munmap(late, 4096);
	close(fd);
	symbolizer_free(s);
	symbolizer_free(NULL);
}
END_TEST

/*
 * The start of the first mapping of pid's file whose path ends in suffix: its
 * load base (offset 0), or with text, its executable mapping.
 */
static uint64_t mapping_start(pid_t pid, const char *suffix, bool text)
{
	struct proc_maps m = {0};
	uint64_t start = 0;
	size_t i, n = strlen(suffix);

	ck_assert_int_eq(procmaps_read(pid, &m), 0);
	for (i = 0; i < m.n && !start; i++) {
		const char *p = m.v[i].path;

		if (p && strlen(p) >= n && !strcmp(p + strlen(p) - n, suffix) &&
		    (text ? (m.v[i].perms & PROCMAP_X) != 0 : !m.v[i].offset))
			start = m.v[i].start;
	}
	procmaps_free(&m);
	return start;
}

/* Where the child loaded the file whose path ends in suffix (first segment's start). */
static uint64_t load_base(pid_t pid, const char *suffix)
{
	return mapping_start(pid, suffix, false);
}

/*
 * A process read, then exec'd and read again: its samples from before the
 * exec (this program's code) are named by its old image until drained, the
 * interval after when the exec was noted after the flip; the new image's by
 * the new one.
 */
START_TEST(test_exec_keeps_old_image)
{
	uint64_t addr = (uint64_t)(uintptr_t)&symbolizer_test_target;
	struct symbolizer *s = new_symbolizer();
	int go;
	pid_t pid = spawn_exec_later(&go);
	struct sym_frame f;

	ck_assert_int_eq(symbolizer_capture(s, pid), 0);
	check_named(s, pid, addr, "symbolizer_test_target");
	ck_assert(!symbolizer_before_exec(s, pid, addr)); /* no exec noted yet */
	exec_child(pid, go);
	symbolizer_flipped(s);
	symbolizer_exec(s, pid, 7);
	ck_assert_uint_eq(symbolizer_before_exec(s, pid, addr), 7);
	/* the new image's code, read now: not from before */
	ck_assert(!symbolizer_before_exec(s, pid, mapping_start(pid, "/sleep", true) + 16));
	ck_assert_int_eq(symbolizer_capture(s, pid), 0);
	check_named(s, pid, addr, "symbolizer_test_target");
	frame(s, pid, mapping_start(pid, "/sleep", true) + 16, false, &f);
	ck_assert_ptr_nonnull(f.file);
	ck_assert_str_eq(f.file + strlen(f.file) - strlen("/sleep"), "/sleep");
	symbolizer_end_interval(s);
	check_named(s, pid, addr, "symbolizer_test_target");
	ck_assert_uint_eq(symbolizer_before_exec(s, pid, addr), 7);
	symbolizer_flipped(s);
	symbolizer_end_interval(s);
	check_named(s, pid, addr, NULL);
	ck_assert(!symbolizer_before_exec(s, pid, addr));
	reap_killed(pid);
	symbolizer_free(s);
}
END_TEST

/* The file that names addr in pid ends in suffix. */
static void check_file(struct symbolizer *s, pid_t pid, uint64_t addr, const char *suffix)
{
	struct sym_frame f;

	frame(s, pid, addr, false, &f);
	ck_assert_ptr_nonnull(f.file);
	ck_assert_uint_ge(strlen(f.file), strlen(suffix));
	ck_assert_str_eq(f.file + strlen(f.file) - strlen(suffix), suffix);
}

/*
 * Two execs before one drain (this program, then sh, then sleep): each old
 * image names its own samples and says which exec ended it, until drained.
 */
START_TEST(test_two_execs_keep_both_images)
{
	uint64_t addr = (uint64_t)(uintptr_t)&symbolizer_test_target, sh, sleep;
	struct symbolizer *s = new_symbolizer();
	int go;
	pid_t pid = spawn_exec_twice(&go);

	ck_assert_int_eq(symbolizer_capture(s, pid), 0);
	symbolizer_flipped(s);
	exec_step(pid, go, "sh");
	symbolizer_exec(s, pid, 1);
	ck_assert_int_eq(symbolizer_capture(s, pid), 0); /* sh sampled and read */
	sh = mapping_start(pid, "/dash", true) + 16;
	ck_assert_uint_ne(sh, 16);
	ck_assert_uint_eq(symbolizer_before_exec(s, pid, sh), 0); /* sh is the image now */
	exec_step(pid, go, "sleep");
	close(go);
	symbolizer_exec(s, pid, 2);
	ck_assert_int_eq(symbolizer_capture(s, pid), 0);
	sleep = mapping_start(pid, "/sleep", true) + 16;
	ck_assert_uint_eq(symbolizer_before_exec(s, pid, addr), 1);
	ck_assert_uint_eq(symbolizer_before_exec(s, pid, sh), 2);
	ck_assert_uint_eq(symbolizer_before_exec(s, pid, sleep), 0);
	check_named(s, pid, addr, "symbolizer_test_target");
	check_file(s, pid, sh, "/dash");
	check_file(s, pid, sleep, "/sleep");
	/* both execs noted after the flip: kept through the next drain, then dropped */
	symbolizer_end_interval(s);
	ck_assert_uint_eq(symbolizer_before_exec(s, pid, addr), 1);
	ck_assert_uint_eq(symbolizer_before_exec(s, pid, sh), 2);
	symbolizer_flipped(s);
	symbolizer_end_interval(s);
	ck_assert_uint_eq(symbolizer_before_exec(s, pid, addr), 0);
	ck_assert_uint_eq(symbolizer_before_exec(s, pid, sh), 0);
	check_named(s, pid, addr, NULL);
	reap_killed(pid);
	symbolizer_free(s);
}
END_TEST

/*
 * A process exec'ing in a loop before a drain: the images kept stay bounded
 * (SYMBOLIZER_EXECS_MAX), the oldest goes first.
 */
START_TEST(test_execs_kept_bounded)
{
	uint64_t addr = (uint64_t)(uintptr_t)&symbolizer_test_target;
	struct symbolizer *s = new_symbolizer();
	int go;
	pid_t pid = spawn_exec_later(&go);
	uint64_t id;

	ck_assert_int_eq(symbolizer_capture(s, pid), 0);
	exec_child(pid, go);
	/* sleep, read again after each exec noted: an image kept each time */
	for (id = 1; id <= SYMBOLIZER_EXECS_MAX; id++) {
		symbolizer_exec(s, pid, id);
		ck_assert_int_eq(symbolizer_capture(s, pid), 0);
	}
	ck_assert_uint_eq(symbolizer_before_exec(s, pid, addr), 1);
	symbolizer_exec(s, pid, id);
	ck_assert_uint_eq(symbolizer_before_exec(s, pid, addr), 0);
	reap_killed(pid);
	symbolizer_free(s);
}
END_TEST

static void check_child_frame(struct symbolizer *s, pid_t pid, const char *file, const char *suffix,
			      const char *name)
{
	uint64_t base = load_base(pid, suffix), addr = nm_symbol(file, name, false, NULL);
	struct sym_frame f;

	ck_assert_msg(base && addr, "%s in %s", name, suffix);
	/* PIEs and libraries are linked at 0: runtime = load base + ELF address. */
	frame(s, pid, base + addr + 2, false, &f);
	ck_assert_str_eq(f.function, name);
	ck_assert_ptr_nonnull(f.file);
	ck_assert_str_eq(f.file + strlen(f.file) - strlen(suffix), suffix);
	ck_assert_uint_eq(strlen(f.build_id), 40);
}

/*
 * Capture opens a process's binaries and hands their parsing to the loader
 * thread: nothing is parsed or accounted on the caller's side until a frame
 * needs the symbols (then it waits for them).
 */
START_TEST(test_capture_defers_parsing)
{
	uint64_t addr = (uint64_t)(uintptr_t)&symbolizer_test_target;
	struct symbolizer *s = new_symbolizer();
	struct symbolizer_stats st;
	struct sym_frame f;

	ck_assert_int_eq(symbolizer_capture(s, getpid()), 0);
	symbolizer_stats(s, &st);
	ck_assert_uint_eq(st.captured, 1);
	ck_assert_uint_ge(st.files_cached, 2);	   /* this test binary, libc, ... */
	ck_assert_uint_eq(st.file_cache_bytes, 0); /* none waited for yet */
	frame(s, getpid(), addr, false, &f);
	ck_assert_str_eq(f.function, "symbolizer_test_target");
	symbolizer_stats(s, &st);
	ck_assert_uint_gt(st.file_cache_bytes, 0);
	symbolizer_free(s);
}
END_TEST

/*
 * A frame never waits for the loader: one in a binary still being parsed is an
 * address, counted; the loader's eventfd says when every binary queued is
 * parsed, and symbolizer_loader_woke() clears it.
 */
START_TEST(test_loader_pending)
{
	uint64_t addr = (uint64_t)(uintptr_t)&symbolizer_test_target;
	struct symbolizer *s = new_symbolizer();
	struct pollfd p = {.fd = symbolizer_loader_fd(s), .events = POLLIN};
	struct symbolizer_stats st;
	struct sym_frame f;

	ck_assert_int_ge(p.fd, 0);
	ck_assert(symbolizer_loader_woke(s));
	ck_assert_int_eq(poll(&p, 1, 0), 0);
	ck_assert_int_eq(symbolizer_capture(s, getpid()), 0); /* queues every binary mapped */
	symbolizer_frame(s, getpid(), addr, false, &f);
	symbolizer_stats(s, &st);
	/* asked a few µs after the queueing, the loader is most likely not done */
	ck_assert(st.loader_waits_cut ? !f.function : f.function != NULL);
	ck_assert(symbolizer_settle_until(s, mono_ns() + 30 * NS_PER_SEC));
	ck_assert_int_eq(poll(&p, 1, 0), 1); /* it said so once idle */
	ck_assert(!symbolizer_loading(s));
	ck_assert_int_eq(poll(&p, 1, 0), 1); /* for the loop to read: still there */
	ck_assert(symbolizer_loader_woke(s));
	ck_assert_int_eq(poll(&p, 1, 0), 0);
	symbolizer_frame(s, getpid(), addr, false, &f);
	ck_assert_str_eq(f.function, "symbolizer_test_target");
	symbolizer_stats(s, &st);
	ck_assert_uint_le(st.loader_waits_cut, 1);
	symbolizer_free(s);
}
END_TEST

START_TEST(test_other_process)
{
	struct symbolizer *s = new_symbolizer();
	struct timespec pause = {0, 20 * 1000 * 1000};
	pid_t pid = fork();
	int i;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		execl(FX("fx_pie"), "fx_pie", "10", (char *)NULL);
		_exit(127);
	}
	/* Wait until the dynamic loader has mapped the shared library. */
	for (i = 0; i < 250 && !load_base(pid, "/libfx_shlib.so"); i++)
		nanosleep(&pause, NULL);
	check_child_frame(s, pid, FX("fx_pie"), "/fx_pie", "pie_hot_function");
	check_child_frame(s, pid, FX("libfx_shlib.so"), "/libfx_shlib.so", "shlib_hot_function");
	reap_killed(pid);
	symbolizer_free(s);
}
END_TEST

/* [vdso] frames are named from the vDSO image; clock_gettime is in every vDSO. */
/* memory_limit's split, and caps that stats report back. */
START_TEST(test_caps)
{
	struct symbolizer *s = new_symbolizer();
	struct symbolizer_caps c;
	struct symbolizer_stats st;

	symbolizer_caps_for_limit(64ull << 20, &c);
	ck_assert_uint_eq(c.files, 24ull << 20);
	ck_assert_uint_eq(c.perfmaps, 8ull << 20);
	ck_assert_uint_eq(c.names, 2ull << 20);
	symbolizer_caps_for_limit(16ull << 20, &c);
	ck_assert_uint_eq(c.files, 6ull << 20);
	ck_assert_uint_eq(c.perfmaps, 2ull << 20);
	ck_assert_uint_eq(c.names, 512ull << 10);
	symbolizer_stats(s, &st);
	ck_assert_uint_eq(st.file_cache_bound, 1ull << 30); /* the defaults until set */
	ck_assert_uint_eq(st.perfmap.max_bytes, 256ull << 20);
	ck_assert_uint_eq(st.demangle_bound, 16ull << 20);
	symbolizer_set_caps(s, &c);
	symbolizer_stats(s, &st);
	ck_assert_uint_eq(st.file_cache_bound, 6ull << 20);
	ck_assert_uint_eq(st.perfmap.max_bytes, 2ull << 20);
	ck_assert_uint_eq(st.demangle_bound, 512ull << 10);
	symbolizer_free(s);
}
END_TEST

/*
 * A binary whose symbols are over its share of the cache (symshare.h) is
 * refused and counted, even into an empty cache: one binary never takes it
 * all. Nothing is read for a binary whose shares have no room left.
 */
START_TEST(test_cap_full)
{
	uint64_t libc = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "getpid");
	struct symbolizer_caps caps = {.files = 1};
	struct symbolizer *s = new_symbolizer();
	struct symbolizer_stats st;
	struct sym_frame f;

	symbolizer_set_caps(s, &caps);
	frame(s, getpid(), (uint64_t)(uintptr_t)&symbolizer_test_target, false, &f);
	ck_assert_ptr_null(f.function);
	frame(s, getpid(), libc, false, &f);
	ck_assert_ptr_null(f.function);
	symbolizer_stats(s, &st);
	ck_assert_uint_eq(st.files_too_big, 2);
	ck_assert_uint_eq(st.files_over_share, 0);
	ck_assert_uint_eq(st.files_cached, 2); /* refused entries are held: not retried */
	symbolizer_free(s);
}
END_TEST

/*
 * The binaries loaded for one process hold at most its share (half the
 * cache): with this test's binary taking all of it, libc, a binary of the same
 * process, is refused as over its process's share and counted, not parsed.
 */
START_TEST(test_proc_share)
{
	uint64_t libc = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "getpid");
	struct symbolizer *s = new_symbolizer();
	struct symbolizer_caps caps = {0};
	struct symbolizer_stats st;
	struct sym_frame f;
	uint64_t own;

	frame(s, getpid(), (uint64_t)(uintptr_t)&symbolizer_test_target, false, &f);
	ck_assert_str_eq(f.function, "symbolizer_test_target");
	symbolizer_stats(s, &st);
	own = st.file_cache_bytes;
	symbolizer_free(s);

	s = new_symbolizer();
	caps.files = 2 * own; /* its share is exactly what this binary takes */
	symbolizer_set_caps(s, &caps);
	frame(s, getpid(), (uint64_t)(uintptr_t)&symbolizer_test_target, false, &f);
	ck_assert_str_eq(f.function, "symbolizer_test_target");
	frame(s, getpid(), libc, false, &f);
	ck_assert_ptr_null(f.function);
	symbolizer_stats(s, &st);
	ck_assert_uint_eq(st.files_over_share, 1);
	ck_assert_uint_eq(st.files_too_big, 0);
	ck_assert_uint_eq(st.files_cached, 2);
	/* the refused libc holds its entry alone: nothing of it was parsed */
	ck_assert_uint_lt(st.file_cache_bytes - own, 1024);
	symbolizer_free(s);
}
END_TEST

static uint64_t maps_bytes(struct symbolizer *s)
{
	struct symbolizer_stats st;

	symbolizer_stats(s, &st);
	return st.pids_bytes;
}

static uint64_t file_bytes(struct symbolizer *s, uint64_t *files)
{
	struct symbolizer_stats st;

	symbolizer_stats(s, &st);
	if (files)
		*files = st.files_cached;
	return st.file_cache_bytes;
}

/*
 * Shrinking evicts binaries least recently used first, only those no kept
 * process refers to, and frees exactly what they were accounted for.
 */
START_TEST(test_shrink)
{
	struct symbolizer *s = new_symbolizer();
	struct timespec pause = {0, 20 * 1000 * 1000};
	uint64_t own, pie, shlib, files, freed, maps;
	pid_t pid = fork();
	int i;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		execl(FX("fx_pie"), "fx_pie", "10", (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 250 && !load_base(pid, "/libfx_shlib.so"); i++)
		nanosleep(&pause, NULL);
	/* this process's binary, then the child's: fx_pie before its library */
	struct sym_frame f;

	frame(s, getpid(), (uint64_t)(uintptr_t)&symbolizer_test_target, false, &f);
	ck_assert_str_eq(f.function, "symbolizer_test_target");
	own = file_bytes(s, NULL);
	check_child_frame(s, pid, FX("fx_pie"), "/fx_pie", "pie_hot_function");
	pie = file_bytes(s, NULL) - own;
	check_child_frame(s, pid, FX("libfx_shlib.so"), "/libfx_shlib.so", "shlib_hot_function");
	shlib = file_bytes(s, &files) - own - pie;
	ck_assert_uint_eq(files, 3);
	ck_assert_uint_gt(own, 0);
	ck_assert_uint_gt(pie, 0);
	ck_assert_uint_gt(shlib, 0);
	reap_killed(pid);
	symbolizer_exited(s, pid);

	/* in the interval: every file was used, nothing may go */
	ck_assert_uint_eq(symbolizer_shrink(s, 0), 0);
	ck_assert_uint_eq(file_bytes(s, NULL), own + pie + shlib);
	symbolizer_end_interval(s);
	/* the processes' mappings count in what is held, though shrinking frees none */
	maps = maps_bytes(s);
	ck_assert_uint_gt(maps, 0);
	/* after it: the child's binaries may go, the least recently used (fx_pie) first */
	freed = symbolizer_shrink(s, maps + own + pie + shlib - 1);
	ck_assert_uint_eq(freed, pie);
	ck_assert_uint_eq(file_bytes(s, &files), own + shlib);
	ck_assert_uint_eq(files, 2);
	/* under the target already: nothing more */
	ck_assert_uint_eq(symbolizer_shrink(s, maps + own + shlib), 0);
	/* to nothing: this process's binary stays, pinned by its kept mappings */
	ck_assert_uint_eq(symbolizer_shrink(s, 0), shlib);
	ck_assert_uint_eq(maps_bytes(s), maps);
	ck_assert_uint_eq(file_bytes(s, &files), own);
	ck_assert_uint_eq(files, 1);
	frame(s, getpid(), (uint64_t)(uintptr_t)&symbolizer_test_target, false, &f);
	ck_assert_str_eq(f.function, "symbolizer_test_target");
	symbolizer_free(s);
}
END_TEST

START_TEST(test_vdso)
{
	struct symbolizer *s = new_symbolizer();
	struct symbolizer_stats st;
	struct proc_maps maps = {0};
	const struct proc_map *m = NULL;
	struct sym_frame f;
	bool found = false;

	ck_assert_int_eq(procmaps_read(getpid(), &maps), 0);
	for (size_t i = 0; i < maps.n; i++)
		if (maps.v[i].path && !strcmp(maps.v[i].path, "[vdso]"))
			m = &maps.v[i];
	ck_assert_ptr_nonnull(m);
	for (uint64_t a = m->start; a < m->end && !found; a += 4) {
		frame(s, getpid(), a, false, &f);
		ck_assert_str_eq(f.file, "[vdso]");
		found = f.function && !strcmp(f.function, "clock_gettime");
	}
	ck_assert(found);
	ck_assert_uint_ne(strlen(f.build_id), 0);
	symbolizer_stats(s, &st);
	ck_assert_uint_gt(st.vdso_named, 0);
	procmaps_free(&maps);
	symbolizer_free(s);
}
END_TEST

/* The runtime the test says this process runs: a V8 whose version has no layout. */
static bool v8_unsupported(void *arg, pid_t pid, struct ember_rt_proc *out)
{
	(void)arg;
	if (pid != getpid())
		return false;
	*out = (struct ember_rt_proc){
		.kind = EMBER_RT_V8, .version = 13 << 16 | 6 << 8, .flags = EMBER_RT_F_UNSUPPORTED};
	return true;
}

/*
 * JIT code (anonymous and executable) of a V8 without a layout gets one honest
 * frame, counted; a file's code keeps its name, and anonymous code of a process
 * with no such runtime stays an address.
 */
START_TEST(test_jit_unsupported)
{
	struct symbolizer *s = new_symbolizer();
	void *code = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *data = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t at = (uint64_t)(uintptr_t)code + 64;
	struct symbolizer_stats st;
	struct sym_frame f;

	ck_assert_ptr_ne(code, MAP_FAILED);
	ck_assert_ptr_ne(data, MAP_FAILED);
	frame(s, getpid(), at, false, &f);
	ck_assert_ptr_null(f.function); /* no runtime source: an address */
	symbolizer_free(s);

	s = new_symbolizer();
	symbolizer_set_runtime(s, v8_unsupported, NULL);
	frame(s, getpid(), at, false, &f);
	ck_assert_str_eq(f.function, "[v8 13.6: not supported]");
	frame(s, getpid(), (uint64_t)(uintptr_t)data + 8, false, &f);
	ck_assert_ptr_null(f.function); /* not code */
	frame(s, getpid(), (uint64_t)(uintptr_t)&symbolizer_test_target, false, &f);
	ck_assert_str_eq(f.function, "symbolizer_test_target");
	symbolizer_stats(s, &st);
	ck_assert_uint_eq(st.runtime_unsupported, 1);
	symbolizer_free(s);
	munmap(code, 4096);
	munmap(data, 4096);
}
END_TEST

/* A kernel address in a user stack is named as a kernel frame, never through user maps. */
START_TEST(test_kernel_address_in_user_stack)
{
	struct symbolizer *s = new_symbolizer();
	struct symbolizer_stats st;
	struct sym_frame f;

	frame(s, getpid(), 0xffffffff81000000ull, false, &f);
	ck_assert(f.kernel);
	ck_assert_str_eq(f.file, "[kernel.kallsyms]");
	symbolizer_stats(s, &st);
	ck_assert_uint_eq(st.kernel_in_user, 1);
	ck_assert_uint_eq(st.maps_read, 0);
	symbolizer_free(s);
}
END_TEST

/* A versioned function is named without its version, which stays as its system name. */
START_TEST(test_versioned)
{
	void *lib = dlopen(FX("libfx_versioned.so"), RTLD_NOW);
	uint64_t addr, libc_addr = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "clock_gettime");
	struct symbolizer *s = new_symbolizer();
	struct sym_frame f;

	ck_assert_msg(lib != NULL, "%s", dlerror());
	/* The default version is what dlsym binds: fx_versioned_new. */
	addr = (uint64_t)(uintptr_t)dlsym(lib, "fx_vfn");
	ck_assert_uint_ne(addr, 0);
	frame(s, getpid(), addr + 1, false, &f);
	ck_assert_str_eq(f.function, "fx_vfn");
	ck_assert_str_eq(f.system_name, "fx_vfn@@FX_2");
	/* libc: its debug file (libc6-dbg), where installed, has clock_gettime@@GLIBC_2.17. */
	frame(s, getpid(), libc_addr + 1, false, &f);
	ck_assert_str_eq(f.function, "clock_gettime");
	ck_assert(!f.system_name || !strncmp(f.system_name, "clock_gettime@", 14));
	symbolizer_free(s);
	dlclose(lib);
}
END_TEST

/*
 * A walk that met a library mapped since its process was read: the mappings
 * are read again at once and the library queued for the loader, so that the
 * drain finds it parsed (it waits for none): its frame is named on first ask.
 */
START_TEST(test_stale_reads_now)
{
	struct symbolizer *s = new_symbolizer();
	struct symbolizer_stats a, b;
	struct sym_frame f;
	void *lib;
	uint64_t addr;

	ck_assert_int_eq(symbolizer_capture(s, getpid()), 0);
	ck_assert(symbolizer_settle_until(s, mono_ns() + 30 * NS_PER_SEC));
	lib = dlopen(FX("libfx_versioned.so"), RTLD_NOW);
	ck_assert_msg(lib != NULL, "%s", dlerror());
	addr = (uint64_t)(uintptr_t)dlsym(lib, "fx_vfn");
	symbolizer_stats(s, &a);
	symbolizer_maps_stale(s, getpid());
	symbolizer_stats(s, &b);
	ck_assert_uint_eq(b.maps_read, a.maps_read + 1);
	ck_assert_uint_eq(b.files_cached, a.files_cached + 1); /* the library, queued */
	ck_assert(symbolizer_settle_until(s, mono_ns() + 30 * NS_PER_SEC));
	symbolizer_frame(s, getpid(), addr + 1, false, &f);
	ck_assert_str_eq(f.function, "fx_vfn");
	symbolizer_stats(s, &a);
	ck_assert_uint_eq(a.loader_waits_cut, 0);
	ck_assert_uint_eq(a.maps_read, b.maps_read); /* read once, not again at the frame */
	symbolizer_free(s);
	dlclose(lib);
}
END_TEST

/* This test binary's PLT stubs are named after what they call, as objdump names them. */
START_TEST(test_plt)
{
	char exe[512], cmd[1024], line[1024], name[512];
	struct symbolizer *s = new_symbolizer();
	unsigned long long addr;
	uint64_t base;
	size_t checked = 0;
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct sym_frame f;
	FILE *p;

	ck_assert_int_gt(len, 0);
	exe[len] = '\0';
	base = load_base(getpid(), "/check_ember");
	ck_assert_uint_ne(base, 0);
	snprintf(cmd, sizeof(cmd), "objdump -d -j .plt -j .plt.sec -j .plt.got '%s'", exe);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p) && checked < 20) {
		if (sscanf(line, "%llx <%511[^>]>:", &addr, name) != 2 || strlen(name) < 4 ||
		    strcmp(name + strlen(name) - 4, "@plt"))
			continue;
		frame(s, getpid(), base + addr + 4, false, &f);
		ck_assert_str_eq(f.function, name);
		checked++;
	}
	pclose(p);
	ck_assert_uint_gt(checked, 5);
	symbolizer_free(s);
}
END_TEST

Suite *symbolizer_suite(void)
{
	Suite *s = suite_create("symbolizer");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_self);
	tcase_add_test(tc, test_libc);
	tcase_add_test(tc, test_versioned);
	tcase_add_test(tc, test_plt);
	tcase_add_test(tc, test_kernel);
	tcase_add_test(tc, test_kernel_namer);
	tcase_add_test(tc, test_kernel_namer_fails);
	tcase_add_test(tc, test_unnamed);
	tcase_add_test(tc, test_cache);
	tcase_add_test(tc, test_keep);
	tcase_add_test(tc, test_exit_after_flip);
	tcase_add_test(tc, test_exec_keeps_old_image);
	tcase_add_test(tc, test_two_execs_keep_both_images);
	tcase_add_test(tc, test_execs_kept_bounded);
	tcase_add_test(tc, test_capture_defers_parsing);
	tcase_add_test(tc, test_loader_pending);
	tcase_add_test(tc, test_stale_reads_now);
	tcase_add_test(tc, test_other_process);
	tcase_add_test(tc, test_vdso);
	tcase_add_test(tc, test_caps);
	tcase_add_test(tc, test_cap_full);
	tcase_add_test(tc, test_proc_share);
	tcase_add_test(tc, test_shrink);
	tcase_add_test(tc, test_kernel_address_in_user_stack);
	tcase_add_test(tc, test_jit_unsupported);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return s;
}
