// SPDX-License-Identifier: MIT
/*
 * pushfit: labels left out and samples merged, then a synthetic profile of
 * 50000 distinct stacks folded to the collector's limits with known answers:
 * which stacks stay, what [truncated] is worth, and that no value is lost.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "config.h"
#include "pprof.h"
#include "pushfit.h"
#include "stackset.h"
#include "suites.h"

#define N_STACKS 50000
#define MS 1000000LL

static const struct pprof_meta cpu_meta = {
	.sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
	.n_sample_types = 2,
	.period_type = {"cpu", "nanoseconds"},
	.period = 10 * MS,
	.time_nanos = 1700000000000000000LL,
	.duration_nanos = 10000000000LL,
};

static uint8_t *encode(struct pprof_builder *b, size_t *len)
{
	uint8_t *buf;

	ck_assert_int_eq(pprof_encode(b, &buf, len), 0);
	pprof_builder_free(b);
	return buf;
}

/* Stack i: main -> mid<i % 100> -> leaf<i>, worth i + 1 samples of 10 ms, comm "w<i % 7>". */
static uint8_t *many_stacks(size_t *len)
{
	struct pprof_builder *b = pprof_builder_new(&cpu_meta);
	uint64_t fmain = pprof_function(b, "main", NULL, "m.c");
	char name[32];

	for (int64_t i = 0; i < N_STACKS; i++) {
		struct pprof_label l[2] = {{.key = "comm", .str = name}, {.key = "pid", .num = i}};
		int64_t v[2] = {i + 1, (i + 1) * 10 * MS};
		uint64_t f, locs[3];

		snprintf(name, sizeof(name), "leaf%lld", (long long)i);
		f = pprof_function(b, name, NULL, "m.c");
		locs[0] = pprof_location(b, 0, 0, &f, 1);
		snprintf(name, sizeof(name), "mid%lld", (long long)(i % 100));
		f = pprof_function(b, name, NULL, "m.c");
		locs[1] = pprof_location(b, 0, 0, &f, 1);
		locs[2] = pprof_location(b, 0, 0, &fmain, 1);
		snprintf(name, sizeof(name), "w%lld", (long long)(i % 7));
		ck_assert_int_eq(pprof_add_sample(b, locs, 3, v, l, 2), 0);
	}
	pprof_builder_set_time(b, cpu_meta.time_nanos, cpu_meta.duration_nanos);
	return encode(b, len);
}

static pprof_profile *decode(const uint8_t *buf, size_t len)
{
	pprof_profile *p = NULL;
	char err[128];

	ck_assert_msg(pprof_decode(buf, len, &p, err, sizeof(err)) == 0, "%s", err);
	return p;
}

static const char *leaf_name(const pprof_profile *p, const Perftools__Profiles__Sample *s)
{
	static struct pprof_reader *r;
	static const pprof_profile *indexed;
	const Perftools__Profiles__Location *loc;

	if (indexed != p) {
		pprof_reader_free(r);
		ck_assert_int_eq(pprof_reader_new(p, &r), 0);
		indexed = p;
	}
	loc = p->location[pprof_reader_location_index(r, s->location_id[0])];
	return p->string_table[pprof_reader_function(r, loc->line[0]->function_id)->name];
}

/* Checks what every fitted profile must be: no labels, totals kept, one [truncated] at most. */
static const Perftools__Profiles__Sample *check_fitted(const pprof_profile *p, int64_t total0,
						       int64_t total1, uint64_t max_samples)
{
	const Perftools__Profiles__Sample *trunc = NULL;
	int64_t sum0 = 0, sum1 = 0;

	ck_assert_uint_le(p->n_sample, max_samples);
	for (size_t i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];

		ck_assert_uint_eq(s->n_label, 0);
		sum0 += s->value[0];
		sum1 += s->value[1];
		if (!strcmp(leaf_name(p, s), PUSHFIT_TRUNCATED)) {
			ck_assert_ptr_null(trunc);
			ck_assert_uint_eq(s->n_location_id, 1);
			trunc = s;
		}
	}
	ck_assert_int_eq(sum0, total0);
	ck_assert_int_eq(sum1, total1);
	ck_assert_int_eq(p->time_nanos, cpu_meta.time_nanos);
	ck_assert_int_eq(p->duration_nanos, cpu_meta.duration_nanos);
	return trunc;
}

