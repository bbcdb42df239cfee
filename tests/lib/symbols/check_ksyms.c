// SPDX-License-Identifier: MIT
/* ksyms: known answers on literal kallsyms text, and this machine's kallsyms. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ksyms.h"
#include "suites.h"

static const char sample[] = "ffffffff81000000 T srso_alias_untrain_ret\n"
			     "ffffffff81000000 T _stext\n"
			     "ffffffff81000000 T _text\n"
			     "ffffffff81000000 T __pi__text\n"
			     "ffffffff81000100 t local_fn\n"
			     "ffffffff81000100 T __global_alias\n"
			     "ffffffff81000100 T global_fn\n"
			     "ffffffff81000200 D some_data\n"
			     "ffffffff81000300 W weak_fn\n"
			     "ffffffff81000400 T last_core_fn\n"
			     "ffffffff81000500 T _etext\n"
			     "ffffffff81100000 b some_bss\n"
			     "0000000000000000 A fixed_percpu_data\n"
			     "ffffffffc0200000 t mod_fn_a\t[mymod]\n"
			     "ffffffffc0200080 T mod_fn_b\t[mymod]\n"
			     "ffffffffc0300000 t other_fn\t[other]\n"
			     "this is not kallsyms\n"
			     "ffffffffc0400000 T\n"
			     "zzzzzzzzzzzzzzzz T bad_addr\n"
			     "ffffffffc0500000 t unterminated_mod\t[oops\n";

static struct ksyms *parse_ok(const char *text)
{
	struct ksyms *k = NULL;

	ck_assert_int_eq(ksyms_parse(text, strlen(text), &k), 0);
	ck_assert_ptr_nonnull(k);
	return k;
}

START_TEST(test_lookup)
{
	struct ksyms *k = parse_ok(sample);
	const char *mod = "x";

	/* one per address: 81000000, 0100, 0300, 0400, _etext, three module symbols */
	ck_assert_uint_eq(ksyms_count(k), 8);
	ck_assert_str_eq(ksyms_lookup(k, 0xffffffff81000000, &mod), "srso_alias_untrain_ret");
	ck_assert_ptr_null(mod);
	ck_assert_str_eq(ksyms_lookup(k, 0xffffffff810000ff, NULL), "srso_alias_untrain_ret");
	/* among aliases: fewer leading underscores, then global over local */
	ck_assert_str_eq(ksyms_lookup(k, 0xffffffff81000150, NULL), "global_fn");
	/* data symbols are not text: global_fn runs up to weak_fn */
	ck_assert_str_eq(ksyms_lookup(k, 0xffffffff81000250, NULL), "global_fn");
	ck_assert_str_eq(ksyms_lookup(k, 0xffffffff81000300, NULL), "weak_fn");
	ck_assert_str_eq(ksyms_lookup(k, 0xffffffff810004ff, NULL), "last_core_fn");
	/* past _etext lies no function */
	ck_assert_ptr_null(ksyms_lookup(k, 0xffffffff81000500, NULL));
	ck_assert_ptr_null(ksyms_lookup(k, 0xffffffff81100000, NULL));
	ck_assert_ptr_null(ksyms_lookup(k, 0xffffffff80ffffff, NULL));
	ck_assert_ptr_null(ksyms_lookup(k, 0, NULL));
	ksyms_free(k);
}
END_TEST

START_TEST(test_modules)
{
	struct ksyms *k = parse_ok(sample);
	const char *mod = NULL;

	ck_assert_str_eq(ksyms_lookup(k, 0xffffffffc0200010, &mod), "mod_fn_a");
	ck_assert_str_eq(mod, "mymod");
	ck_assert_str_eq(ksyms_lookup(k, 0xffffffffc0200090, &mod), "mod_fn_b");
	ck_assert_str_eq(mod, "mymod");
	ck_assert_str_eq(ksyms_lookup(k, 0xffffffffc0300004, &mod), "other_fn");
	ck_assert_str_eq(mod, "other");
	/* a module's last symbol has no known end: only a bounded tail is its */
	ck_assert_str_eq(ksyms_lookup(k, 0xffffffffc0201000, &mod), "mod_fn_b");
	ck_assert_ptr_null(ksyms_lookup(k, 0xffffffffc02f0000, &mod));
	ck_assert_ptr_null(mod);
	ck_assert_ptr_null(ksyms_lookup(k, 0xffffffffffff0000, &mod));
	ksyms_free(k);
}
END_TEST

START_TEST(test_hidden)
{
	static const char zeros[] = "0000000000000000 T _stext\n"
				    "0000000000000000 t foo\n"
				    "0000000000000000 t bar\t[mod]\n";
	struct ksyms *k = NULL;

	ck_assert_int_eq(ksyms_parse(zeros, strlen(zeros), &k), -ENOENT);
	ck_assert_ptr_null(k);
	ck_assert_int_eq(ksyms_parse("", 0, &k), -ENOENT);
	ck_assert_int_eq(ksyms_parse("garbage\n", 8, &k), -ENOENT);
	ck_assert_ptr_null(ksyms_lookup(NULL, 1, NULL));
	ck_assert_uint_eq(ksyms_count(NULL), 0);
	ksyms_free(NULL);
}
END_TEST

START_TEST(test_no_final_newline)
{
	static const char text[] = "ffffffff81000000 T a\nffffffff81000010 T b";
	struct ksyms *k = parse_ok(text);

	ck_assert_str_eq(ksyms_lookup(k, 0xffffffff81000011, NULL), "b");
	ksyms_free(k);
}
END_TEST

/* The machine's own kallsyms: schedule is named, wherever it is. */
START_TEST(test_load)
{
	unsigned long long addr = 0;
	struct ksyms *k = NULL;
	char line[1024], name[512], type;
	FILE *f;
	int err;

	err = ksyms_load(&k);
	if (err == -ENOENT || err == -EACCES) {
		fprintf(stderr, "ksyms: kallsyms hidden here (%s), load test skipped\n",
			strerror(-err));
		return;
	}
	ck_assert_int_eq(err, 0);
	ck_assert_uint_gt(ksyms_count(k), 1000);
	f = fopen("/proc/kallsyms", "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %511s", &addr, &type, name) == 3 &&
		    !strcmp(name, "schedule"))
			break;
	fclose(f);
	ck_assert_str_eq(name, "schedule");
	ck_assert_str_eq(ksyms_lookup(k, addr + 1, NULL), "schedule");
	ksyms_free(k);
}
END_TEST

Suite *ksyms_suite(void)
{
	Suite *s = suite_create("ksyms");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_lookup);
	tcase_add_test(tc, test_modules);
	tcase_add_test(tc, test_hidden);
	tcase_add_test(tc, test_no_final_newline);
	tcase_add_test(tc, test_load);
	suite_add_tcase(s, tc);
	return s;
}
