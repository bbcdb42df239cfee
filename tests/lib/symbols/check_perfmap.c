// SPDX-License-Identifier: MIT
/*
 * perfmap: the parser (known answers, malformed lines, incremental appends,
 * lookup), the cache reading real /tmp/perf-PID.map files of this process
 * (refusing hostile ones), and the symbolizer naming anonymous code with it.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfmap.h"
#include "suites.h"
#include "symbolizer.h"

static struct perf_map *parse(const char *text, size_t *used)
{
	struct perf_map *m = perfmap_new();
	size_t u;

	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(perfmap_parse(m, text, strlen(text), used ? used : &u), 0);
	return m;
}

/* The raw name of the entry at addr, or NULL. */
static const char *raw_at(struct perf_map *m, uint64_t addr)
{
	struct perfmap_name n;

	return perfmap_lookup(m, addr, &n) ? n.raw : NULL;
}

static const char *cache_raw(struct perfmap_cache *c, pid_t pid, uint64_t addr, uint64_t interval)
{
	struct perfmap_name n;

	return perfmap_cache_lookup(c, pid, addr, interval, &n) ? n.raw : NULL;
}

START_TEST(test_known_answers)
{
	struct perf_map *m = parse("1000 10 foo\n"
				   "2000 20 LazyCompile:~bar /app/x.js:3:1\n"
				   "0x3000 0X8 qux\r\n"
				   "7f00dead0000\t1c\tJS:*fib /app.js:1:13\n",
				   NULL);

	ck_assert_uint_eq(perfmap_count(m), 4);
	ck_assert_uint_eq(perfmap_bad_lines(m), 0);
	ck_assert_str_eq(raw_at(m, 0x1000), "foo");
	ck_assert_str_eq(raw_at(m, 0x100f), "foo");
	ck_assert_ptr_null(raw_at(m, 0x1010));
	ck_assert_ptr_null(raw_at(m, 0xfff));
	ck_assert_str_eq(raw_at(m, 0x2005), "LazyCompile:~bar /app/x.js:3:1");
	ck_assert_str_eq(raw_at(m, 0x3007), "qux");
	ck_assert_ptr_null(raw_at(m, 0x3008));
	ck_assert_str_eq(raw_at(m, 0x7f00dead001b), "JS:*fib /app.js:1:13");
	ck_assert_ptr_null(raw_at(m, UINT64_MAX));
	ck_assert_uint_gt(perfmap_memory(m), 0);
	perfmap_free(m);
	perfmap_free(NULL);
}
END_TEST

/* A runtime's name, and what it must split into (function NULL: it does not split). */
struct split_case {
	const char *raw, *function, *file;
	uint32_t line;
};

