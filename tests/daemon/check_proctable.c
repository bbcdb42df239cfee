// SPDX-License-Identifier: MIT
/* proctable.c against real processes: a process classified while it lived keeps its class once gone. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "config.h"
#include "proctable.h"
#include "suites.h"

/* A child already killed and reaped: its pid names no process. */
static pid_t spawn_gone(void)
{
	pid_t pid = spawn_paused();

	reap_killed(pid);
	return pid;
}

START_TEST(test_gone_keeps_class)
{
	struct ember_config cfg;
	struct proctable *t = proctable_new(NULL, NULL);
	const struct proc_class *pc;
	char live[sizeof(pc->match.service)];
	pid_t pid = spawn_paused();

	config_defaults(&cfg);
	ck_assert_ptr_nonnull(t);
	pc = proctable_classify(t, &cfg, pid, NULL, 0);
	ck_assert_ptr_nonnull(pc);
	ck_assert(!pc->gone);
	ck_assert_str_ne(pc->match.service, "kernel");
	snprintf(live, sizeof(live), "%s", pc->match.service);
	reap_killed(pid);
	/* reported again once gone (its last samples, after its exit): still itself */
	pc = proctable_classify(t, &cfg, pid, NULL, 0);
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
	struct proctable *t = proctable_new(NULL, NULL);
	const struct proc_class *pc;
	pid_t pid = spawn_gone();

	config_defaults(&cfg);
	/* never seen alive: what the sample says is all there is */
	pc = proctable_classify(t, &cfg, pid, "shortlived", 0);
	ck_assert_ptr_nonnull(pc);
	ck_assert(pc->gone);
	ck_assert_str_eq(pc->match.service, "shortlived");
	proctable_free(t);
	config_free(&cfg);
}
END_TEST

/*
 * A first sample read after the process was gone carries no comm: classified
 * then, it is named by the comm of the drain's lookup, never as "kernel" (the
 * name of a process with neither executable nor comm).
 */
START_TEST(test_gone_without_comm_named_at_lookup)
{
	struct ember_config cfg;
	struct proctable *t = proctable_new(NULL, NULL);
	const struct proc_class *pc;
	pid_t pid = spawn_gone();

	config_defaults(&cfg);
	pc = proctable_classify(t, &cfg, pid, NULL, 0);
	ck_assert_ptr_nonnull(pc);
	ck_assert(pc->gone);
	pc = proctable_get(t, &cfg, pid, "shortlived");
	ck_assert_ptr_nonnull(pc);
	ck_assert_str_eq(pc->match.service, "shortlived");
	/* named once: a later lookup keeps it */
	pc = proctable_get(t, &cfg, pid, "other");
	ck_assert_str_eq(pc->match.service, "shortlived");
	proctable_free(t);
	config_free(&cfg);
}
END_TEST

/* A fake cgroup namer: id 77 is a service's cgroup, 78 a container's; others removed. */
static int fake_cgroup(uint64_t id, char *out, size_t len, void *arg)
{
	int *calls = arg;

	(*calls)++;
	if (id == 77)
		return snprintf(out, len, "/system.slice/web.service") < (int)len ? 0 :
										    -ENAMETOOLONG;
	if (id == 78)
		return snprintf(out, len, "/docker/%064d", 7) < (int)len ? 0 : -ENAMETOOLONG;
	return -ESTALE;
}

/*
 * A process gone before it was read (a service's 1 ms helper sampled young)
 * is named by the cgroup its event carried: its unit, as /proc would have
 * said, and [app] rules on the unit match it; without an id or once the
 * cgroup is removed, by its comm.
 */
START_TEST(test_gone_named_by_cgroup)
{
	static const char conf[] = "[app \"cache\"]\nmatch.unit = cache.service\n"
				   "[app \"web-app\"]\nmatch.unit = web.service\n";
	struct ember_config cfg;
	struct config_errors errs = {0};
	int calls = 0;
	struct proctable *t = proctable_new(fake_cgroup, &calls);
	const struct proc_class *pc;
	pid_t pid = spawn_gone(), pid2 = spawn_gone(), pid3 = spawn_gone();

	config_defaults(&cfg);
	pc = proctable_classify(t, &cfg, pid, "git", 77);
	ck_assert(pc->gone);
	ck_assert_str_eq(pc->match.service, "web");
	ck_assert_int_eq(pc->match.app, -1);
	/* read late, without a comm, then named at the drain's lookup: still by its cgroup */
	pc = proctable_classify(t, &cfg, pid2, NULL, 78);
	pc = proctable_get(t, &cfg, pid2, "sh");
	ck_assert_str_eq(pc->match.service, "container-000000000000");
	pc = proctable_classify(t, &cfg, pid3, "git", 79); /* removed: its comm */
	ck_assert_str_eq(pc->match.service, "git");
	ck_assert_int_eq(calls, 4);
	ck_assert_int_eq(config_parse(conf, strlen(conf), "t.conf", &cfg, &errs), 0);
	pc = proctable_classify(t, &cfg, pid, "git", 77);
	ck_assert_int_eq(pc->match.app, 1);
	ck_assert_str_eq(pc->match.service, "web-app");
	proctable_free(t);
	config_free(&cfg);
}
END_TEST

