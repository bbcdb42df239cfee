// SPDX-License-Identifier: MIT
/* Application matching: rules, first match, exclusion, inferred names, series labels. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "apps.h"
#include "suites.h"

static void parse_cfg(const char *text, struct ember_config *c)
{
	struct config_errors e = {};

	config_defaults(c);
	ck_assert_int_eq(config_parse(text, strlen(text), "t.conf", c, &e), 0);
}

static struct proc_info proc(const char *comm, const char *exe, const char *cmdline,
			     const char *cgroup, const char *unit, const char *container)
{
	struct proc_info pi = {.pid = 42};

	snprintf(pi.comm, sizeof(pi.comm), "%s", comm);
	snprintf(pi.exe, sizeof(pi.exe), "%s", exe);
	snprintf(pi.cmdline, sizeof(pi.cmdline), "%s", cmdline);
	snprintf(pi.cgroup, sizeof(pi.cgroup), "%s", cgroup);
	snprintf(pi.unit, sizeof(pi.unit), "%s", unit);
	snprintf(pi.container_id, sizeof(pi.container_id), "%s", container);
	return pi;
}

/* The environment of the fake process: SERVICE_NAME=checkout only. */
static int fake_env(const char *name, char *out, size_t len, void *arg)
{
	(void)arg;
	if (strcmp(name, "SERVICE_NAME"))
		return -ENOENT;
	snprintf(out, len, "checkout");
	return 0;
}

static const char apps_conf[] =
	"[daemon]\nlabels.env = prod\nlabels.team = infra\n"
	"[app \"checkout\"]\nmatch.unit = checkout.service\nmatch.exe = /usr/bin/node*\n"
	"match.cmdline = *server.js*\nlabel.team = payments\n"
	"[app \"by-env\"]\nmatch.env.SERVICE_NAME = check*\n"
	"[app \"batch\"]\nmatch.cgroup = /system.slice/batch-*.service\nexclude = yes\n"
	"[app \"ctr\"]\nmatch.container = 3f2a*\nmatch.comm = nginx\n";

START_TEST(test_all_rules_must_hold)
{
	struct ember_config c;
	struct app_match m;
	struct proc_info pi = proc("node", "/usr/bin/node20", "node /srv/server.js --port 80",
				   "/system.slice/checkout.service", "checkout.service", "");

	parse_cfg(apps_conf, &c);
	apps_classify(&c, &pi, NULL, NULL, &m);
	ck_assert_int_eq(m.app, 0);
	ck_assert_str_eq(m.service, "checkout");
	ck_assert(!m.excluded);
	/* one rule fails (another script): not checkout, and no env reader: inferred */
	pi = proc("node", "/usr/bin/node20", "node /srv/worker.js",
		  "/system.slice/checkout.service", "checkout.service", "");
	apps_classify(&c, &pi, NULL, NULL, &m);
	ck_assert_int_eq(m.app, -1);
	ck_assert_str_eq(m.service, "checkout"); /* the unit without .service */
	config_free(&c);
}
END_TEST

START_TEST(test_env_first_match_exclude)
{
	struct ember_config c;
	struct app_match m;
	struct proc_info pi = proc("node", "/usr/bin/node20", "node /srv/worker.js", "/", "", "");
	struct proc_info batch =
		proc("run", "/opt/batch/run", "run", "/system.slice/batch-nightly.service",
		     "batch-nightly.service", "");

	parse_cfg(apps_conf, &c);
	apps_classify(&c, &pi, fake_env, NULL, &m);
	ck_assert_int_eq(m.app, 1);
	ck_assert_str_eq(m.service, "by-env");
	/* first match wins: checkout would match by env too, but comes first */
	pi = proc("node", "/usr/bin/node20", "node /srv/server.js",
		  "/system.slice/checkout.service", "checkout.service", "");
	apps_classify(&c, &pi, fake_env, NULL, &m);
	ck_assert_int_eq(m.app, 0);
	apps_classify(&c, &batch, fake_env, NULL, &m);
	ck_assert_int_eq(m.app, 1); /* env matches it too: by-env is before batch */
	apps_classify(&c, &batch, NULL, NULL, &m);
	ck_assert_int_eq(m.app, 2);
	ck_assert(m.excluded);
	config_free(&c);
}
END_TEST