static const struct split_case split_cases[] = {
	/* Written by Node 20 (--perf-basic-prof) on this kind of machine. */
	{"JS:*fib /srv/app.js:2:13", "fib", "/srv/app.js", 2},
	{"JS:*'fib /srv/app.js:2:13", "fib", "/srv/app.js", 2}, /* V8 12 on: context-specialized */
	{"JS:+'fib /srv/app.js:2:13", "fib", "/srv/app.js", 2},
	{"JS:'fib /srv/app.js:2:13", "'fib", "/srv/app.js", 2}, /* no marker: the name's own */
	{"JS:^fib /tmp/names_node/app.js:1:13", "fib", "/tmp/names_node/app.js", 1},
	{"JS:~get foo /tmp/app.js:2:18", "get foo", "/tmp/app.js", 2},
	{"JS:~with space /tmp/app.js:3:25", "with space", "/tmp/app.js", 3},
	{"JS:~ node:internal/main/run_main_module:1:1", PERFMAP_ANONYMOUS,
	 "node:internal/main/run_main_module", 1},
	{"JS:^wrappedFn node:internal/errors:536:21", "wrappedFn", "node:internal/errors", 536},
	{"JS:*fib file:///tmp/dir%20with%20space:colon/app.mjs:1:13", "fib",
	 "file:///tmp/dir%20with%20space:colon/app.mjs", 1},
	{"Script:~ file:///tmp/a.mjs:1:1", PERFMAP_ANONYMOUS, "file:///tmp/a.mjs", 1},
	{"Eval:~ /tmp/names_node/b.js:1:1", PERFMAP_ANONYMOUS, "/tmp/names_node/b.js", 1},
	{"JS:* :1:20", PERFMAP_ANONYMOUS, "", 1},	       /* new Function(): no script */
	{"JS:*zz :1:12", "zz", "", 1},			       /* eval'd code */
	{"JS:*inVm my file.js:1:14", "inVm", "my file.js", 1}, /* vm with a spaced name */
	{"JS:~get x my file.js:4:2", "get x", "my file.js", 4},
	{"JS:*", PERFMAP_ANONYMOUS, "", 0},
	{"JS:*fib", "fib", "", 0}, /* no script at all */
	/* Older V8 (Node <= 16): other tags, a line without a column. */
	{"LazyCompile:*fib /srv/app.js:2:13", "fib", "/srv/app.js", 2},
	{"LazyCompile:~bar /app/x.js:3", "bar", "/app/x.js", 3},
	{"Function:~foo file:///x.mjs:1:1", "foo", "file:///x.mjs", 1},
	{"LazyCompile:fib /srv/app.js:7", "fib", "/srv/app.js", 7},
	{"JS:~f /srv/my app/x.js:9:1", "f", "/srv/my app/x.js", 9},
	{"JS:~f C:\\app\\x.js:9:1", "f", "C:\\app\\x.js", 9},
	{"JS:~f /srv/app.js", "f", "/srv/app.js", 0}, /* no line */
	{"JS:~f /srv/app.js:", "f", "/srv/app.js:", 0},
	{"JS:~f /srv/app.js:x:1", "f", "/srv/app.js:x", 1},
	{"JS:~f /srv/app.js:12345678901:1", "f", "/srv/app.js:12345678901", 1},
	{"JS:~f /a.js:4294967295:1", "f", "/a.js:4294967295", 1}, /* over 9 digits */
	{"JS:~f /a.js:999999999:1", "f", "/a.js", 999999999},
	{"JS:~f :::", "f", ":::", 0},
	{"JS:~  /x:1:1", " ", "/x", 1},
	/* Python 3.12 -X perf: "py::" qualname ":" file, no line. */
	{"py::fib:/srv/app.py", "fib", "/srv/app.py", 0},
	{"py::Outer.method:/srv/my app/x.py", "Outer.method", "/srv/my app/x.py", 0},
	{"py::<module>:/srv/main.py", "<module>", "/srv/main.py", 0},
	{"py::f.<locals>.<lambda>:/a:b/c.py", "f.<locals>.<lambda>", "/a:b/c.py", 0},
	{"py::f", "f", "", 0},
	{"py:::/x.py", PERFMAP_ANONYMOUS, "/x.py", 0},
	/* Not split: V8's other code, Java, C. */
	{"Builtin:ArrayMap", NULL, "", 0},
	{"BytecodeHandler:CreateMappedArguments", NULL, "", 0},
	{"RegExp:a+b", NULL, "", 0},
	{"Lcom/example/Foo;.bar", NULL, "", 0},
	{"jit_one", NULL, "", 0},
	{"js:*fib /a.js:1:1", NULL, "", 0},
	{"py:fib:/x.py", NULL, "", 0},
};

START_TEST(test_split_names)
{
	const struct split_case *c = &split_cases[_i];
	char text[PERFMAP_MAX_LINE + 32];
	struct perf_map *m;
	struct perfmap_name n;

	snprintf(text, sizeof(text), "1000 10 %s\n", c->raw);
	m = parse(text, NULL);
	ck_assert_msg(perfmap_lookup(m, 0x1000, &n), "%s: not parsed", c->raw);
	ck_assert_str_eq(n.raw, c->raw);
	if (c->function)
		ck_assert_str_eq(n.function, c->function);
	else
		ck_assert_ptr_eq(n.function, n.raw);
	ck_assert_str_eq(n.file, c->file);
	ck_assert_uint_eq(n.line, c->line);
	perfmap_free(m);
}
END_TEST

