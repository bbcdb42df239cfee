// SPDX-License-Identifier: MIT
/*
 * Flame graph writer: exact geometry of a known tree, hostile names escaped,
 * diff colours by sign, tiny frames left out and the frame count bounded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "flamegraph.h"
#include "suites.h"

/* all 10 = a 6 (b 2, c 3, self 1) + d 4: 118 px per sample over 1180 px. */
static const struct flame_frame known[] = {
	{"all", 0, 10, 0}, {"a", 1, 6, 0}, {"b", 2, 2, 0}, {"c", 2, 3, 0}, {"d", 1, 4, 0},
};

static const struct flame_doc known_doc = {
	.title = "CPU",
	.subtitle = "app x",
	.unit = "samples",
	.frames = known,
	.n_frames = 5,
};

static char *render(const struct flame_doc *doc, enum flame_format fmt, size_t *len)
{
	char *out = NULL;
	size_t n = 0;

	ck_assert_int_eq(flame_render(doc, fmt, &out, &n), 0);
	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq(strlen(out), n);
	if (len)
		*len = n;
	return out;
}

/* Occurrences of needle; not strstr in a loop, which ASan makes quadratic on 12 MB. */
static size_t count(const char *hay, const char *needle)
{
	size_t n = 0, k = strlen(needle);

	for (const char *p = hay; *p; p++) {
		if (*p == *needle && !strncmp(p, needle, k)) {
			n++;
			p += k - 1;
		}
	}
	return n;
}

/* Valid UTF-8 with no control byte but \n and \t: what flame_sanitize leaves alone. */
static bool clean_utf8(const char *s)
{
	size_t len = strlen(s);
	char *copy = malloc(len * 3 + 8);
	bool same = true;
	const char *line = s;

	ck_assert_ptr_nonnull(copy);
	while (same && *line) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		char *part = strndup(line, n);

		ck_assert_ptr_nonnull(part);
		for (char *t = part; (t = strchr(t, '\t'));)
			*t = ' ';
		same = flame_sanitize(part, copy, len * 3 + 8) == n && !memcmp(copy, part, n);
		free(part);
		line += n + (nl != NULL);
	}
	free(copy);
	return same;
}

START_TEST(test_geometry)
{
	struct flame_layout l;
	/* frame, x, y, width: height 60 + 3 * 16 + 30 = 138; depth d's top 92 - 16 d */
	static const double want[5][4] = {
		{0, 10, 92, 1180}, {1, 10, 76, 708},  {2, 10, 60, 236},
		{3, 246, 60, 354}, {4, 718, 76, 472},
	};

	ck_assert_int_eq(flame_layout(&known_doc, &l), 0);
	ck_assert_uint_eq(l.n_rects, 5);
	ck_assert_uint_eq(l.dropped, 0);
	ck_assert_int_eq(l.total, 10);
	ck_assert_uint_eq(l.max_depth, 2);
	ck_assert_double_eq(l.height, 138);
	for (size_t i = 0; i < 5; i++) {
		ck_assert_uint_eq(l.rects[i].frame, (size_t)want[i][0]);
		ck_assert_double_eq_tol(l.rects[i].x, want[i][1], 1e-9);
		ck_assert_double_eq_tol(l.rects[i].y, want[i][2], 1e-9);
		ck_assert_double_eq_tol(l.rects[i].w, want[i][3], 1e-9);
	}
	flame_layout_free(&l);
}
END_TEST

