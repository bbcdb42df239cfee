// SPDX-License-Identifier: MIT
/*
 * bpfload: the tail of a verifier log that a refused program's error quotes,
 * on logs as 6.18's verifier writes them (E2BIG, an unknown helper).
 */
#include <string.h>

#include "bpfload.h"
#include "suites.h"

START_TEST(test_e2big_tail)
{
	const char *log = "0: R1=ctx() R10=fp0\n"
			  "; int ember_cpu_sample(struct bpf_perf_event_data *ctx)\n"
			  "1: (85) call bpf_get_current_pid_tgid#14\n"
			  "BPF program is too large. Processed 1000001 insn\n"
			  "processed 1000001 insns (limit 1000000) max_states_per_insn 26 "
			  "total_states 62811 peak_states 4031 mark_read 74\n"
			  "\n";
	char out[512];

	bpfload_log_tail(log, 2, out, sizeof(out));
	ck_assert_str_eq(out, "BPF program is too large. Processed 1000001 insn | processed "
			      "1000001 insns (limit 1000000) max_states_per_insn 26 total_states "
			      "62811 peak_states 4031 mark_read 74");
}
END_TEST

START_TEST(test_lines_trimmed_and_bounded)
{
	char out[32];

	bpfload_log_tail("  a\n\t b  \n\n  \n", 4, out, sizeof(out));
	ck_assert_str_eq(out, "a | b");
	/* more lines asked than there are, and an output too short: cut, terminated */
	bpfload_log_tail("0123456789\n0123456789\n0123456789\n0123456789\n", 8, out, sizeof(out));
	ck_assert_uint_lt(strlen(out), sizeof(out));
	ck_assert(!strncmp(out, "0123456789 | 0123456789", 23));
	bpfload_log_tail("", 4, out, sizeof(out));
	ck_assert_str_eq(out, "");
	bpfload_log_tail("\n\n\n", 4, out, sizeof(out));
	ck_assert_str_eq(out, "");
}
END_TEST

Suite *bpfload_suite(void)
{
	Suite *s = suite_create("bpfload");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_e2big_tail);
	tcase_add_test(tc, test_lines_trimmed_and_bounded);
	suite_add_tcase(s, tc);
	return s;
}
