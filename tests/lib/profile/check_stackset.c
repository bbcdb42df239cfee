// SPDX-License-Identifier: MIT
/* Folded stacks merged from profiles, and the call trees built on them: exact numbers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "stackset.h"
#include "suites.h"

static const struct pprof_meta meta = {
	.sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
	.n_sample_types = 2,
	.period_type = {"cpu", "nanoseconds"},
	.period = 10000000,
};

/* Encodes and decodes b: what a stored profile looks like to a reader. */
static pprof_profile *roundtrip(struct pprof_builder *b)
{
	pprof_profile *p = NULL;
	uint8_t *buf;
	size_t len;
	char err[128];

	ck_assert_int_eq(pprof_encode(b, &buf, &len), 0);
	ck_assert_int_eq(pprof_decode(buf, len, &p, err, sizeof(err)), 0);
	free(buf);
	pprof_builder_free(b);
	return p;
}

/* Stack of locations (leaf first) with count samples of pid. */
static void sample(struct pprof_builder *b, const uint64_t *locs, size_t n, int64_t count, int pid)
{
	int64_t v[2] = {count, count * 10000000};
	struct pprof_label l = {.key = "pid", .num = pid};

	ck_assert_int_eq(pprof_add_sample(b, locs, n, v, &l, 1), 0);
}

/* main -> a -> b (3 samples, pid 1), main -> a (1, pid 2), main -> c with c inlining d
 * (2, pid 1), and an unnamed frame in libx.so under main (4, pid 2). */
static pprof_profile *known_profile(void)
{
	struct pprof_builder *b = pprof_builder_new(&meta);
	struct pprof_mapping_desc md = {.start = 0x400000,
					.limit = 0x500000,
					.offset = 0x1000,
					.file = "/usr/lib/libx.so",
					.build_id = ""};
	uint64_t f_main = pprof_function(b, "main", "main", "m.c");
	uint64_t f_a = pprof_function(b, "a", "a", "m.c");
	uint64_t f_b = pprof_function(b, "b", "b", "m.c");
	uint64_t f_c = pprof_function(b, "c", "c", "m.c");
	uint64_t f_d = pprof_function(b, "d", "d", "m.c");
	uint64_t map = pprof_mapping(b, &md);
	uint64_t l_main = pprof_location(b, 0, 0x10, &f_main, 1);
	uint64_t l_a = pprof_location(b, 0, 0x20, &f_a, 1);
	uint64_t l_b = pprof_location(b, 0, 0x30, &f_b, 1);
	uint64_t dc[2] = {f_d, f_c}; /* innermost first: d is inlined into c */
	uint64_t l_cd = pprof_location(b, 0, 0x40, dc, 2);
	uint64_t l_x = pprof_location(b, map, 0x400123, NULL, 0);

	sample(b, (uint64_t[]){l_b, l_a, l_main}, 3, 3, 1);
	sample(b, (uint64_t[]){l_a, l_main}, 2, 1, 2);
	sample(b, (uint64_t[]){l_cd, l_main}, 2, 2, 1);
	sample(b, (uint64_t[]){l_x, l_main}, 2, 4, 2);
	return roundtrip(b);
}

/* "main;a;b" for stack i. */
static void folded(const struct stackset *s, size_t i, char *buf, size_t len)
{
	struct stackset_stack st;

	stackset_get(s, i, &st);
	buf[0] = '\0';
	for (uint32_t k = 0; k < st.n; k++) {
		strncat(buf, k ? ";" : "", len - strlen(buf) - 1);
		strncat(buf, stackset_name(s, st.frames[k]), len - strlen(buf) - 1);
	}
}

/* The value in slot 0 of the stack folded as want, or -1. */
static int64_t value_of(const struct stackset *s, const char *want)
{
	struct stackset_stack st;
	char buf[256];

	for (size_t i = 0; i < stackset_len(s); i++) {
		folded(s, i, buf, sizeof(buf));
		if (!strcmp(buf, want)) {
			stackset_get(s, i, &st);
			return st.value[0];
		}
	}
	return -1;
}

START_TEST(test_profile_stacks)
{
	pprof_profile *p = known_profile();
	struct stackset *s = stackset_new();

	ck_assert_int_eq(stackset_add_profile(s, p, NULL, "samples", 0), 0);
	ck_assert_uint_eq(stackset_len(s), 4);
	ck_assert_int_eq(stackset_total(s, 0), 10);
	ck_assert_int_eq(value_of(s, "main;a;b"), 3);
	ck_assert_int_eq(value_of(s, "main;a"), 1);
	ck_assert_int_eq(value_of(s, "main;c;d"), 2);
	ck_assert_int_eq(value_of(s, "main;libx.so+0x1123"), 4);
	/* the same profile again folds into the same stacks */
	ck_assert_int_eq(stackset_add_profile(s, p, NULL, "samples", 0), 0);
	ck_assert_uint_eq(stackset_len(s), 4);
	ck_assert_int_eq(value_of(s, "main;a;b"), 6);
	/* the other value type, into the other slot */
	ck_assert_int_eq(stackset_add_profile(s, p, NULL, "cpu", 1), 0);
	ck_assert_int_eq(stackset_total(s, 1), 100000000);
	ck_assert_int_eq(stackset_add_profile(s, p, NULL, "alloc_space", 0), -ENOENT);
	ck_assert_int_eq(stackset_add_profile(s, p, NULL, "samples", 2), -EINVAL);
	stackset_free(s);
	pprof_profile_free(p);
}
END_TEST

