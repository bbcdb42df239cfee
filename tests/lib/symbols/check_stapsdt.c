// SPDX-License-Identifier: MIT
/* The .note.stapsdt walk: probes found by provider and name, malformed notes refused. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stapsdt.h"
#include "suites.h"

static const char *const names[] = {"alloc", "free"};

/* Appends one note (name "stapsdt", type 3) whose description is desc. */
static size_t put_note(unsigned char *buf, size_t off, const void *desc, uint32_t descsz)
{
	uint32_t hdr[3] = {8, descsz, 3};

	memcpy(buf + off, hdr, sizeof(hdr));
	memcpy(buf + off + 12, "stapsdt", 8);
	memcpy(buf + off + 20, desc, descsz);
	return off + 20 + ((descsz + 3) & ~3U);
}

/* A 64-bit description: three addresses then provider, name and args. */
static uint32_t make_desc(unsigned char *d, const char *prov, const char *name)
{
	size_t n = 24;

	memset(d, 0, 24);
	strcpy((char *)d + n, prov);
	n += strlen(prov) + 1;
	strcpy((char *)d + n, name);
	n += strlen(name) + 1;
	strcpy((char *)d + n, "8@%rdi");
	return n + 7;
}

START_TEST(test_found)
{
	unsigned char buf[512] = {0}, d[128];
	unsigned int found = 99;
	size_t off = 0;

	off = put_note(buf, off, d, make_desc(d, "other", "alloc"));
	ck_assert_int_eq(stapsdt_scan(buf, off, true, "otel_memory", names, 2, &found), 0);
	ck_assert_uint_eq(found, 0);
	off = put_note(buf, off, d, make_desc(d, "otel_memory", "free"));
	ck_assert_int_eq(stapsdt_scan(buf, off, true, "otel_memory", names, 2, &found), 0);
	ck_assert_uint_eq(found, 2);
	off = put_note(buf, off, d, make_desc(d, "otel_memory", "alloc"));
	ck_assert_int_eq(stapsdt_scan(buf, off, true, "otel_memory", names, 2, &found), 0);
	ck_assert_uint_eq(found, 3);
	ck_assert_int_eq(stapsdt_scan(buf, 0, true, "otel_memory", names, 2, &found), 0);
	ck_assert_uint_eq(found, 0);
}
END_TEST

START_TEST(test_malformed)
{
	unsigned char buf[512] = {0}, d[128];
	unsigned int found;
	uint32_t len = make_desc(d, "otel_memory", "alloc"), big[3] = {8, 0xfffffff0, 3};
	size_t off = put_note(buf, 0, d, len);

	/* truncated anywhere in header, name or description (the padding may be missing) */
	ck_assert_uint_gt(off, 20 + len - 1);
	for (size_t cut = 1; cut < 20 + len; cut++)
		ck_assert_int_eq(stapsdt_scan(buf, cut, true, "otel_memory", names, 2, &found),
				 -EINVAL);
	/* strings not terminated inside the description */
	memset(d + 24, 'x', len - 24);
	off = put_note(buf, 0, d, len);
	ck_assert_int_eq(stapsdt_scan(buf, off, true, "otel_memory", names, 2, &found), -EINVAL);
	/* a description too short for its three addresses */
	off = put_note(buf, 0, "otel", 5);
	ck_assert_int_eq(stapsdt_scan(buf, off, true, "otel_memory", names, 2, &found), -EINVAL);
	/* sizes that wrap */
	memcpy(buf, big, sizeof(big));
	ck_assert_int_eq(stapsdt_scan(buf, 64, true, "otel_memory", names, 2, &found), -EINVAL);
}
END_TEST

START_TEST(test_file)
{
	unsigned int found = 7;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

	/* not ELF: no probes */
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(stapsdt_fd(fd, "otel_memory", names, 2, &found), 0);
	ck_assert_uint_eq(found, 0);
	close(fd);
}
END_TEST

/* An ELF file with three notes (tests/fuzz/mkcorpus_stapsdt.py; its first byte is the mode). */
START_TEST(test_elf_file)
{
	char seed[4096], tmp[] = "/tmp/check_stapsdt.XXXXXX";
	unsigned char buf[8192];
	unsigned int found = 0;
	size_t n;
	FILE *f;
	int fd;

	snprintf(seed, sizeof(seed), "%s/../fuzz/corpus/stapsdt/elf_notes", FIXTURE_SRC_DIR);
	f = fopen(seed, "rb");
	ck_assert_msg(f != NULL, "%s missing", seed);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	ck_assert_uint_gt(n, 64);
	ck_assert_uint_lt(n, sizeof(buf));
	fd = mkstemp(tmp);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf + 1, n - 1), (ssize_t)(n - 1));
	unlink(tmp);
	ck_assert_int_eq(stapsdt_fd(fd, "otel_memory", names, 2, &found), 0);
	ck_assert_uint_eq(found, 3);
	ck_assert_int_eq(stapsdt_fd(fd, "other", names, 2, &found), 0);
	ck_assert_uint_eq(found, 1);
	ck_assert_int_eq(stapsdt_fd(fd, "none", names, 2, &found), 0);
	ck_assert_uint_eq(found, 0);
	close(fd);
}
END_TEST

Suite *stapsdt_suite(void)
{
	Suite *s = suite_create("stapsdt");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_found);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_file);
	tcase_add_test(tc, test_elf_file);
	suite_add_tcase(s, tc);
	return s;
}
