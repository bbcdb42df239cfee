// SPDX-License-Identifier: MIT
/*
 * The push client's pure half: requests decoded back with protobuf-c and
 * pprof_decode, the label rules, the legacy ingest query, the reply table and
 * the backoff's bounds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <curl/curl.h>

#include "compress.h"
#include "pprof.h"
#include "push.h"
#include "push/v1/push.pb-c.h"
#include "suites.h"

#define MS (1000000LL)

static const struct pprof_meta cpu_meta = {
	.sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
	.n_sample_types = 2,
	.period_type = {"cpu", "nanoseconds"},
	.period = 10000000,
};

/* A one-sample CPU profile: main -> work. */
static void make_pprof(uint8_t **out, size_t *len)
{
	struct pprof_builder *b = pprof_builder_new(&cpu_meta);
	uint64_t f[2], l[2];
	int64_t v[2] = {3, 30000000};

	ck_assert_ptr_nonnull(b);
	f[0] = pprof_function(b, "work", NULL, "w.c");
	f[1] = pprof_function(b, "main", NULL, "w.c");
	l[0] = pprof_location(b, 0, 0x1000, &f[0], 1);
	l[1] = pprof_location(b, 0, 0x2000, &f[1], 1);
	pprof_builder_set_time(b, 1700000000LL * 1000000000, 10LL * 1000000000);
	ck_assert_int_eq(pprof_add_sample(b, l, 2, v, NULL, 0), 0);
	ck_assert_int_eq(pprof_encode(b, out, len), 0);
	pprof_builder_free(b);
}

static const char *label(const struct push_labels *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++) {
		if (!strcmp(l->v[i].name, name))
			return l->v[i].value;
	}
	return NULL;
}

static void assert_sorted(const struct push_labels *l)
{
	for (size_t i = 1; i < l->n; i++)
		ck_assert_int_lt(strcmp(l->v[i - 1].name, l->v[i].name), 0);
}

static const struct config_label ext[] = {
	{"region", "eu"},
	{"env", "staging"}, /* stored env=prod wins */
};

START_TEST(test_profile_name)
{
	ck_assert_str_eq(push_profile_name("cpu"), "process_cpu");
	ck_assert_str_eq(push_profile_name("memory"), "memory");
	ck_assert_str_eq(push_profile_name("wall"), "wall");
	ck_assert_str_eq(push_profile_name("other"), "other");
}
END_TEST

START_TEST(test_labels)
{
	struct push_profile p = {
		.type = "cpu",
		.app = "ignored",
		.labels = "env=prod\nhostname=h1\nservice_name=checkout\n",
	};
	static const char *const order[] = {"__delta__", "__name__", "env",
					    "hostname",	 "region",   "service_name"};
	struct push_labels l;

	push_series_labels(&p, ext, 2, &l);
	ck_assert_uint_eq(l.n, 6);
	for (size_t i = 0; i < l.n; i++)
		ck_assert_str_eq(l.v[i].name, order[i]);
	ck_assert_str_eq(label(&l, "__name__"), "process_cpu");
	ck_assert_str_eq(label(&l, "__delta__"), "false");
	ck_assert_str_eq(label(&l, "service_name"), "checkout");
	ck_assert_str_eq(label(&l, "env"), "prod");
	ck_assert_str_eq(label(&l, "region"), "eu");
	ck_assert_uint_eq(l.dropped, 0);
	ck_assert_uint_eq(l.shadowed, 1); /* the external env: the stored one wins */
}
END_TEST

