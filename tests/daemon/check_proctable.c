// SPDX-License-Identifier: MIT
/* proctable.c against real processes: a process classified while it lived keeps its class once gone. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "config.h"
#include "proctable.h"
#include "suites.h"

/* A child that waits to be killed; its pid. */
static pid_t spawn(void)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (!pid) {
		pause();
		_exit(0);
	}
	return pid;
}

START_TEST(test_gone_keeps_class)
{
	struct ember_config cfg;
	struct proctable *t = proctable_new();
	const struct proc_class *pc;
	char live[sizeof(pc->match.service)];
	pid_t pid = spawn();

	config_defaults(&cfg);
	ck_assert_ptr_nonnull(t);
	pc = proctable_classify(t, &cfg, pid, NULL);
	ck_assert_ptr_nonnull(pc);
	ck_assert(!pc->gone);
	ck_assert_str_ne(pc->match.service, "kernel");
	snprintf(live, sizeof(live), "%s", pc->match.service);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	/* reported again once gone (its last samples, after its exit): still itself */
	pc = proctable_classify(t, &cfg, pid, NULL);
	ck_assert_ptr_nonnull(pc);
	ck_assert(pc->gone);
	ck_assert_str_eq(pc->match.service, live);
	proctable_free(t);
	config_free(&cfg);
}
END_TEST

START_TEST(test_gone_unknown_named_by_comm)
{
	struct ember_config cfg;
	struct proctable *t = proctable_new();
	const struct proc_class *pc;
	pid_t pid = spawn();

	config_defaults(&cfg);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	/* never seen alive: what the sample says is all there is */
	pc = proctable_classify(t, &cfg, pid, "shortlived");
	ck_assert_ptr_nonnull(pc);
	ck_assert(pc->gone);
	ck_assert_str_eq(pc->match.service, "shortlived");
	proctable_free(t);
	config_free(&cfg);
}
END_TEST

Suite *proctable_suite(void)
{
	Suite *s = suite_create("proctable");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_gone_keeps_class);
	tcase_add_test(tc, test_gone_unknown_named_by_comm);
	suite_add_tcase(s, tc);
	return s;
}
