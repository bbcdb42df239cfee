// SPDX-License-Identifier: MIT
/* statusfile: what emberd writes is what emberctl reads; bad input is bounded and reported. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counters.h"
#include "ember/offcpu.h"
#include "ember/proc.h"
#include "ember/sample.h"
#include "statusfile.h"
#include "suites.h"

static void sample(struct ember_status *st)
{
	memset(st, 0, sizeof(*st));
	st->format = STATUSFILE_VERSION;
	snprintf(st->version, sizeof(st->version), "0.1.0");
	snprintf(st->state, sizeof(st->state), "running");
	st->pid = 4242;
	st->start_ns = 1795300000123456789LL;
	st->updated_ns = 1795300060123456789LL;
	st->hz = 99;
	st->interval_ns = 1000000000LL;
	st->intervals = 60;
	st->processes_tracked = 17;
	st->processes_seen = 123;
	st->processes_unread = 45;
	st->processes_at_exit = 41;
	st->samples = (struct status_count){98, 5940};
	st->stacks = (struct status_count){12, 700};
	st->processes = (struct status_count){3, 180};
	st->profiles = (struct status_count){2, 120};
	st->apps = 2;
	st->bpf_samples = (struct status_count){99, 5941};
	st->drops[STATUS_DROP_STACK_MAP_FULL] = (struct status_count){1, 7};
	st->drops[STATUS_DROP_PROC_EVENT_LOST] = (struct status_count){0, 3};
	st->skips[STATUS_SKIP_IDLE] = (struct status_count){5, 500};
	st->unwind[STATUS_UNWIND_FRAMES_TABLE] = (struct status_count){900, 81000};
	st->unwind[STATUS_UNWIND_END_DEPTH] = (struct status_count){1, 2};
	st->unwind[STATUS_UNWIND_END_EXITED] = (struct status_count){3, 4};
	st->unwind[STATUS_UNWIND_EXIT_STACKS] = (struct status_count){5, 9};
	st->offcpu[STATUS_OFFCPU_SWITCHES] = (struct status_count){640, 64000};
	st->offcpu[STATUS_OFFCPU_PARKED_EVICTED] = (struct status_count){2, 11};
	st->caches[STATUS_CACHE_UNWIND_TABLES] = (struct status_cache_use){12, 360000, 1 << 26, 0};
	st->caches[STATUS_CACHE_BINARIES] = (struct status_cache_use){45, 326420, 25165824, 3};
	st->caches[STATUS_CACHE_PROCESSES] = (struct status_cache_use){17, 0, 0, 0};
	st->history_bytes = 135968;
	st->collector.configured = true;
	snprintf(st->collector.url, sizeof(st->collector.url), "https://profiles.example:4040");
	st->collector.outage = true;
	st->collector.outage_since_ns = 1795300050000000000LL;
	st->collector.last_status = 503;
	snprintf(st->collector.last_error, sizeof(st->collector.last_error),
		 "HTTP 503: upstream unavailable, retrying in 4s");
	st->collector.pending = 9;
	st->collector.sent = 100;
	st->collector.labels_dropped = 3;
	st->collector.samples_merged = 4100;
	st->collector.profiles_folded = 2;
	st->collector.stacks_folded = 68002;
	st->store = (struct status_store){.failing = true,
					  .failing_since_ns = 1767225600000000000LL,
					  .failed = 17,
					  .last_error_ns = 1767225605000000000LL,
					  .backlog = 12,
					  .backlog_bytes = 98304,
					  .backlog_cap = 16u << 20,
					  .dropped = 2,
					  .pruned = 40,
					  .pruned_bytes = 123456,
					  .damaged = 1};
	snprintf(st->store.last_error, sizeof(st->store.last_error),
		 "/var/lib/ember/history.db: No space left on device");
	snprintf(st->store.damaged_moved_to, sizeof(st->store.damaged_moved_to),
		 "/var/lib/ember/damaged-20260101T000000Z");
	st->cpu_user_ns = 40000000;
	st->cpu_system_ns = 91000000;
	st->mem = (struct status_memory){.limit = 64ull << 20,
					 .rss = 19771392,
					 .rss_peak = 28196864,
					 .bpf_map_bytes = 8956488,
					 .over = true,
					 .shrink_events = 2,
					 .shrink_runs = 5,
					 .last_shrink_ns = 1795300055000000000LL,
					 .last_freed = 1 << 20,
					 .freed_total = 3 << 20};
	st->n_maps = 2;
	snprintf(st->maps[0].name, sizeof(st->maps[0].name), "counts0");
	st->maps[0] = (struct status_map){"counts0", 1024, 115792};
	st->maps[1] = (struct status_map){"cpu_bpf.rodata", 1, 8192};
	st->n_runq = 1;
	st->runq[0] = (struct status_runq){"checkout", 1234567, 89};
	st->n_startup = 1;
	st->startup[0] = (struct status_startup){"cron", 5 << 20};
	st->budget = (struct status_budget){.ns_per_s = 10000000,
					    .wall_ns = 10000000000LL,
					    .self_ns = 23000000,
					    .bpf_ns = 140000000,
					    .offcpu_bpf_ns = 131000000,
					    .bpf_measured = true,
					    .offcpu_duty_shift = 3,
					    .lowered = 4,
					    .restored = 1,
					    .over = true};
}

static int parse_text(const char *text, struct ember_status *st, struct statusfile_errors *e)
{
	return statusfile_parse(text, strlen(text), st, e);
}

START_TEST(test_round_trip)
{
	static char buf[STATUSFILE_MAX_BYTES];
	struct ember_status in, out;
	struct statusfile_errors errs;
	int n;

	sample(&in);
	n = statusfile_format(&in, buf, sizeof(buf));
	ck_assert_int_gt(n, 0);
	ck_assert_uint_eq(strlen(buf), (size_t)n);
	ck_assert(!strncmp(buf, "ember-status 1\n", 15));
	ck_assert_ptr_nonnull(strstr(buf, "\ndrop stack_map_full 1 7\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\ncache binaries 45 326420 25165824 3\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\nunwind frames_table 900 81000\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\nunwind end_depth 1 2\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\nunwind end_exited 3 4\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\nunwind exit_stacks 5 9\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\noffcpu switches 640 64000\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\noffcpu parked_evicted 2 11\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\noffcpu wakers_map_full 0 0\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\ncache unwind_tables 12 360000 67108864 0\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\nbpf_map cpu_bpf.rodata 1 8192\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\ncollector.labels_dropped 3\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\ncollector.stacks_folded 68002\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\nstore.failing 1\nstore.failing_since_ns "));
	ck_assert_ptr_nonnull(strstr(buf, "\nstore.backlog 12\n"));
	ck_assert_ptr_nonnull(
		strstr(buf, "\nprocesses_seen 123\nprocesses_unread 45\nprocesses_at_exit 41\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\nrunq checkout 1234567 89\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\nstartup cron 5242880\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\nstore.pruned 40\nstore.pruned_bytes 123456\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\nbudget.offcpu_duty_shift 3\n"));
	ck_assert_int_eq(statusfile_parse(buf, (size_t)n, &out, &errs), 0);
	ck_assert_uint_eq(errs.n, 0);
	/* every field, padding included (both were zeroed before being filled) */
	ck_assert_int_eq(memcmp(&in, &out, sizeof(in)), 0);
}
END_TEST