START_TEST(test_labels_refused)
{
	struct push_profile p = {
		.type = "cpu",
		.app = "fallback",
		.labels = "__profile_type__=x\n1bad=y\nno_equals\nservice_name=\n\nk=v\nk=w",
	};
	static const struct config_label bad_ext[] = {
		{"__name__", "evil"}, {"ok", "1"}, {"bad-name", "2"}, {"empty", ""}};
	struct push_labels l;

	push_series_labels(&p, bad_ext, 4, &l);
	assert_sorted(&l);
	ck_assert_uint_eq(l.n, 5);
	ck_assert_str_eq(label(&l, "__name__"), "process_cpu");
	ck_assert_str_eq(label(&l, "service_name"), "fallback"); /* never an empty one */
	ck_assert_str_eq(label(&l, "k"), "v");
	ck_assert_str_eq(label(&l, "ok"), "1");
	ck_assert_ptr_null(label(&l, "__profile_type__"));
	/* __profile_type__, 1bad, no_equals, service_name=, __name__, bad-name, empty */
	ck_assert_uint_eq(l.dropped, 7);
	ck_assert_uint_eq(l.n_drops, 7);
	ck_assert_uint_eq(l.shadowed, 1); /* k=w after k=v */
	ck_assert_str_eq(l.drops[0].name, "service_name");
	ck_assert_int_eq(l.drops[0].reason, PUSH_DROP_VALUE);
	ck_assert_str_eq(l.drops[1].name, "__profile_type__");
	ck_assert_int_eq(l.drops[1].reason, PUSH_DROP_NAME);
	ck_assert_str_eq(l.drops[2].name, "1bad");
	ck_assert_str_eq(l.drops[3].name, "no_equals");
	ck_assert_int_eq(l.drops[3].reason, PUSH_DROP_MALFORMED);
	ck_assert_str_eq(l.drops[4].name, "__name__");
	ck_assert_str_eq(l.drops[6].name, "empty");
	ck_assert_int_eq(l.drops[6].reason, PUSH_DROP_VALUE);
	ck_assert_str_eq(push_drop_reason_text(PUSH_DROP_LIMIT),
			 "over the 30 labels a series holds");

	p.app = "";
	p.labels = NULL;
	push_series_labels(&p, NULL, 0, &l);
	ck_assert_uint_eq(l.n, 2);
	ck_assert_ptr_null(label(&l, "service_name")); /* the server adds unknown_service */
}
END_TEST

START_TEST(test_labels_limit)
{
	char text[2048] = "";
	struct push_profile p = {.type = "cpu", .app = "a", .labels = text};
	struct push_labels l;
	size_t off = 0;

	for (int i = 0; i < 40; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, "l%02d=v\n", i);
	snprintf(text + off, sizeof(text) - off, "service_name=svc\n"); /* last, still kept */
	push_series_labels(&p, ext, 2, &l);
	ck_assert_uint_eq(l.n, PUSH_MAX_LABELS);
	ck_assert_uint_eq(l.dropped, 40 - 27 + 2);
	ck_assert_uint_eq(l.n_drops, 40 - 27 + 2);
	/* first the stored set's own limit (service_name and l00-l28), then the series' */
	ck_assert_str_eq(l.drops[0].name, "l29");
	ck_assert_int_eq(l.drops[0].reason, PUSH_DROP_LIMIT);
	ck_assert_str_eq(l.drops[11].name, "l27");
	ck_assert_int_eq(l.drops[11].reason, PUSH_DROP_LIMIT);
	ck_assert_str_eq(label(&l, "service_name"), "svc");
	ck_assert_ptr_nonnull(label(&l, "__name__"));
	ck_assert_ptr_nonnull(label(&l, "__delta__"));
	ck_assert_ptr_nonnull(label(&l, "l26"));
	ck_assert_ptr_null(label(&l, "l27"));
	assert_sorted(&l);
	/* ingest: the server adds pyroscope_spy, one name less fits */
	push_series_labels_for(&p, ext, 2, COLLECTOR_INGEST, &l);
	ck_assert_uint_eq(l.n, PUSH_MAX_LABELS - 1);
	ck_assert_uint_eq(l.dropped, 40 - 26 + 2);
	ck_assert_ptr_null(label(&l, "l26"));
}
END_TEST

/* Values go out as valid UTF-8 whatever the history holds. */
START_TEST(test_labels_utf8)
{
	struct push_profile p = {
		.type = "cpu",
		.app = "caf\xc3\xa9\xff",
		.labels = "team=\xe2\x82\n",
	};
	struct push_labels l;

	push_series_labels(&p, NULL, 0, &l);
	ck_assert_str_eq(label(&l, "service_name"), "caf\xc3\xa9\xef\xbf\xbd");
	ck_assert_str_eq(label(&l, "team"), "\xef\xbf\xbd");
	ck_assert_uint_eq(l.dropped, 0);
}
END_TEST

