/* SPDX-License-Identifier: MIT */
/* The single runner of every unit suite (fork mode unless CK_FORK=no). */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "suites.h"

pid_t spawn_paused(void)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (!pid) {
		pause();
		_exit(0);
	}
	return pid;
}

void reap_killed(pid_t pid)
{
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
}

/*
 * A child that waits for a byte on a pipe (its stdin; *go, the other end)
 * and then execs path with argv.
 */
static pid_t spawn_then_exec(int *go, const char *path, char *const argv[])
{
	int fds[2];
	pid_t pid;
	char c;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		close(fds[1]);
		if (dup2(fds[0], 0) == 0 && read(0, &c, 1) == 1)
			execv(path, argv);
		_exit(127);
	}
	close(fds[0]);
	*go = fds[1];
	return pid;
}

pid_t spawn_exec_later(int *go)
{
	static char *const argv[] = {"sleep", "60", NULL};

	return spawn_then_exec(go, "/bin/sleep", argv);
}

pid_t spawn_exec_twice(int *go)
{
	static char *const argv[] = {"sh", "-c", "read x && exec sleep 60", NULL};

	return spawn_then_exec(go, "/bin/sh", argv);
}

/* Whether pid's command line starts with cmd's (set last in an exec, after the mappings). */
static bool runs(pid_t pid, const char *cmd)
{
	char path[64], buf[16] = "";
	size_t n, len = strlen(cmd) + 1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	return n >= len && !memcmp(buf, cmd, len);
}

void exec_step(pid_t pid, int go, const char *cmd)
{
	const struct timespec pause = {.tv_nsec = 10 * 1000 * 1000};
	int i;

	ck_assert_int_eq(write(go, "\n", 1), 1); /* the child's byte, or a line for sh's read */
	for (i = 0; i < 500 && !runs(pid, cmd); i++)
		nanosleep(&pause, NULL);
	ck_assert_msg(runs(pid, cmd), "pid %d never exec'd %s", (int)pid, cmd);
}

void exec_child(pid_t pid, int go)
{
	exec_step(pid, go, "sleep");
	close(go);
}

int main(void)
{
	SRunner *sr = srunner_create(timeparse_suite());
	int failed;

	srunner_add_suite(sr, compress_suite());
	srunner_add_suite(sr, pprof_suite());
	srunner_add_suite(sr, history_suite());
	srunner_add_suite(sr, backlog_suite());
	srunner_add_suite(sr, history_damage_suite());
	srunner_add_suite(sr, procmaps_suite());
	srunner_add_suite(sr, procsnap_suite());
	srunner_add_suite(sr, elfsym_suite());
	srunner_add_suite(sr, stapsdt_suite());
	srunner_add_suite(sr, ksyms_suite());
	srunner_add_suite(sr, symbolizer_suite());
	srunner_add_suite(sr, config_suite());
	srunner_add_suite(sr, keys_suite());
	srunner_add_suite(sr, apps_suite());
	srunner_add_suite(sr, labels_suite());
	srunner_add_suite(sr, deferrec_suite());
	srunner_add_suite(sr, perfmap_suite());
	srunner_add_suite(sr, symshare_suite());
	srunner_add_suite(sr, v8_suite());
	srunner_add_suite(sr, demangle_suite());
	srunner_add_suite(sr, debugfile_suite());
	srunner_add_suite(sr, procinfo_suite());
	srunner_add_suite(sr, push_suite());
	srunner_add_suite(sr, stackset_suite());
	srunner_add_suite(sr, log_suite());
	srunner_add_suite(sr, ctlproto_suite());
	srunner_add_suite(sr, flamegraph_suite());
	srunner_add_suite(sr, statusfile_suite());
	srunner_add_suite(sr, unwtab_suite());
	srunner_add_suite(sr, uwalk_suite());
	srunner_add_suite(sr, python_suite());
	srunner_add_suite(sr, utf8_suite());
	srunner_add_suite(sr, pushfit_suite());
	srunner_add_suite(sr, drain_suite());
	srunner_add_suite(sr, membound_suite());
	srunner_add_suite(sr, budget_suite());
	srunner_add_suite(sr, mapsize_suite());
	srunner_add_suite(sr, hostrows_suite());
	srunner_add_suite(sr, rowspace_suite());
	srunner_add_suite(sr, owners_suite());
	srunner_add_suite(sr, tablecache_suite());
	srunner_add_suite(sr, jobqueue_suite());
	srunner_add_suite(sr, recentprocs_suite());
	srunner_add_suite(sr, outbox_suite());
	srunner_add_suite(sr, waitpair_suite());
	srunner_add_suite(sr, bpfload_suite());
	srunner_add_suite(sr, stackparts_suite());
	srunner_add_suite(sr, clock_suite());
	srunner_add_suite(sr, file_suite());
	srunner_add_suite(sr, worker_suite());
	srunner_add_suite(sr, uploader_suite());
	srunner_add_suite(sr, unmarked_suite());
	srunner_add_suite(sr, retention_suite());
	srunner_add_suite(sr, proctable_suite());
	srunner_add_suite(sr, geometric_suite());
	srunner_add_suite(sr, growth_class_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