START_TEST(test_container_and_matched_mode)
{
	struct ember_config c;
	struct app_match m;
	const char *id = "3f2a9d1c0b7e6f5a4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6";
	struct proc_info pi =
		proc("nginx", "/usr/sbin/nginx", "nginx: worker", "/docker/x", "", id);
	char t[sizeof(apps_conf) + 32];

	parse_cfg(apps_conf, &c);
	apps_classify(&c, &pi, NULL, NULL, &m);
	ck_assert_str_eq(m.service, "ctr");
	pi.comm[0] = 'x'; /* comm rule fails: inferred from the container */
	apps_classify(&c, &pi, NULL, NULL, &m);
	ck_assert_int_eq(m.app, -1);
	ck_assert_str_eq(m.service, "container-3f2a9d1c0b7e");
	ck_assert(!m.excluded);
	config_free(&c);
	snprintf(t, sizeof(t), "%s[daemon]\nprofile = matched\n", apps_conf);
	parse_cfg(t, &c);
	apps_classify(&c, &pi, NULL, NULL, &m);
	ck_assert(m.excluded); /* unmatched, profile = matched */
	config_free(&c);
}
END_TEST

START_TEST(test_inferred_names)
{
	char out[CONFIG_NAME_MAX];
	struct proc_info pi;

	pi = proc("sshd", "/usr/sbin/sshd", "sshd", "/system.slice/ssh.service", "ssh.service", "");
	apps_infer_service(&pi, out, sizeof(out));
	ck_assert_str_eq(out, "ssh");
	pi = proc("bash", "/usr/bin/bash", "-bash", "/user.slice/user-0.slice/session-3.scope",
		  "session-3.scope", "");
	apps_infer_service(&pi, out, sizeof(out));
	ck_assert_str_eq(out, "session-3.scope");
	pi = proc("python3", "/usr/bin/python3.11", "python3 x.py", "/", "", "");
	apps_infer_service(&pi, out, sizeof(out));
	ck_assert_str_eq(out, "python3.11");
	pi = proc("kworker/0:1", "", "", "/", "", "");
	apps_infer_service(&pi, out, sizeof(out));
	ck_assert_str_eq(out, "kernel");
}
END_TEST