START_TEST(test_build_request)
{
	struct push_profile p = {
		.type = "cpu",
		.app = "checkout",
		.labels = "hostname=h1\nservice_name=checkout\n",
		.start_ns = 1700000000LL * 1000000000,
		.end_ns = 1700000010LL * 1000000000,
	};
	Push__V1__PushRequest *req;
	Push__V1__RawProfileSeries *s;
	pprof_profile *prof;
	uint8_t *pprof, *body;
	size_t pprof_len, len;
	char err[128];

	make_pprof(&pprof, &pprof_len);
	p.pprof = pprof;
	p.pprof_len = pprof_len;
	ck_assert_int_eq(push_build_request(&p, ext, 2, &body, &len), 0);
	req = push__v1__push_request__unpack(NULL, len, body);
	ck_assert_ptr_nonnull(req);
	ck_assert_uint_eq(req->n_series, 1);
	s = req->series[0];
	ck_assert_uint_eq(s->n_labels, 6);
	ck_assert_str_eq(s->labels[0]->name, "__delta__");
	ck_assert_str_eq(s->labels[0]->value, "false");
	ck_assert_str_eq(s->labels[1]->name, "__name__");
	ck_assert_str_eq(s->labels[1]->value, "process_cpu");
	ck_assert_str_eq(s->labels[5]->name, "service_name");
	ck_assert_str_eq(s->labels[5]->value, "checkout");
	ck_assert_uint_eq(s->n_samples, 1);
	ck_assert_uint_eq(s->n_annotations, 0);
	ck_assert(is_gzip(s->samples[0]->raw_profile.data, s->samples[0]->raw_profile.len));
	ck_assert_str_eq(s->samples[0]->id, "");
	ck_assert_int_eq(pprof_decode(s->samples[0]->raw_profile.data,
				      s->samples[0]->raw_profile.len, &prof, err, sizeof(err)),
			 0);
	ck_assert_uint_eq(prof->n_sample_type, 2);
	ck_assert_uint_eq(prof->n_sample, 1);
	ck_assert_int_eq(prof->sample[0]->value[1], 30000000);
	ck_assert_int_eq(prof->time_nanos, 1700000000LL * 1000000000);
	pprof_profile_free(prof);
	push__v1__push_request__free_unpacked(req, NULL);
	free(body);

	p.pprof_len = 0;
	ck_assert_int_eq(push_build_request(&p, NULL, 0, &body, &len), -EINVAL);
	free(pprof);
}
END_TEST

START_TEST(test_build_ingest)
{
	struct push_profile p = {
		.type = "cpu",
		.app = "my app",
		.labels = "env=a,b}c\nhostname=h1\n",
		.start_ns = 1700000000LL * 1000000000 + 5,
		.end_ns = 1700000010LL * 1000000000 + 1,
	};
	uint8_t *pprof, *body, *plain;
	size_t pprof_len, len, plain_len;
	char *query, *name;
	int name_len;

	make_pprof(&pprof, &pprof_len);
	p.pprof = pprof;
	p.pprof_len = pprof_len;
	ck_assert_int_eq(push_build_ingest(&p, ext, 2, &query, &body, &len), 0);
	ck_assert_msg(!strncmp(query, "name=", 5), "%s", query);
	ck_assert_ptr_nonnull(strstr(query, "&from=1700000000&until=1700000011&format=pprof"
					    "&spyName=ember"));
	ck_assert_ptr_null(strpbrk(query, "{}, "));
	name = curl_easy_unescape(NULL, query + 5, (int)(strchr(query, '&') - query - 5),
				  &name_len);
	/*
	 * the service is named in the braces as push names it; env=a,b}c cannot be
	 * carried (dropped, counted) and the external env takes its place
	 */
	ck_assert_str_eq(name, "my_app{env=staging,hostname=h1,region=eu,service_name=my app}");
	curl_free(name);
	ck_assert_int_eq(gzip_decompress(body, len, EMBER_MAX_PROFILE_BYTES, &plain, &plain_len),
			 0);
	ck_assert_uint_eq(plain_len, pprof_len);
	ck_assert_mem_eq(plain, pprof, pprof_len);
	free(plain);
	free(body);
	free(query);

	/* no labels of its own and no app: the server's fallback name */
	p.app = "";
	p.labels = "";
	ck_assert_int_eq(push_build_ingest(&p, NULL, 0, &query, &body, &len), 0);
	ck_assert_msg(!strncmp(query, "name=unknown_service&", 21), "%s", query);
	free(body);
	free(query);
	free(pprof);
}
END_TEST