/* Waits (bounded) until pid, killed and not reaped, is a zombie. */
static void await_zombie(pid_t pid)
{
	char path[64], buf[256];

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	for (int i = 0; i < 10000; i++) {
		FILE *f = fopen(path, "r");
		char *close_paren = NULL;

		if (f && fgets(buf, sizeof(buf), f))
			close_paren = strrchr(buf, ')');
		if (f)
			fclose(f);
		if (close_paren && close_paren[1] == ' ' && close_paren[2] == 'Z')
			return;
		usleep(1000);
	}
	ck_abort_msg("pid %d did not become a zombie within 10 s", pid);
}

/*
 * A zombie's executable and command line read empty, as a kernel thread's:
 * it is gone, named by its comm, not "kernel".
 */
START_TEST(test_zombie_is_gone)
{
	struct ember_config cfg;
	struct proctable *t = proctable_new(NULL, NULL);
	const struct proc_class *pc;
	pid_t pid = spawn_paused();

	config_defaults(&cfg);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	await_zombie(pid);
	pc = proctable_classify(t, &cfg, pid, NULL, 0);
	ck_assert_ptr_nonnull(pc);
	ck_assert(pc->gone);
	pc = proctable_get(t, &cfg, pid, "shortlived");
	ck_assert_str_eq(pc->match.service, "shortlived");
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	proctable_free(t);
	config_free(&cfg);
}
END_TEST

/*
 * A process noted exited, or found gone, after the buffers flipped may have
 * samples in the new ones: kept through the next interval's drain, still
 * named by its cgroup (once dropped, a lookup has only its comm). One noted
 * before the flip (or with no flip noted) is dropped at this interval's end.
 */
START_TEST(test_dead_after_flip_kept_one_drain)
{
	struct ember_config cfg;
	int calls = 0;
	struct proctable *t = proctable_new(fake_cgroup, &calls);
	pid_t before = spawn_gone(), after = spawn_gone(), unflipped = spawn_gone();
	const struct proc_class *pc;

	config_defaults(&cfg);
	ck_assert_ptr_nonnull(proctable_classify(t, &cfg, before, NULL, 77));
	proctable_flipped(t);
	ck_assert_ptr_nonnull(proctable_classify(t, &cfg, after, NULL, 77));
	proctable_end_interval(t);
	ck_assert(!proctable_has(t, before));
	ck_assert(proctable_has(t, after));
	pc = proctable_get(t, &cfg, after, "true");
	ck_assert_str_eq(pc->match.service, "web");
	/* the next drain has used it */
	proctable_flipped(t);
	proctable_end_interval(t);
	ck_assert(!proctable_has(t, after));
	pc = proctable_get(t, &cfg, after, "true");
	ck_assert_str_eq(pc->match.service, "true");
	/* no flip noted this interval: dropped at its end */
	proctable_end_interval(t);
	ck_assert_ptr_nonnull(proctable_classify(t, &cfg, unflipped, NULL, 77));
	proctable_end_interval(t);
	ck_assert(!proctable_has(t, unflipped));
	proctable_free(t);
	config_free(&cfg);
}
END_TEST

/* An exit noted after the flip: the process's class serves the next drain too. */
START_TEST(test_exit_after_flip_kept_one_drain)
{
	struct ember_config cfg;
	struct proctable *t = proctable_new(NULL, NULL);
	pid_t pid = spawn_paused();
	const struct proc_class *pc;
	char live[sizeof(pc->match.service)];

	config_defaults(&cfg);
	pc = proctable_classify(t, &cfg, pid, NULL, 0);
	ck_assert(!pc->gone);
	snprintf(live, sizeof(live), "%s", pc->match.service);
	reap_killed(pid);
	proctable_flipped(t);
	proctable_exited(t, pid);
	proctable_end_interval(t);
	pc = proctable_get(t, &cfg, pid, "other");
	ck_assert_str_eq(pc->match.service, live);
	proctable_flipped(t);
	proctable_end_interval(t);
	ck_assert(!proctable_has(t, pid));
	proctable_free(t);
	config_free(&cfg);
}
END_TEST

/*
 * An exec: the class from before it is kept apart, beside the new image's,
 * until the samples from before are drained (the interval after, with the
 * exec noted after the flip); a reload drops it.
 */
static void ignore_class(const struct proc_class *pc, void *arg)
{
	(void)pc;
	(void)arg;
}

