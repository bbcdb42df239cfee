// SPDX-License-Identifier: MIT
/* The owners' table (owners.c): every source opened, closed and read alike. */
#include <string.h>

#include "counters.h"
#include "owners.h"
#include "suites.h"

/* Every source but none's has an owner that opens and closes, and says what its loss costs. */
START_TEST(test_every_source)
{
	ck_assert_ptr_null(owners[PROFILE_SRC_NONE].open);
	for (int s = PROFILE_SRC_NONE + 1; s < PROFILE_SRC_NR; s++) {
		ck_assert_msg(owners[s].open && owners[s].close, "source %d: no open or close", s);
		ck_assert_msg(owners[s].without && *owners[s].without, "source %d: no phrase", s);
		ck_assert_msg(owners[s].run_ns, "source %d: its BPF time unread", s);
	}
	/* the CPU sampler is opened first and always, and emberd stops without it */
	ck_assert_int_eq(PROFILE_SRC_SAMPLER, PROFILE_SRC_NONE + 1);
	ck_assert(owners[PROFILE_SRC_SAMPLER].fatal);
	ck_assert_ptr_null(owners[PROFILE_SRC_SAMPLER].wanted);
	ck_assert(!owners[PROFILE_SRC_GROWTH].fatal && !owners[PROFILE_SRC_OFFCPU].fatal);
}
END_TEST

/* Every type the interval drains has an owner of its source. */
START_TEST(test_every_type)
{
	for (int i = 0; i < PROFILE_TYPES_NR; i++) {
		const struct profile_type *t = &profile_types[i];

		ck_assert_int_lt(t->source, PROFILE_SRC_NR);
		if (t->source != PROFILE_SRC_NONE)
			ck_assert_msg(owners[t->source].open, "%s: its source has no owner",
				      t->name);
	}
}
END_TEST

/* Whether an owner whose metrics count into src's rows has metric m. */
static bool counted(enum counter_src src, unsigned int m)
{
	for (int s = 0; s < PROFILE_SRC_NR; s++)
		if (owners[s].counters & 1u << src && m < owners[s].n_metrics)
			return true;
	return false;
}

/* Metrics fit the report's arrays, and every counter row read from an owner's has one. */
START_TEST(test_metrics)
{
	for (int s = 0; s < PROFILE_SRC_NR; s++) {
		ck_assert_uint_le(owners[s].n_metrics, OWNER_METRICS_MAX);
		ck_assert(!owners[s].metrics == !owners[s].n_metrics);
		ck_assert(!owners[s].counters || owners[s].metrics);
	}
	for (size_t i = 0; i < counters_nr; i++) {
		const struct counter *c = &counters[i];

		if (c->src == COUNTER_SRC_HOST || c->src == COUNTER_SRC_PROC)
			continue;
		ck_assert_msg(counted(c->src, c->metric), "counter %s: no owner reads it", c->key);
	}
	/* a drop of cpu and growth alike sums both (the sampling rows) */
	ck_assert(owners[PROFILE_SRC_SAMPLER].counters & 1u << COUNTER_SRC_SAMPLING);
	ck_assert(owners[PROFILE_SRC_GROWTH].counters & 1u << COUNTER_SRC_SAMPLING);
	ck_assert(!(owners[PROFILE_SRC_GROWTH].counters & 1u << COUNTER_SRC_CPU));
}
END_TEST

/* Which owners a configuration wants: growth by default, off-CPU when on, allocations when asked. */
START_TEST(test_wanted)
{
	static const char conf[] = "[daemon]\noffcpu = on\ngrowth_fault_period = 0\n"
				   "[app \"a\"]\nmatch.comm = a\nmemory = inuse\n";
	const struct owner *g = &owners[PROFILE_SRC_GROWTH], *o = &owners[PROFILE_SRC_OFFCPU],
			   *a = &owners[PROFILE_SRC_ALLOCS];
	struct config_errors errs = {0};
	struct ember_config c;

	config_defaults(&c);
	ck_assert(g->wanted(&c) && !o->wanted(&c) && !a->wanted(&c));
	ck_assert_int_eq(config_parse(conf, strlen(conf), "t.conf", &c, &errs), 0);
	ck_assert(!g->wanted(&c) && o->wanted(&c) && a->wanted(&c));
	config_free(&c);
}
END_TEST

Suite *owners_suite(void)
{
	Suite *s = suite_create("owners");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_every_source);
	tcase_add_test(tc, test_every_type);
	tcase_add_test(tc, test_metrics);
	tcase_add_test(tc, test_wanted);
	suite_add_tcase(s, tc);
	return s;
}
