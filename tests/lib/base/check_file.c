// SPDX-License-Identifier: MIT
/*
 * file.c: the atomic writer leaves the old file or the new one, never a planted link's target;
 * a relative --data-dir is made absolute, whether it exists yet or not.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "file.h"
#include "suites.h"

static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/check_file.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* The file's whole content, NUL-terminated, in buf. */
static ssize_t slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

START_TEST(writes_and_replaces)
{
	char path[128], tmp[140], buf[64];

	make_dir();
	snprintf(path, sizeof(path), "%s/out", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	ck_assert_int_eq(file_write_atomic(path, "first", 5, WRITE_SYNC), 0);
	ck_assert_int_eq(slurp(path, buf, sizeof(buf)), 5);
	ck_assert_str_eq(buf, "first");
	ck_assert_int_eq(file_write_atomic(path, "second!", 7, 0), 0);
	ck_assert_int_eq(slurp(path, buf, sizeof(buf)), 7);
	ck_assert_str_eq(buf, "second!");
	ck_assert_int_eq(access(tmp, F_OK), -1);
	/* empty is a file too */
	ck_assert_int_eq(file_write_atomic(path, "", 0, WRITE_SYNC), 0);
	ck_assert_int_eq(slurp(path, buf, sizeof(buf)), 0);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* A link planted at path.tmp is replaced, not written through. */
START_TEST(planted_link)
{
	char path[128], tmp[140], victim[128], buf[64];
	struct stat st;

	make_dir();
	snprintf(path, sizeof(path), "%s/out", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	ck_assert_int_eq(file_write_atomic(victim, "keep", 4, 0), 0);
	ck_assert_int_eq(symlink(victim, tmp), 0);
	ck_assert_int_eq(file_write_atomic(path, "new", 3, 0), 0);
	ck_assert_int_eq(slurp(victim, buf, sizeof(buf)), 4);
	ck_assert_str_eq(buf, "keep");
	ck_assert_int_eq(link(victim, tmp), 0);
	ck_assert_int_eq(file_write_atomic(path, "newer", 5, 0), 0);
	ck_assert_int_eq(slurp(victim, buf, sizeof(buf)), 4);
	ck_assert_str_eq(buf, "keep");
	ck_assert_int_eq(slurp(path, buf, sizeof(buf)), 5);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	unlink(path);
	unlink(victim);
	rmdir(dir);
}
END_TEST

/* A failure leaves the old file and no temporary one. */
START_TEST(failure_keeps_old)
{
	char path[128], tmp[140], buf[160];

	make_dir();
	snprintf(path, sizeof(path), "%s/out", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	ck_assert_int_eq(file_write_atomic(path, "old", 3, 0), 0);
	/* the rename fails: path is now a non-empty directory */
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(buf, sizeof(buf), "%s/x", path);
	ck_assert_int_eq(file_write_atomic(buf, "x", 1, 0), 0);
	ck_assert_int_lt(file_write_atomic(path, "new", 3, 0), 0);
	ck_assert_int_eq(access(tmp, F_OK), -1);
	/* no such directory */
	snprintf(buf, sizeof(buf), "%s/none/out", dir);
	ck_assert_int_eq(file_write_atomic(buf, "x", 1, 0), -ENOENT);
	snprintf(buf, sizeof(buf), "%s/x", path);
	unlink(buf);
	rmdir(path);
	rmdir(dir);
}
END_TEST

START_TEST(write_all_pipe)
{
	static char big[256 * 1024];
	int fds[2];
	pid_t pid;
	size_t got = 0;
	ssize_t n;
	char buf[4096];

	memset(big, 'e', sizeof(big));
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		close(fds[0]);
		_exit(write_all(fds[1], big, sizeof(big)) ? 1 : 0);
	}
	close(fds[1]);
	while ((n = read(fds[0], buf, sizeof(buf))) > 0)
		got += (size_t)n;
	close(fds[0]);
	ck_assert_uint_eq(got, sizeof(big));
	ck_assert_int_eq(write_all(-1, "x", 1), -EBADF);
}
END_TEST

/* path_absolute() from a working directory of our own (the test runs in its own fork). */
START_TEST(absolute_paths)
{
	char real[PATH_MAX], want[PATH_MAX + 16], out[PATH_MAX], tiny[8], sub[96];

	make_dir();
	ck_assert_ptr_nonnull(realpath(dir, real)); /* /tmp may be a link */
	snprintf(sub, sizeof(sub), "%s/hist", dir);
	ck_assert_int_eq(mkdir(sub, 0700), 0);
	ck_assert_int_eq(chdir(dir), 0);

	/* absolute: as given, not resolved (what an absolute --data-dir always did) */
	ck_assert_int_eq(path_absolute("/var/lib/../lib/ember", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/var/lib/../lib/ember");
	/* relative and there: realpath */
	snprintf(want, sizeof(want), "%s/hist", real);
	ck_assert_int_eq(path_absolute("hist", out, sizeof(out)), 0);
	ck_assert_str_eq(out, want);
	ck_assert_int_eq(path_absolute("./hist/../hist/", out, sizeof(out)), 0);
	ck_assert_str_eq(out, want);
	ck_assert_int_eq(path_absolute(".", out, sizeof(out)), 0);
	ck_assert_str_eq(out, real);
	/* relative and not there yet: below the working directory, "./" left out */
	snprintf(want, sizeof(want), "%s/new/data", real);
	ck_assert_int_eq(path_absolute(".//./new/data", out, sizeof(out)), 0);
	ck_assert_str_eq(out, want);
	/* refusals */
	ck_assert_int_eq(path_absolute("", out, sizeof(out)), -EINVAL);
	ck_assert_int_eq(path_absolute("/var/lib/ember", tiny, sizeof(tiny)), -ENAMETOOLONG);
	ck_assert_int_eq(path_absolute("hist", tiny, sizeof(tiny)), -ENAMETOOLONG);
	/* a working directory removed under us: no way to say where "new" is */
	ck_assert_int_eq(chdir(sub), 0);
	ck_assert_int_eq(rmdir(sub), 0);
	ck_assert_int_eq(path_absolute("new", out, sizeof(out)), -ENOENT);
	ck_assert_int_eq(chdir("/"), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

Suite *file_suite(void)
{
	Suite *s = suite_create("file");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, writes_and_replaces);
	tcase_add_test(tc, planted_link);
	tcase_add_test(tc, failure_keeps_old);
	tcase_add_test(tc, write_all_pipe);
	tcase_add_test(tc, absolute_paths);
	suite_add_tcase(s, tc);
	return s;
}
