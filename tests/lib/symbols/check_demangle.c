// SPDX-License-Identifier: MIT
/* demangle: C++ and Rust (legacy, v0) names with known readable forms, and the cache. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "suites.h"

static void expect(const char *mangled, const char *want)
{
	char *got = demangle(mangled);

	ck_assert_msg(got, "%s did not demangle", mangled);
	ck_assert_str_eq(got, want);
	free(got);
}

START_TEST(test_cplusplus)
{
	expect("_ZN2ns5KlassIlE6methodEi", "ns::Klass<long>::method(int)");
	expect("_ZNSt6vectorIiSaIiEE9push_backERKi",
	       "std::vector<int, std::allocator<int> >::push_back(int const&)");
	expect("_ZNK3foo3barEv", "foo::bar() const");
}
END_TEST

START_TEST(test_rust_legacy)
{
	/* The trailing 17h<hash>E is dropped, $LT$-style escapes are decoded. */
	expect("_ZN4core3fmt5write17h5d4d0c1c1b0f0e6aE", "core::fmt::write");
	expect("_ZN3std2rt10lang_start17h0123456789abcdefE", "std::rt::lang_start");
	expect("_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$..$u7b$$u7b$"
	       "closure$u7d$$u7d$$GT$17h0123456789abcdefE",
	       "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>");
}
END_TEST

START_TEST(test_rust_v0)
{
	expect("_RNvCs1234_7mycrate3foo", "mycrate::foo");
	expect("_RNvNtCs1cm8vAvGWq0_4core3ptr13drop_in_place", "core::ptr::drop_in_place");
	expect("_RINvNtC3std3mem8align_ofdE", "std::mem::align_of::<f64>");
}
END_TEST

START_TEST(test_not_mangled)
{
	static const char *const plain[] = {
		"main", "foo__bar", "_start",	  "__libc_start_main",
		"_Z",	"_R",	    "_Zgarbage!", "JS:*fib /tmp/app.js:1:13",
		"",
	};

	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		errno = 0;
		ck_assert_msg(!demangle(plain[i]), "%s demangled", plain[i]);
		ck_assert_int_eq(errno, EINVAL);
	}
	ck_assert(!demangle_is_mangled("main"));
	ck_assert(demangle_is_mangled("_ZN1a1bEv"));
}
END_TEST

START_TEST(test_bounds)
{
	char *name = malloc(DEMANGLE_MAX_IN + 2);

	ck_assert_ptr_nonnull(name);
	/* _Z then one over-long identifier: refused before reaching libiberty. */
	memset(name, 'a', DEMANGLE_MAX_IN + 1);
	memcpy(name, "_ZN9999", 7);
	name[DEMANGLE_MAX_IN + 1] = '\0';
	ck_assert_ptr_null(demangle(name));
	free(name);
}
END_TEST

START_TEST(test_cache)
{
	struct demangle_cache *c = demangle_cache_new(1 << 20);
	const char *a, *b;

	ck_assert_ptr_nonnull(c);
	a = demangle_cache_get(c, "_ZN2ns5KlassIlE6methodEi");
	ck_assert_str_eq(a, "ns::Klass<long>::method(int)");
	b = demangle_cache_get(c, "_ZN2ns5KlassIlE6methodEi");
	ck_assert_ptr_eq(a, b);
	ck_assert_ptr_null(demangle_cache_get(c, "main"));
	ck_assert_ptr_null(demangle_cache_get(c, "_Zgarbage!"));
	ck_assert_ptr_null(demangle_cache_get(c, "_Zgarbage!"));
	ck_assert_uint_gt(demangle_cache_bytes(c), 0);
	/* Under the bound, a trim keeps what was demangled. */
	demangle_cache_trim(c);
	ck_assert_ptr_eq(demangle_cache_get(c, "_ZN2ns5KlassIlE6methodEi"), a);
	demangle_cache_free(c);

	/* A full cache stops remembering and trims back to empty. */
	c = demangle_cache_new(1);
	ck_assert_ptr_nonnull(c);
	ck_assert_str_eq(demangle_cache_get(c, "_ZNK3foo3barEv"), "foo::bar() const");
	ck_assert_ptr_null(demangle_cache_get(c, "_ZN2ns5KlassIlE6methodEi"));
	demangle_cache_trim(c);
	ck_assert_uint_eq(demangle_cache_bytes(c), 0);
	ck_assert_str_eq(demangle_cache_get(c, "_ZN2ns5KlassIlE6methodEi"),
			 "ns::Klass<long>::method(int)");
	demangle_cache_free(c);
	demangle_cache_free(NULL);
}
END_TEST

/* clear forgets everything at once (a shrink), whatever the bound; the count follows. */
START_TEST(test_cache_clear)
{
	struct demangle_cache *c = demangle_cache_new(1 << 20);
	size_t held;

	ck_assert_str_eq(demangle_cache_get(c, "_ZNK3foo3barEv"), "foo::bar() const");
	ck_assert_ptr_null(demangle_cache_get(c, "_Zgarbage!")); /* remembered as such */
	ck_assert_uint_eq(demangle_cache_count(c), 2);
	held = demangle_cache_bytes(c);
	ck_assert_uint_gt(held, 0);
	ck_assert_uint_eq(demangle_cache_clear(c), held);
	ck_assert_uint_eq(demangle_cache_bytes(c), 0);
	ck_assert_uint_eq(demangle_cache_count(c), 0);
	ck_assert_uint_eq(demangle_cache_clear(c), 0);
	demangle_cache_set_max(c, 1);
	ck_assert_uint_eq(demangle_cache_max(c), 1);
	ck_assert_str_eq(demangle_cache_get(c, "_ZNK3foo3barEv"), "foo::bar() const");
	ck_assert_ptr_null(demangle_cache_get(c, "_ZN2ns5KlassIlE6methodEi")); /* full */
	demangle_cache_free(c);
}
END_TEST

Suite *demangle_suite(void)
{
	Suite *s = suite_create("demangle");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_cplusplus);
	tcase_add_test(tc, test_rust_legacy);
	tcase_add_test(tc, test_rust_v0);
	tcase_add_test(tc, test_not_mangled);
	tcase_add_test(tc, test_bounds);
	tcase_add_test(tc, test_cache);
	tcase_add_test(tc, test_cache_clear);
	suite_add_tcase(s, tc);
	return s;
}
