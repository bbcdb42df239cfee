// SPDX-License-Identifier: MIT
/* What the uploader's unit suites share (uploader_fixture.h). */
#include <stdio.h>
#include <stdlib.h>

#include <check.h>

#include "clock.h"
#include "pprof.h"
#include "uploader_fixture.h"

void upfx_setup(struct upfx *x, const char *name)
{
	snprintf(x->dir, sizeof(x->dir), "/tmp/%s.XXXXXX", name);
	ck_assert_ptr_nonnull(mkdtemp(x->dir));
	config_defaults(&x->cfg);
	snprintf(x->cfg.collector.url, sizeof(x->cfg.collector.url),
		 "http://collector.invalid:4040/");
}

void upfx_teardown(struct upfx *x)
{
	char cmd[128];

	config_free(&x->cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", x->dir);
	ck_assert_int_eq(system(cmd), 0);
}

void upfx_store(const struct upfx *x, const char *app, const char *labels, int64_t start_ns,
		int64_t samples, int64_t *id)
{
	static const struct pprof_meta meta = {
		.sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
		.n_sample_types = 2,
		.period_type = {"cpu", "nanoseconds"},
		.period = 10 * NS_PER_MS,
	};
	struct history_meta m = {
		.start_ns = start_ns,
		.end_ns = start_ns + 10 * NS_PER_SEC,
		.type = "cpu",
		.app = app,
		.labels = labels,
		.samples = (uint64_t)samples,
		.processes = 1,
	};
	struct pprof_builder *b = pprof_builder_new(&meta);
	struct history *h = history_open(x->dir, false, NULL);
	int64_t v[2] = {samples, samples * 10 * NS_PER_MS};
	uint64_t f, loc;
	uint8_t *buf;
	size_t len;

	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_nonnull(h);
	f = pprof_function(b, "work", NULL, "w.c");
	loc = pprof_location(b, 0, 0x1000, &f, 1);
	ck_assert_int_eq(pprof_add_sample(b, &loc, 1, v, NULL, 0), 0);
	ck_assert_int_eq(pprof_encode(b, &buf, &len), 0);
	ck_assert_int_eq(history_put(h, &m, buf, len, id), 0);
	free(buf);
	pprof_builder_free(b);
	history_close(h);
}

struct history_push_counts upfx_counts(const struct upfx *x)
{
	struct history *h = history_open(x->dir, true, NULL);
	struct history_push_counts c;

	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(history_push_counts(h, &c), 0);
	history_close(h);
	return c;
}

struct uploader *upfx_start(const struct upfx *x, const struct uploader_transport *t)
{
	struct uploader *u = NULL;
	char err[256] = "";

	ck_assert_msg(!uploader_start_with(&x->cfg.collector, x->dir, t, &u, err, sizeof(err)),
		      "uploader_start_with: %s", err);
	return u;
}