START_TEST(test_labels_text)
{
	struct ember_config c;
	struct label_set s;
	char out[1024];

	parse_cfg(apps_conf, &c);
	/* the app's team overrides the host's; sorted; service_name and hostname first-class */
	ck_assert_int_eq(apps_labels(&c, 0, "checkout", "web1", &s), 0);
	ck_assert_int_eq(labels_format(&s, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "env=prod\nhostname=web1\nservice_name=checkout\nteam=payments\n");
	ck_assert_int_eq(apps_labels(&c, -1, "sshd", "web1", &s), 0);
	ck_assert_int_eq(labels_format(&s, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "env=prod\nhostname=web1\nservice_name=sshd\nteam=infra\n");
	ck_assert_int_eq(labels_format(&s, out, 20), -ENOSPC);
	/* a process with no name has no service_name label, not an empty one */
	ck_assert_int_eq(apps_labels(&c, -1, "", "web1", &s), 0);
	ck_assert_ptr_null(labels_get(&s, "service_name"));
	config_free(&c);
}
END_TEST

/* A process read lazily: fill records what it was asked for, from a full copy. */
struct lazy_src {
	struct proc_info full;
	unsigned int asked; /* PROCINFO_* fields read so far */
	int calls;
	int fail; /* returned by fill when set (the process is gone) */
};

static int lazy_fill(unsigned int mask, struct proc_info *pi, void *arg)
{
	struct lazy_src *src = arg;

	src->calls++;
	if (src->fail)
		return src->fail;
	ck_assert_uint_eq(mask & pi->have, 0); /* never asked twice for one field */
	src->asked |= mask;
	if (mask & PROCINFO_COMM)
		memcpy(pi->comm, src->full.comm, sizeof(pi->comm));
	if (mask & PROCINFO_CMDLINE)
		memcpy(pi->cmdline, src->full.cmdline, sizeof(pi->cmdline));
	if (mask & PROCINFO_EXE)
		memcpy(pi->exe, src->full.exe, sizeof(pi->exe));
	if (mask & PROCINFO_CGROUP) {
		memcpy(pi->cgroup, src->full.cgroup, sizeof(pi->cgroup));
		memcpy(pi->unit, src->full.unit, sizeof(pi->unit));
		memcpy(pi->container_id, src->full.container_id, sizeof(pi->container_id));
	}
	pi->have |= mask;
	return 0;
}

/* Classifies src lazily; the fields it read in *asked. */
static int classify_lazily(const struct ember_config *c, struct lazy_src *src, struct app_match *m)
{
	struct proc_info pi = {.pid = src->full.pid};

	src->asked = 0;
	src->calls = 0;
	return apps_classify_lazy(c, &pi, lazy_fill, fake_env, src, m);
}

START_TEST(test_lazy_reads_only_what_is_needed)
{
	struct ember_config c;
	struct app_match m, full;
	struct lazy_src src = {.full = proc("node", "/usr/bin/node20", "node /srv/server.js",
					    "/system.slice/checkout.service", "checkout.service",
					    "")};

	/* no [app]: a process in a unit is named from its cgroup alone */
	parse_cfg("", &c);
	ck_assert_int_eq(classify_lazily(&c, &src, &m), 0);
	ck_assert_str_eq(m.service, "checkout");
	ck_assert_uint_eq(src.asked, PROCINFO_CGROUP);
	/* outside any unit: then its executable, still no command line */
	src.full = proc("true", "/usr/bin/true", "/bin/true", "/", "", "");
	ck_assert_int_eq(classify_lazily(&c, &src, &m), 0);
	ck_assert_str_eq(m.service, "true");
	ck_assert_uint_eq(src.asked, PROCINFO_CGROUP | PROCINFO_EXE);
	/* no executable (another user's): comm and command line tell a process from a kthread */
	src.full = proc("worker", "", "worker --x", "/", "", "");
	ck_assert_int_eq(classify_lazily(&c, &src, &m), 0);
	ck_assert_str_eq(m.service, "worker");
	ck_assert_uint_eq(src.asked, PROCINFO_ALL);
	/* a comm rule that fails reads nothing more than comm before inferring */
	config_free(&c);
	parse_cfg("[app \"x\"]\nmatch.comm = nginx\nmatch.cmdline = *x*\n", &c);
	src.full = proc("node", "/usr/bin/node20", "node x", "/", "", "");
	ck_assert_int_eq(classify_lazily(&c, &src, &m), 0);
	ck_assert_int_eq(m.app, -1);
	ck_assert_uint_eq(src.asked, PROCINFO_COMM | PROCINFO_CGROUP | PROCINFO_EXE);
	/* every answer is the eager classifier's, on the rules of every kind */
	config_free(&c);
	parse_cfg(apps_conf, &c);
	src.full = proc("node", "/usr/bin/node20", "node /srv/server.js --port 80",
			"/system.slice/checkout.service", "checkout.service", "");
	ck_assert_int_eq(classify_lazily(&c, &src, &m), 0);
	apps_classify(&c, &src.full, fake_env, NULL, &full);
	ck_assert_int_eq(m.app, full.app);
	ck_assert_int_eq(m.app, 0);
	ck_assert_str_eq(m.service, full.service);
	ck_assert(m.excluded == full.excluded);
	config_free(&c);
}
END_TEST

START_TEST(test_lazy_gone)
{
	struct ember_config c;
	struct app_match m;
	struct lazy_src src = {.full = proc("a", "/a", "a", "/", "", ""), .fail = -ESRCH};

	parse_cfg(apps_conf, &c);
	ck_assert_int_eq(classify_lazily(&c, &src, &m), -ESRCH);
	ck_assert_int_eq(src.calls, 1); /* not asked again once it said the process is gone */
	config_free(&c);
	parse_cfg("", &c);
	ck_assert_int_eq(classify_lazily(&c, &src, &m), -ESRCH);
	config_free(&c);
}
END_TEST

Suite *apps_suite(void)
{
	Suite *s = suite_create("apps");
	TCase *tc = tcase_create("match");

	tcase_add_test(tc, test_all_rules_must_hold);
	tcase_add_test(tc, test_env_first_match_exclude);
	tcase_add_test(tc, test_container_and_matched_mode);
	tcase_add_test(tc, test_inferred_names);
	tcase_add_test(tc, test_labels_text);
	tcase_add_test(tc, test_lazy_reads_only_what_is_needed);
	tcase_add_test(tc, test_lazy_gone);
	suite_add_tcase(s, tc);
	return s;
}
