// SPDX-License-Identifier: MIT
/* A series' labels as pairs: put, the stored form and reading it back, hostile text. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "labels.h"
#include "suites.h"

START_TEST(test_put_sorted_and_replaced)
{
	struct label_set s = {0};
	bool sanitized = false;
	char out[256];

	ck_assert_int_eq(labels_put(&s, "zone", "a", &sanitized), 0);
	ck_assert_int_eq(labels_put(&s, "env", "prod", &sanitized), 0);
	ck_assert_int_eq(labels_put(&s, "zone", "b", &sanitized), 0); /* replaces */
	ck_assert(!sanitized);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_str_eq(labels_get(&s, "zone"), "b");
	ck_assert_ptr_null(labels_get(&s, "team"));
	ck_assert_int_eq(labels_format(&s, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "env=prod\nzone=b\n");
	ck_assert_int_eq(labels_put(&s, "__name__", "x", NULL), -EINVAL);
	ck_assert_int_eq(labels_put(&s, "bad-name", "x", NULL), -EINVAL);
	ck_assert_int_eq(labels_put(&s, "empty", "", NULL), -EINVAL);
	ck_assert_uint_eq(s.n, 2);
}
END_TEST

/* A value is data: a newline, an '=' or an escape sequence in it stays in that one value. */
START_TEST(test_value_stays_one_label)
{
	struct label_set s = {0}, back;
	bool sanitized = false;
	char out[512];

	ck_assert_int_eq(labels_put(&s, "service_name", "x\nzone=evil\nteam=evil", &sanitized), 0);
	ck_assert(sanitized);
	ck_assert_int_eq(labels_put(&s, "zone", "eu", NULL), 0);
	ck_assert_int_eq(labels_put(&s, "title", "\x1b]0;pwned\x07", NULL), 0);
	ck_assert_int_eq(labels_put(&s, "expr", "a=b=c", NULL), 0);
	ck_assert_int_eq(labels_format(&s, out, sizeof(out)), 0);
	ck_assert_uint_eq(labels_parse(out, &back, NULL, NULL), 0);
	ck_assert_uint_eq(back.n, 4);
	ck_assert_str_eq(labels_get(&back, "service_name"), "x_zone=evil_team=evil");
	ck_assert_str_eq(labels_get(&back, "zone"), "eu");
	ck_assert_str_eq(labels_get(&back, "title"), "_]0;pwned_");
	ck_assert_str_eq(labels_get(&back, "expr"), "a=b=c");
	ck_assert_ptr_null(labels_get(&back, "team"));
	for (size_t i = 0; i < s.n; i++) {
		ck_assert_str_eq(s.v[i].name, back.v[i].name);
		ck_assert_str_eq(s.v[i].value, back.v[i].value);
	}
}
END_TEST

struct rejects {
	char names[8][64];
	enum label_reject why[8];
	size_t n;
};

static void note_reject(void *arg, const char *name, size_t len, enum label_reject why)
{
	struct rejects *r = arg;

	if (r->n < 8) {
		snprintf(r->names[r->n], sizeof(r->names[0]), "%.*s", (int)len, name);
		r->why[r->n++] = why;
	}
}

/* Stored text from a damaged or older history: what is a label comes back, the rest is told. */
START_TEST(test_parse_hostile)
{
	struct label_set s;
	struct rejects r = {0};
	const char *text = "__x=1\n1bad=y\nno_equals\n\nk=\nk=v\nk=w\nv=caf\xc3\xa9\xff\x01\n"
			   "service_name=svc";

	ck_assert_uint_eq(labels_parse(text, &s, note_reject, &r), 5);
	ck_assert_uint_eq(s.n, 3);
	ck_assert_str_eq(labels_get(&s, "service_name"), "svc"); /* no final newline needed */
	ck_assert_str_eq(labels_get(&s, "k"), "v");		 /* the first one wins */
	ck_assert_str_eq(labels_get(&s, "v"), "caf\xc3\xa9\xef\xbf\xbd_");
	ck_assert_uint_eq(r.n, 5);
	ck_assert_str_eq(r.names[0], "__x");
	ck_assert_int_eq(r.why[0], LABEL_REJECT_NAME);
	ck_assert_str_eq(r.names[1], "1bad");
	ck_assert_str_eq(r.names[2], "no_equals");
	ck_assert_int_eq(r.why[2], LABEL_REJECT_MALFORMED);
	ck_assert_str_eq(r.names[3], "k");
	ck_assert_int_eq(r.why[3], LABEL_REJECT_VALUE);
	ck_assert_int_eq(r.why[4], LABEL_REJECT_TWICE);
	ck_assert_uint_eq(labels_parse(NULL, &s, NULL, NULL), 0);
	ck_assert_uint_eq(s.n, 0);
}
END_TEST

/* Over the limit, service_name is kept wherever it stands. */
START_TEST(test_parse_limit_keeps_service)
{
	char text[2048] = "";
	struct label_set s;
	size_t off = 0;

	for (int i = 0; i < 40; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, "l%02d=v\n", i);
	snprintf(text + off, sizeof(text) - off, "service_name=svc\n");
	ck_assert_uint_eq(labels_parse(text, &s, NULL, NULL), 40 - (CONFIG_MAX_SERIES_LABELS - 1));
	ck_assert_uint_eq(s.n, CONFIG_MAX_SERIES_LABELS);
	ck_assert_str_eq(labels_get(&s, "service_name"), "svc");
	ck_assert_ptr_nonnull(labels_get(&s, "l28"));
	ck_assert_ptr_null(labels_get(&s, "l29"));
}
END_TEST

Suite *labels_suite(void)
{
	Suite *s = suite_create("labels");
	TCase *tc = tcase_create("pairs");

	tcase_add_test(tc, test_put_sorted_and_replaced);
	tcase_add_test(tc, test_value_stays_one_label);
	tcase_add_test(tc, test_parse_hostile);
	tcase_add_test(tc, test_parse_limit_keeps_service);
	suite_add_tcase(s, tc);
	return s;
}