/* Hostile names: every prefix of each form, and every byte, split inside the name. */
START_TEST(test_split_hostile)
{
	static const char *const forms[] = {
		"JS:*fib /srv/app.js:2:13", "py::a:/b:c",  "JS:~get get get /x:1:1",
		"JS:~a b c d:1:",	    "Eval:~ :1:1", "JS:^ :::::::1"};
	char buf[64];
	struct perfmap_split sp;

	for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
		size_t len = strlen(forms[f]);

		for (size_t l = 0; l <= len; l++) {
			if (!perfmap_split_name(forms[f], l, &sp))
				continue;
			ck_assert_uint_le(sp.func_off + sp.func_len, l);
			ck_assert_uint_le(sp.file_off + sp.file_len, l);
			ck_assert(!sp.file_len || sp.func_off + sp.func_len < sp.file_off);
		}
	}
	/* A name cut anywhere never reads past its length: copy to a tight buffer. */
	for (int b = 0; b < 256; b++) {
		memcpy(buf, "JS:*", 4);
		buf[4] = (char)b;
		ck_assert(perfmap_split_name(buf, 5, &sp));
		ck_assert_uint_le(sp.file_off + sp.file_len, 5);
		/* Only a tier marker is skipped (not a NUL byte, which strchr would find). */
		buf[3] = (char)b;
		ck_assert(perfmap_split_name(buf, 5, &sp));
		ck_assert_uint_eq(sp.func_off, b && strchr("*~^+", b) ? 4 : 3);
	}
	/* The longest line a map holds splits, and both parts are kept. */
	{
		char *line = malloc(PERFMAP_MAX_LINE + 1), *text = malloc(PERFMAP_MAX_LINE + 16);
		struct perfmap_name n;
		struct perf_map *m;
		size_t len = PERFMAP_MAX_LINE - 8;

		ck_assert(line && text);
		memset(line, 'a', len);
		memcpy(line, "JS:*", 4);
		line[len / 2] = ' ';
		line[len / 2 + 1] = '/';
		memcpy(line + len - 4, ":7:1", 4);
		line[len] = '\0';
		snprintf(text, PERFMAP_MAX_LINE + 16, "1 1 %s\n", line);
		m = parse(text, NULL);
		ck_assert(perfmap_lookup(m, 1, &n));
		ck_assert_uint_eq(strlen(n.function), len / 2 - 4);
		ck_assert_uint_eq(n.line, 7);
		ck_assert_uint_eq(strlen(n.file), len - 4 - (len / 2 + 1));
		perfmap_free(m);
		free(line);
		free(text);
	}
}
END_TEST

START_TEST(test_malformed)
{
	char text[8192], *p = text;
	struct perf_map *m;

	p += sprintf(p, "zzz 10 nothex\n");
	p += sprintf(p, "1000\n");
	p += sprintf(p, "1000 10\n");
	p += sprintf(p, "1000 10 \n");
	p += sprintf(p, "1000 0 zero_size\n");
	p += sprintf(p, "ffffffffffffffff 10 wraps\n");
	p += sprintf(p, "10000000000000000 1 seventeen_digits\n");
	p += sprintf(p, "1000 10 ctrl\x01x\n");
	p += sprintf(p, "1000 10 del\x7fx\n");
	p += sprintf(p, "1000x 10 glued\n");
	p += sprintf(p, "\n");
	p += sprintf(p, "5000 10 good\n");
	/* A line over PERFMAP_MAX_LINE. */
	p += sprintf(p, "6000 10 ");
	memset(p, 'x', PERFMAP_MAX_LINE);
	p += PERFMAP_MAX_LINE;
	*p++ = '\n';
	*p = '\0';
	m = parse(text, NULL);
	ck_assert_uint_eq(perfmap_count(m), 1);
	ck_assert_uint_eq(perfmap_bad_lines(m), 12);
	ck_assert_str_eq(raw_at(m, 0x5001), "good");
	ck_assert_ptr_null(raw_at(m, 0x1000));
	ck_assert_ptr_null(raw_at(m, 0x6000));
	perfmap_free(m);

	/* A NUL inside a line. */
	m = perfmap_new();
	size_t used;

	ck_assert_int_eq(perfmap_parse(m, "1000 10 a\0b\n2000 10 c\n", 22, &used), 0);
	ck_assert_uint_eq(used, 22);
	ck_assert_uint_eq(perfmap_bad_lines(m), 1);
	ck_assert_str_eq(raw_at(m, 0x2000), "c");
	perfmap_free(m);
}
END_TEST