/* Samples that differed only by comm and pid become one; nothing is folded. */
START_TEST(test_labels_merged)
{
	struct pprof_builder *b = pprof_builder_new(&cpu_meta);
	const struct pushfit_limits lim = {.max_bytes = CONFIG_DEFAULT_MAX_PROFILE_BYTES,
					   .max_samples = CONFIG_DEFAULT_MAX_SAMPLES};
	uint64_t f = pprof_function(b, "work", NULL, "w.c"), loc = pprof_location(b, 0, 0, &f, 1);
	struct pushfit_stats st;
	pprof_profile *p;
	uint8_t *in, *out;
	size_t len, out_len;
	char err[128];

	for (int64_t pid = 1; pid <= 3; pid++) {
		struct pprof_label l[2] = {{.key = "comm", .str = pid == 2 ? "b" : "a"},
					   {.key = "pid", .num = pid}};
		int64_t v[2] = {pid, pid * 10 * MS};

		ck_assert_int_eq(pprof_add_sample(b, &loc, 1, v, l, 2), 0);
	}
	pprof_builder_set_time(b, cpu_meta.time_nanos, cpu_meta.duration_nanos);
	in = encode(b, &len);
	ck_assert_int_eq(pushfit(in, len, &lim, &out, &out_len, &st, err, sizeof(err)), 0);
	ck_assert_uint_eq(st.samples_in, 3);
	ck_assert_uint_eq(st.samples_merged, 2);
	ck_assert_uint_eq(st.stacks_folded, 0);
	ck_assert_uint_eq(st.bytes_out, out_len);
	p = decode(out, out_len);
	ck_assert_uint_eq(p->n_sample, 1);
	ck_assert_int_eq(p->sample[0]->value[0], 6);
	ck_assert_ptr_null(check_fitted(p, 6, 60 * MS, 1));
	for (size_t i = 0; i < p->n_string_table; i++) {
		ck_assert_str_ne(p->string_table[i], "comm");
		ck_assert_str_ne(p->string_table[i], "pid");
	}
	pprof_profile_free(p);
	free(in);
	free(out);
}
END_TEST

/* 50000 stacks, 16000 samples at most: the 15999 heaviest stay, the rest is one frame. */
START_TEST(test_fold_samples)
{
	const struct pushfit_limits lim = {.max_bytes = CONFIG_DEFAULT_MAX_PROFILE_BYTES,
					   .max_samples = CONFIG_DEFAULT_MAX_SAMPLES};
	const int64_t total = (int64_t)N_STACKS * (N_STACKS + 1) / 2;
	const int64_t folded = (int64_t)(N_STACKS - 15999) * (N_STACKS - 15999 + 1) / 2;
	const Perftools__Profiles__Sample *trunc;
	struct pushfit_stats st;
	uint8_t *in, *out;
	size_t len, out_len;
	pprof_profile *p;
	char err[128];
	bool seen_lightest_kept = false;

	in = many_stacks(&len);
	ck_assert_int_eq(pushfit(in, len, &lim, &out, &out_len, &st, err, sizeof(err)), 0);
	ck_assert_uint_eq(st.samples_in, N_STACKS);
	ck_assert_uint_eq(st.samples_merged, 0);
	ck_assert_uint_eq(st.stacks_folded, N_STACKS - 15999);
	ck_assert_int_eq(st.total[0], total);
	ck_assert_int_eq(st.folded[0], folded);
	ck_assert_int_eq(st.folded[1], folded * 10 * MS);
	ck_assert_uint_le(out_len, lim.max_bytes);
	p = decode(out, out_len);
	ck_assert_uint_eq(p->n_sample, 16000);
	trunc = check_fitted(p, total, total * 10 * MS, lim.max_samples);
	ck_assert_ptr_nonnull(trunc);
	ck_assert_int_eq(trunc->value[0], folded);
	/* the heaviest stayed: leaf49999 down to leaf34001; leaf34000 went */
	for (size_t i = 0; i < p->n_sample; i++) {
		const char *leaf = leaf_name(p, p->sample[i]);

		ck_assert_str_ne(leaf, "leaf34000");
		seen_lightest_kept |= !strcmp(leaf, "leaf34001");
	}
	ck_assert(seen_lightest_kept);
	pprof_profile_free(p);
	free(in);
	free(out);
}
END_TEST

/* A byte limit tighter than the samples': folded further, still every value accounted for. */
START_TEST(test_fold_bytes)
{
	const struct pushfit_limits lim = {.max_bytes = CONFIG_MIN_MAX_PROFILE_BYTES,
					   .max_samples = CONFIG_DEFAULT_MAX_SAMPLES};
	const int64_t total = (int64_t)N_STACKS * (N_STACKS + 1) / 2;
	const Perftools__Profiles__Sample *trunc;
	struct pushfit_stats st;
	uint8_t *in, *out;
	size_t len, out_len;
	pprof_profile *p;
	char err[128];

	in = many_stacks(&len);
	ck_assert_uint_gt(len, 2u << 20);
	ck_assert_int_eq(pushfit(in, len, &lim, &out, &out_len, &st, err, sizeof(err)), 0);
	ck_assert_uint_le(out_len, lim.max_bytes);
	ck_assert_uint_gt(st.stacks_folded, N_STACKS - 15999);
	ck_assert_uint_lt(st.stacks_folded, N_STACKS);
	p = decode(out, out_len);
	ck_assert_uint_eq(p->n_sample, N_STACKS - st.stacks_folded + 1);
	trunc = check_fitted(p, total, total * 10 * MS, lim.max_samples);
	ck_assert_ptr_nonnull(trunc);
	ck_assert_int_eq(trunc->value[0], st.folded[0]);
	pprof_profile_free(p);
	free(in);
	free(out);
}
END_TEST

