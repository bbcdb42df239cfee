// SPDX-License-Identifier: MIT
/*
 * budget: cpu_budget's decision against made-up costs. Over budget it lowers
 * off-CPU's duty cycle one step an interval down to its floor, only when the
 * off-CPU programs are a worthwhile part of the cost; it restores one step
 * after BUDGET_CALM intervals in a row under half the budget, and never
 * between half and the whole of it (no oscillation).
 */
#include "budget.h"
#include "suites.h"

#define MS 1000000LL
#define S 1000000000LL

static const struct budget_config cfg = {
	.budget_ns_per_s = 10 * MS, /* 1% */
	.offcpu = true,
	.offcpu_shift_max = 4,
};

/* An interval of 10 s costing self and bpf ms a second, off of which the off-CPU programs'. */
static struct budget_cost cost(double self, double bpf, double off)
{
	return (struct budget_cost){
		.wall_ns = 10 * S,
		.self_ns = (int64_t)(self * 10 * MS),
		.bpf_ns = (int64_t)(bpf * 10 * MS),
		.offcpu_bpf_ns = (int64_t)(off * 10 * MS),
		.bpf_known = true,
	};
}

START_TEST(test_ppm)
{
	struct budget_cost m = cost(3, 2, 1);

	ck_assert_uint_eq(budget_cost_ppm(&m), 5000); /* 5 ms a second: 0.5% */
	ck_assert_uint_eq(budget_ppm(&cfg), 10000);
	m.wall_ns = 0;
	ck_assert_uint_eq(budget_cost_ppm(&m), 0);
	/* a week-long interval does not overflow */
	m = (struct budget_cost){.wall_ns = 7 * 86400 * S, .self_ns = 7 * 864 * S};
	ck_assert_uint_eq(budget_cost_ppm(&m), 10000);
}
END_TEST

START_TEST(test_lowers_in_steps_to_floor)
{
	struct budget_state s = {};
	struct budget_cost m = cost(2, 30, 28); /* 3.2%, most of it off-CPU's programs */

	for (unsigned int i = 1; i <= 4; i++) {
		ck_assert_int_eq(budget_decide(&cfg, &m, &s), BUDGET_LOWERED);
		ck_assert_uint_eq(s.offcpu_shift, i);
	}
	ck_assert_int_eq(budget_decide(&cfg, &m, &s), BUDGET_AT_FLOOR);
	ck_assert_uint_eq(s.offcpu_shift, 4);
}
END_TEST

START_TEST(test_not_lowered_for_other_costs)
{
	struct budget_state s = {};
	struct budget_cost m = cost(20, 2, 1); /* 2.2%, symbolization: off-CPU 1/22 of it */

	ck_assert_int_eq(budget_decide(&cfg, &m, &s), BUDGET_AT_FLOOR);
	ck_assert_uint_eq(s.offcpu_shift, 0);
	/* an eighth of the cost is worth a step */
	m = cost(18, 3, 3);
	ck_assert_int_eq(budget_decide(&cfg, &m, &s), BUDGET_LOWERED);
	ck_assert_uint_eq(s.offcpu_shift, 1);
	/* without run-time stats the share is unknown: lowered */
	m = cost(20, 0, 0);
	m.bpf_known = false;
	ck_assert_int_eq(budget_decide(&cfg, &m, &s), BUDGET_LOWERED);
	ck_assert_uint_eq(s.offcpu_shift, 2);
}
END_TEST

START_TEST(test_hysteresis)
{
	struct budget_state s = {.offcpu_shift = 3};
	struct budget_cost between = cost(2, 5, 4), under = cost(1, 2, 1.5);

	/* between half the budget and the budget: kept however long */
	for (int i = 0; i < 20; i++)
		ck_assert_int_eq(budget_decide(&cfg, &between, &s), BUDGET_KEPT);
	ck_assert_uint_eq(s.offcpu_shift, 3);
	/* under half: restored after BUDGET_CALM intervals in a row, one step */
	for (int i = 1; i < BUDGET_CALM; i++)
		ck_assert_int_eq(budget_decide(&cfg, &under, &s), BUDGET_KEPT);
	ck_assert_int_eq(budget_decide(&cfg, &under, &s), BUDGET_RESTORED);
	ck_assert_uint_eq(s.offcpu_shift, 2);
	/* an interval above half breaks the calm */
	ck_assert_int_eq(budget_decide(&cfg, &under, &s), BUDGET_KEPT);
	ck_assert_int_eq(budget_decide(&cfg, &between, &s), BUDGET_KEPT);
	for (int i = 1; i < BUDGET_CALM; i++)
		ck_assert_int_eq(budget_decide(&cfg, &under, &s), BUDGET_KEPT);
	ck_assert_int_eq(budget_decide(&cfg, &under, &s), BUDGET_RESTORED);
	ck_assert_uint_eq(s.offcpu_shift, 1);
}
END_TEST

/*
 * A workload whose off-CPU programs cost 16 ms a second at the whole duty
 * cycle, halved by each step, and emberd 1 ms: the budget settles on the
 * first step under it and stays there, never going back and forth.
 */
START_TEST(test_settles)
{
	struct budget_state s = {};
	unsigned int changes = 0;

	for (int i = 0; i < 100; i++) {
		double off = 16.0 / (1u << s.offcpu_shift);
		struct budget_cost m = cost(1, off, off);
		enum budget_change c = budget_decide(&cfg, &m, &s);

		changes += c == BUDGET_LOWERED || c == BUDGET_RESTORED;
	}
	ck_assert_uint_eq(s.offcpu_shift, 1); /* 1 + 8 ms: under 10 */
	ck_assert_uint_eq(changes, 1);
}
END_TEST

START_TEST(test_no_budget)
{
	struct budget_config none = cfg;
	struct budget_state s = {.offcpu_shift = 2, .calm = 1};
	struct budget_cost m = cost(100, 100, 100);

	none.budget_ns_per_s = 0;
	ck_assert_int_eq(budget_decide(&none, &m, &s), BUDGET_RESTORED);
	ck_assert_uint_eq(s.offcpu_shift, 0);
	ck_assert_int_eq(budget_decide(&none, &m, &s), BUDGET_KEPT);
	/* off-CPU off: over budget, nothing to lower */
	none = cfg;
	none.offcpu = false;
	ck_assert_int_eq(budget_decide(&none, &m, &s), BUDGET_AT_FLOOR);
	ck_assert_uint_eq(s.offcpu_shift, 0);
	/* a floor lowered by a reload clamps the state */
	none = cfg;
	none.offcpu_shift_max = 1;
	s.offcpu_shift = 3;
	m = cost(1, 1, 1);
	ck_assert_int_eq(budget_decide(&none, &m, &s), BUDGET_KEPT);
	ck_assert_uint_eq(s.offcpu_shift, 1);
}
END_TEST

Suite *budget_suite(void)
{
	Suite *s = suite_create("budget");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_ppm);
	tcase_add_test(tc, test_lowers_in_steps_to_floor);
	tcase_add_test(tc, test_not_lowered_for_other_costs);
	tcase_add_test(tc, test_hysteresis);
	tcase_add_test(tc, test_settles);
	tcase_add_test(tc, test_no_budget);
	suite_add_tcase(s, tc);
	return s;
}