START_TEST(test_incremental)
{
	const char *all = "1000 10 first\n2000 10 second\n3000 10 third\n";
	struct perf_map *m = perfmap_new();
	const char *first;
	size_t used, off = 0;

	ck_assert_ptr_nonnull(m);
	/* The writer is in the middle of line 2: only line 1 is taken. */
	ck_assert_int_eq(perfmap_parse(m, all, 20, &used), 0);
	ck_assert_uint_eq(used, 14);
	off += used;
	ck_assert_uint_eq(perfmap_count(m), 1);
	first = raw_at(m, 0x1000);
	ck_assert_str_eq(first, "first");
	ck_assert_ptr_null(raw_at(m, 0x2000));
	/* The rest, from where the first call stopped. */
	ck_assert_int_eq(perfmap_parse(m, all + off, strlen(all) - off, &used), 0);
	ck_assert_uint_eq(off + used, strlen(all));
	ck_assert_uint_eq(perfmap_count(m), 3);
	ck_assert_str_eq(raw_at(m, 0x2009), "second");
	ck_assert_str_eq(raw_at(m, 0x3000), "third");
	/* Names handed out before an append stay where they were. */
	ck_assert_ptr_eq(raw_at(m, 0x1000), first);
	ck_assert_uint_eq(perfmap_bad_lines(m), 0);
	perfmap_free(m);
}
END_TEST

START_TEST(test_long_unfinished_line)
{
	size_t len = 3 * PERFMAP_MAX_LINE, used;
	char *junk = malloc(len);
	struct perf_map *m = perfmap_new();

	ck_assert_ptr_nonnull(junk);
	memset(junk, 'y', len);
	/* No newline yet, but already too long: dropped, and so is its end. */
	ck_assert_int_eq(perfmap_parse(m, junk, len, &used), 0);
	ck_assert_uint_eq(used, len);
	ck_assert_uint_eq(perfmap_bad_lines(m), 1);
	ck_assert_int_eq(perfmap_parse(m, "yyyy\n1000 10 after\n", 19, &used), 0);
	ck_assert_uint_eq(used, 19);
	ck_assert_uint_eq(perfmap_bad_lines(m), 1);
	ck_assert_str_eq(raw_at(m, 0x1000), "after");
	free(junk);
	perfmap_free(m);
}
END_TEST

START_TEST(test_binary_search)
{
	enum { N = 20000 };
	struct perf_map *m = perfmap_new();
	char line[64], want[32];
	size_t used;

	/* Written out of order, 16-byte symbols 32 bytes apart. */
	for (unsigned int k = 0; k < N; k++) {
		unsigned int i = (k * 7919u) % N;
		int n = snprintf(line, sizeof(line), "%x 10 sym_%u\n", 0x100000 + 32 * i, i);

		ck_assert_int_eq(perfmap_parse(m, line, (size_t)n, &used), 0);
	}
	/* The JIT reused the code of symbol 5: the later entry wins. */
	perfmap_parse(m, "1000a0 10 reused\n", 17, &used);
	ck_assert_uint_eq(perfmap_count(m), N);
	for (unsigned int i = 0; i < N; i++) {
		uint64_t a = 0x100000 + 32 * i;

		snprintf(want, sizeof(want), "sym_%u", i);
		ck_assert_str_eq(raw_at(m, a + 15), i == 5 ? "reused" : want);
		ck_assert_ptr_null(raw_at(m, a + 16));
	}
	perfmap_free(m);
}
END_TEST