START_TEST(test_pid_filter)
{
	pprof_profile *p = known_profile();
	struct stackset *s = stackset_new();
	struct pprof_filter f = {.by_pid = true, .pid = 2};

	ck_assert_int_eq(stackset_add_profile(s, p, &f, "samples", 0), 0);
	ck_assert_uint_eq(stackset_len(s), 2);
	ck_assert_int_eq(stackset_total(s, 0), 5);
	ck_assert_int_eq(value_of(s, "main;a"), 1);
	ck_assert_int_eq(stackset_find_name(s, "b"), -1);
	stackset_free(s);
	pprof_profile_free(p);
}
END_TEST

/* main at two call sites, a at one: main -> a from both (2 + 3 samples). */
static struct pprof_builder *two_sites(void)
{
	struct pprof_builder *b = pprof_builder_new(&meta);
	uint64_t f_main = pprof_function(b, "main", "main", "m.c");
	uint64_t f_a = pprof_function(b, "a", "a", "m.c");
	uint64_t l_main1 = pprof_location(b, 0, 0x10, &f_main, 1);
	uint64_t l_main2 = pprof_location(b, 0, 0x18, &f_main, 1);
	uint64_t l_a = pprof_location(b, 0, 0x20, &f_a, 1);

	sample(b, (uint64_t[]){l_a, l_main1}, 2, 2, 1);
	sample(b, (uint64_t[]){l_a, l_main2}, 2, 3, 2);
	return b;
}

/* Profiles decoded one after another into one arena fold as decoded ones do. */
START_TEST(test_arena_decode)
{
	struct pprof_arena *a = pprof_arena_new();
	struct stackset *s = stackset_new();
	struct pprof_builder *b = two_sites();
	static const uint8_t garbage[] = {0x0a, 0xff, 0xff, 0xff};
	struct pprof_reader *r;
	pprof_profile *p;
	uint8_t *buf;
	size_t len;
	char err[128];

	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(pprof_encode(b, &buf, &len), 0);
	pprof_builder_free(b);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(pprof_decode_arena(a, buf, len, &p, &r, err, sizeof(err)), 0);
		ck_assert_int_eq(stackset_add_read(s, p, r, NULL, "samples", 0), 0);
		pprof_reader_free(r);
		/* garbage in between fails alone and leaves the arena usable */
		ck_assert_int_eq(
			pprof_decode_arena(a, garbage, sizeof(garbage), &p, &r, err, sizeof(err)),
			-EBADMSG);
	}
	/* two locations of main are one frame: one stack */
	ck_assert_uint_eq(stackset_len(s), 1);
	ck_assert_uint_eq(stackset_names(s), 2);
	ck_assert_int_eq(value_of(s, "main;a"), 15);
	ck_assert_int_eq(stackset_total(s, 0), 15);
	free(buf);
	stackset_free(s);
	pprof_arena_free(a);
}
END_TEST

/* Two sets folded into one: the same stacks summed by name, whatever their ids. */
START_TEST(test_merge_sets)
{
	struct stackset *a = stackset_new(), *b = stackset_new();
	const char *ab[] = {"main", "a", "b"}, *c[] = {"main", "c"};

	ck_assert_int_eq(stackset_add(a, ab, 3, 2, 0), 0);
	ck_assert_int_eq(stackset_add(b, c, 2, 5, 0), 0); /* b names main, c first */
	ck_assert_int_eq(stackset_add(b, ab, 3, 3, 0), 0);
	ck_assert_int_eq(stackset_add(b, ab, 3, 7, 1), 0);
	ck_assert_int_eq(stackset_merge(a, b), 0);
	ck_assert_uint_eq(stackset_len(a), 2);
	ck_assert_int_eq(value_of(a, "main;a;b"), 5);
	ck_assert_int_eq(value_of(a, "main;c"), 5);
	ck_assert_int_eq(stackset_total(a, 0), 10);
	ck_assert_int_eq(stackset_total(a, 1), 7);
	stackset_free(a);
	stackset_free(b);
}
END_TEST

START_TEST(test_add_names_and_depth)
{
	struct stackset *s = stackset_new();
	const char *deep[STACKSET_MAX_DEPTH + 5];

	for (size_t i = 0; i < STACKSET_MAX_DEPTH + 5; i++)
		deep[i] = i % 2 ? "odd" : "even";
	ck_assert_int_eq(stackset_add(s, (const char *[]){"x", "y"}, 2, 5, 0), 0);
	ck_assert_int_eq(stackset_add(s, (const char *[]){"x", "y"}, 2, 7, 1), 0);
	ck_assert_int_eq(stackset_add(s, deep, STACKSET_MAX_DEPTH + 5, 1, 0), 0);
	ck_assert_uint_eq(stackset_len(s), 2);
	ck_assert_uint_eq(stackset_truncated(s), 1);
	ck_assert_uint_eq(stackset_names(s), 4);
	ck_assert_int_eq(stackset_total(s, 0), 6);
	ck_assert_int_eq(stackset_total(s, 1), 7);
	stackset_free(s);
}
END_TEST

