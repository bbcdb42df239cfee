// SPDX-License-Identifier: MIT
/*
 * bpf/growth_class.bpf.h: a fault classified from the mm's own ranges agrees
 * with the mapping the kernel shows at that address, in this very process,
 * and the ranges' edges hold.
 */
#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "../../bpf/growth_class.bpf.h"
#include "suites.h"

/* The ranges of this process, as /proc/self/stat shows its mm_struct's fields. */
static struct growth_mm self_mm(void)
{
	struct growth_mm m = {0};
	unsigned long long v[52] = {0};
	char buf[4096], *p;
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n;
	int i = 4;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* after the comm, which may hold spaces */
	ck_assert_ptr_nonnull(p);
	p += 2;
	p = strchr(p, ' '); /* after the state (field 3) */
	while (p && i < 52) {
		v[i++] = strtoull(p + 1, &p, 10);
		p = strchr(p, ' ');
	}
	ck_assert_int_ge(i, 48);
	/* proc(5): startcode 26, endcode 27, startstack 28, start_data 45, end_data 46, start_brk 47 */
	m.start_code = v[26];
	m.end_code = v[27];
	m.start_stack = v[28];
	m.start_data = v[45];
	m.end_data = v[46];
	m.start_brk = v[47];
	m.brk = (uintptr_t)sbrk(0);
	ck_assert_uint_ne(m.start_code, 0);
	ck_assert_uint_ne(m.start_stack, 0);
	return m;
}

/* Globals of the executable's data segment, one initialized (file bytes). */
static int file_data = 42;

START_TEST(classes_of_self)
{
	static int (*const fn)(void) = getpid;
	void *heap = NULL;
	struct growth_mm m;
	int local = file_data;

	/* a small block from the heap (brk), grown on purpose */
	ck_assert_ptr_ne(sbrk(4096), (void *)-1);
	heap = malloc(64);
	ck_assert_ptr_nonnull(heap);
	m = self_mm();
	ck_assert_int_eq(growth_class(&m, (uintptr_t)classes_of_self), GROWTH_CLASS_FILE);
	ck_assert_int_eq(growth_class(&m, (uintptr_t)&file_data), GROWTH_CLASS_FILE);
	ck_assert_int_eq(growth_class(&m, (uintptr_t)&local), GROWTH_CLASS_ANON);
	ck_assert_int_eq(growth_class(&m, m.brk - 1), GROWTH_CLASS_ANON);
	/* libc's text is in no range of the executable's: looked up */
	ck_assert_int_eq(growth_class(&m, (uintptr_t)fn), GROWTH_CLASS_LOOKUP);
	free(heap);
}
END_TEST

/* The page after a to look at in a mapping ending at end: step on, its last page last. */
static unsigned long long next_probe(unsigned long long a, unsigned long long step,
				     unsigned long long end)
{
	unsigned long long last = end - 4096;

	if (a >= last)
		return end;
	return a + step < last ? a + step : last;
}

/*
 * Pages of every mapping /proc/self/maps shows: looked up, or the mapping's
 * own kind. At most ~1024 pages a mapping, its last among them: under ASan
 * the shadow's mappings span terabytes.
 */
START_TEST(classes_agree_with_maps)
{
	struct growth_mm m = self_mm();
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	size_t classified = 0;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, ino, step;
		char path[4096] = "";
		bool file;

		ck_assert_int_ge(
			sscanf(line, "%llx-%llx %*s %*s %*s %llu %4095s", &start, &end, &ino, path),
			3);
		/* a file's mapping has an inode; [heap], [stack] and anonymous ones none */
		file = ino != 0;
		if (!strcmp(path, "[vsyscall]"))
			continue; /* no process faults there */
		step = ((end - start) / 1024) & ~4095ull;
		if (step < 4096)
			step = 4096;
		for (unsigned long long a = start; a < end; a = next_probe(a, step, end)) {
			enum growth_class c = growth_class(&m, a);

			if (c == GROWTH_CLASS_LOOKUP)
				continue;
			classified++;
			ck_assert_msg(c == (file ? GROWTH_CLASS_FILE : GROWTH_CLASS_ANON),
				      "%llx in %s: class %d", a, line, c);
		}
	}
	fclose(f);
	ck_assert_uint_gt(classified, 0);
}
END_TEST

/* The edges: each range half-open, the stack's only below its start and near it. */
START_TEST(range_edges)
{
	const struct growth_mm m = {
		.start_code = 0x400000,
		.end_code = 0x401234,
		.start_data = 0x403000,
		.end_data = 0x403100,
		.start_brk = 0x500000,
		.brk = 0x521000,
		.start_stack = 0x7ffff0000000,
	};
	struct growth_mm empty = m;

	ck_assert_int_eq(growth_class(&m, 0x3fffff), GROWTH_CLASS_LOOKUP);
	ck_assert_int_eq(growth_class(&m, 0x400000), GROWTH_CLASS_FILE);
	ck_assert_int_eq(growth_class(&m, 0x401233), GROWTH_CLASS_FILE);
	ck_assert_int_eq(growth_class(&m, 0x401234), GROWTH_CLASS_LOOKUP);
	ck_assert_int_eq(growth_class(&m, 0x403000), GROWTH_CLASS_FILE);
	ck_assert_int_eq(growth_class(&m, 0x403100), GROWTH_CLASS_LOOKUP); /* bss */
	ck_assert_int_eq(growth_class(&m, 0x500000), GROWTH_CLASS_ANON);
	ck_assert_int_eq(growth_class(&m, 0x520fff), GROWTH_CLASS_ANON);
	ck_assert_int_eq(growth_class(&m, 0x521000), GROWTH_CLASS_LOOKUP);
	ck_assert_int_eq(growth_class(&m, m.start_stack - 8), GROWTH_CLASS_ANON);
	ck_assert_int_eq(growth_class(&m, m.start_stack - GROWTH_STACK_NEAR), GROWTH_CLASS_ANON);
	ck_assert_int_eq(growth_class(&m, m.start_stack - GROWTH_STACK_NEAR - 1),
			 GROWTH_CLASS_LOOKUP);
	/* above the start: arguments and environment, written by exec, not faulted: looked up */
	ck_assert_int_eq(growth_class(&m, m.start_stack), GROWTH_CLASS_LOOKUP);
	/* no heap yet (brk == start_brk): nothing is heap */
	empty.brk = empty.start_brk;
	ck_assert_int_eq(growth_class(&empty, 0x500000), GROWTH_CLASS_LOOKUP);
	/* an mm with no ranges at all (zeroed): everything looked up */
	memset(&empty, 0, sizeof(empty));
	ck_assert_int_eq(growth_class(&empty, 0), GROWTH_CLASS_LOOKUP);
	ck_assert_int_eq(growth_class(&empty, 0x7ffff0000000), GROWTH_CLASS_LOOKUP);
}
END_TEST

Suite *growth_class_suite(void)
{
	Suite *s = suite_create("growth_class");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, classes_of_self);
	tcase_add_test(tc, classes_agree_with_maps);
	tcase_add_test(tc, range_edges);
	suite_add_tcase(s, tc);
	return s;
}
