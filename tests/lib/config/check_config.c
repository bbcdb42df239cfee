// SPDX-License-Identifier: MIT
/* The configuration parser: defaults, every key, and each error with its line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "util.h"
#include "suites.h"

static int parse(const char *text, struct ember_config *c, struct config_errors *e)
{
	config_defaults(c);
	memset(e, 0, sizeof(*e));
	return config_parse(text, strlen(text), "t.conf", c, e);
}

START_TEST(test_defaults)
{
	struct ember_config c;
	struct config_errors e;

	ck_assert_int_eq(parse("", &c, &e), 0);
	ck_assert_uint_eq(c.hz, 19);
	ck_assert_int_eq(c.interval_ns, 10000000000LL);
	ck_assert_str_eq(c.data_dir, "/var/lib/ember");
	ck_assert_str_eq(c.runtime_dir, "/run/ember");
	ck_assert_int_eq(c.retention_ns, 7LL * 86400 * 1000000000LL);
	ck_assert_uint_eq(c.max_size, 1ULL << 30);
	ck_assert_uint_eq(c.memory_limit, 64ULL << 20);
	ck_assert_uint_eq(c.unwind_memory, 64ULL << 20);
	ck_assert(!c.include_idle);
}
END_TEST

START_TEST(test_all_keys)
{
	struct ember_config c;
	struct config_errors e;
	const char *t = "; comment\n# comment\n[daemon]\nhz = 99\ninterval = 2m  # two minutes\n"
			"data_dir = /srv/ember\ninclude_idle = yes\n";

	ck_assert_int_eq(parse(t, &c, &e), 0);
	ck_assert_uint_eq(e.n, 0);
	ck_assert_uint_eq(c.hz, 99);
	ck_assert_int_eq(c.interval_ns, 120000000000LL);
	ck_assert_str_eq(c.data_dir, "/srv/ember");
	ck_assert(c.include_idle);
}
END_TEST

START_TEST(test_bounds_keys)
{
	struct ember_config c;
	struct config_errors e;
	const char *good = "[daemon]\nruntime_dir = /tmp/rt\nretention = 12h\nmax_size = 500MB\n"
			   "memory_limit = 32MiB\nunwind_memory = 8MiB\n";
	const char *bad = "[daemon]\nruntime_dir = rt\nretention = 30s\nmax_size = 1KiB\n"
			  "memory_limit = 1.5GiB\nmax_size = 99999999999999999999\n"
			  "unwind_memory = 512KiB\nunwind_memory = 5GiB\n";

	ck_assert_int_eq(parse(good, &c, &e), 0);
	ck_assert_str_eq(c.runtime_dir, "/tmp/rt");
	ck_assert_int_eq(c.retention_ns, 12LL * 3600 * 1000000000LL);
	ck_assert_uint_eq(c.max_size, 500ULL << 20);
	ck_assert_uint_eq(c.memory_limit, 32ULL << 20);
	ck_assert_uint_eq(c.unwind_memory, 8ULL << 20);
	config_free(&c);
	ck_assert_int_eq(parse(bad, &c, &e), -EINVAL);
	ck_assert_uint_eq(e.n, 7);
	ck_assert_ptr_nonnull(strstr(e.msg[0], "t.conf:2: runtime_dir"));
	ck_assert_ptr_nonnull(strstr(e.msg[1], "t.conf:3: retention: '30s'"));
	ck_assert_ptr_nonnull(strstr(e.msg[2], "t.conf:4: max_size: '1KiB'"));
	ck_assert_ptr_nonnull(strstr(e.msg[3], "t.conf:5: memory_limit"));
	ck_assert_ptr_nonnull(strstr(e.msg[4], "t.conf:6: max_size"));
	ck_assert_ptr_nonnull(strstr(e.msg[5], "t.conf:7: unwind_memory: '512KiB'"));
	ck_assert_ptr_nonnull(strstr(e.msg[6], "t.conf:8: unwind_memory: '5GiB'"));
	ck_assert_uint_eq(c.max_size, 1ULL << 30);
}
END_TEST

START_TEST(test_growth_period)
{
	struct ember_config c;
	struct config_errors e;

	ck_assert_int_eq(parse("", &c, &e), 0);
	ck_assert_uint_eq(c.growth_fault_period, 100);
	ck_assert_int_eq(parse("[daemon]\ngrowth_fault_period = 0\n", &c, &e), 0);
	ck_assert_uint_eq(c.growth_fault_period, 0); /* off */
	ck_assert_int_eq(parse("[daemon]\ngrowth_fault_period = 1000000\n", &c, &e), 0);
	ck_assert_uint_eq(c.growth_fault_period, 1000000);
	ck_assert_int_eq(parse("[daemon]\ngrowth_fault_period = 1000001\n"
			       "growth_fault_period = -1\ngrowth_fault_period = ten\n",
			       &c, &e),
			 -EINVAL);
	ck_assert_uint_eq(e.n, 3);
	ck_assert_ptr_nonnull(strstr(e.msg[0], "t.conf:2: growth_fault_period: '1000001'"));
	ck_assert_ptr_nonnull(strstr(e.msg[1], "t.conf:3: growth_fault_period: '-1'"));
	ck_assert_ptr_nonnull(strstr(e.msg[2], "t.conf:4: growth_fault_period: 'ten'"));
	ck_assert_uint_eq(c.growth_fault_period, 100);
}
END_TEST

