// SPDX-License-Identifier: MIT
/*
 * debugfile: the stripped fixtures' debug files found by .gnu_debuglink (CRC
 * checked) and by build-id, with nm on the unstripped binaries as the reference.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debugfile.h"
#include "nm.h"
#include "suites.h"

#define FX(name) FIXTURE_DIR "/" name

static struct elf_syms *load(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct elf_syms *s;

	ck_assert_int_ge(fd, 0);
	s = elf_syms_load_fd(fd);
	close(fd);
	ck_assert_ptr_nonnull(s);
	return s;
}

START_TEST(test_debuglink)
{
	struct elf_syms *bin = load(FX("fx_debuglink")), *dbg;
	enum debugfile_via via;
	uint64_t work_a;
	uint32_t crc;

	ck_assert_int_eq(elf_syms_source(bin), ELF_SYMS_DYNSYM);
	ck_assert_str_eq(elf_syms_debuglink(bin, &crc), "fx_debuglink.debug");
	dbg = debugfile_load(getpid(), FX("fx_debuglink"), bin, &via);
	ck_assert_ptr_nonnull(dbg);
	ck_assert_int_eq(via, DEBUGFILE_DEBUGLINK);
	ck_assert_int_eq(elf_syms_source(dbg), ELF_SYMS_SYMTAB);
	work_a = nm_symbol(FX("fx_debuglink_full"), "work_a", false, NULL);
	ck_assert_uint_ne(work_a, 0);
	ck_assert_str_eq(elf_syms_lookup(dbg, work_a + 2), "work_a");
	ck_assert_str_eq(elf_syms_build_id(dbg), elf_syms_build_id(bin));
	elf_syms_free(dbg);
	elf_syms_free(bin);
}
END_TEST

START_TEST(test_debuglink_crc_mismatch)
{
	char dir[] = "/tmp/ember-dbg.XXXXXX", cmd[1024], path[256];
	struct elf_syms *bin;
	enum debugfile_via via;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	/* The debuglink names fx_debuglink.debug, but that file is another binary's. */
	snprintf(cmd, sizeof(cmd), "cp '%s' %s/fx_debuglink && cp '%s' %s/fx_debuglink.debug",
		 FX("fx_debuglink"), dir, FX("fx_buildid.debug"), dir);
	ck_assert_int_eq(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/fx_debuglink", dir);
	bin = load(path);
	ck_assert_ptr_null(debugfile_load(getpid(), path, bin, &via));
	ck_assert_int_eq(via, DEBUGFILE_NONE);
	snprintf(cmd, sizeof(cmd), "rm -r %s", dir);
	ck_assert_int_eq(system(cmd), 0);
	elf_syms_free(bin);
}
END_TEST

/*
 * The debug file a local user places beside a binary is a link to a FIFO (as it
 * could be to /dev/watchdog, whose open() alone arms it): nothing is taken, and
 * nothing is opened for reading (inotify would see an open; an O_PATH one it does not).
 */
START_TEST(test_debuglink_not_a_file)
{
	char dir[] = "/tmp/ember-dbg.XXXXXX", cmd[1024], path[256], fifo[256], link[256];
	char ev[4096];
	struct elf_syms *bin;
	enum debugfile_via via;
	int in;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "cp '%s' %s/fx_debuglink", FX("fx_debuglink"), dir);
	ck_assert_int_eq(system(cmd), 0);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	snprintf(link, sizeof(link), "%s/fx_debuglink.debug", dir);
	ck_assert_int_eq(symlink(fifo, link), 0);
	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	ck_assert_int_ge(in, 0);
	ck_assert_int_ge(inotify_add_watch(in, fifo, IN_OPEN), 0);
	snprintf(path, sizeof(path), "%s/fx_debuglink", dir);
	bin = load(path);
	ck_assert_ptr_null(debugfile_load(getpid(), path, bin, &via));
	ck_assert_int_eq(via, DEBUGFILE_NONE);
	ck_assert_int_lt(read(in, ev, sizeof(ev)), 0); /* no IN_OPEN */
	close(in);
	snprintf(cmd, sizeof(cmd), "rm -r %s", dir);
	ck_assert_int_eq(system(cmd), 0);
	elf_syms_free(bin);
}
END_TEST

START_TEST(test_none)
{
	struct elf_syms *bin = load(FX("fx_stripped"));
	enum debugfile_via via = DEBUGFILE_BUILD_ID;
	uint32_t crc;

	ck_assert_ptr_null(elf_syms_debuglink(bin, &crc));
	ck_assert_ptr_null(debugfile_load(getpid(), FX("fx_stripped"), bin, &via));
	ck_assert_int_eq(via, DEBUGFILE_NONE);
	/* No such process: no root to look in. */
	ck_assert_ptr_null(debugfile_load(0x3ffffff0, FX("fx_stripped"), bin, &via));
	elf_syms_free(bin);
}
END_TEST

Suite *debugfile_suite(void)
{
	Suite *s = suite_create("debugfile");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_debuglink);
	tcase_add_test(tc, test_debuglink_crc_mismatch);
	tcase_add_test(tc, test_debuglink_not_a_file);
	tcase_add_test(tc, test_none);
	suite_add_tcase(s, tc);
	return s;
}
