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

START_TEST(test_known_answers)
{
	struct perf_map *m = parse("1000 10 foo\n"
				   "2000 20 LazyCompile:~bar /app/x.js:3:1\n"
				   "0x3000 0X8 qux\r\n"
				   "7f00dead0000\t1c\tJS:*fib /app.js:1:13\n", NULL);

	ck_assert_uint_eq(perfmap_count(m), 4);
	ck_assert_uint_eq(perfmap_bad_lines(m), 0);
	ck_assert_str_eq(perfmap_lookup(m, 0x1000), "foo");
	ck_assert_str_eq(perfmap_lookup(m, 0x100f), "foo");
	ck_assert_ptr_null(perfmap_lookup(m, 0x1010));
	ck_assert_ptr_null(perfmap_lookup(m, 0xfff));
	ck_assert_str_eq(perfmap_lookup(m, 0x2005), "LazyCompile:~bar /app/x.js:3:1");
	ck_assert_str_eq(perfmap_lookup(m, 0x3007), "qux");
	ck_assert_ptr_null(perfmap_lookup(m, 0x3008));
	ck_assert_str_eq(perfmap_lookup(m, 0x7f00dead001b), "JS:*fib /app.js:1:13");
	ck_assert_ptr_null(perfmap_lookup(m, UINT64_MAX));
	ck_assert_uint_gt(perfmap_memory(m), 0);
	perfmap_free(m);
	perfmap_free(NULL);
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
	ck_assert_str_eq(perfmap_lookup(m, 0x5001), "good");
	ck_assert_ptr_null(perfmap_lookup(m, 0x1000));
	ck_assert_ptr_null(perfmap_lookup(m, 0x6000));
	perfmap_free(m);

	/* A NUL inside a line. */
	m = perfmap_new();
	size_t used;

	ck_assert_int_eq(perfmap_parse(m, "1000 10 a\0b\n2000 10 c\n", 22, &used), 0);
	ck_assert_uint_eq(used, 22);
	ck_assert_uint_eq(perfmap_bad_lines(m), 1);
	ck_assert_str_eq(perfmap_lookup(m, 0x2000), "c");
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
	first = perfmap_lookup(m, 0x1000);
	ck_assert_str_eq(first, "first");
	ck_assert_ptr_null(perfmap_lookup(m, 0x2000));
	/* The rest, from where the first call stopped. */
	ck_assert_int_eq(perfmap_parse(m, all + off, strlen(all) - off, &used), 0);
	ck_assert_uint_eq(off + used, strlen(all));
	ck_assert_uint_eq(perfmap_count(m), 3);
	ck_assert_str_eq(perfmap_lookup(m, 0x2009), "second");
	ck_assert_str_eq(perfmap_lookup(m, 0x3000), "third");
	/* Names handed out before an append stay where they were. */
	ck_assert_ptr_eq(perfmap_lookup(m, 0x1000), first);
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
	ck_assert_str_eq(perfmap_lookup(m, 0x1000), "after");
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
		ck_assert_str_eq(perfmap_lookup(m, a + 15), i == 5 ? "reused" : want);
		ck_assert_ptr_null(perfmap_lookup(m, a + 16));
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
	ck_assert_str_eq(perfmap_cache_lookup(c, getpid(), 0x10010, 0), "jit_one");
	write_map("20000 100 jit_two\n", "a");
	/* A miss re-reads at most once a second. */
	ck_assert_ptr_null(perfmap_cache_lookup(c, getpid(), 0x20010, 0));
	usleep(1100 * 1000);
	ck_assert_str_eq(perfmap_cache_lookup(c, getpid(), 0x20010, 0), "jit_two");
	perfmap_cache_stats(c, &st);
	ck_assert_uint_eq(st.reads, 2);
	ck_assert_uint_eq(st.bytes_read, 36);	/* the second read took only the tail */
	ck_assert_uint_eq(st.named, 2);
	ck_assert_uint_eq(st.maps, 1);
	/* Replaced by a shorter file: read again from the start. */
	unlink(map_path);
	write_map("30000 10 jit_three\n", "w");
	usleep(1100 * 1000);
	ck_assert_str_eq(perfmap_cache_lookup(c, getpid(), 0x30000, 1), "jit_three");
	ck_assert_ptr_null(perfmap_cache_lookup(c, getpid(), 0x10010, 1));
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
	ck_assert_str_eq(perfmap_cache_lookup(c, getpid(), 0x10010, 0), "jit_one");
	perfmap_cache_stats(c, &st);
	held = st.memory;
	ck_assert_uint_gt(held, 0);
	ck_assert_uint_eq(st.max_bytes, 1 << 20);
	ck_assert_uint_eq(perfmap_cache_shrink(c, held), 0);
	ck_assert_uint_eq(perfmap_cache_shrink(c, 0), held);
	perfmap_cache_stats(c, &st);
	ck_assert_uint_eq(st.memory, 0);
	ck_assert_uint_eq(st.maps, 1);		/* the process stays known, without its map */
	ck_assert_uint_eq(st.reads, 1);
	ck_assert_str_eq(perfmap_cache_lookup(c, getpid(), 0x20010, 1), "jit_two");
	perfmap_cache_stats(c, &st);
	ck_assert_uint_eq(st.reads, 2);
	ck_assert_uint_eq(st.memory, held);
	/* a bound below what a file needs: it is not read at all */
	perfmap_cache_set_max(c, 8);
	perfmap_cache_shrink(c, 0);
	ck_assert_ptr_null(perfmap_cache_lookup(c, getpid(), 0x10010, 2));
	perfmap_cache_stats(c, &st);
	ck_assert_uint_eq(st.max_bytes, 8);
	ck_assert_uint_lt(st.memory, held);	/* an empty map at most: nothing parsed */
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
	ck_assert_ptr_null(perfmap_cache_lookup(c, getpid(), 0x10010, 0));
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

static void plant_fifo(void)
{
	ck_assert_int_eq(mkfifo(map_path, 0600), 0);
}

static uint64_t *f_symlink(struct perfmap_stats *s) { return &s->refused_symlink; }
static uint64_t *f_owner(struct perfmap_stats *s) { return &s->refused_owner; }
static uint64_t *f_size(struct perfmap_stats *s) { return &s->refused_size; }
static uint64_t *f_type(struct perfmap_stats *s) { return &s->refused_type; }

START_TEST(test_cache_refuses_symlink)
{
	expect_refused(plant_symlink, f_symlink);
	unlink("/tmp/ember-check-secret");
}
END_TEST

START_TEST(test_cache_refuses_other_owner)
{
	if (getuid() != 0)
		return;	/* chown needs root; CI runs as root */
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
	expect_refused(plant_fifo, f_type);
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
	ck_assert_str_eq(perfmap_cache_lookup(c, getpid(), 0x10010, 0), "after_garbage");
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
	void *code = mmap(NULL, len, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	struct symbolizer *s = symbolizer_new();
	struct symbolizer_stats st;
	struct sym_frame f;
	char line[128];

	ck_assert_ptr_ne(code, MAP_FAILED);
	ck_assert_ptr_nonnull(s);
	map_path_init();
	snprintf(line, sizeof(line), "%lx 40 JS:*fib /app.js:1:13\n%lx 40 _ZN2ns5KlassIlE6methodEi\n",
		 (unsigned long)(uintptr_t)code, (unsigned long)(uintptr_t)code + 0x40);
	write_map(line, "w");
	symbolizer_frame(s, getpid(), (uint64_t)(uintptr_t)code + 3, false, &f);
	ck_assert_str_eq(f.function, "JS:*fib /app.js:1:13");
	ck_assert_ptr_null(f.system_name);
	ck_assert(!f.kernel);
	/* Mangled JIT names are demangled too. */
	symbolizer_frame(s, getpid(), (uint64_t)(uintptr_t)code + 0x41, false, &f);
	ck_assert_str_eq(f.function, "ns::Klass<long>::method(int)");
	ck_assert_str_eq(f.system_name, "_ZN2ns5KlassIlE6methodEi");
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