START_TEST(test_svg_markup)
{
	char *svg = render(&known_doc, FLAME_SVG, NULL);

	ck_assert(!strncmp(svg, "<?xml version=\"1.0\" encoding=\"UTF-8\"", 36));
	ck_assert_uint_eq(count(svg, "<g class=\"f\""), 5);
	ck_assert_ptr_nonnull(strstr(svg,
				     "<g class=\"f\" data-name=\"c\" data-d=\"2\" data-x=\"2\" "
				     "data-w=\"3\" data-v=\"3\"><rect x=\"246.00\" y=\"60\" "
				     "width=\"354.00\" height=\"15\""));
	ck_assert_ptr_nonnull(strstr(svg, "viewBox=\"0 0 1200 138\""));
	ck_assert_ptr_nonnull(strstr(svg, "data-total=\"10\""));
	/* labels: "all" fits 1180 px; "d" fits 472 px */
	ck_assert_ptr_nonnull(strstr(svg, ">all</text>"));
	ck_assert_ptr_nonnull(strstr(svg, ">d</text>"));
	ck_assert_uint_eq(count(svg, "]]>"), 1);
	ck_assert_uint_eq(count(svg, "</script>"), 1);
	/* nothing to fetch: no link, and no URL but the SVG namespace */
	ck_assert_ptr_null(strstr(svg, "href"));
	ck_assert_uint_eq(count(svg, "://"), 1);
	ck_assert(clean_utf8(svg));
	free(svg);
}
END_TEST

START_TEST(test_html_page)
{
	char *html = render(&known_doc, FLAME_HTML, NULL);

	ck_assert(!strncmp(html, "<!DOCTYPE html>", 15));
	ck_assert_uint_eq(count(html, "<g class=\"f\""), 5);
	ck_assert_ptr_nonnull(strstr(html, "Content-Security-Policy"));
	ck_assert_ptr_nonnull(strstr(html, "id=\"search-box\""));
	/* no resource is ever fetched: no URL but the SVG namespace */
	ck_assert_uint_eq(count(html, "://"), 1);
	ck_assert_ptr_null(strstr(html, "href"));
	ck_assert_ptr_null(strstr(html, " src="));
	ck_assert_uint_eq(count(html, "</script>"), 1);
	ck_assert_ptr_null(strstr(html, "<![CDATA["));
	free(html);
}
END_TEST

