// SPDX-License-Identifier: MIT
/* procmaps: known answers on literal /proc/PID/maps text, and this process's maps. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ember/proc.h"
#include "procmaps.h"
#include "suites.h"

static const char sample[] =
	"55d4c8a00000-55d4c8a02000 r--p 00000000 fd:01 1234                       /usr/bin/cat\n"
	"55d4c8a02000-55d4c8a07000 r-xp 00002000 fd:01 1234                       /usr/bin/cat\n"
	"55d4c9000000-55d4c9021000 rw-p 00000000 00:00 0                          [heap]\n"
	"7f0000000000-7f0000001000 rw-s 00000000 00:05 77       /dev/shm/my file (deleted)\n"
	"7f0000001000-7f0000002000 ---p 00000000 00:00 0 \n"
	"7f0000002000-7f0000003000 rw-p 00000000 00:00 0\n"
	"7ffd1c000000-7ffd1c021000 rw-p 00000000 00:00 0                          [stack]\n"
	"7ffd1c1f0000-7ffd1c1f2000 r-xp 00000000 00:00 0                          [vdso]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

/* m's fields are want's (its path apart). */
static void expect_map(const struct proc_map *m, const struct proc_map *want)
{
	ck_assert_uint_eq(m->start, want->start);
	ck_assert_uint_eq(m->end, want->end);
	ck_assert_uint_eq(m->offset, want->offset);
	ck_assert_uint_eq(m->inode, want->inode);
	ck_assert_uint_eq(m->dev_major, want->dev_major);
	ck_assert_uint_eq(m->dev_minor, want->dev_minor);
	ck_assert_uint_eq(m->perms, want->perms);
}

static struct proc_maps parse_ok(const char *text)
{
	struct proc_maps m = {0};

	ck_assert_int_eq(procmaps_parse(text, strlen(text), &m), 0);
	return m;
}

START_TEST(test_fields)
{
	struct proc_maps m = parse_ok(sample);

	ck_assert_uint_eq(m.n, 9);
	ck_assert_uint_eq(m.bad_lines, 0);
	expect_map(&m.v[1], &(struct proc_map){.start = 0x55d4c8a02000,
					       .end = 0x55d4c8a07000,
					       .offset = 0x2000,
					       .inode = 1234,
					       .dev_major = 0xfd,
					       .dev_minor = 1,
					       .perms = PROCMAP_R | PROCMAP_X});
	ck_assert_str_eq(m.v[1].path, "/usr/bin/cat");
	ck_assert_str_eq(m.v[2].path, "[heap]");
	ck_assert_uint_eq(m.v[3].perms, PROCMAP_R | PROCMAP_W | PROCMAP_SHARED);
	ck_assert_str_eq(m.v[3].path, "/dev/shm/my file (deleted)");
	ck_assert_ptr_null(m.v[4].path);
	ck_assert_uint_eq(m.v[4].perms, 0);
	ck_assert_ptr_null(m.v[5].path);
	ck_assert_str_eq(m.v[6].path, "[stack]");
	ck_assert_str_eq(m.v[7].path, "[vdso]");
	ck_assert_uint_eq(m.v[8].end, 0xffffffffff601000);
	procmaps_free(&m);
}
END_TEST

START_TEST(test_find)
{
	struct proc_maps m = parse_ok(sample);

	ck_assert_ptr_null(procmaps_find(&m, 0));
	ck_assert_ptr_null(procmaps_find(&m, 0x55d4c89fffff));
	ck_assert_ptr_eq(procmaps_find(&m, 0x55d4c8a00000), &m.v[0]);
	ck_assert_ptr_eq(procmaps_find(&m, 0x55d4c8a02000), &m.v[1]);
	ck_assert_ptr_eq(procmaps_find(&m, 0x55d4c8a06fff), &m.v[1]);
	ck_assert_ptr_null(procmaps_find(&m, 0x55d4c8a07000));
	ck_assert_ptr_eq(procmaps_find(&m, 0x7ffd1c1f0abc), &m.v[7]);
	ck_assert_ptr_eq(procmaps_find(&m, 0xffffffffff600000), &m.v[8]);
	ck_assert_ptr_null(procmaps_find(&m, UINT64_MAX));
	procmaps_free(&m);
}
END_TEST