/* The child of node named name, or 0. */
static uint32_t kid(const struct calltree *t, uint32_t node, const char *name)
{
	for (uint32_t c = t->v[node].first_child; c; c = t->v[c].next_sibling)
		if (!strcmp(calltree_name(t, c), name))
			return c;
	return 0;
}

START_TEST(test_top_down_tree)
{
	pprof_profile *p = known_profile();
	struct stackset *s = stackset_new();
	struct calltree t;
	uint32_t m, a, *order;
	const char *want[] = {"all", "main", "a", "b", "c", "d", "libx.so+0x1123"};

	ck_assert_int_eq(stackset_add_profile(s, p, NULL, "samples", 0), 0);
	ck_assert_int_eq(calltree_build(&t, s, CALLTREE_TOP_DOWN, 0), 0);
	ck_assert_uint_eq(t.n, 7);
	ck_assert_int_eq(t.v[0].total[0], 10);
	m = kid(&t, 0, "main");
	ck_assert_int_eq(t.v[m].total[0], 10);
	ck_assert_int_eq(t.v[m].self[0], 0);
	a = kid(&t, m, "a");
	ck_assert_int_eq(t.v[a].total[0], 4);
	ck_assert_int_eq(t.v[a].self[0], 1);
	ck_assert_int_eq(t.v[kid(&t, a, "b")].self[0], 3);
	ck_assert_int_eq(t.v[kid(&t, kid(&t, m, "c"), "d")].total[0], 2);
	ck_assert_uint_eq(t.v[kid(&t, a, "b")].depth, 3);
	/* pre-order, siblings by name */
	order = calltree_preorder(&t);
	for (size_t i = 0; i < 7; i++)
		ck_assert_str_eq(calltree_name(&t, order[i]), want[i]);
	free(order);
	calltree_free(&t);
	stackset_free(s);
	pprof_profile_free(p);
}
END_TEST

START_TEST(test_callers_callees_recursion)
{
	struct stackset *s = stackset_new();
	struct calltree t;
	uint32_t f, g;
	int64_t id;

	/* main -> f -> g -> f -> h: recursion through f; main -> g -> f; main -> k */
	ck_assert_int_eq(stackset_add(s, (const char *[]){"main", "f", "g", "f", "h"}, 5, 6, 0), 0);
	ck_assert_int_eq(stackset_add(s, (const char *[]){"main", "g", "f"}, 3, 3, 0), 0);
	ck_assert_int_eq(stackset_add(s, (const char *[]){"main", "k"}, 2, 1, 0), 0);
	id = stackset_find_name(s, "f");
	ck_assert_int_ge(id, 0);

	/* callees from f's outermost frame: f -> g -> f -> h (6), f itself (3) */
	ck_assert_int_eq(calltree_build(&t, s, CALLTREE_CALLEES, (uint32_t)id), 0);
	f = kid(&t, 0, "f");
	ck_assert_int_eq(t.v[0].total[0], 9);
	ck_assert_int_eq(t.v[f].total[0], 9);
	ck_assert_int_eq(t.v[f].self[0], 3);
	g = kid(&t, f, "g");
	ck_assert_int_eq(t.v[g].total[0], 6);
	ck_assert_int_eq(t.v[kid(&t, kid(&t, g, "f"), "h")].self[0], 6);
	ck_assert_uint_eq(t.n, 5);
	calltree_free(&t);

	/* callers from f's innermost frame: f <- g (9) <- f (6) <- main; g <- main (3) */
	ck_assert_int_eq(calltree_build(&t, s, CALLTREE_CALLERS, (uint32_t)id), 0);
	f = kid(&t, 0, "f");
	ck_assert_int_eq(t.v[f].total[0], 9);
	g = kid(&t, f, "g");
	ck_assert_int_eq(t.v[g].total[0], 9);
	ck_assert_int_eq(t.v[kid(&t, g, "f")].total[0], 6);
	ck_assert_int_eq(t.v[kid(&t, g, "main")].total[0], 3);
	ck_assert_int_eq(t.v[kid(&t, kid(&t, g, "f"), "main")].self[0], 6);
	ck_assert_uint_eq(kid(&t, 0, "k"), 0);
	calltree_free(&t);
	stackset_free(s);
}
END_TEST

Suite *stackset_suite(void)
{
	Suite *s = suite_create("stackset");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_profile_stacks);
	tcase_add_test(tc, test_pid_filter);
	tcase_add_test(tc, test_arena_decode);
	tcase_add_test(tc, test_merge_sets);
	tcase_add_test(tc, test_add_names_and_depth);
	tcase_add_test(tc, test_top_down_tree);
	tcase_add_test(tc, test_callers_callees_recursion);
	suite_add_tcase(s, tc);
	return s;
}