START_TEST(test_exec_keeps_old_class)
{
	struct ember_config cfg;
	struct proctable *t = proctable_new(NULL, NULL);
	int go;
	pid_t pid = spawn_exec_later(&go);
	const struct proc_class *pc, *old;
	char before[sizeof(pc->match.service)];

	config_defaults(&cfg);
	pc = proctable_classify(t, &cfg, pid, NULL, 0);
	snprintf(before, sizeof(before), "%s", pc->match.service);
	ck_assert(!proctable_execd(t, pid));
	exec_child(pid, go);
	proctable_flipped(t);
	proctable_exec(t, pid, 5);
	ck_assert(proctable_execd(t, pid));
	pc = proctable_classify(t, &cfg, pid, NULL, 0); /* its first sample since */
	ck_assert_str_eq(pc->match.service, "sleep");
	ck_assert_str_ne(before, "sleep");
	old = proctable_before_exec(t, pid, 5);
	ck_assert_ptr_nonnull(old);
	ck_assert_str_eq(old->match.service, before);
	ck_assert_ptr_null(proctable_before_exec(t, pid, 4)); /* no such exec */
	proctable_end_interval(t);
	ck_assert_ptr_eq(proctable_before_exec(t, pid, 5), old);
	proctable_flipped(t);
	proctable_end_interval(t);
	ck_assert_ptr_null(proctable_before_exec(t, pid, 5));
	ck_assert(!proctable_execd(t, pid));
	ck_assert_str_eq(proctable_get(t, &cfg, pid, NULL)->match.service, "sleep");
	/* a reload drops it: its application is the old configuration's */
	proctable_exec(t, pid, 6);
	ck_assert_ptr_nonnull(proctable_before_exec(t, pid, 6));
	proctable_reclassify(t, &cfg, ignore_class, NULL);
	ck_assert_ptr_null(proctable_before_exec(t, pid, 6));
	reap_killed(pid);
	proctable_free(t);
	config_free(&cfg);
}
END_TEST

/* The service of pid's class before the exec exec_id, which must be kept. */
static const char *service_before(struct proctable *t, pid_t pid, uint64_t exec_id)
{
	const struct proc_class *pc = proctable_before_exec(t, pid, exec_id);

	ck_assert_msg(pc, "no class kept from before exec %llu", (unsigned long long)exec_id);
	return pc->match.service;
}

/*
 * Two execs before one drain (this program, then sh, then sleep): the class of
 * each image is kept, found by the exec that ended it, until drained; past
 * PROCTABLE_EXECS_MAX execs the oldest goes.
 */
START_TEST(test_two_execs_keep_both_classes)
{
	struct ember_config cfg;
	struct proctable *t = proctable_new(NULL, NULL);
	int go;
	pid_t pid = spawn_exec_twice(&go);
	const struct proc_class *pc;
	char first[sizeof(pc->match.service)], second[sizeof(pc->match.service)];
	uint64_t id;

	config_defaults(&cfg);
	pc = proctable_classify(t, &cfg, pid, NULL, 0);
	snprintf(first, sizeof(first), "%s", pc->match.service);
	proctable_flipped(t);
	exec_step(pid, go, "sh");
	proctable_exec(t, pid, 1);
	pc = proctable_classify(t, &cfg, pid, NULL, 0); /* sh sampled */
	snprintf(second, sizeof(second), "%s", pc->match.service);
	exec_step(pid, go, "sleep");
	close(go);
	proctable_exec(t, pid, 2);
	ck_assert_str_eq(proctable_classify(t, &cfg, pid, NULL, 0)->match.service, "sleep");
	ck_assert_str_ne(first, second);
	ck_assert_str_ne(second, "sleep");
	ck_assert_str_eq(service_before(t, pid, 1), first);
	ck_assert_str_eq(service_before(t, pid, 2), second);
	proctable_end_interval(t);
	ck_assert_str_eq(service_before(t, pid, 1), first);
	/* execs in a loop: bounded, the oldest first */
	for (id = 3; id <= PROCTABLE_EXECS_MAX; id++)
		proctable_exec(t, pid, id);
	ck_assert_str_eq(service_before(t, pid, 1), first);
	proctable_exec(t, pid, id);
	ck_assert_ptr_null(proctable_before_exec(t, pid, 1));
	ck_assert_str_eq(service_before(t, pid, 2), second);
	/* the execs noted before the last flip are drained at the next end */
	proctable_flipped(t);
	proctable_end_interval(t);
	ck_assert(!proctable_execd(t, pid));
	reap_killed(pid);
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
	tcase_add_test(tc, test_gone_without_comm_named_at_lookup);
	tcase_add_test(tc, test_zombie_is_gone);
	tcase_add_test(tc, test_gone_named_by_cgroup);
	tcase_add_test(tc, test_dead_after_flip_kept_one_drain);
	tcase_add_test(tc, test_exit_after_flip_kept_one_drain);
	tcase_add_test(tc, test_exec_keeps_old_class);
	tcase_add_test(tc, test_two_execs_keep_both_classes);
	suite_add_tcase(s, tc);
	return s;
}