START_TEST(test_growth_min_age)
{
	struct ember_config c;
	struct config_errors e;

	ck_assert_int_eq(parse("", &c, &e), 0);
	ck_assert_int_eq(c.growth_min_age_ns, 100000000); /* 100 ms */
	ck_assert_int_eq(parse("[daemon]\ngrowth_min_age = 0\n", &c, &e), 0);
	ck_assert_int_eq(c.growth_min_age_ns, 0); /* every process's growth */
	ck_assert_int_eq(parse("[daemon]\ngrowth_min_age = 2s\n", &c, &e), 0);
	ck_assert_int_eq(c.growth_min_age_ns, 2000000000);
	ck_assert_int_eq(parse("[daemon]\ngrowth_min_age = 11s\ngrowth_min_age = soon\n", &c, &e),
			 -EINVAL);
	ck_assert_uint_eq(e.n, 2);
	ck_assert_ptr_nonnull(strstr(e.msg[0], "t.conf:2: growth_min_age: '11s'"));
	ck_assert_ptr_nonnull(strstr(e.msg[1], "t.conf:3: growth_min_age: 'soon'"));
	ck_assert_int_eq(c.growth_min_age_ns, 100000000);
}
END_TEST

START_TEST(test_offcpu_keys)
{
	struct ember_config c;
	struct config_errors e;

	ck_assert_int_eq(parse("", &c, &e), 0);
	ck_assert(!c.offcpu); /* off by default: its cost is the operator's call */
	ck_assert_uint_eq(c.offcpu_sample_period, 64);
	ck_assert_int_eq(c.offcpu_min_block_ns, 0);
	ck_assert_uint_eq(c.offcpu_parked, 4096);
	ck_assert_int_eq(parse("[daemon]\noffcpu = on\noffcpu_sample_period = 1\n"
			       "offcpu_min_block = 500ms\noffcpu_parked_stacks = 256\n",
			       &c, &e),
			 0);
	ck_assert(c.offcpu);
	ck_assert_uint_eq(c.offcpu_sample_period, 1);
	ck_assert_int_eq(c.offcpu_min_block_ns, 500000000);
	ck_assert_uint_eq(c.offcpu_parked, 256);
	ck_assert_int_eq(
		parse("[daemon]\noffcpu = maybe\noffcpu_sample_period = 0\n"
		      "offcpu_sample_period = 65537\noffcpu_min_block = 2s\noffcpu_foo = 1\n"
		      "offcpu_parked_stacks = 255\noffcpu_parked_stacks = 65537\n",
		      &c, &e),
		-EINVAL);
	ck_assert_uint_eq(e.n, 7);
	ck_assert_ptr_nonnull(strstr(e.msg[0], "t.conf:2: offcpu: 'maybe'"));
	ck_assert_ptr_nonnull(strstr(e.msg[1], "t.conf:3: offcpu_sample_period: '0'"));
	ck_assert_ptr_nonnull(strstr(e.msg[2], "t.conf:4: offcpu_sample_period: '65537'"));
	ck_assert_ptr_nonnull(strstr(e.msg[3], "t.conf:5: offcpu_min_block: '2s'"));
	ck_assert_ptr_nonnull(strstr(e.msg[4], "t.conf:6: unknown key 'offcpu_foo'"));
	ck_assert_ptr_nonnull(strstr(e.msg[5], "t.conf:7: offcpu_parked_stacks: '255'"));
	ck_assert_ptr_nonnull(strstr(e.msg[6], "t.conf:8: offcpu_parked_stacks: '65537'"));
}
END_TEST