/* Folded stacks of a profile as emberctl shows them, "a;b;c count" lines joined. */
static char *folded_of(const uint8_t *buf, size_t len)
{
	struct stackset *set = stackset_new();
	pprof_profile *p = decode(buf, len);
	struct stackset_stack st;
	char *text = NULL;
	size_t text_len = 0;
	FILE *f = open_memstream(&text, &text_len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(stackset_add_profile(set, p, NULL, "samples", 0), 0);
	for (size_t i = 0; i < stackset_len(set); i++) {
		stackset_get(set, i, &st);
		for (uint32_t j = 0; j < st.n; j++)
			fprintf(f, "%s%s", j ? ";" : "", stackset_name(set, st.frames[j]));
		fprintf(f, " %lld\n", (long long)st.value[0]);
	}
	fclose(f);
	stackset_free(set);
	pprof_profile_free(p);
	return text;
}

/*
 * A stripped binary's frames and one without a mapping: pushed, each gets a Line of the
 * name emberctl shows for it (Pyroscope draws only Lines), so the pushed profile's
 * stacks equal the stored one's frame for frame; the address, mapping and build-id
 * stay. With server_symbolization they stay without a Line, for the server to name.
 */
START_TEST(test_unnamed_frames)
{
	struct pprof_builder *b = pprof_builder_new(&cpu_meta);
	const struct pprof_mapping_desc fx = {.start = 0x1000,
					      .limit = 0x9000,
					      .offset = 0x1000,
					      .file = "/opt/fx/fx_stripped",
					      .build_id = "0e3b1d",
					      .has_functions = true};
	struct pushfit_limits lim = {.max_bytes = CONFIG_DEFAULT_MAX_PROFILE_BYTES,
				     .max_samples = CONFIG_DEFAULT_MAX_SAMPLES};
	uint64_t m = pprof_mapping(b, &fx), fstart = pprof_function(b, "_start", NULL, ""), locs[4];
	const int64_t v[2] = {3, 30 * MS};
	struct pushfit_stats st;
	char *want, *got, err[128];
	uint8_t *in, *out;
	size_t len, out_len;
	pprof_profile *p;

	locs[0] = pprof_location(b, m, 0x1234, NULL, 0);
	locs[1] = pprof_location(b, 0, 0x7f00dead, NULL, 0);
	locs[2] = pprof_location(b, m, 0x2000, NULL, 0);
	locs[3] = pprof_location(b, m, 0x1010, &fstart, 1);
	ck_assert_int_eq(pprof_add_sample(b, locs, 4, v, NULL, 0), 0);
	in = encode(b, &len);
	want = folded_of(in, len);
	ck_assert_str_eq(want, "_start;fx_stripped+0x2000;0x7f00dead;fx_stripped+0x1234 3\n");
	for (int server = 0; server <= 1; server++) {
		lim.server_symbolization = server;
		ck_assert_int_eq(pushfit(in, len, &lim, &out, &out_len, &st, err, sizeof(err)), 0);
		got = folded_of(out, out_len);
		ck_assert_str_eq(got, want);
		p = decode(out, out_len);
		ck_assert_uint_eq(p->n_location, 4);
		for (size_t i = 0; i < p->n_location; i++) {
			const Perftools__Profiles__Location *l = p->location[i];

			/* with server_symbolization, only _start has a Line */
			ck_assert_uint_eq(l->n_line, server && l->address != 0x1010 ? 0 : 1);
			if (l->address != 0x7f00dead)
				ck_assert_uint_eq(l->mapping_id, p->mapping[0]->id);
		}
		ck_assert_uint_eq(p->n_mapping, 1);
		ck_assert(!p->mapping[0]->has_functions);
		ck_assert_str_eq(p->string_table[p->mapping[0]->build_id], "0e3b1d");
		pprof_profile_free(p);
		free(got);
		free(out);
	}
	free(want);
	free(in);
}
END_TEST

START_TEST(test_garbage)
{
	const struct pushfit_limits lim = {.max_bytes = CONFIG_DEFAULT_MAX_PROFILE_BYTES,
					   .max_samples = CONFIG_DEFAULT_MAX_SAMPLES};
	const uint8_t junk[] = {0xff, 0xff, 0xff, 0x01};
	struct pushfit_stats st;
	uint8_t *out;
	size_t out_len;
	char err[128] = "";

	ck_assert_int_lt(pushfit(junk, sizeof(junk), &lim, &out, &out_len, &st, err, sizeof(err)),
			 0);
	ck_assert_ptr_null(out);
	ck_assert_str_ne(err, "");
}
END_TEST

Suite *pushfit_suite(void)
{
	Suite *s = suite_create("pushfit");
	TCase *tc = tcase_create("core");

	/* 50000 stacks built, encoded and folded, under a sanitizer too */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_labels_merged);
	tcase_add_test(tc, test_fold_samples);
	tcase_add_test(tc, test_fold_bytes);
	tcase_add_test(tc, test_unnamed_frames);
	tcase_add_test(tc, test_garbage);
	suite_add_tcase(s, tc);
	return s;
}
