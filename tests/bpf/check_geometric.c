// SPDX-License-Identifier: MIT
/*
 * bpf/geometric.bpf.h: the off-CPU sampler's gaps have the law of independent
 * 1-in-p draws (geometric), checked against the exact figures.
 */
#include <linux/types.h>
#include <math.h>
#include <stdint.h>

#include <check.h>

#include "../../bpf/geometric.bpf.h"
#include "suites.h"

/* splitmix64: a fixed, well-mixed sequence, so that every run checks the same draws */
static uint64_t mix_state;

static uint32_t next_random(void)
{
	uint64_t z = (mix_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (uint32_t)((z ^ (z >> 31)) >> 32);
}

START_TEST(neg_log2_matches_libm)
{
	static const uint32_t edges[] = {0,	      1,	   2,	       3,
					 0x8000,      0xffff,	   0x10000,    0x7fffffff,
					 0x80000000U, 0xfffffffeU, 0xffffffffU};
	double worst = 0;

	mix_state = 1;
	for (size_t i = 0; i < 200000 + sizeof(edges) / sizeof(edges[0]); i++) {
		uint32_t r = i < sizeof(edges) / sizeof(edges[0]) ? edges[i] : next_random();
		double want = -log2((double)(r | 1) / 4294967296.0) * 65536;
		double err = fabs((double)geom_neg_log2(r) - want);

		if (err > worst)
			worst = err;
	}
	/* the table's interpolation: within 4 units of 2^-16 */
	ck_assert_msg(worst <= 4, "-log2(u) off by %.1f / 65536", worst);
}
END_TEST

START_TEST(scale_matches_libm)
{
	static const uint32_t periods[] = {2, 3, 4, 15, 16, 17, 64, 1000, 4096, 65536};

	for (size_t i = 0; i < sizeof(periods) / sizeof(periods[0]); i++) {
		uint32_t p = periods[i];
		double want = log(2) / -log1p(-1.0 / p) * 65536;
		double rel = fabs((double)geom_scale(p) - want) / want;

		ck_assert_msg(rel < 1e-5, "period %u: scale %llu, want %.1f", p,
			      (unsigned long long)geom_scale(p), want);
	}
}
END_TEST

/* n draws at period p: their mean, the share of 0 (sampled at once), and P(gap >= p) */
static void draw_many(uint32_t p, size_t n, double *mean, double *zero, double *past_p)
{
	double sum = 0;
	size_t zeros = 0, past = 0;

	mix_state = p;
	for (size_t i = 0; i < n; i++) {
		uint32_t g = geom_gap(next_random(), p);

		sum += g;
		zeros += g == 0;
		past += g >= p;
	}
	*mean = sum / n;
	*zero = (double)zeros / n;
	*past_p = (double)past / n;
}

START_TEST(gaps_are_geometric)
{
	static const uint32_t periods[] = {2, 64, 1000, 65536};
	const size_t n = 1000000;

	for (size_t i = 0; i < sizeof(periods) / sizeof(periods[0]); i++) {
		uint32_t p = periods[i];
		double mean, zero, past, q = 1 - 1.0 / p;

		draw_many(p, n, &mean, &zero, &past);
		/* mean p - 1 (one sampled in p): the standard error is under 0.1 % of p */
		ck_assert_msg(fabs(mean - (p - 1)) < 0.005 * p, "period %u: mean gap %.2f", p,
			      mean);
		/* P(0) = 1/p: within 5 standard errors of a binomial share */
		ck_assert_msg(fabs(zero - 1.0 / p) < 5 * sqrt(zero * (1 - zero) / n) + 1e-6,
			      "period %u: %.6f sampled at once, want %.6f", p, zero, 1.0 / p);
		/* P(gap >= p) = q^p: the tail, not only the mean */
		ck_assert_msg(fabs(past - pow(q, p)) < 5 * sqrt(past * (1 - past) / n),
			      "period %u: P(gap >= p) %.5f, want %.5f", p, past, pow(q, p));
	}
}
END_TEST

START_TEST(period_one_samples_all)
{
	ck_assert_uint_eq(geom_gap(0, 1), 0);
	ck_assert_uint_eq(geom_gap(0xffffffffU, 0), 0);
	/* the longest gap at the largest period: ln(2^32) x 65536, no overflow */
	ck_assert_uint_gt(geom_gap(0, 65536), 1400000);
	ck_assert_uint_lt(geom_gap(0, 65536), 1500000);
	ck_assert_uint_eq(geom_gap(0xffffffffU, 65536), 0);
}
END_TEST

Suite *geometric_suite(void)
{
	Suite *s = suite_create("geometric");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, neg_log2_matches_libm);
	tcase_add_test(tc, scale_matches_libm);
	tcase_add_test(tc, gaps_are_geometric);
	tcase_add_test(tc, period_one_samples_all);
	suite_add_tcase(s, tc);
	return s;
}