static enum push_verdict classify(int curl_code, const char *errbuf, long status, const char *body,
				  char *msg, size_t msglen)
{
	struct push_reply r = {
		.curl_code = curl_code,
		.curl_error = errbuf,
		.status = status,
		.body = body,
		.body_len = body ? strlen(body) : 0,
	};

	return push_classify(&r, msg, msglen);
}

START_TEST(test_classify_table)
{
	static const struct {
		long status;
		enum push_verdict v;
	} table[] = {
		{200, PUSH_SENT},   {204, PUSH_SENT},	{400, PUSH_REJECT}, {401, PUSH_REJECT},
		{403, PUSH_REJECT}, {404, PUSH_REJECT}, {405, PUSH_REJECT}, {413, PUSH_REJECT},
		{415, PUSH_REJECT}, {422, PUSH_REJECT}, {408, PUSH_RETRY},  {429, PUSH_RETRY},
		{500, PUSH_RETRY},  {502, PUSH_RETRY},	{503, PUSH_RETRY},  {504, PUSH_RETRY},
		{409, PUSH_REJECT}, {501, PUSH_REJECT}, {301, PUSH_RETRY},  {100, PUSH_RETRY},
		{0, PUSH_RETRY},
	};
	char msg[256];

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		enum push_verdict v = classify(0, "", table[i].status, NULL, msg, sizeof(msg));

		ck_assert_msg(v == table[i].v, "status %ld", table[i].status);
	}
}
END_TEST

START_TEST(test_classify_messages)
{
	char msg[256];

	ck_assert_int_eq(classify(CURLE_COULDNT_CONNECT,
				  "Failed to connect to 127.0.0.1 port 9: Connection refused", 0,
				  NULL, msg, sizeof(msg)),
			 PUSH_RETRY);
	ck_assert_str_eq(msg, "Failed to connect to 127.0.0.1 port 9: Connection refused");
	ck_assert_int_eq(classify(CURLE_OPERATION_TIMEDOUT, NULL, 0, NULL, msg, sizeof(msg)),
			 PUSH_RETRY);
	ck_assert_str_eq(msg, curl_easy_strerror(CURLE_OPERATION_TIMEDOUT));
	/* a transport error wins over a status already seen */
	ck_assert_int_eq(classify(CURLE_RECV_ERROR, "", 400, NULL, msg, sizeof(msg)), PUSH_RETRY);

	ck_assert_int_eq(classify(0, "", 200, "", msg, sizeof(msg)), PUSH_SENT);
	ck_assert_str_eq(msg, "HTTP 200");
	ck_assert_int_eq(classify(0, "", 400,
				  "{\"code\":\"invalid_argument\",\"message\":\"profile is outside "
				  "of \\\"ingestion window\\\"\\n\"}",
				  msg, sizeof(msg)),
			 PUSH_REJECT);
	ck_assert_str_eq(msg,
			 "HTTP 400 invalid_argument: profile is outside of \"ingestion window\" ");
	ck_assert_int_eq(classify(0, "", 502,
				  "<html>\r\n<head><title>502  Bad\nGateway</title></head>\r\n"
				  "<body>nginx</body></html>",
				  msg, sizeof(msg)),
			 PUSH_RETRY);
	ck_assert_str_eq(msg, "HTTP 502: 502 Bad Gateway");
	ck_assert_int_eq(classify(0, "", 404, "404 page not found\nmore", msg, sizeof(msg)),
			 PUSH_REJECT);
	ck_assert_str_eq(msg, "HTTP 404: 404 page not found");
	ck_assert_int_eq(classify(0, "", 503, NULL, msg, sizeof(msg)), PUSH_RETRY);
	ck_assert_str_eq(msg, "HTTP 503");
	/* the message is bounded by the caller's buffer */
	ck_assert_int_eq(classify(0, "", 400, "{\"message\":\"a long message\"}", msg, 12),
			 PUSH_REJECT);
	ck_assert_str_eq(msg, "HTTP 400: a");
}
END_TEST