/* --- the cache, on this process's own /tmp/perf-PID.map ------------------------- */

static char map_path[64];

static void map_path_init(void)
{
	snprintf(map_path, sizeof(map_path), "/tmp/perf-%d.map", (int)getpid());
	unlink(map_path);
}

static void write_map(const char *text, const char *mode)
{
	FILE *f = fopen(map_path, mode);

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

START_TEST(test_cache_reads_and_appends)
{
	struct perfmap_cache *c = perfmap_cache_new(1 << 20);
	struct perfmap_stats st;

	map_path_init();
	write_map("10000 100 jit_one\n", "w");
	ck_assert_str_eq(cache_raw(c, getpid(), 0x10010, 0), "jit_one");
	write_map("20000 100 jit_two\n", "a");
	/* A miss re-reads at most once a second. */
	ck_assert_ptr_null(cache_raw(c, getpid(), 0x20010, 0));
	usleep(1100 * 1000);
	ck_assert_str_eq(cache_raw(c, getpid(), 0x20010, 0), "jit_two");
	perfmap_cache_stats(c, &st);
	ck_assert_uint_eq(st.reads, 2);
	ck_assert_uint_eq(st.bytes_read, 36); /* the second read took only the tail */
	ck_assert_uint_eq(st.named, 2);
	ck_assert_uint_eq(st.maps, 1);
	/* Replaced by a shorter file: read again from the start. */
	unlink(map_path);
	write_map("30000 10 jit_three\n", "w");
	usleep(1100 * 1000);
	ck_assert_str_eq(cache_raw(c, getpid(), 0x30000, 1), "jit_three");
	ck_assert_ptr_null(cache_raw(c, getpid(), 0x10010, 1));
	perfmap_cache_stats(c, &st);
	ck_assert_uint_eq(st.refused_symlink + st.refused_owner + st.refused_size + st.refused_type,
			  0);
	unlink(map_path);
	perfmap_cache_free(c);
}
END_TEST

/* A shrink frees parsed maps (a bound it then keeps) and the next miss reads them again. */
START_TEST(test_cache_shrink)
{
	struct perfmap_cache *c = perfmap_cache_new(1 << 20);
	struct perfmap_stats st;
	uint64_t held;

	map_path_init();
	write_map("10000 100 jit_one\n20000 100 jit_two\n", "w");
	ck_assert_str_eq(cache_raw(c, getpid(), 0x10010, 0), "jit_one");
	perfmap_cache_stats(c, &st);
	held = st.memory;
	ck_assert_uint_gt(held, 0);
	ck_assert_uint_eq(st.max_bytes, 1 << 20);
	ck_assert_uint_eq(perfmap_cache_shrink(c, held), 0);
	ck_assert_uint_eq(perfmap_cache_shrink(c, 0), held);
	perfmap_cache_stats(c, &st);
	ck_assert_uint_eq(st.memory, 0);
	ck_assert_uint_eq(st.maps, 1); /* the process stays known, without its map */
	ck_assert_uint_eq(st.reads, 1);
	ck_assert_str_eq(cache_raw(c, getpid(), 0x20010, 1), "jit_two");
	perfmap_cache_stats(c, &st);
	ck_assert_uint_eq(st.reads, 2);
	ck_assert_uint_eq(st.memory, held);
	/* a bound below what a file needs: it is not read at all */
	perfmap_cache_set_max(c, 8);
	perfmap_cache_shrink(c, 0);
	ck_assert_ptr_null(cache_raw(c, getpid(), 0x10010, 2));
	perfmap_cache_stats(c, &st);
	ck_assert_uint_eq(st.max_bytes, 8);
	ck_assert_uint_lt(st.memory, held); /* an empty map at most: nothing parsed */
	unlink(map_path);
	perfmap_cache_free(c);
}
END_TEST

/* A map that must be refused, holding a line that would name addr 0x10010. */
static void expect_refused(void (*plant)(void), uint64_t *field_of(struct perfmap_stats *))
{
	struct perfmap_cache *c = perfmap_cache_new(1 << 20);
	struct perfmap_stats st;

	map_path_init();
	plant();
	ck_assert_ptr_null(cache_raw(c, getpid(), 0x10010, 0));
	perfmap_cache_stats(c, &st);
	ck_assert_uint_eq(*field_of(&st), 1);
	ck_assert_uint_eq(st.reads, 0);
	ck_assert_uint_eq(st.refused_symlink + st.refused_owner + st.refused_size + st.refused_type,
			  1);
	unlink(map_path);
	perfmap_cache_free(c);
}

static void plant_symlink(void)
{
	FILE *f = fopen("/tmp/ember-check-secret", "w");

	ck_assert_ptr_nonnull(f);
	fputs("10000 100 SECRET\n", f);
	fclose(f);
	chmod("/tmp/ember-check-secret", 0600);
	ck_assert_int_eq(symlink("/tmp/ember-check-secret", map_path), 0);
}

static void plant_other_owner(void)
{
	write_map("10000 100 SECRET\n", "w");
	/* Owned by nobody (65534) while this process runs as root (or its own user). */
	ck_assert_int_eq(chown(map_path, getuid() == 65534 ? 0 : 65534, (gid_t)-1), 0);
}

static void plant_huge(void)
{
	write_map("10000 100 SECRET\n", "w");
	ck_assert_int_eq(truncate(map_path, (off_t)PERFMAP_MAX_FILE + 1), 0);
}

/* Watches the FIFO's opens: an O_PATH open (no device's open() run) is not one. */
static int fifo_watch = -1;

static void plant_fifo(void)
{
	ck_assert_int_eq(mkfifo(map_path, 0600), 0);
	fifo_watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	ck_assert_int_ge(fifo_watch, 0);
	ck_assert_int_ge(inotify_add_watch(fifo_watch, map_path, IN_OPEN), 0);
}

static uint64_t *f_symlink(struct perfmap_stats *s)
{
	return &s->refused_symlink;
}
static uint64_t *f_owner(struct perfmap_stats *s)
{
	return &s->refused_owner;
}
static uint64_t *f_size(struct perfmap_stats *s)
{
	return &s->refused_size;
}
static uint64_t *f_type(struct perfmap_stats *s)
{
	return &s->refused_type;
}

START_TEST(test_cache_refuses_symlink)
{
	expect_refused(plant_symlink, f_symlink);
	unlink("/tmp/ember-check-secret");
}
END_TEST

START_TEST(test_cache_refuses_other_owner)
{
	if (getuid() != 0)
		return; /* chown needs root; CI runs as root */
	expect_refused(plant_other_owner, f_owner);
}
END_TEST

START_TEST(test_cache_refuses_huge)
{
	expect_refused(plant_huge, f_size);
}
END_TEST

START_TEST(test_cache_refuses_fifo)
{
	char ev[4096] __attribute__((aligned(8)));
	ssize_t n;

	expect_refused(plant_fifo, f_type);
	/* never opened for reading (the FIFO's unlink tells IN_IGNORED) */
	n = read(fifo_watch, ev, sizeof(ev));
	for (ssize_t off = 0; off + (ssize_t)sizeof(struct inotify_event) <= n;) {
		const struct inotify_event *e = (const void *)(ev + off);

		ck_assert(!(e->mask & IN_OPEN));
		off += (ssize_t)sizeof(*e) + e->len;
	}
	close(fifo_watch);
}
END_TEST

START_TEST(test_cache_garbage)
{
	struct perfmap_cache *c = perfmap_cache_new(1 << 20);
	struct perfmap_stats st;
	unsigned char junk[4096];
	FILE *f;

	map_path_init();
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)(i * 131 + 7);
	f = fopen(map_path, "w");
	ck_assert_ptr_nonnull(f);
	fwrite(junk, 1, sizeof(junk), f);
	fputs("\n10000 100 after_garbage\n", f);
	fclose(f);
	ck_assert_str_eq(cache_raw(c, getpid(), 0x10010, 0), "after_garbage");
	perfmap_cache_stats(c, &st);
	ck_assert_uint_gt(st.bad_lines, 0);
	unlink(map_path);
	perfmap_cache_free(c);
}
END_TEST