START_TEST(test_labels_truncated)
{
	static const struct flame_frame fr[] = {
		{"root", 0, 100, 0},
		{"abcdefghijklmnopqrstuvwxyz", 1, 5, 0}, /* 59 px: 7 characters */
		{"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 1, 5, 0},
		{"wide", 1, 1, 0}, /* 11.8 px: none */
	};
	struct flame_doc doc = {.title = "t", .frames = fr, .n_frames = 4};
	char *svg = render(&doc, FLAME_SVG, NULL);

	/* floor((59 - 6) / 7.08) = 7 characters: 5 and ".." */
	ck_assert_ptr_nonnull(strstr(svg, ">abcde..</text>"));
	/* counted in characters, not bytes */
	ck_assert_ptr_nonnull(strstr(svg, ">\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9..</text>"));
	ck_assert_ptr_nonnull(strstr(svg, "data-name=\"wide\""));
	ck_assert_ptr_null(strstr(svg, ">wide</text>"));
	free(svg);
}
END_TEST

START_TEST(test_hostile_names)
{
	static const char *const names[] = {
		"std::map<int, std::vector<char> >::operator[](unsigned long) & \"q\" 'a'",
		"</script><script>alert(1)</script>",
		"]]><x/>",
		"ctl\x01\x1b[31m\x7f\x08tab\there",
		"bad\xff\xfe utf8 \xc0\x80 overlong \xed\xa0\x80 surrogate \xf4\x90\x80\x80 big",
		"cut \xe2\x82",
		"\xef\xbf\xbe nonchar",
		"${x}`back`\\u0041",
	};
	struct flame_frame fr[9] = {{"&root<>", 0, 9, 0}};
	struct flame_doc doc = {.title = "<t & \"x\">",
				.subtitle = "\x01sub\xff",
				.unit = "s\"",
				.frames = fr,
				.n_frames = 9};

	for (size_t i = 0; i < 8; i++)
		fr[i + 1] = (struct flame_frame){names[i], 1, 1, 0};
	for (int fmt = FLAME_SVG; fmt <= FLAME_HTML; fmt++) {
		char *out = render(&doc, fmt, NULL);

		ck_assert_ptr_nonnull(strstr(out,
					     "data-name=\"std::map&lt;int, std::vector&lt;char&gt; "
					     "&gt;::operator[](unsigned long) &amp; &quot;q&quot; "
					     "&#39;a&#39;\""));
		ck_assert_ptr_nonnull(strstr(out, "data-name=\"&lt;/script&gt;&lt;script&gt;"));
		ck_assert_ptr_nonnull(strstr(out, "data-name=\"]]&gt;&lt;x/&gt;\""));
		/* each bad byte or sequence is one U+FFFD */
		ck_assert_ptr_nonnull(strstr(out, "data-name=\"ctl\xef\xbf\xbd\xef\xbf\xbd[31m"
						  "\xef\xbf\xbd\xef\xbf\xbdtab\xef\xbf\xbdhere\""));
		ck_assert_ptr_nonnull(strstr(out, "data-name=\"bad\xef\xbf\xbd\xef\xbf\xbd utf8 "));
		ck_assert_ptr_nonnull(strstr(out, "data-name=\"cut \xef\xbf\xbd\xef\xbf\xbd\""));
		ck_assert_ptr_nonnull(strstr(out, "data-name=\"\xef\xbf\xbd nonchar\""));
		ck_assert_ptr_nonnull(strstr(out, "data-name=\"${x}`back`\\u0041\""));
		ck_assert_ptr_nonnull(strstr(out, "&lt;t &amp; &quot;x&quot;&gt;"));
		ck_assert_ptr_nonnull(strstr(out, "data-unit=\"s&quot;\""));
		ck_assert_ptr_null(strstr(out, "<x/>"));
		ck_assert_ptr_null(strstr(out, "<t &"));
		ck_assert_ptr_null(strstr(out, "\x01"));
		ck_assert_ptr_null(strstr(out, "alert(1)</script>"));
		ck_assert_uint_eq(count(out, "</script>"), 1);
		ck_assert_uint_eq(count(out, "]]>"), fmt == FLAME_SVG);
		ck_assert(clean_utf8(out));
		free(out);
	}
}
END_TEST

START_TEST(test_long_name)
{
	size_t n = 100000, len;
	char *name = malloc(n + 1);
	struct flame_frame fr[1] = {{NULL, 0, 1, 0}};
	struct flame_doc doc = {.title = "t", .frames = fr, .n_frames = 1};
	char *svg;

	memset(name, '<', n);
	name[n] = '\0';
	fr[0].name = name;
	svg = render(&doc, FLAME_SVG, &len);
	/* cut at FLAME_MAX_NAME bytes: 1020 '<' (4 bytes escaped each) and "..." */
	ck_assert_uint_lt(len, 20000);
	ck_assert_uint_eq(count(svg, "&lt;"),
			  1020 + 163); /* the name, and its label: 163 and ".." */
	ck_assert_ptr_nonnull(strstr(svg, "&lt;...\" data-d=\"0\""));
	free(svg);
	free(name);
}
END_TEST

START_TEST(test_sanitize)
{
	char out[16];

	ck_assert_uint_eq(flame_sanitize("plain", out, sizeof(out)), 5);
	ck_assert_str_eq(out, "plain");
	ck_assert_uint_eq(flame_sanitize(NULL, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "");
	/* 16 bytes: 12 kept, "..." and the NUL */
	ck_assert_uint_eq(flame_sanitize("0123456789abcdefghij", out, sizeof(out)), 15);
	ck_assert_str_eq(out, "0123456789ab...");
	/* never cuts inside a character */
	flame_sanitize("0123456789\xe2\x82\xac\xe2\x82\xac", out, sizeof(out));
	ck_assert_str_eq(out, "0123456789...");
	flame_sanitize("\xe2\x82\xac\xf0\x9f\x94\xa5", out, sizeof(out));
	ck_assert_str_eq(out, "\xe2\x82\xac\xf0\x9f\x94\xa5");
}
END_TEST

START_TEST(test_diff_colours)
{
	/* base: f 5, g 5 of 10; new: f 15, g 5 of 20: f's share 50% -> 75%, g's 50% -> 25% */
	static const struct flame_frame fr[] = {
		{"all", 0, 20, 10},
		{"f", 1, 15, 5},
		{"g", 1, 5, 5},
	};
	struct flame_doc doc = {.title = "diff", .diff = true, .frames = fr, .n_frames = 3};
	struct flame_layout l;
	uint8_t rgb[3];
	char *svg;

	ck_assert_int_eq(flame_layout(&doc, &l), 0);
	ck_assert_uint_eq(l.n_rects, 3);
	ck_assert_int_eq(l.total, 20);
	ck_assert_int_eq(l.base_total, 10);
	/* unchanged root: grey */
	ck_assert_uint_eq(l.rects[0].rgb[0], l.rects[0].rgb[2]);
	ck_assert_uint_eq(l.rects[0].rgb[0], l.rects[0].rgb[1]);
	/* f grew 25 points, the most: full red; g shrank as much: full blue */
	ck_assert_double_eq_tol(l.rects[1].delta, 0.25, 1e-12);
	ck_assert_double_eq_tol(l.rects[2].delta, -0.25, 1e-12);
	ck_assert_uint_gt(l.rects[1].rgb[0], l.rects[1].rgb[2]);
	ck_assert_uint_gt(l.rects[2].rgb[2], l.rects[2].rgb[0]);
	/* widths: the mean of the two shares, (75 + 50) / 2 and (25 + 50) / 2 */
	ck_assert_double_eq_tol(l.rects[1].w, 1180 * 0.625, 1e-9);
	ck_assert_double_eq_tol(l.rects[2].x, 10 + 1180 * 0.625, 1e-9);
	ck_assert_double_eq_tol(l.rects[2].w, 1180 * 0.375, 1e-9);
	flame_layout_free(&l);

	/* intensity grows with the change, each way */
	flame_diff_color(0.1, 0.4, rgb);
	ck_assert_uint_gt(rgb[0], rgb[2]);
	ck_assert_uint_gt(rgb[1], 40);
	flame_diff_color(-0.4, 0.4, rgb);
	ck_assert_uint_gt(rgb[2], rgb[0]);
	flame_diff_color(0, 0, rgb);
	ck_assert(rgb[0] == rgb[1] && rgb[1] == rgb[2]);
	flame_diff_color(0.3, 0.2, rgb);
	ck_assert(rgb[0] == 222 && rgb[1] == 40 && rgb[2] == 40);

	svg = render(&doc, FLAME_SVG, NULL);
	ck_assert_ptr_nonnull(strstr(svg, "data-diff=\"1\""));
	ck_assert_ptr_nonnull(strstr(svg,
				     "data-name=\"f\" data-d=\"1\" data-x=\"0\" data-w=\"0.625\" "
				     "data-v=\"15\" data-b=\"5\""));
	free(svg);
}
END_TEST

START_TEST(test_diff_vanished)
{
	/* g is gone from the new window: still drawn, from its base share, in blue */
	static const struct flame_frame fr[] = {
		{"all", 0, 10, 10},
		{"f", 1, 10, 5},
		{"g", 1, 0, 5},
	};
	struct flame_doc doc = {.title = "diff", .diff = true, .frames = fr, .n_frames = 3};
	struct flame_layout l;

	ck_assert_int_eq(flame_layout(&doc, &l), 0);
	ck_assert_uint_eq(l.n_rects, 3);
	ck_assert_double_eq_tol(l.rects[2].w, 1180 * 0.25, 1e-9);
	ck_assert_uint_gt(l.rects[2].rgb[2], l.rects[2].rgb[0]);
	flame_layout_free(&l);
}
END_TEST

START_TEST(test_diff_noise_pale)
{
	/* half a point is the biggest change: half-way to red, not full red */
	static const struct flame_frame fr[] = {
		{"all", 0, 1000, 1000},
		{"f", 1, 505, 500},
		{"g", 1, 495, 500},
	};
	struct flame_doc doc = {.title = "diff", .diff = true, .frames = fr, .n_frames = 3};
	struct flame_layout l;

	ck_assert_int_eq(flame_layout(&doc, &l), 0);
	ck_assert_uint_eq(l.rects[1].rgb[0], 222);
	ck_assert_uint_eq(l.rects[1].rgb[1], 131);
	ck_assert_uint_eq(l.rects[1].rgb[2], 131);
	ck_assert_uint_eq(l.rects[2].rgb[2], 224); /* 222 + (225 - 222) / 2, rounded */
	ck_assert_uint_eq(l.rects[2].rgb[0], 136);
	flame_layout_free(&l);
}
END_TEST

START_TEST(test_hot_colours_stable)
{
	uint8_t a[3], b[3], c[3];

	flame_hot_color("main", a);
	flame_hot_color("main", b);
	flame_hot_color("other", c);
	ck_assert(!memcmp(a, b, 3));
	ck_assert(memcmp(a, c, 3));
	ck_assert_uint_ge(a[0], 205); /* warm: red leads */
	ck_assert_uint_le(a[2], 55);
}
END_TEST

START_TEST(test_tiny_frames_dropped)
{
	/* 1e6 samples: 1 sample is 0.00118 px; 100 such leaves, one with callees */
	size_t n = 2 + 100 + 3, k = 0;
	struct flame_frame *fr = calloc(n, sizeof(*fr));
	struct flame_doc doc = {.title = "t", .subtitle = "sub", .frames = fr, .n_frames = n};
	struct flame_layout l;
	char *svg;

	fr[k++] = (struct flame_frame){"all", 0, 1000000, 0};
	fr[k++] = (struct flame_frame){"big", 1, 999900, 0};
	for (int i = 0; i < 100; i++) {
		fr[k++] = (struct flame_frame){"tiny", 1, 1, 0};
		if (i == 50) {
			fr[k++] = (struct flame_frame){"callee", 2, 1, 0};
			fr[k++] = (struct flame_frame){"callee2", 3, 1, 0};
			fr[k++] = (struct flame_frame){"callee", 2, 0, 0};
		}
	}
	ck_assert_uint_eq(k, n);
	ck_assert_int_eq(flame_layout(&doc, &l), 0);
	ck_assert_uint_eq(l.n_rects, 2);
	ck_assert_uint_eq(l.dropped, 103);
	ck_assert_uint_eq(l.max_depth, 1);
	flame_layout_free(&l);
	svg = render(&doc, FLAME_SVG, NULL);
	ck_assert_uint_eq(count(svg, "<g class=\"f\""), 2);
	ck_assert_ptr_nonnull(strstr(svg, ">sub (103 frames too narrow to draw)</text>"));
	free(svg);
	free(fr);
}
END_TEST

START_TEST(test_rect_cap)
{
	/* 5000 columns 12 deep, 0.236 px each: 60001 frames, at most 50000 drawn */
	size_t n = 1 + 5000 * 12, k = 0, len;
	struct flame_frame *fr = calloc(n, sizeof(*fr));
	struct flame_doc doc = {.title = "t", .frames = fr, .n_frames = n};
	struct flame_layout l;
	char *svg;

	fr[k++] = (struct flame_frame){"all", 0, 5000, 0};
	for (int c = 0; c < 5000; c++) {
		for (uint32_t d = 1; d <= 12; d++)
			fr[k++] = (struct flame_frame){"column", d, 1, 0};
	}
	ck_assert_int_eq(flame_layout(&doc, &l), 0);
	ck_assert_uint_eq(l.n_rects, FLAME_MAX_RECTS);
	ck_assert_uint_eq(l.dropped, n - FLAME_MAX_RECTS);
	/* pre-order: whole columns first, and never a callee without its caller */
	ck_assert_uint_eq(l.rects[FLAME_MAX_RECTS - 1].frame, FLAME_MAX_RECTS - 1);
	flame_layout_free(&l);
	svg = render(&doc, FLAME_SVG, &len);
	ck_assert_uint_eq(count(svg, "<g class=\"f\""), FLAME_MAX_RECTS);
	ck_assert_uint_lt(len, 12 * 1024 * 1024);
	free(svg);
	free(fr);
}
END_TEST

START_TEST(test_bad_trees)
{
	static const struct flame_frame jump[] = {{"a", 0, 1, 0}, {"b", 2, 1, 0}};
	static const struct flame_frame late[] = {{"a", 1, 1, 0}};
	/* children wider than their parent are cut to fit */
	static const struct flame_frame wide[] = {{"a", 0, 2, 0}, {"b", 1, 3, 0}, {"c", 1, 3, 0}};
	struct flame_doc doc = {.title = "t", .frames = jump, .n_frames = 2};
	struct flame_layout l;
	char *out = NULL;
	size_t len;

	ck_assert_int_eq(flame_layout(&doc, &l), -EINVAL);
	ck_assert_int_eq(flame_render(&doc, FLAME_SVG, &out, &len), -EINVAL);
	ck_assert_ptr_null(out);
	doc.frames = late;
	doc.n_frames = 1;
	ck_assert_int_eq(flame_layout(&doc, &l), -EINVAL);
	doc.frames = wide;
	doc.n_frames = 3;
	ck_assert_int_eq(flame_layout(&doc, &l), 0);
	ck_assert_uint_eq(l.n_rects, 2);
	ck_assert_double_eq_tol(l.rects[1].w, 1180, 1e-9);
	ck_assert_uint_eq(l.dropped, 1);
	flame_layout_free(&l);
	/* empty: a graph with no frames */
	doc.n_frames = 0;
	out = render(&doc, FLAME_HTML, &len);
	ck_assert_uint_eq(count(out, "<g class=\"f\""), 0);
	free(out);
}
END_TEST

START_TEST(test_format_of)
{
	ck_assert_int_eq(flame_format_of("cpu.svg"), FLAME_SVG);
	ck_assert_int_eq(flame_format_of("/tmp/x.y/CPU.SVG"), FLAME_SVG);
	ck_assert_int_eq(flame_format_of("cpu.html"), FLAME_HTML);
	ck_assert_int_eq(flame_format_of("cpu.htm"), FLAME_HTML);
	ck_assert_int_eq(flame_format_of("cpu.png"), -1);
	ck_assert_int_eq(flame_format_of("cpu"), -1);
	ck_assert_int_eq(flame_format_of("dir.svg/cpu"), -1);
	ck_assert_int_eq(flame_format_of("-"), -1);
}
END_TEST

Suite *flamegraph_suite(void)
{
	Suite *s = suite_create("flamegraph");
	TCase *t = tcase_create("flamegraph");

	tcase_add_test(t, test_geometry);
	tcase_add_test(t, test_svg_markup);
	tcase_add_test(t, test_html_page);
	tcase_add_test(t, test_labels_truncated);
	tcase_add_test(t, test_hostile_names);
	tcase_add_test(t, test_long_name);
	tcase_add_test(t, test_sanitize);
	tcase_add_test(t, test_diff_colours);
	tcase_add_test(t, test_diff_vanished);
	tcase_add_test(t, test_diff_noise_pale);
	tcase_add_test(t, test_hot_colours_stable);
	tcase_add_test(t, test_tiny_frames_dropped);
	tcase_add_test(t, test_rect_cap);
	tcase_add_test(t, test_bad_trees);
	tcase_add_test(t, test_format_of);
	tcase_set_timeout(t, 30);
	suite_add_tcase(s, t);
	return s;
}