static bool message(const char *body, char *code, char *msg)
{
	return push_error_message(body, strlen(body), code, 32, msg, 64);
}

START_TEST(test_error_message)
{
	char code[32], msg[64];

	ck_assert(message("  {\"details\":[{\"message\":\"inner\"}],\"message\":\"outer\","
			  "\"code\":\"unavailable\"}",
			  code, msg));
	ck_assert_str_eq(msg, "outer");
	ck_assert_str_eq(code, "unavailable");
	ck_assert(message("{\"x\":{\"message\":\"nested\"},\"message\":\"top\"}", code, msg));
	ck_assert_str_eq(msg, "top");
	ck_assert_str_eq(code, "");
	ck_assert(message("{\"message\":\"\\u0041\\u00e9\\/\\\\\\t\"}", code, msg));
	ck_assert_str_eq(msg, "A?/\\ ");
	ck_assert(message("{\"message\":\"\\u00\"}", code, msg)); /* short escape */
	ck_assert(!message("{\"message\":\"unterminated", code, msg));
	ck_assert(!message("{\"message\":42}", code, msg));
	ck_assert(!message("[\"message\",\"x\"]", code, msg));
	ck_assert(!message("", code, msg));
	ck_assert(!message("{\"a\":\"}\",", code, msg));
	ck_assert(!push_error_message(NULL, 10, code, sizeof(code), msg, sizeof(msg)));
	/* the body is not a C string: nothing past len is read */
	ck_assert(push_error_message("{\"message\":\"ab\"}XXXX", 16, code, sizeof(code), msg,
				     sizeof(msg)));
	ck_assert_str_eq(msg, "ab");
}
END_TEST

START_TEST(test_backoff)
{
	int64_t lo_prev = 0;

	ck_assert_int_eq(push_backoff_ns(1, 0), 250 * MS);
	ck_assert_int_eq(push_backoff_ns(1, 250 * MS), 500 * MS);
	ck_assert_int_eq(push_backoff_ns(0, 0), 250 * MS);
	ck_assert_int_eq(push_backoff_ns(2, 0), 500 * MS);
	ck_assert_int_eq(push_backoff_ns(2, 500 * MS), 1000 * MS);
	for (unsigned int a = 1; a < 100; a++) {
		int64_t lo = push_backoff_ns(a, 0), hi = lo;

		for (uint64_t r = 1; r < 1000; r++) {
			int64_t d = push_backoff_ns(a, r * 0x9e3779b97f4a7c15ULL);

			lo = d < lo ? d : lo;
			hi = d > hi ? d : hi;
		}
		ck_assert_int_ge(lo, 250 * MS);
		ck_assert_int_le(hi, PUSH_BACKOFF_MAX_NS);
		ck_assert_int_ge(lo, lo_prev); /* never shorter than before */
		lo_prev = lo;
	}
	ck_assert_int_eq(push_backoff_ns(30, 0), PUSH_BACKOFF_MAX_NS / 2);
	ck_assert_int_eq(push_backoff_ns(~0u, PUSH_BACKOFF_MAX_NS / 2), PUSH_BACKOFF_MAX_NS);
	ck_assert_int_le(push_backoff_ns(~0u, ~0ULL), PUSH_BACKOFF_MAX_NS);
}
END_TEST

Suite *push_suite(void)
{
	Suite *s = suite_create("push");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_profile_name);
	tcase_add_test(tc, test_labels);
	tcase_add_test(tc, test_labels_refused);
	tcase_add_test(tc, test_labels_limit);
	tcase_add_test(tc, test_labels_utf8);
	tcase_add_test(tc, test_build_request);
	tcase_add_test(tc, test_build_ingest);
	tcase_add_test(tc, test_classify_table);
	tcase_add_test(tc, test_classify_messages);
	tcase_add_test(tc, test_error_message);
	tcase_add_test(tc, test_backoff);
	suite_add_tcase(s, tc);
	return s;
}