START_TEST(test_malformed)
{
	static const char text[] =
		"00400000-00401000 r-xp 00000000 08:01 42 /bin/a\n"
		"garbage\n"
		"00500000-00501000 r-xp 00000000 08:01\n"		   /* no inode */
		"00600000-00601000 rwxq 00000000 08:01 42 /bin/b\n"	   /* bad share flag */
		"00700000-00700000 r-xp 00000000 08:01 42 /bin/c\n"	   /* empty range */
		"00900000-00800000 r-xp 00000000 08:01 42 /bin/d\n"	   /* reversed */
		"10000000000000000-10000000000000001 r-xp 0 08:01 42 /x\n" /* > 64 bits */
		"00a00000-00a01000 r-xp 00000000 100000000:01 42 /bin/e\n" /* major > 32 bits */
		"00b00000-00b01000 r-xp 00000000 08:01 42x /bin/f\n"
		"\n"
		"00c00000-00c01000 r-xp 00000000 08:01 42 /bin/g"; /* no final newline */
	struct proc_maps m = parse_ok(text);

	ck_assert_uint_eq(m.n, 2);
	ck_assert_uint_eq(m.bad_lines, 8);
	ck_assert_str_eq(m.v[0].path, "/bin/a");
	ck_assert_str_eq(m.v[1].path, "/bin/g");
	procmaps_free(&m);
}
END_TEST

START_TEST(test_unsorted_and_empty)
{
	static const char text[] = "00c00000-00c01000 r-xp 00000000 08:01 1 /c\n"
				   "00a00000-00a01000 r-xp 00000000 08:01 1 /a\n";
	struct proc_maps m = parse_ok(text), e = parse_ok("");

	ck_assert_uint_eq(m.n, 2);
	ck_assert_str_eq(m.v[0].path, "/a");
	ck_assert_str_eq(procmaps_find(&m, 0xc00010)->path, "/c");
	ck_assert_uint_eq(e.n, 0);
	ck_assert_ptr_null(procmaps_find(&e, 0));
	procmaps_free(&m);
	procmaps_free(&e);
	procmaps_free(NULL);
}
END_TEST

START_TEST(test_too_big)
{
	static const char line[] = "00400000-00401000 r-xp 00000000 08:01 42 /bin/a\n";
	size_t n = PROCMAPS_MAX_ENTRIES + 1, i, len = sizeof(line) - 1;
	char *text = malloc(n * len);
	struct proc_maps m = {0};

	ck_assert_ptr_nonnull(text);
	for (i = 0; i < n; i++)
		memcpy(text + i * len, line, len);
	ck_assert_int_eq(procmaps_parse(text, n * len, &m), -E2BIG);
	ck_assert_int_eq(procmaps_parse(text, PROCMAPS_MAX_BYTES + 1, &m), -E2BIG);
	ck_assert_int_eq(procmaps_parse(text, (n - 1) * len, &m), 0);
	ck_assert_uint_eq(m.n, PROCMAPS_MAX_ENTRIES);
	procmaps_free(&m);
	free(text);
}
END_TEST

START_TEST(test_read_self)
{
	struct proc_maps m = {0};
	const struct proc_map *pm;

	ck_assert_int_eq(procmaps_read(getpid(), &m), 0);
	ck_assert_uint_eq(m.bad_lines, 0);
	pm = procmaps_find(&m, (uint64_t)(uintptr_t)&procmaps_suite);
	ck_assert_ptr_nonnull(pm);
	ck_assert_ptr_nonnull(pm->path);
	ck_assert(pm->perms & PROCMAP_X);
	ck_assert_ptr_nonnull(strstr(pm->path, "check_ember"));
	procmaps_free(&m);
	ck_assert_int_lt(procmaps_read(-1, &m), 0);
}
END_TEST

/* The ioctl reader gives exactly the executable lines of the text, field by field. */
START_TEST(test_read_exec_self)
{
	struct proc_maps all = {0}, ex = {0};
	size_t j = 0, nx = 0;
	int err;

	err = procmaps_read_exec(getpid(), &ex);
	if (err == -ENOTTY || err == -EINVAL)
		return; /* before Linux 6.11: the text reader is used instead */
	ck_assert_int_eq(err, 0);
	ck_assert_int_eq(procmaps_read(getpid(), &all), 0);
	for (size_t i = 0; i < all.n; i++) {
		const struct proc_map *a = &all.v[i], *e;

		/* [vsyscall] is the gate page, no VMA of the process: the ioctl never lists it */
		if (!(a->perms & PROCMAP_X) || (a->path && !strcmp(a->path, "[vsyscall]")))
			continue;
		nx++;
		ck_assert_uint_lt(j, ex.n);
		e = &ex.v[j++];
		expect_map(e, a);
		ck_assert_int_eq(!e->path, !a->path);
		if (a->path)
			ck_assert_str_eq(e->path, a->path);
	}
	ck_assert_uint_eq(ex.n, nx);
	ck_assert_uint_ge(nx, 3); /* check_ember, libc, ld.so, [vdso] at least */
	ck_assert_ptr_nonnull(procmaps_find(&ex, (uint64_t)(uintptr_t)&procmaps_suite));
	procmaps_free(&all);
	procmaps_free(&ex);
	ck_assert_int_lt(procmaps_read_exec(-1, &ex), 0);
}
END_TEST