/* The symbolizer names anonymous executable memory from the perf map. */
START_TEST(test_symbolizer_jit)
{
	size_t len = 4096;
	void *code = mmap(NULL, len, PROT_READ | PROT_WRITE | PROT_EXEC,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct symbolizer *s = symbolizer_new();
	struct symbolizer_stats st;
	struct sym_frame f;
	char line[128];

	ck_assert_ptr_ne(code, MAP_FAILED);
	ck_assert_ptr_nonnull(s);
	map_path_init();
	snprintf(line, sizeof(line),
		 "%lx 40 JS:*fib /app.js:1:13\n%lx 40 _ZN2ns5KlassIlE6methodEi\n",
		 (unsigned long)(uintptr_t)code, (unsigned long)(uintptr_t)code + 0x40);
	write_map(line, "w");
	symbolizer_frame(s, getpid(), (uint64_t)(uintptr_t)code + 3, false, &f);
	/* V8's text splits: fib in /app.js at line 1, the text kept as its system name. */
	ck_assert_str_eq(f.function, "fib");
	ck_assert_str_eq(f.system_name, "JS:*fib /app.js:1:13");
	ck_assert_str_eq(f.source_file, "/app.js");
	ck_assert_uint_eq(f.line, 1);
	ck_assert(!f.kernel);
	/* Mangled JIT names are demangled too. */
	symbolizer_frame(s, getpid(), (uint64_t)(uintptr_t)code + 0x41, false, &f);
	ck_assert_str_eq(f.function, "ns::Klass<long>::method(int)");
	ck_assert_str_eq(f.system_name, "_ZN2ns5KlassIlE6methodEi");
	ck_assert_ptr_null(f.source_file);
	ck_assert_uint_eq(f.line, 0);
	symbolizer_stats(s, &st);
	ck_assert_uint_eq(st.perfmap.named, 2);
	ck_assert_uint_eq(st.demangled, 1);
	ck_assert_uint_eq(st.perfmap.maps, 1);
	unlink(map_path);
	symbolizer_free(s);
	munmap(code, len);
}
END_TEST

Suite *perfmap_suite(void)
{
	Suite *s = suite_create("perfmap");
	TCase *tc = tcase_create("parser");
	TCase *tf = tcase_create("files");

	tcase_add_test(tc, test_known_answers);
	tcase_add_loop_test(tc, test_split_names, 0,
			    (int)(sizeof(split_cases) / sizeof(split_cases[0])));
	tcase_add_test(tc, test_split_hostile);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_incremental);
	tcase_add_test(tc, test_long_unfinished_line);
	tcase_add_test(tc, test_binary_search);
	suite_add_tcase(s, tc);
	tcase_add_test(tf, test_cache_reads_and_appends);
	tcase_add_test(tf, test_cache_shrink);
	tcase_add_test(tf, test_cache_refuses_symlink);
	tcase_add_test(tf, test_cache_refuses_other_owner);
	tcase_add_test(tf, test_cache_refuses_huge);
	tcase_add_test(tf, test_cache_refuses_fifo);
	tcase_add_test(tf, test_cache_garbage);
	tcase_add_test(tf, test_symbolizer_jit);
	tcase_set_timeout(tf, 20);
	suite_add_tcase(s, tf);
	return s;
}