START_TEST(test_parse_size)
{
	uint64_t n;

	ck_assert_int_eq(parse_size("0", &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(parse_size("65536", &n), 0);
	ck_assert_uint_eq(n, 65536);
	ck_assert_int_eq(parse_size("64KiB", &n), 0);
	ck_assert_uint_eq(n, 65536);
	ck_assert_int_eq(parse_size("1 GiB", &n), 0);
	ck_assert_uint_eq(n, 1ULL << 30);
	ck_assert_int_eq(parse_size("2t", &n), 0);
	ck_assert_uint_eq(n, 2ULL << 40);
	ck_assert_int_eq(parse_size("", &n), -EINVAL);
	ck_assert_int_eq(parse_size("-1", &n), -EINVAL);
	ck_assert_int_eq(parse_size("1.5G", &n), -EINVAL);
	ck_assert_int_eq(parse_size("10PiB", &n), -EINVAL);
	ck_assert_int_eq(parse_size("20000000TiB", &n), -EINVAL);
	ck_assert_int_eq(parse_size("18446744073709551616", &n), -EINVAL);
}
END_TEST

START_TEST(test_errors_with_lines)
{
	struct ember_config c;
	struct config_errors e;
	const char *t = "[daemon]\nhz = 1000\nhz = abc\ninterval = 0.5s\nwhat = 1\n"
			"data_dir = relative\ninclude_idle = maybe\n[collecter]\nurl = x\n";

	ck_assert_int_eq(parse(t, &c, &e), -EINVAL);
	ck_assert_uint_eq(e.n, 7);
	ck_assert_ptr_nonnull(strstr(e.msg[0], "t.conf:2: hz: '1000'"));
	ck_assert_ptr_nonnull(strstr(e.msg[1], "t.conf:3: hz: 'abc'"));
	ck_assert_ptr_nonnull(strstr(e.msg[2], "t.conf:4: interval"));
	ck_assert_ptr_nonnull(strstr(e.msg[3], "t.conf:5: unknown key 'what'"));
	ck_assert_ptr_nonnull(strstr(e.msg[4], "t.conf:6: data_dir"));
	ck_assert_ptr_nonnull(strstr(e.msg[5], "t.conf:7: include_idle"));
	ck_assert_ptr_nonnull(strstr(e.msg[6], "t.conf:9: unknown section [collecter]"));
	/* the good default survives a refused value */
	ck_assert_uint_eq(c.hz, 19);
}
END_TEST

START_TEST(test_syntax_and_bounds)
{
	struct ember_config c;
	struct config_errors e;
	char longline[600];

	ck_assert_int_eq(parse("[daemon]\nhz 99\n", &c, &e), -EINVAL);
	ck_assert_ptr_nonnull(strstr(e.msg[0], "t.conf:2: syntax error"));
	ck_assert_int_eq(parse("hz = 5\n", &c, &e), -EINVAL);
	ck_assert_ptr_nonnull(strstr(e.msg[0], "t.conf:1: key 'hz' outside a section"));
	memset(longline, 'x', sizeof(longline) - 1);
	longline[sizeof(longline) - 1] = '\0';
	ck_assert_int_eq(parse(longline, &c, &e), -EINVAL);
	ck_assert_ptr_nonnull(strstr(e.msg[0], "t.conf:1: line longer than"));
	ck_assert_int_eq(parse("[daemon]\ninterval = 2h\n", &c, &e), -EINVAL);
	ck_assert_int_eq(parse("[daemon]\ninterval = 1h\nhz = 999\n", &c, &e), 0);
	ck_assert_uint_eq(c.hz, 999);
}
END_TEST

START_TEST(test_many_errors_bounded)
{
	struct ember_config c;
	struct config_errors e;
	static char t[8192];
	size_t off = snprintf(t, sizeof(t), "[daemon]\n");

	for (int i = 0; i < 100; i++)
		off += snprintf(t + off, sizeof(t) - off, "bad%d = 1\n", i);
	ck_assert_int_eq(parse(t, &c, &e), -EINVAL);
	ck_assert_uint_eq(e.n, CONFIG_MAX_ERRORS);
	ck_assert_uint_eq(e.dropped, 100 - CONFIG_MAX_ERRORS);
}
END_TEST

START_TEST(test_load_missing_file)
{
	struct ember_config c;
	struct config_errors e = {};

	config_defaults(&c);
	ck_assert_int_lt(config_load("/nonexistent/ember.conf", &c, &e), 0);
	ck_assert_uint_eq(e.n, 1);
	ck_assert_ptr_nonnull(strstr(e.msg[0], "/nonexistent/ember.conf: cannot open"));
}
END_TEST

/* Each bad line said on its own line, in line order; whole-file errors last. */
START_TEST(test_errors_in_line_order)
{
	struct ember_config c;
	struct config_errors e;
	const char *t = "[daemon\ninterval = 5s\nbogus line\n[app \"x\"\nhz = abc\n"
			"  # an indented comment\n";

	ck_assert_int_eq(parse(t, &c, &e), -EINVAL);
	ck_assert_uint_eq(e.n, 5);
	ck_assert_str_eq(e.msg[0], "t.conf:1: section header without ']'");
	ck_assert_ptr_nonnull(strstr(e.msg[1], "t.conf:2: key 'interval' outside a section"));
	ck_assert_str_eq(e.msg[2], "t.conf:3: syntax error (expected [section] or key = value)");
	ck_assert_str_eq(e.msg[3], "t.conf:4: section header without ']'");
	ck_assert_ptr_nonnull(strstr(e.msg[4], "t.conf:5: key 'hz' outside a section"));
	for (size_t i = 1; i < e.n; i++)
		ck_assert_uint_le(e.line[i - 1], e.line[i]);
}
END_TEST

START_TEST(test_config_set)
{
	struct ember_config c;
	char err[200];

	config_defaults(&c);
	ck_assert_int_eq(config_set(&c, "hz", "250", err, sizeof(err)), 0);
	ck_assert_uint_eq(c.hz, 250);
	ck_assert_int_ne(config_set(&c, "hz", "-1", err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "hz: '-1'"));
	ck_assert_uint_eq(c.hz, 250);
}
END_TEST

START_TEST(test_apps)
{
	struct ember_config c;
	struct config_errors e;
	const char *t =
		"[daemon]\nprofile = matched   # only apps\nlabels.env = prod\n"
		"[app \"checkout\"]\nmatch.unit = checkout.service\n"
		"match.exe = /usr/bin/node\nmatch.cmdline = *server.js*\n"
		"label.team = payments\nlabel.version = 2.4.1\n"
		"match.env.SERVICE_NAME = checkout\n"
		"[app \"batch\"]\nmatch.cgroup = /system.slice/batch-*.service\nexclude = yes\n";

	ck_assert_int_eq(parse(t, &c, &e), 0);
	ck_assert(c.profile_matched);
	ck_assert_uint_eq(c.n_labels, 1);
	ck_assert_str_eq(c.labels[0].name, "env");
	ck_assert_str_eq(c.labels[0].value, "prod");
	ck_assert_uint_eq(c.n_apps, 2);
	ck_assert_str_eq(c.apps[0].name, "checkout");
	ck_assert_uint_eq(c.apps[0].line, 4);
	ck_assert_uint_eq(c.apps[0].n_rules, 4);
	ck_assert_int_eq(c.apps[0].rules[0].kind, RULE_UNIT);
	ck_assert_str_eq(c.apps[0].rules[2].pattern, "*server.js*");
	ck_assert_int_eq(c.apps[0].rules[3].kind, RULE_ENV);
	ck_assert_str_eq(c.apps[0].rules[3].env, "SERVICE_NAME");
	ck_assert_uint_eq(c.apps[0].n_labels, 2);
	ck_assert_str_eq(c.apps[0].labels[1].value, "2.4.1");
	ck_assert(!c.apps[0].exclude);
	ck_assert(c.apps[1].exclude);
	ck_assert_int_eq(c.apps[1].rules[0].kind, RULE_CGROUP);
	config_free(&c);
}
END_TEST

START_TEST(test_app_errors)
{
	struct ember_config c;
	struct config_errors e;
	const char *t = "[app \"a\"]\n"		      /* 1 */
			"match.exe = /bin/[ab\n"      /* 2: bad glob */
			"label.__name__ = x\n"	      /* 3: reserved */
			"label.9x = y\n"	      /* 4: bad name */
			"label.service_name = z\n"    /* 5: set by ember */
			"match.pid = 3\n"	      /* 6: unknown key */
			"[app \"a\"]\n"		      /* 7: duplicate */
			"match.comm = x\n"	      /* 8 */
			"[app nope]\n"		      /* 9: bad header */
			"match.comm = x\n"	      /* 10 */
			"[app \"empty\"]\n"	      /* 11 */
			"exclude = maybe\n"	      /* 12 */
			"[daemon]\nprofile = some\n"; /* 13, 14 */

	ck_assert_int_eq(parse(t, &c, &e), -EINVAL);
	ck_assert_uint_eq(e.n, 11);
	/* in line order: "a" kept no valid rule, its only one was the bad glob */
	ck_assert_ptr_nonnull(strstr(e.msg[0], "t.conf:1: app \"a\" has no match rule"));
	ck_assert_ptr_nonnull(strstr(e.msg[1], "t.conf:2: bad glob '/bin/[ab'"));
	ck_assert_ptr_nonnull(strstr(e.msg[2], "t.conf:3: label '__name__'"));
	ck_assert_ptr_nonnull(strstr(e.msg[3], "t.conf:4: label '9x'"));
	ck_assert_ptr_nonnull(strstr(e.msg[4], "t.conf:5: label 'service_name'"));
	ck_assert_ptr_nonnull(strstr(e.msg[5], "t.conf:6: unknown key 'match.pid'"));
	ck_assert_ptr_nonnull(
		strstr(e.msg[6], "t.conf:7: app \"a\" defined twice (first at line 1)"));
	ck_assert_ptr_nonnull(strstr(e.msg[7], "t.conf:9: bad section [app nope]"));
	ck_assert_ptr_nonnull(strstr(e.msg[8], "t.conf:11: app \"empty\" has no match rule"));
	ck_assert_ptr_nonnull(strstr(e.msg[9], "t.conf:12: exclude"));
	ck_assert_ptr_nonnull(strstr(e.msg[10], "t.conf:14: profile"));
	config_free(&c);
}
END_TEST

START_TEST(test_app_memory)
{
	struct ember_config c;
	struct config_errors e;
	const char *t = "[app \"a\"]\nmatch.comm = a\nmemory = inuse\n"
			"[app \"b\"]\nmatch.comm = b\nmemory = alloc\n"
			"[app \"c\"]\nmatch.comm = c\nmemory = off\n"
			"[app \"d\"]\nmatch.comm = d\n";

	ck_assert_int_eq(parse(t, &c, &e), 0);
	ck_assert_int_eq(c.apps[0].memory, APP_MEMORY_INUSE);
	ck_assert_int_eq(c.apps[1].memory, APP_MEMORY_ALLOC);
	ck_assert_int_eq(c.apps[2].memory, APP_MEMORY_OFF);
	ck_assert_int_eq(c.apps[3].memory, APP_MEMORY_OFF); /* the default */
	ck_assert_uint_eq(c.live_allocs, 65536);
	ck_assert_uint_eq(c.live_allocs_per_process, 16384);
	config_free(&c);
	ck_assert_int_eq(
		parse("[daemon]\nlive_allocs = 64\nlive_allocs_per_process = 16\n", &c, &e), 0);
	ck_assert_uint_eq(c.live_allocs, 64);
	ck_assert_uint_eq(c.live_allocs_per_process, 16);
	config_free(&c);
	ck_assert_int_eq(parse("[daemon]\nlive_allocs = 8\n", &c, &e), -EINVAL);
	ck_assert_ptr_nonnull(strstr(e.msg[0], "t.conf:2: live_allocs: '8' is not"));
	config_free(&c);
	ck_assert_int_eq(parse("[app \"a\"]\nmatch.comm = a\nmemory = all\n", &c, &e), -EINVAL);
	ck_assert_uint_eq(e.n, 1);
	ck_assert_ptr_nonnull(
		strstr(e.msg[0], "t.conf:3: memory: 'all' is not off, alloc or inuse"));
	config_free(&c);
}
END_TEST

START_TEST(test_label_bounds)
{
	struct ember_config c;
	struct config_errors e;
	static char t[8192];
	size_t off = snprintf(t, sizeof(t), "[daemon]\n");

	for (int i = 0; i < 20; i++)
		off += snprintf(t + off, sizeof(t) - off, "labels.h%d = v\n", i);
	off += snprintf(t + off, sizeof(t) - off, "[app \"x\"]\nmatch.comm = x\nlabel.h0 = w\n");
	for (int i = 0; i < 7; i++)
		off += snprintf(t + off, sizeof(t) - off, "label.a%d = v\n", i);
	/* 20 host + 7 app (h0 overrides) = 27 > 26 */
	ck_assert_int_eq(parse(t, &c, &e), -EINVAL);
	ck_assert_uint_eq(e.n, 1);
	ck_assert_ptr_nonnull(strstr(e.msg[0], "t.conf:22: app \"x\" would carry 27 labels"));
	config_free(&c);
	ck_assert(config_label_name_ok("team"));
	ck_assert(config_label_name_ok("_x9"));
	ck_assert(!config_label_name_ok("__x"));
	ck_assert(!config_label_name_ok("a-b"));
	ck_assert(!config_label_name_ok(""));
}
END_TEST

/* A secret file with this mode, in a fresh temporary directory. */
static void make_secret(char *path, size_t len, mode_t mode)
{
	char dir[] = "/tmp/ember-cfg.XXXXXX";
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, len, "%s/secret", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("s3cret\n", f);
	fclose(f);
	ck_assert_int_eq(chmod(path, mode), 0);
}

START_TEST(test_collector)
{
	struct ember_config c;
	struct config_errors e;
	char secret[256], t[2048];

	make_secret(secret, sizeof(secret), 0600);
	snprintf(t, sizeof(t),
		 "[collector]\nurl = https://pyro.example:4040/\nprotocol = ingest\n"
		 "tenant = team-a\nbasic_auth_user = 1234\nbasic_auth_password_file = %s\n"
		 "header.X-Extra = yes\ntimeout = 5s\nmax_age = 2h\nreject_older_than = 3h\n"
		 "max_profile_bytes = 1MiB\nmax_samples = 5000\nserver_symbolization = yes\n"
		 "external_labels.region = eu\nca_file = /etc/ssl/ca.pem\n",
		 secret);
	ck_assert_int_eq(parse(t, &c, &e), 0);
	ck_assert_str_eq(c.collector.url, "https://pyro.example:4040");
	ck_assert_int_eq(c.collector.protocol, COLLECTOR_INGEST);
	ck_assert_str_eq(c.collector.tenant, "team-a");
	ck_assert_str_eq(c.collector.basic_auth_password_file, secret);
	ck_assert_uint_eq(c.collector.n_headers, 1);
	ck_assert_str_eq(c.collector.headers[0].name, "X-Extra");
	ck_assert_int_eq(c.collector.timeout_ns, 5000000000LL);
	ck_assert_int_eq(c.collector.max_age_ns, 7200000000000LL);
	ck_assert_int_eq(c.collector.reject_older_than_ns, 3 * 3600000000000LL);
	ck_assert_uint_eq(c.collector.max_profile_bytes, 1u << 20);
	ck_assert_uint_eq(c.collector.max_samples, 5000);
	ck_assert(c.collector.server_symbolization);
	ck_assert_str_eq(c.collector.external_labels[0].name, "region");
	config_free(&c);

	/*
	 * defaults: no collector, 10 s timeout, a max_age under Pyroscope's 1 h window
	 * with room for clock skew, and the server's size limits
	 */
	ck_assert_int_eq(parse("", &c, &e), 0);
	ck_assert_str_eq(c.collector.url, "");
	ck_assert_int_eq(c.collector.timeout_ns, 10000000000LL);
	ck_assert_int_eq(c.collector.max_age_ns, 50 * 60000000000LL);
	ck_assert_int_eq(c.collector.reject_older_than_ns, 3600000000000LL);
	ck_assert_uint_eq(c.collector.max_profile_bytes, 2u << 20);
	ck_assert_uint_eq(c.collector.max_samples, 16000);
	/* unnamed frames pushed with a Line: a default Pyroscope draws them */
	ck_assert(!c.collector.server_symbolization);
	ck_assert_int_eq(parse("[collector]\nurl = http://127.0.0.1:4040\n", &c, &e), 0);
	unlink(secret);
}
END_TEST

START_TEST(test_collector_errors)
{
	struct ember_config c;
	struct config_errors e;
	char secret[256], t[2048];

	make_secret(secret, sizeof(secret), 0640);
	snprintf(t, sizeof(t),
		 "[collector]\n"
		 "url = ftp://x\n"			 /* 2 */
		 "bearer_token_file = %s\n"		 /* 3: group-readable */
		 "basic_auth_password_file = relative\n" /* 4 */
		 "header.Authorization = x\n"		 /* 5: ember's own */
		 "timeout = 0s\n"			 /* 6 */
		 "protocol = grpc\n"			 /* 7 */
		 "external_labels.__x = y\n"		 /* 8 */
		 "password = hunter2\n",
		 secret); /* 9 */
	ck_assert_int_eq(parse(t, &c, &e), -EINVAL);
	ck_assert_uint_eq(e.n, 8);
	ck_assert_ptr_nonnull(strstr(e.msg[0], "t.conf:2: url"));
	ck_assert_ptr_nonnull(strstr(e.msg[1], "t.conf:3: bearer_token_file"));
	ck_assert_ptr_nonnull(strstr(e.msg[1], "accessible to other users (mode 640)"));
	ck_assert_ptr_nonnull(strstr(e.msg[2], "t.conf:4: basic_auth_password_file"));
	ck_assert_ptr_nonnull(strstr(e.msg[3], "t.conf:5: header.Authorization"));
	ck_assert_ptr_nonnull(strstr(e.msg[4], "t.conf:6: timeout"));
	ck_assert_ptr_nonnull(strstr(e.msg[5], "t.conf:7: protocol"));
	ck_assert_ptr_nonnull(strstr(e.msg[6], "t.conf:8: label '__x'"));
	ck_assert_ptr_nonnull(strstr(e.msg[7], "t.conf:9: unknown key 'password'"));
	/* a refused secret's value never appears in a message */
	for (size_t i = 0; i < e.n; i++)
		ck_assert_ptr_null(strstr(e.msg[i], "s3cret"));
	config_free(&c);
	unlink(secret);
}
END_TEST

/* What cannot work against a server's 1 h window is refused, with the line to change. */
START_TEST(test_collector_window)
{
	struct ember_config c;
	struct config_errors e;

	/* interval = 1h: every profile is too old when it is written */
	ck_assert_int_eq(
		parse("[daemon]\ninterval = 1h\n[collector]\nurl = http://c:4040\n", &c, &e),
		-EINVAL);
	ck_assert_uint_eq(e.n, 1);
	ck_assert_msg(strstr(e.msg[0], "t.conf:2: interval = 1h") != NULL, "%s", e.msg[0]);
	ck_assert_msg(strstr(e.msg[0], "max_age = 50m") != NULL, "%s", e.msg[0]);
	/* max_age = 30d can only end in rejections */
	ck_assert_int_eq(parse("[collector]\nurl = http://c:4040\nmax_age = 30d\n", &c, &e),
			 -EINVAL);
	ck_assert_uint_eq(e.n, 1);
	ck_assert_msg(strstr(e.msg[0], "t.conf:3: [collector] max_age = 30d") != NULL, "%s",
		      e.msg[0]);
	ck_assert_msg(strstr(e.msg[0], "at most 55m") != NULL, "%s", e.msg[0]);
	/* the edges: 55m is the most, 45m the longest interval with the default max_age */
	ck_assert_int_eq(parse("[collector]\nurl = http://c:4040\nmax_age = 55m\n", &c, &e), 0);
	ck_assert_int_eq(parse("[collector]\nurl = http://c:4040\nmax_age = 56m\n", &c, &e),
			 -EINVAL);
	ck_assert_int_eq(
		parse("[daemon]\ninterval = 45m\n[collector]\nurl = http://c:4040\n", &c, &e), 0);
	ck_assert_int_eq(
		parse("[daemon]\ninterval = 46m\n[collector]\nurl = http://c:4040\n", &c, &e),
		-EINVAL);
	/* a server with a longer window, said so: 30d fits a 31d window */
	ck_assert_int_eq(parse("[collector]\nurl = http://c:4040\nmax_age = 30d\n"
			       "reject_older_than = 31d\n",
			       &c, &e),
			 0);
	/* a window set too short for the default max_age names its own line */
	ck_assert_int_eq(
		parse("[collector]\nurl = http://c:4040\nreject_older_than = 30m\n", &c, &e),
		-EINVAL);
	ck_assert_msg(strstr(e.msg[0], "t.conf:3: [collector] max_age = 50m") != NULL, "%s",
		      e.msg[0]);
	/* without a collector, nothing is pushed: nothing to refuse */
	ck_assert_int_eq(parse("[daemon]\ninterval = 1h\n[collector]\nmax_age = 30d\n", &c, &e), 0);
	/* the size limits' bounds */
	ck_assert_int_eq(parse("[collector]\nmax_profile_bytes = 1KiB\n", &c, &e), -EINVAL);
	ck_assert_int_eq(parse("[collector]\nmax_samples = 3\n", &c, &e), -EINVAL);
	ck_assert_int_eq(parse("[collector]\nserver_symbolization = maybe\n", &c, &e), -EINVAL);
	ck_assert_msg(strstr(e.msg[0], "server_symbolization: 'maybe' is not yes or no") != NULL,
		      "%s", e.msg[0]);
	ck_assert_int_eq(parse("[collector]\nreject_older_than = 1m\n", &c, &e), -EINVAL);
}
END_TEST

/* Labels over the 30 a series holds, counting ember's and the server's own; ingest's values. */
START_TEST(test_collector_labels)
{
	struct ember_config c;
	struct config_errors e;
	char t[4096];
	int o = 0;

	/* 13 host labels and 13 external ones: 26 + ember's 4 = 30, the most for push */
	o += snprintf(t + o, sizeof(t) - o, "[daemon]\n");
	for (int i = 0; i < 13; i++)
		o += snprintf(t + o, sizeof(t) - o, "labels.h%d = v\n", i);
	o += snprintf(t + o, sizeof(t) - o, "[collector]\nurl = http://c:4040\n");
	for (int i = 0; i < 13; i++)
		o += snprintf(t + o, sizeof(t) - o, "external_labels.x%d = v\n", i);
	ck_assert_int_eq(parse(t, &c, &e), 0);
	/* ingest: the server adds pyroscope_spy, so one less fits */
	snprintf(t + o, sizeof(t) - o, "protocol = ingest\n");
	ck_assert_int_eq(parse(t, &c, &e), -EINVAL);
	ck_assert_uint_eq(e.n, 1);
	ck_assert_msg(strstr(e.msg[0], "make 26 labels") && strstr(e.msg[0], "at most 25"), "%s",
		      e.msg[0]);
	/* an app's own labels count too; a name it shares with external_labels counts once */
	snprintf(t + o, sizeof(t) - o,
		 "[app \"a\"]\nmatch.comm = a\nlabel.x0 = w\n"
		 "[app \"b\"]\nmatch.comm = b\nlabel.extra = w\n");
	ck_assert_int_eq(parse(t, &c, &e), -EINVAL);
	ck_assert_uint_eq(e.n, 1);
	ck_assert_msg(strstr(e.msg[0], "t.conf:33: app \"b\" would carry 27 labels") != NULL, "%s",
		      e.msg[0]);
	config_free(&c); /* a refused file's apps are the caller's to free too */
	/* ingest's name=APP{k=v,...} form cannot carry ',' '{' '}' or surrounding spaces */
	ck_assert_int_eq(parse("[daemon]\nlabels.team = a,b\n[collector]\nurl = http://c:4040\n"
			       "protocol = ingest\n[app \"x}y\"]\nmatch.comm = x\n",
			       &c, &e),
			 -EINVAL);
	ck_assert_uint_eq(e.n, 2);
	ck_assert_msg(strstr(e.msg[0], "t.conf:5: protocol = ingest cannot carry labels.team") !=
			      NULL,
		      "%s", e.msg[0]);
	ck_assert_msg(strstr(e.msg[1], "t.conf:6: app \"x}y\": protocol = ingest") != NULL, "%s",
		      e.msg[1]);
	config_free(&c);
	/* push carries them as they are */
	ck_assert_int_eq(parse("[daemon]\nlabels.team = a,b\n[collector]\nurl = http://c:4040\n"
			       "[app \"x}y\"]\nmatch.comm = x\n",
			       &c, &e),
			 0);
	config_free(&c);
	ck_assert(config_ingest_value_ok("checkout-v2.eu/1"));
	ck_assert(!config_ingest_value_ok(" lead"));
	ck_assert(!config_ingest_value_ok("trail "));
	ck_assert_uint_eq(config_label_budget(COLLECTOR_PUSH), 26);
	ck_assert_uint_eq(config_label_budget(COLLECTOR_INGEST), 25);
}
END_TEST

Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_all_keys);
	tcase_add_test(tc, test_errors_with_lines);
	tcase_add_test(tc, test_errors_in_line_order);
	tcase_add_test(tc, test_bounds_keys);
	tcase_add_test(tc, test_growth_period);
	tcase_add_test(tc, test_growth_min_age);
	tcase_add_test(tc, test_offcpu_keys);
	tcase_add_test(tc, test_parse_size);
	tcase_add_test(tc, test_syntax_and_bounds);
	tcase_add_test(tc, test_many_errors_bounded);
	tcase_add_test(tc, test_load_missing_file);
	tcase_add_test(tc, test_config_set);
	tcase_add_test(tc, test_apps);
	tcase_add_test(tc, test_app_errors);
	tcase_add_test(tc, test_label_bounds);
	tcase_add_test(tc, test_collector);
	tcase_add_test(tc, test_collector_errors);
	tcase_add_test(tc, test_collector_window);
	tcase_add_test(tc, test_collector_labels);
	tcase_add_test(tc, test_app_memory);
	suite_add_tcase(s, tc);
	return s;
}