/* An exit's record of n mappings: m[i] at 0x1000 * (2i + 1), one page each, /lib/i. */
static size_t exit_record(struct ember_proc_maps_event *r, uint32_t n)
{
	memset(r, 0, sizeof(*r));
	r->e.type = EMBER_PROC_MAPS;
	r->e.tgid = 4242;
	r->n = n;
	for (uint32_t i = 0; i < n; i++) {
		struct ember_proc_map *m = &r->m[i];

		m->start = 0x1000 * (2 * i + 1);
		m->end = m->start + 0x1000;
		m->offset = 0x2000 * i;
		m->ino = 100 + i;
		m->dev = (8u << 20) | 3; /* 8:3 */
		snprintf(m->path, sizeof(m->path), "/lib/%u", i);
	}
	return offsetof(struct ember_proc_maps_event, m) + n * sizeof(r->m[0]);
}

START_TEST(test_exit_fields)
{
	struct ember_proc_maps_event r;
	struct proc_maps m = {0};
	size_t size = exit_record(&r, 3);

	strcpy(r.m[2].path, "[vdso]");
	r.m[2].ino = 0;
	r.m[2].dev = 0;
	ck_assert_int_eq(procmaps_parse_exit(&r, size, &m), 0);
	ck_assert_uint_eq(m.n, 3);
	ck_assert_uint_eq(m.bad_lines, 0);
	expect_map(&m.v[1], &(struct proc_map){.start = 0x3000,
					       .end = 0x4000,
					       .offset = 0x2000,
					       .inode = 101,
					       .dev_major = 8,
					       .dev_minor = 3,
					       .perms = PROCMAP_R | PROCMAP_X | PROCMAP_AT_EXIT});
	ck_assert_str_eq(m.v[1].path, "/lib/1");
	ck_assert_str_eq(m.v[2].path, "[vdso]");
	ck_assert_ptr_eq(procmaps_find(&m, 0x3800), &m.v[1]);
	procmaps_free(&m);
}
END_TEST

/* A record not as the program writes it: refused whole, or its bad mappings left out. */
START_TEST(test_exit_malformed)
{
	struct ember_proc_maps_event r;
	struct proc_maps m = {0};
	size_t size = exit_record(&r, 4);

	ck_assert_int_eq(procmaps_parse_exit(&r, size - 1, &m), -EINVAL); /* cut short */
	ck_assert_int_eq(procmaps_parse_exit(&r, 10, &m), -EINVAL);
	r.n = EMBER_PROC_MAPS_MAX + 1;
	ck_assert_int_eq(procmaps_parse_exit(&r, sizeof(r), &m), -EINVAL);
	r.n = 0;
	ck_assert_int_eq(procmaps_parse_exit(&r, size, &m), -EINVAL);
	r.n = 4;
	r.e.type = EMBER_PROC_EXIT;
	ck_assert_int_eq(procmaps_parse_exit(&r, size, &m), -EINVAL);
	r.e.type = EMBER_PROC_MAPS;
	r.m[1].end = r.m[1].start;		       /* empty: left out */
	r.m[2].start = r.m[0].start;		       /* out of order: left out */
	memset(r.m[3].path, 'a', sizeof(r.m[3].path)); /* no NUL: no path */
	ck_assert_int_eq(procmaps_parse_exit(&r, size, &m), 0);
	ck_assert_uint_eq(m.n, 2);
	ck_assert_uint_eq(m.bad_lines, 3);
	ck_assert_str_eq(m.v[0].path, "/lib/0");
	ck_assert_ptr_null(m.v[1].path);
	ck_assert_uint_eq(m.v[1].inode, 103);
	procmaps_free(&m);
	exit_record(&r, 2);
	strcpy(r.m[0].path, "lib/relative"); /* not absolute: no path */
	strcpy(r.m[1].path, "/a\nb");	     /* a newline: no path */
	ck_assert_int_eq(procmaps_parse_exit(&r, size, &m), 0);
	ck_assert_ptr_null(m.v[0].path);
	ck_assert_ptr_null(m.v[1].path);
	ck_assert_uint_eq(m.bad_lines, 2);
	procmaps_free(&m);
	exit_record(&r, 1);
	r.m[0].flags = EMBER_PROC_MAP_NO_PATH; /* the kernel could not read it: no fault */
	ck_assert_int_eq(procmaps_parse_exit(&r, size, &m), 0);
	ck_assert_ptr_null(m.v[0].path);
	ck_assert_uint_eq(m.bad_lines, 0);
	procmaps_free(&m);
}
END_TEST

Suite *procmaps_suite(void)
{
	Suite *s = suite_create("procmaps");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_fields);
	tcase_add_test(tc, test_find);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_unsorted_and_empty);
	tcase_add_test(tc, test_too_big);
	tcase_add_test(tc, test_read_self);
	tcase_add_test(tc, test_read_exec_self);
	tcase_add_test(tc, test_exit_fields);
	tcase_add_test(tc, test_exit_malformed);
	suite_add_tcase(s, tc);
	return s;
}
