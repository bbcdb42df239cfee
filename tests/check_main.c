/* SPDX-License-Identifier: MIT */
/* The single runner of every unit suite (fork mode unless CK_FORK=no). */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
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
	srunner_add_suite(sr, apps_suite());
	srunner_add_suite(sr, perfmap_suite());
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
	srunner_add_suite(sr, utf8_suite());
	srunner_add_suite(sr, pushfit_suite());
	srunner_add_suite(sr, drain_suite());
	srunner_add_suite(sr, membound_suite());
	srunner_add_suite(sr, mapsize_suite());
	srunner_add_suite(sr, stackparts_suite());
	srunner_add_suite(sr, clock_suite());
	srunner_add_suite(sr, file_suite());
	srunner_add_suite(sr, worker_suite());
	srunner_add_suite(sr, uploader_suite());
	srunner_add_suite(sr, unmarked_suite());
	srunner_add_suite(sr, retention_suite());
	srunner_add_suite(sr, proctable_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