START_TEST(test_format_no_room)
{
	struct ember_status st;
	char small[64];

	sample(&st);
	ck_assert_int_eq(statusfile_format(&st, small, sizeof(small)), -ENOSPC);
	ck_assert_int_eq(statusfile_format(&st, small, 0), -ENOSPC);
}
END_TEST

/* Strings cannot break the line structure; map names are kept parseable. */
START_TEST(test_format_sanitizes)
{
	static char buf[STATUSFILE_MAX_BYTES];
	struct ember_status in, out;
	struct statusfile_errors errs;
	int n;

	sample(&in);
	snprintf(in.collector.last_error, sizeof(in.collector.last_error), "bad\nhz 1\r\x7f end");
	snprintf(in.maps[0].name, sizeof(in.maps[0].name), "we ird\n");
	n = statusfile_format(&in, buf, sizeof(buf));
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(statusfile_parse(buf, (size_t)n, &out, &errs), 0);
	ck_assert_uint_eq(errs.n, 0);
	ck_assert_str_eq(out.collector.last_error, "bad?hz 1?? end");
	ck_assert_uint_eq(out.hz, 99);
	ck_assert_str_eq(out.maps[0].name, "we_ird_");
}
END_TEST

/* Every string in the file is valid UTF-8, written or read. */
START_TEST(test_utf8)
{
	static char buf[STATUSFILE_MAX_BYTES];
	struct ember_status in, out;
	struct statusfile_errors errs;
	char text[128];
	int n;

	sample(&in);
	snprintf(in.collector.last_error, sizeof(in.collector.last_error),
		 "HTTP 400: bad \xff\xc0\xaf name w\xe2\x82");
	n = statusfile_format(&in, buf, sizeof(buf));
	ck_assert_int_gt(n, 0);
	ck_assert_ptr_nonnull(strstr(buf, "\ncollector.last_error HTTP 400: bad \xef\xbf\xbd"
					  "\xef\xbf\xbd\xef\xbf\xbd name w\xef\xbf\xbd\n"));
	/* 255 bytes that each become 3: cut on a character boundary within the field */
	memset(in.collector.last_error, 0xff, sizeof(in.collector.last_error) - 1);
	n = statusfile_format(&in, buf, sizeof(buf));
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(statusfile_parse(buf, (size_t)n, &out, &errs), 0);
	ck_assert_uint_eq(errs.n, 0);
	ck_assert_uint_eq(strlen(out.collector.last_error), 85 * 3);
	/* a file written by someone else is repaired when read */
	snprintf(text, sizeof(text), "ember-status 1\nversion 0.\xed\xa0\x80\n");
	ck_assert_int_eq(parse_text(text, &out, &errs), 0);
	ck_assert_str_eq(out.version, "0.\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
}
END_TEST

START_TEST(test_header)
{
	struct ember_status st;
	struct statusfile_errors e;

	ck_assert_int_eq(parse_text("", &st, &e), -EINVAL);
	ck_assert_int_eq(parse_text("hz 99\n", &st, &e), -EINVAL);
	ck_assert_int_eq(parse_text("ember-status\n", &st, &e), -EINVAL);
	ck_assert_int_eq(parse_text("ember-status x\n", &st, &e), -EINVAL);
	ck_assert_int_eq(parse_text("ember-statusX 1\n", &st, &e), -EINVAL);
	ck_assert_int_eq(parse_text("ember-status 2\nhz 99\n", &st, &e), -EPROTONOSUPPORT);
	ck_assert_int_eq(parse_text("ember-status 1", &st, &e), 0);
	ck_assert_uint_eq(st.format, 1);
}
END_TEST

/* Known answers for bad values: each counted, the first named, the rest still read. */
/* Run-queue lines: an application name stays one word; bad lines are counted, not kept. */
START_TEST(test_runq)
{
	static char buf[STATUSFILE_MAX_BYTES];
	struct ember_status in = {}, out;
	struct statusfile_errors e;
	int n;

	in.n_runq = 1;
	in.runq[0] = (struct status_runq){"my app\n", 10, 2};
	n = statusfile_format(&in, buf, sizeof(buf));
	ck_assert_int_gt(n, 0);
	ck_assert_ptr_nonnull(strstr(buf, "\nrunq my_app_ 10 2\n"));
	ck_assert_int_eq(parse_text("ember-status 1\nrunq a 1\nrunq b x 2\nrunq c 3 4\n", &out, &e),
			 0);
	ck_assert_uint_eq(e.n, 2);
	ck_assert_uint_eq(out.n_runq, 1);
	ck_assert_str_eq(out.runq[0].app, "c");
	ck_assert_uint_eq(out.runq[0].ns, 3);
	ck_assert_uint_eq(out.runq[0].waits, 4);
}
END_TEST

/* Start-up growth lines: the same rules as the run queue's. */
START_TEST(test_startup)
{
	static char buf[STATUSFILE_MAX_BYTES];
	struct ember_status in = {}, out;
	struct statusfile_errors e;
	int n;

	in.n_startup = 1;
	in.startup[0] = (struct status_startup){"my\tapp", 4096};
	n = statusfile_format(&in, buf, sizeof(buf));
	ck_assert_int_gt(n, 0);
	ck_assert_ptr_nonnull(strstr(buf, "\nstartup my_app 4096\n"));
	ck_assert_int_eq(
		parse_text("ember-status 1\nstartup a\nstartup b x\nstartup c -1\nstartup d 7\n",
			   &out, &e),
		0);
	ck_assert_uint_eq(e.n, 3);
	ck_assert_uint_eq(out.n_startup, 1);
	ck_assert_str_eq(out.startup[0].app, "d");
	ck_assert_uint_eq(out.startup[0].bytes, 7);
}
END_TEST

START_TEST(test_bad_values)
{
	struct ember_status st;
	struct statusfile_errors e;
	const char *text = "ember-status 1\n"
			   "hz -5\n" /* line 2: no sign */
			   "pid 12\n"
			   "intervals 18446744073709551616\n" /* overflow */
			   "hz 4294967296\n"		      /* past u32 */
			   "memory.over 2\n"		      /* not 0/1 */
			   "samples 1\n"		      /* one of two words */
			   "samples 1 2 3\n"		      /* three */
			   "drop stack_map_full x 1\n"
			   "cache binaries 1 2 3\n"
			   "bpf_map bad/name 1 2\n"
			   "bpf_map waytoolongmapname0 1 2\n"
			   "noval\n"
			   "state runningrunningrunning\n" /* longer than its field */
			   "version 1\t2\n"		   /* a control character */
			   "interval_ns 1000\n"
			   "stacks 4 5\n";

	ck_assert_int_eq(parse_text(text, &st, &e), 0);
	ck_assert_uint_eq(e.n, 13);
	ck_assert_str_eq(e.first, "line 2: bad value for 'hz'");
	ck_assert_int_eq(st.pid, 12);
	ck_assert_int_eq(st.interval_ns, 1000);
	ck_assert_uint_eq(st.stacks.interval, 4);
	ck_assert_uint_eq(st.stacks.total, 5);
	ck_assert_uint_eq(st.hz, 0);
	ck_assert_uint_eq(st.n_maps, 0);
	ck_assert_str_eq(st.state, "");
	ck_assert_str_eq(st.version, "");
}
END_TEST

/* A newer writer's keys and names are skipped without complaint. */
START_TEST(test_unknown_ignored)
{
	struct ember_status st;
	struct statusfile_errors e;

	ck_assert_int_eq(parse_text("ember-status 1\nfuture.key 1\ndrop new_cause 1 2\n"
				    "skip new_reason 3 4\ncache new_cache 1 2 3 4\n\nhz 19\n",
				    &st, &e),
			 0);
	ck_assert_uint_eq(e.n, 0);
	ck_assert_uint_eq(st.hz, 19);
	for (int i = 0; i < STATUS_DROP_NR; i++)
		ck_assert_uint_eq(st.drops[i].total, 0);
}
END_TEST

START_TEST(test_bounds)
{
	static char big[STATUSFILE_MAX_BYTES + 2];
	struct ember_status st;
	struct statusfile_errors e;
	char text[4096];
	size_t n;

	memset(big, 'a', sizeof(big) - 1);
	ck_assert_int_eq(statusfile_parse(big, sizeof(big) - 1, &st, &e), -EFBIG);
	/* a long line is refused whole; the lines around it are read */
	n = (size_t)snprintf(text, sizeof(text), "ember-status 1\nhz 7\ncollector.url ");
	memset(text + n, 'u', STATUSFILE_MAX_LINE);
	n += STATUSFILE_MAX_LINE;
	n += (size_t)snprintf(text + n, sizeof(text) - n, "\npid 3\n");
	ck_assert_int_eq(statusfile_parse(text, n, &st, &e), 0);
	ck_assert_uint_eq(e.n, 1);
	ck_assert_str_eq(e.first, "line 3: line too long");
	ck_assert_uint_eq(st.hz, 7);
	ck_assert_int_eq(st.pid, 3);
	ck_assert_str_eq(st.collector.url, "");
	/* a NUL inside a line */
	ck_assert_int_eq(statusfile_parse("ember-status 1\nhz 9\0\npid 4\n", 26, &st, &e), 0);
	ck_assert_uint_eq(e.n, 1);
	ck_assert_uint_eq(st.hz, 0);
	ck_assert_int_eq(st.pid, 4);
	/* more maps than kept: the rest are skipped, not errors */
	n = (size_t)snprintf(text, sizeof(text), "ember-status 1\n");
	for (int i = 0; i < STATUSFILE_MAX_MAPS + 5; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "bpf_map m%d 1 %d\n", i, i);
	ck_assert_int_eq(statusfile_parse(text, n, &st, &e), 0);
	ck_assert_uint_eq(e.n, 0);
	ck_assert_uint_eq(st.n_maps, STATUSFILE_MAX_MAPS);
	ck_assert_str_eq(st.maps[STATUSFILE_MAX_MAPS - 1].name, "m31");
}
END_TEST

START_TEST(test_names)
{
	ck_assert_str_eq(statusfile_drop_name(STATUS_DROP_COUNTS_MAP_FULL), "counts_map_full");
	ck_assert_str_eq(statusfile_skip_name(STATUS_SKIP_EXCLUDED), "excluded");
	ck_assert_str_eq(statusfile_cache_name(STATUS_CACHE_PERF_MAPS), "perf_maps");
	ck_assert_str_eq(statusfile_drop_name(STATUS_DROP_NR), "?");
	ck_assert_str_eq(statusfile_unwind_name(STATUS_UNWIND_END_NO_TABLE), "end_no_table");
	ck_assert_str_eq(statusfile_unwind_name(STATUS_UNWIND_NR), "?");
	ck_assert_str_eq(statusfile_offcpu_name(STATUS_OFFCPU_NO_STORAGE), "no_storage");
	ck_assert_str_eq(statusfile_offcpu_name(STATUS_OFFCPU_NR), "?");
	/* every name once, and the losses apart from what is counted on the way */
	for (int i = 0; i < STATUS_OFFCPU_NR; i++)
		for (int j = 0; j < i; j++)
			ck_assert_str_ne(statusfile_offcpu_name(i), statusfile_offcpu_name(j));
	ck_assert(statusfile_offcpu_loss(STATUS_OFFCPU_COUNTS_MAP_FULL));
	ck_assert(!statusfile_offcpu_loss(STATUS_OFFCPU_HELD_MAP_FULL));
	ck_assert(!statusfile_offcpu_loss(STATUS_OFFCPU_NR));
}
END_TEST

/* Every slot of every group has one counter, with every name, and a source in bounds. */
START_TEST(test_counter_table)
{
	unsigned int totals = 0;

	for (int g = 0; g < COUNTER_TOTAL; g++) {
		ck_assert_ptr_nonnull(counter_group_word(g));
		for (unsigned int i = 0; i < counter_group_size(g); i++) {
			unsigned int rows = 0;

			for (size_t k = 0; k < counters_nr; k++)
				rows += counters[k].group == (enum counter_group)g &&
					counters[k].index == i;
			ck_assert_msg(rows == 1, "%s slot %u has %u counters",
				      counter_group_word(g), i, rows);
		}
		ck_assert_ptr_null(counter_of(g, counter_group_size(g)));
	}
	for (size_t k = 0; k < counters_nr; k++) {
		const struct counter *c = &counters[k];

		ck_assert_ptr_nonnull(c->key);
		ck_assert_ptr_nonnull(c->label);
		ck_assert_int_lt(c->family, FAMILY_NR);
		ck_assert_msg(!c->log || c->loss, "%s: only losses reach the losses' line", c->key);
		ck_assert_uint_lt(c->metric, c->src == COUNTER_SRC_OFFCPU ? EMBER_OFFCPU_M_NR :
					     c->src == COUNTER_SRC_PROC	  ? EMBER_PROC_M_NR :
									    EMBER_SAMPLE_M_NR);
		totals += c->group == COUNTER_TOTAL;
		for (size_t j = 0; j < k; j++) {
			ck_assert_msg(c->group != counters[j].group ||
					      strcmp(c->key, counters[j].key),
				      "%s twice in the status file", c->key);
			ck_assert_msg(c->family != counters[j].family ||
					      strcmp(c->label, counters[j].label),
				      "%s twice in %s", c->label, counter_families[c->family].name);
		}
	}
	ck_assert_uint_eq(counter_group_size(COUNTER_TOTAL), totals);
	for (int f = 0; f < FAMILY_NR; f++) {
		ck_assert_ptr_nonnull(counter_families[f].name);
		ck_assert_ptr_nonnull(counter_families[f].label);
		ck_assert_ptr_nonnull(counter_families[f].help);
		ck_assert(!counter_families[f].interval == !counter_families[f].interval_help);
	}
}
END_TEST

/* Each counter's figures go through the file and come back, each in its own place. */
START_TEST(test_counter_round_trip)
{
	static struct ember_status in, out;
	static char text[STATUSFILE_MAX_BYTES];
	struct statusfile_errors e = {};
	int n;

	memset(&in, 0, sizeof(in));
	in.format = STATUSFILE_VERSION;
	for (size_t k = 0; k < counters_nr; k++) {
		struct status_count *c = counter_count(&in, &counters[k]);

		if (c)
			*c = (struct status_count){1000 + k, 2000 + k};
		else
			*counter_total(&in, &counters[k]) = 3000 + k;
	}
	n = statusfile_format(&in, text, sizeof(text));
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(statusfile_parse(text, (size_t)n, &out, &e), 0);
	ck_assert_uint_eq(e.n, 0);
	for (size_t k = 0; k < counters_nr; k++) {
		struct status_count a = counter_value(&in, &counters[k]);
		struct status_count b = counter_value(&out, &counters[k]);

		ck_assert_msg(a.interval == b.interval && a.total == b.total,
			      "%s: %" PRIu64 " %" PRIu64 " came back as %" PRIu64 " %" PRIu64,
			      counters[k].key, a.interval, a.total, b.interval, b.total);
	}
}
END_TEST

Suite *statusfile_suite(void)
{
	Suite *s = suite_create("statusfile");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_format_no_room);
	tcase_add_test(tc, test_format_sanitizes);
	tcase_add_test(tc, test_utf8);
	tcase_add_test(tc, test_header);
	tcase_add_test(tc, test_bad_values);
	tcase_add_test(tc, test_runq);
	tcase_add_test(tc, test_startup);
	tcase_add_test(tc, test_unknown_ignored);
	tcase_add_test(tc, test_bounds);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_counter_table);
	tcase_add_test(tc, test_counter_round_trip);
	suite_add_tcase(s, tc);
	return s;
}
