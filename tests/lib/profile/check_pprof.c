// SPDX-License-Identifier: MIT
/* The pprof builder (interning, folding), encode/decode round trips, every way
 * pprof_decode refuses a profile, and merge (sums, pid filter, time range). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "compress.h"
#include "pprof.h"
#include "suites.h"
#include "utf8.h"

static const struct pprof_meta cpu_meta = {
	.sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
	.n_sample_types = 2,
	.period_type = {"cpu", "nanoseconds"},
	.period = 10000000,
};

static struct pprof_builder *new_cpu(void)
{
	struct pprof_builder *b = pprof_builder_new(&cpu_meta);

	ck_assert_ptr_nonnull(b);
	return b;
}

static const struct pprof_mapping_desc app_map = {
	.start = 0x400000,
	.limit = 0x500000,
	.offset = 0,
	.file = "/usr/bin/app",
	.build_id = "0123abcd",
	.has_functions = true,
};

/* A location of app_map in function name. */
static uint64_t loc_in(struct pprof_builder *b, const char *name, uint64_t addr)
{
	uint64_t m = pprof_mapping(b, &app_map), f = pprof_function(b, name, NULL, "app.c");

	ck_assert(m && f);
	return pprof_location(b, m, addr, &f, 1);
}

/* Adds count samples of stack (leaf first) for process pid, 10 ms each. */
static void add(struct pprof_builder *b, const uint64_t *stack, size_t n, int64_t count,
		int64_t pid)
{
	const struct pprof_label labels[] = {{.key = "comm", .str = "app"},
					     {.key = "pid", .num = pid}};
	const int64_t values[] = {count, count * 10000000};

	ck_assert_int_eq(pprof_add_sample(b, stack, n, values, labels, 2), 0);
}

static pprof_profile *round_trip(const struct pprof_builder *b)
{
	pprof_profile *p = NULL;
	char err[128];
	uint8_t *buf;
	size_t len;

	ck_assert_int_eq(pprof_encode(b, &buf, &len), 0);
	ck_assert_msg(pprof_decode(buf, len, &p, err, sizeof(err)) == 0, "%s", err);
	free(buf);
	return p;
}

START_TEST(test_meta_bounds)
{
	struct pprof_meta m = cpu_meta;

	m.n_sample_types = 0;
	errno = 0;
	ck_assert_ptr_null(pprof_builder_new(&m));
	ck_assert_int_eq(errno, EINVAL);
	m.n_sample_types = PPROF_MAX_SAMPLE_TYPES + 1;
	ck_assert_ptr_null(pprof_builder_new(&m));
	m.n_sample_types = 2;
	m.sample_types[1].unit = NULL;
	ck_assert_ptr_null(pprof_builder_new(&m));
	pprof_builder_free(NULL);
}
END_TEST

START_TEST(test_meta_copied)
{
	char type[] = "samples";
	struct pprof_meta m = cpu_meta;
	struct pprof_builder *b;

	m.sample_types[0].type = type;
	b = pprof_builder_new(&m);
	type[0] = 'X';
	ck_assert_str_eq(pprof_builder_meta(b)->sample_types[0].type, "samples");
	ck_assert_str_eq(pprof_builder_meta(b)->period_type.unit, "nanoseconds");
	ck_assert_int_eq(pprof_builder_meta(b)->period, 10000000);
	pprof_builder_free(b);
}
END_TEST

/* Index of the default sample type of a profile with these types and default. */
static int default_index(const char *const *types, size_t n, const char *def)
{
	struct pprof_meta m = {.n_sample_types = n, .default_sample_type = def};
	struct pprof_builder *b;
	pprof_profile *p = NULL, *p2 = NULL;
	uint8_t *buf = NULL;
	size_t len;
	int i;

	for (size_t k = 0; k < n; k++)
		m.sample_types[k] = (struct pprof_value_type){types[k], "count"};
	b = pprof_builder_new(&m);
	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(pprof_encode(b, &buf, &len), 0);
	ck_assert_int_eq(pprof_decode(buf, len, &p, NULL, 0), 0);
	i = pprof_sample_type_index(p, NULL);
	pprof_builder_free(b);
	free(buf);
	/* a builder made like the profile (rollups, push) keeps its default */
	b = pprof_builder_like(p);
	ck_assert_int_eq(pprof_encode(b, &buf, &len), 0);
	ck_assert_int_eq(pprof_decode(buf, len, &p2, NULL, 0), 0);
	ck_assert_int_eq(pprof_sample_type_index(p2, NULL), i);
	ck_assert_str_eq(pprof_sample_type_name(p2, i), types[i]);
	ck_assert_str_eq(pprof_sample_type_name(p2, 99), "");
	pprof_builder_free(b);
	free(buf);
	pprof_profile_free(p);
	pprof_profile_free(p2);
	return i;
}

START_TEST(test_default_sample_type)
{
	const char *mem[] = {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"};
	const char *cpu[] = {"samples", "cpu"};

	ck_assert_int_eq(default_index(mem, 4, "alloc_space"), 1);
	ck_assert_int_eq(default_index(mem, 4, NULL), 3);	/* the last, as go tool pprof */
	ck_assert_int_eq(default_index(mem, 4, "nonesuch"), 3); /* one it does not have */
	ck_assert_int_eq(default_index(cpu, 2, NULL), 0);	/* samples, as before */
}
END_TEST

START_TEST(test_intern)
{
	struct pprof_builder *b = new_cpu();
	struct pprof_mapping_desc other = app_map;
	uint64_t f[3];

	ck_assert_uint_eq(pprof_mapping(b, &app_map), 1);
	ck_assert_uint_eq(pprof_mapping(b, &app_map), 1);
	other.build_id = "ffff";
	ck_assert_uint_eq(pprof_mapping(b, &other), 2);
	other.build_id = app_map.build_id;
	other.has_functions = false;
	ck_assert_uint_eq(pprof_mapping(b, &other), 3);
	f[0] = pprof_function(b, "main", NULL, "app.c");
	f[1] = pprof_function(b, "work", "_Z4workv", "app.c");
	f[2] = pprof_function(b, "main", "main", "app.c");
	ck_assert_uint_eq(f[0], 1);
	ck_assert_uint_eq(f[1], 2);
	ck_assert_uint_eq(f[2], 1); /* system_name defaults to name */
	ck_assert_uint_eq(pprof_function(b, "work", "_Z4workv", "other.c"), 3);
	ck_assert_uint_eq(pprof_location(b, 1, 0x401000, f, 2), 1);
	ck_assert_uint_eq(pprof_location(b, 1, 0x401000, f, 2), 1);
	ck_assert_uint_eq(pprof_location(b, 1, 0x401000, f, 1), 2);
	ck_assert_uint_eq(pprof_location(b, 2, 0x401000, f, 2), 3);
	ck_assert_uint_eq(pprof_location(b, 0, 0xffffffff81000000, NULL, 0), 4);
	ck_assert_uint_eq(pprof_location(b, 0, 0xffffffff81000000, NULL, 0), 4);
	pprof_builder_free(b);
}
END_TEST

/* JIT frames: a function's file and start line, and a line per Line, interned and kept by merge. */
START_TEST(test_lines)
{
	struct pprof_builder *b = new_cpu(), *copy = new_cpu();
	const int64_t v[2] = {3, 30000000}, two[2] = {2, 7}, none[2] = {0, 0};
	uint64_t f[2], loc[3];
	uint8_t *a_buf, *b_buf;
	size_t a_len, b_len;
	pprof_profile *p;

	f[0] = pprof_function_at(b, "fib", "JS:*fib /srv/app.js:2:13", "/srv/app.js", 2);
	f[1] = pprof_function_at(b, "main", NULL, "/srv/app.js", 7);
	ck_assert_uint_eq(f[0], 1);
	ck_assert_uint_eq(f[1], 2);
	/* Same name and file, another start line: another function. */
	ck_assert_uint_eq(pprof_function_at(b, "fib", "JS:*fib /srv/app.js:2:13", "/srv/app.js", 9),
			  3);
	ck_assert_uint_eq(pprof_function_at(b, "fib", "JS:*fib /srv/app.js:2:13", "/srv/app.js", 2),
			  1);
	/* No line, or all lines 0, is the same location; other lines are another. */
	loc[0] = pprof_location(b, 0, 0x1000, f, 2);
	ck_assert_uint_eq(pprof_location_lines(b, 0, 0x1000, f, none, 2), loc[0]);
	loc[1] = pprof_location_lines(b, 0, 0x1000, f, two, 2);
	ck_assert_uint_ne(loc[1], loc[0]);
	ck_assert_uint_eq(pprof_location_lines(b, 0, 0x1000, f, two, 2), loc[1]);
	loc[2] = pprof_location_lines(b, 0, 0x2000, &f[0], &two[0], 1);
	/* A negative line is no line. */
	ck_assert_uint_eq(pprof_location_lines(b, 0, 0x1000, f, (const int64_t[]){-5, 0}, 2),
			  loc[0]);
	ck_assert_int_eq(pprof_add_sample(b, &loc[1], 1, v, NULL, 0), 0);
	ck_assert_int_eq(pprof_add_sample(b, &loc[2], 1, v, NULL, 0), 0);

	p = round_trip(b);
	ck_assert_uint_eq(p->n_function, 3);
	ck_assert_str_eq(p->string_table[p->function[0]->name], "fib");
	ck_assert_str_eq(p->string_table[p->function[0]->system_name], "JS:*fib /srv/app.js:2:13");
	ck_assert_str_eq(p->string_table[p->function[0]->filename], "/srv/app.js");
	ck_assert_int_eq(p->function[0]->start_line, 2);
	ck_assert_int_eq(p->function[1]->start_line, 7);
	ck_assert_uint_eq(p->location[0]->n_line, 2);
	ck_assert_int_eq(p->location[0]->line[0]->line, 0);
	ck_assert_int_eq(p->location[1]->line[0]->line, 2);
	ck_assert_int_eq(p->location[1]->line[1]->line, 7);
	ck_assert_int_eq(p->location[2]->line[0]->line, 2);

	/* A merge of the decoded profile writes the same bytes. */
	ck_assert_int_eq(pprof_merge(copy, p, NULL), 0);
	ck_assert_int_eq(pprof_encode(copy, &b_buf, &b_len), 0);
	pprof_builder_free(b);
	b = new_cpu();
	f[0] = pprof_function_at(b, "fib", "JS:*fib /srv/app.js:2:13", "/srv/app.js", 2);
	f[1] = pprof_function_at(b, "main", NULL, "/srv/app.js", 7);
	loc[1] = pprof_location_lines(b, 0, 0x1000, f, two, 2);
	loc[2] = pprof_location_lines(b, 0, 0x2000, &f[0], &two[0], 1);
	ck_assert_int_eq(pprof_add_sample(b, &loc[1], 1, v, NULL, 0), 0);
	ck_assert_int_eq(pprof_add_sample(b, &loc[2], 1, v, NULL, 0), 0);
	ck_assert_int_eq(pprof_encode(b, &a_buf, &a_len), 0);
	ck_assert_uint_eq(a_len, b_len);
	ck_assert(!memcmp(a_buf, b_buf, a_len));
	free(a_buf);
	free(b_buf);
	pprof_profile_free(p);
	pprof_builder_free(copy);
	pprof_builder_free(b);
}
END_TEST

START_TEST(test_intern_bad_ids)
{
	struct pprof_builder *b = new_cpu();
	uint64_t f = 1, zero = 0;
	const int64_t v[2] = {1, 1};

	errno = 0;
	ck_assert_uint_eq(pprof_location(b, 1, 0x1000, NULL, 0), 0); /* no mapping 1 yet */
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_uint_eq(pprof_location(b, 0, 0x1000, &f, 1), 0); /* no function 1 */
	pprof_function(b, "f", NULL, NULL);
	ck_assert_uint_eq(pprof_location(b, 0, 0x1000, &zero, 1), 0);
	ck_assert_uint_eq(pprof_location(b, 0, 0x1000, &f, 1), 1);
	ck_assert_int_eq(pprof_add_sample(b, &zero, 1, v, NULL, 0), -EINVAL);
	f = 2;
	ck_assert_int_eq(pprof_add_sample(b, &f, 1, v, NULL, 0), -EINVAL);
	ck_assert_uint_eq(pprof_sample_count(b), 0);
	pprof_builder_free(b);
}
END_TEST

static const char *label_str(const pprof_profile *p, const Perftools__Profiles__Sample *s,
			     const char *key)
{
	size_t i;

	for (i = 0; i < s->n_label; i++) {
		if (!strcmp(p->string_table[s->label[i]->key], key))
			return p->string_table[s->label[i]->str];
	}
	return NULL;
}

/* Every string a profile carries is valid UTF-8, whatever the symbolizer or the kernel gave. */
START_TEST(test_intern_utf8)
{
	struct pprof_builder *b = new_cpu();
	const struct pprof_mapping_desc bad_map = {
		.start = 0x1000, .limit = 0x2000, .file = "/opt/\xff\xfe.so", .build_id = ""};
	const struct pprof_label comm = {.key = "comm", .str = "w\xe2\x82"};
	const int64_t v[2] = {1, 10};
	uint64_t m, f, l;
	pprof_profile *p;

	m = pprof_mapping(b, &bad_map);
	f = pprof_function(b, "fn\xc0\xaf", "\xed\xa0\x80", "a\x80.c");
	ck_assert(m && f);
	l = pprof_location(b, m, 0x1100, &f, 1);
	ck_assert_int_eq(pprof_add_sample(b, &l, 1, v, &comm, 1), 0);
	p = round_trip(b);
	for (size_t i = 0; i < p->n_string_table; i++)
		ck_assert_msg(utf8_valid(p->string_table[i], strlen(p->string_table[i])),
			      "string %zu is not UTF-8", i);
	ck_assert_str_eq(p->string_table[p->function[0]->name],
			 "fn" UTF8_REPLACEMENT UTF8_REPLACEMENT);
	ck_assert_str_eq(p->string_table[p->function[0]->filename], "a" UTF8_REPLACEMENT ".c");
	ck_assert_str_eq(p->string_table[p->mapping[0]->filename],
			 "/opt/" UTF8_REPLACEMENT UTF8_REPLACEMENT ".so");
	ck_assert_str_eq(label_str(p, p->sample[0], "comm"), "w" UTF8_REPLACEMENT);
	pprof_profile_free(p);
	pprof_builder_free(b);
}
END_TEST

START_TEST(test_fold)
{
	struct pprof_builder *b = new_cpu();
	uint64_t stack[2];
	struct pprof_label swapped[] = {{.key = "pid", .num = 7}, {.key = "comm", .str = "app"}};
	const int64_t v[2] = {5, 50000000};

	stack[0] = loc_in(b, "leaf", 0x401000);
	stack[1] = loc_in(b, "main", 0x402000);
	add(b, stack, 2, 1, 7);
	add(b, stack, 2, 2, 7);
	ck_assert_uint_eq(pprof_sample_count(b), 1);
	/* Label order does not matter. */
	ck_assert_int_eq(pprof_add_sample(b, stack, 2, v, swapped, 2), 0);
	ck_assert_uint_eq(pprof_sample_count(b), 1);
	add(b, stack, 2, 1, 8); /* another pid */
	add(b, stack, 1, 1, 7); /* a shorter stack */
	add(b, stack + 1, 1, 1, 7);
	ck_assert_uint_eq(pprof_sample_count(b), 4);
	ck_assert_int_eq(pprof_value_total(b, 0), 11);
	ck_assert_int_eq(pprof_value_total(b, 1), 110000000);
	ck_assert_int_eq(pprof_value_total(b, 2), 0);
	pprof_builder_free(b);
}
END_TEST

START_TEST(test_add_bounds)
{
	struct pprof_builder *b = new_cpu();
	struct pprof_label labels[PPROF_MAX_LABELS + 1] = {{0}};
	const int64_t v[2] = {1, 1};
	size_t i;

	for (i = 0; i <= PPROF_MAX_LABELS; i++)
		labels[i] = (struct pprof_label){.key = "k", .num = (int64_t)i};
	ck_assert_int_eq(pprof_add_sample(b, NULL, 0, v, labels, PPROF_MAX_LABELS + 1), -E2BIG);
	ck_assert_int_eq(pprof_add_sample(b, NULL, 0, v, labels, PPROF_MAX_LABELS), 0);
	labels[0].key = NULL;
	ck_assert_int_eq(pprof_add_sample(b, NULL, 0, v, labels, 1), -EINVAL);
	ck_assert_uint_eq(pprof_sample_count(b), 1);
	pprof_builder_free(b);
}
END_TEST

/* 1M adds over 100k distinct stacks: hash tables, not scans. */
START_TEST(test_scale)
{
	struct pprof_builder *b = new_cpu();
	uint64_t locs[1000], stack[2];
	pprof_profile *p;
	char name[32];
	size_t i;

	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "fn%zu", i);
		locs[i] = loc_in(b, name, 0x400000 + i * 16);
	}
	for (i = 0; i < 1000000; i++) {
		stack[0] = locs[i % 1000];
		stack[1] = locs[(i / 1000) % 100];
		add(b, stack, 2, 1, 1);
	}
	ck_assert_uint_eq(pprof_sample_count(b), 100000);
	ck_assert_int_eq(pprof_value_total(b, 0), 1000000);
	p = round_trip(b);
	ck_assert_uint_eq(p->n_sample, 100000);
	ck_assert_uint_eq(p->n_location, 1000);
	pprof_profile_free(p);
	pprof_builder_free(b);
}
END_TEST

START_TEST(test_encode_decode)
{
	struct pprof_builder *b = new_cpu();
	const struct pprof_label bytes = {.key = "bytes", .num = 4096, .num_unit = "bytes"};
	const int64_t v[2] = {3, 30};
	const Perftools__Profiles__Sample *s;
	uint64_t stack[2];
	pprof_profile *p;

	pprof_builder_set_time(b, 1700000000000000000, 10000000000);
	stack[0] = loc_in(b, "leaf", 0x401000);
	stack[1] = loc_in(b, "main", 0x402000);
	add(b, stack, 2, 2, 42);
	ck_assert_int_eq(pprof_add_sample(b, stack + 1, 1, v, &bytes, 1), 0);
	p = round_trip(b);
	ck_assert_str_eq(p->string_table[0], "");
	ck_assert_uint_eq(p->n_sample_type, 2);
	ck_assert_str_eq(p->string_table[p->sample_type[1]->type], "cpu");
	ck_assert_str_eq(p->string_table[p->sample_type[1]->unit], "nanoseconds");
	ck_assert_str_eq(p->string_table[p->period_type->type], "cpu");
	ck_assert_int_eq(p->period, 10000000);
	ck_assert_int_eq(p->time_nanos, 1700000000000000000);
	ck_assert_int_eq(p->duration_nanos, 10000000000);
	ck_assert_uint_eq(p->n_mapping, 1);
	ck_assert_uint_eq(p->mapping[0]->id, 1);
	ck_assert_uint_eq(p->mapping[0]->memory_start, 0x400000);
	ck_assert_str_eq(p->string_table[p->mapping[0]->build_id], "0123abcd");
	ck_assert_str_eq(p->string_table[p->mapping[0]->filename], "/usr/bin/app");
	ck_assert_uint_eq(p->n_function, 2);
	ck_assert_str_eq(p->string_table[p->function[1]->name], "main");
	ck_assert_str_eq(p->string_table[p->function[1]->system_name], "main");
	ck_assert_uint_eq(p->n_location, 2);
	ck_assert_uint_eq(p->location[1]->id, 2);
	ck_assert_uint_eq(p->location[1]->address, 0x402000);
	ck_assert_uint_eq(p->location[1]->line[0]->function_id, 2);
	ck_assert_uint_eq(p->n_sample, 2);
	s = p->sample[0];
	ck_assert_uint_eq(s->n_location_id, 2);
	ck_assert_uint_eq(s->location_id[0], 1);
	ck_assert_int_eq(s->value[0], 2);
	ck_assert_int_eq(s->value[1], 20000000);
	ck_assert_str_eq(label_str(p, s, "comm"), "app");
	ck_assert_int_eq(s->label[1]->num, 42);
	ck_assert_str_eq(p->string_table[s->label[1]->key], "pid");
	s = p->sample[1];
	ck_assert_int_eq(s->value[1], 30);
	ck_assert_int_eq(s->label[0]->num, 4096);
	ck_assert_str_eq(p->string_table[s->label[0]->num_unit], "bytes");
	pprof_profile_free(p);
	pprof_builder_free(b);
}
END_TEST

START_TEST(test_decode_gzip)
{
	struct pprof_builder *b = new_cpu();
	uint64_t leaf = loc_in(b, "leaf", 0x401000);
	uint8_t *raw, *gz;
	size_t raw_len, gz_len;
	pprof_profile *p;
	char err[128];

	add(b, &leaf, 1, 4, 1);
	ck_assert_int_eq(pprof_encode(b, &raw, &raw_len), 0);
	ck_assert_int_eq(gzip_compress(raw, raw_len, &gz, &gz_len), 0);
	ck_assert_int_eq(pprof_decode(gz, gz_len, &p, err, sizeof(err)), 0);
	ck_assert_int_eq(p->sample[0]->value[0], 4);
	pprof_profile_free(p);
	gz[gz_len - 5] ^= 1; /* the length in the trailer */
	ck_assert_int_eq(pprof_decode(gz, gz_len, &p, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "gzip"));
	free(gz);
	free(raw);
	pprof_builder_free(b);
}
END_TEST

/* gzip members of 1 MiB of zeros repeated past EMBER_MAX_PROFILE_BYTES. */
START_TEST(test_decode_gzip_bomb)
{
	size_t chunk = 1u << 20, n = (EMBER_MAX_PROFILE_BYTES >> 20) + 1, zlen, i;
	uint8_t *zeros = calloc(1, chunk), *z, *bomb;
	pprof_profile *p = NULL;
	char err[128];

	ck_assert_int_eq(gzip_compress(zeros, chunk, &z, &zlen), 0);
	bomb = malloc(zlen * n);
	for (i = 0; i < n; i++)
		memcpy(bomb + i * zlen, z, zlen);
	ck_assert_int_eq(pprof_decode(bomb, zlen * n, &p, err, sizeof(err)), -EFBIG);
	ck_assert_ptr_null(p);
	free(bomb);
	free(z);
	free(zeros);
}
END_TEST

START_TEST(test_decode_garbage)
{
	struct pprof_builder *b = new_cpu();
	uint64_t leaf = loc_in(b, "leaf", 0x401000);
	size_t len, cut, failed = 0;
	pprof_profile *p;
	uint8_t *buf;
	char err[128];
	int ret;

	ck_assert_int_eq(pprof_decode((const uint8_t *)"\xff\xff\xff\xff", 4, &p, err, 128),
			 -EBADMSG);
	ck_assert_str_eq(err, "not a profile.proto message");
	/* Empty input is an empty message, which lacks string_table[0]. */
	ck_assert_int_eq(pprof_decode(NULL, 0, &p, err, sizeof(err)), -EBADMSG);
	add(b, &leaf, 1, 1, 1);
	ck_assert_int_eq(pprof_encode(b, &buf, &len), 0);
	/* Every truncation is refused or, cut at a field boundary, still valid. */
	for (cut = 0; cut < len; cut++) {
		ret = pprof_decode(buf, cut, &p, err, sizeof(err));
		if (ret) {
			ck_assert_int_eq(ret, -EBADMSG);
			failed++;
		} else {
			pprof_profile_free(p);
		}
	}
	ck_assert_uint_gt(failed, len / 2);
	ck_assert_int_eq(pprof_decode(buf, len - 1, &p, err, sizeof(err)), -EBADMSG);
	free(buf);
	pprof_builder_free(b);
}
END_TEST

/* --- a small valid profile built by hand, broken one rule at a time ------------------- */

enum {
	S_EMPTY,
	S_SAMPLES,
	S_COUNT,
	S_CPU,
	S_NS,
	S_FILE,
	S_BUILD_ID,
	S_MAIN,
	S_WORK,
	S_SRC,
	S_COMM,
	S_APP,
	S_PID,
	S_NOTE,
	N_STRS
};

struct hand {
	pprof_profile p;
	Perftools__Profiles__ValueType vt[PPROF_MAX_SAMPLE_TYPES + 1],
		*vtp[PPROF_MAX_SAMPLE_TYPES + 1];
	Perftools__Profiles__ValueType period;
	Perftools__Profiles__Mapping map[2], *mapp[2];
	Perftools__Profiles__Function fn[2], *fnp[2];
	Perftools__Profiles__Line line[2], *linep[2];
	Perftools__Profiles__Location loc[2], *locp[2];
	Perftools__Profiles__Label lab[2], *labp[2];
	Perftools__Profiles__Sample smp, *smpp[1];
	uint64_t loc_ids[2];
	int64_t values[3], comment[1];
	char *strs[N_STRS];
};

static void hand_init(struct hand *h)
{
	static const char *const strs[N_STRS] = {
		"",	"samples", "count", "cpu",  "nanoseconds", "/bin/app", "abcdef",
		"main", "work",	   "app.c", "comm", "app",	   "pid",      "note"};
	size_t i;

	memset(h, 0, sizeof(*h));
	perftools__profiles__profile__init(&h->p);
	for (i = 0; i < N_STRS; i++)
		h->strs[i] = (char *)strs[i];
	h->p.string_table = h->strs;
	h->p.n_string_table = N_STRS;
	for (i = 0; i <= PPROF_MAX_SAMPLE_TYPES; i++) {
		perftools__profiles__value_type__init(&h->vt[i]);
		h->vt[i].type = i ? S_CPU : S_SAMPLES;
		h->vt[i].unit = i ? S_NS : S_COUNT;
		h->vtp[i] = &h->vt[i];
	}
	h->p.sample_type = h->vtp;
	h->p.n_sample_type = 2;
	perftools__profiles__value_type__init(&h->period);
	h->period.type = S_CPU;
	h->period.unit = S_NS;
	h->p.period_type = &h->period;
	h->comment[0] = S_NOTE;
	h->p.comment = h->comment;
	h->p.n_comment = 1;
	for (i = 0; i < 2; i++) {
		perftools__profiles__mapping__init(&h->map[i]);
		h->map[i].id = i + 1;
		h->map[i].filename = S_FILE;
		h->map[i].build_id = S_BUILD_ID;
		h->mapp[i] = &h->map[i];
		perftools__profiles__function__init(&h->fn[i]);
		h->fn[i].id = i + 1;
		h->fn[i].name = h->fn[i].system_name = i ? S_WORK : S_MAIN;
		h->fn[i].filename = S_SRC;
		h->fnp[i] = &h->fn[i];
		perftools__profiles__line__init(&h->line[i]);
		h->line[i].function_id = 2 - i;
		h->linep[i] = &h->line[i];
		perftools__profiles__location__init(&h->loc[i]);
		h->loc[i].id = i + 1;
		h->loc[i].mapping_id = 1;
		h->loc[i].address = 0x1000 * (i + 1);
		h->loc[i].line = &h->linep[i];
		h->loc[i].n_line = 1;
		h->locp[i] = &h->loc[i];
		perftools__profiles__label__init(&h->lab[i]);
		h->labp[i] = &h->lab[i];
		h->loc_ids[i] = i + 1;
	}
	h->p.mapping = h->mapp;
	h->p.n_mapping = 2;
	h->p.function = h->fnp;
	h->p.n_function = 2;
	h->p.location = h->locp;
	h->p.n_location = 2;
	h->lab[0].key = S_COMM;
	h->lab[0].str = S_APP;
	h->lab[1].key = S_PID;
	h->lab[1].num = 42;
	perftools__profiles__sample__init(&h->smp);
	h->smp.location_id = h->loc_ids;
	h->smp.n_location_id = 2;
	h->values[0] = 1;
	h->values[1] = 10000000;
	h->smp.value = h->values;
	h->smp.n_value = 2;
	h->smp.label = h->labp;
	h->smp.n_label = 2;
	h->smpp[0] = &h->smp;
	h->p.sample = h->smpp;
	h->p.n_sample = 1;
}

/* Breaks rule i of the hand-built profile; returns what the error must mention. */
static const char *hand_break(struct hand *h, int i)
{
	switch (i) {
	case 0:
		h->strs[0] = "x";
		return "string_table[0]";
	case 1:
		h->p.n_string_table = 0;
		return "string_table[0]";
	case 2:
		h->vt[1].unit = N_STRS;
		return "sample_type[1]";
	case 3:
		h->vt[0].type = -1;
		return "sample_type[0]";
	case 4:
		h->p.n_sample_type = PPROF_MAX_SAMPLE_TYPES + 1;
		return "sample types";
	case 5:
		h->p.n_sample_type = 0;
		return "0 sample types";
	case 6:
		h->period.unit = N_STRS;
		return "header";
	case 7:
		h->p.drop_frames = N_STRS;
		return "header";
	case 8:
		h->p.keep_frames = N_STRS + 100;
		return "header";
	case 9:
		h->p.default_sample_type = -3;
		return "header";
	case 10:
		h->p.doc_url = N_STRS;
		return "header";
	case 11:
		h->comment[0] = N_STRS;
		return "comment[0]";
	case 12:
		h->map[1].filename = N_STRS;
		return "mapping[1]";
	case 13:
		h->map[0].build_id = N_STRS;
		return "mapping[0]";
	case 14:
		h->fn[1].name = N_STRS;
		return "function[1]";
	case 15:
		h->fn[0].system_name = N_STRS;
		return "function[0]";
	case 16:
		h->fn[0].filename = -1;
		return "function[0]";
	case 17:
		h->map[1].id = 0;
		return "mapping[1] has id 0";
	case 18:
		h->map[1].id = 1;
		return "duplicate mapping id 1";
	case 19:
		h->fn[0].id = 2;
		return "duplicate function id 2";
	case 20:
		h->loc[1].id = 1;
		return "duplicate location id 1";
	case 21:
		h->loc[0].id = 0;
		return "location[0] has id 0";
	case 22:
		h->loc[1].mapping_id = 3;
		return "no mapping id 3";
	case 23:
		h->line[0].function_id = 9;
		return "no function id 9";
	case 24:
		h->line[1].function_id = 0;
		return "no function id 0";
	case 25:
		h->loc_ids[1] = 5;
		return "no location id 5";
	case 26:
		h->loc_ids[0] = 0;
		return "no location id 0";
	case 27:
		h->smp.n_value = 1;
		return "1 values for 2 sample types";
	case 28:
		h->smp.n_value = 3;
		return "3 values for 2 sample types";
	case 29:
		h->lab[0].key = N_STRS;
		return "label[0]";
	case 30:
		h->lab[0].str = N_STRS;
		return "label[0]";
	case 31:
		h->lab[1].num_unit = N_STRS;
		return "label[1]";
	/* Sparse ids (the hash path) are fine as long as they are unique and exist. */
	case 32:
		h->fn[0].id = 1000;
		h->line[1].function_id = 1000;
		h->loc[0].id = 77;
		h->loc_ids[0] = 77;
		h->loc_ids[1] = 9;
		return "no location id 9";
	}
	return NULL;
}
#define N_BREAKS 33

static uint8_t *pack(const pprof_profile *p, size_t *len)
{
	uint8_t *buf = malloc(perftools__profiles__profile__get_packed_size(p) + 1);

	*len = perftools__profiles__profile__pack(p, buf);
	return buf;
}

START_TEST(test_decode_hand_valid)
{
	struct hand h;
	pprof_profile *p;
	uint8_t *buf;
	size_t len;
	char err[128];

	hand_init(&h);
	/* Sparse but valid ids too. */
	h.fn[0].id = 1000;
	h.line[1].function_id = 1000;
	h.loc[0].id = 77;
	h.loc_ids[0] = 77;
	buf = pack(&h.p, &len);
	ck_assert_msg(pprof_decode(buf, len, &p, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(label_str(p, p->sample[0], "comm"), "app");
	pprof_profile_free(p);
	free(buf);
}
END_TEST

START_TEST(test_decode_invalid)
{
	struct pprof_builder *b;
	struct hand h;
	const char *why;
	pprof_profile *p = NULL;
	uint8_t *buf;
	size_t len;
	char err[128];
	int ret;

	hand_init(&h);
	why = hand_break(&h, _i);
	buf = pack(&h.p, &len);
	ret = pprof_decode(buf, len, &p, err, sizeof(err));
	ck_assert_msg(ret == -EBADMSG, "case %d: got %d, expected \"%s\"", _i, ret, why);
	ck_assert_msg(strstr(err, why), "case %d: \"%s\" lacks \"%s\"", _i, err, why);
	ck_assert_ptr_null(p);
	/* Merge validates too, so hand-built profiles cannot reach out of bounds. */
	b = new_cpu();
	ck_assert_int_eq(pprof_merge(b, &h.p, NULL), -EBADMSG);
	pprof_builder_free(b);
	free(buf);
}
END_TEST

/* --- merge -------------------------------------------------------------------------- */

/* Profile one: main->a (pid 1) x1, main->b (pid 2) x2, over [1000, 1100). */
static pprof_profile *profile_one(void)
{
	struct pprof_builder *b = new_cpu();
	uint64_t s[2];
	pprof_profile *p;

	s[1] = loc_in(b, "main", 0x402000);
	s[0] = loc_in(b, "a", 0x401000);
	add(b, s, 2, 1, 1);
	s[0] = loc_in(b, "b", 0x401100);
	add(b, s, 2, 2, 2);
	pprof_builder_set_time(b, 1000, 100);
	p = round_trip(b);
	pprof_builder_free(b);
	return p;
}

/* Profile two, interned in another order: main->c (pid 1) x4, main->a (pid 1) x3,
 * over [500, 700). */
static pprof_profile *profile_two(void)
{
	struct pprof_builder *b = new_cpu();
	uint64_t s[2];
	pprof_profile *p;

	s[0] = loc_in(b, "c", 0x401200);
	s[1] = loc_in(b, "main", 0x402000);
	add(b, s, 2, 4, 1);
	s[0] = loc_in(b, "a", 0x401000);
	add(b, s, 2, 3, 1);
	pprof_builder_set_time(b, 500, 200);
	p = round_trip(b);
	pprof_builder_free(b);
	return p;
}

/* The value of the sample whose leaf is in function leaf for pid, or -1. */
static int64_t value_of(const pprof_profile *p, const char *leaf, int64_t pid)
{
	size_t i, j;

	for (i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		const Perftools__Profiles__Location *l = p->location[s->location_id[0] - 1];
		const Perftools__Profiles__Function *f = p->function[l->line[0]->function_id - 1];

		if (strcmp(p->string_table[f->name], leaf))
			continue;
		for (j = 0; j < s->n_label; j++) {
			if (!strcmp(p->string_table[s->label[j]->key], "pid") &&
			    s->label[j]->num == pid)
				return s->value[0];
		}
	}
	return -1;
}

START_TEST(test_merge_sum)
{
	pprof_profile *one = profile_one(), *two = profile_two(), *out;
	struct pprof_builder *b = new_cpu();

	ck_assert_int_eq(pprof_merge(b, one, NULL), 0);
	ck_assert_int_eq(pprof_merge(b, two, NULL), 0);
	ck_assert_uint_eq(pprof_sample_count(b), 3);
	ck_assert_int_eq(pprof_value_total(b, 0), 10);
	ck_assert_int_eq(pprof_value_total(b, 1), 100000000);
	out = round_trip(b);
	ck_assert_uint_eq(out->n_mapping, 1);
	ck_assert_uint_eq(out->n_function, 4);
	ck_assert_uint_eq(out->n_location, 4);
	ck_assert_int_eq(value_of(out, "a", 1), 4);
	ck_assert_int_eq(value_of(out, "b", 2), 2);
	ck_assert_int_eq(value_of(out, "c", 1), 4);
	ck_assert_str_eq(label_str(out, out->sample[0], "comm"), "app");
	ck_assert_str_eq(out->string_table[out->mapping[0]->build_id], "0123abcd");
	/* Time covers both: [500, 1100). */
	ck_assert_int_eq(out->time_nanos, 500);
	ck_assert_int_eq(out->duration_nanos, 600);
	pprof_profile_free(out);
	pprof_profile_free(one);
	pprof_profile_free(two);
	pprof_builder_free(b);
}
END_TEST

/* Comments: written as given, kept once each through a merge, at most PPROF_MAX_COMMENTS. */
START_TEST(test_comments)
{
	struct pprof_meta m = cpu_meta;
	struct pprof_builder *b, *all = new_cpu();
	pprof_profile *out, *again;
	char text[32];

	m.comment = "duty 1/4";
	b = pprof_builder_new(&m);
	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(pprof_add_comment(b, "duty 1/8"), 0);
	ck_assert_int_eq(pprof_add_comment(b, "duty 1/4"), 0);
	out = round_trip(b);
	ck_assert_uint_eq(out->n_comment, 2);
	ck_assert_str_eq(out->string_table[out->comment[0]], "duty 1/4");
	ck_assert_str_eq(out->string_table[out->comment[1]], "duty 1/8");
	ck_assert_int_eq(pprof_merge(all, out, NULL), 0);
	ck_assert_int_eq(pprof_merge(all, out, NULL), 0);
	for (int i = 0; i < PPROF_MAX_COMMENTS + 2; i++) {
		snprintf(text, sizeof(text), "c%d", i);
		ck_assert_int_eq(pprof_add_comment(all, text), 0);
	}
	again = round_trip(all);
	ck_assert_uint_eq(again->n_comment, PPROF_MAX_COMMENTS);
	ck_assert_str_eq(again->string_table[again->comment[1]], "duty 1/8");
	/* without any: none written */
	pprof_profile_free(out);
	pprof_builder_free(b);
	b = new_cpu();
	out = round_trip(b);
	ck_assert_uint_eq(out->n_comment, 0);
	pprof_profile_free(out);
	pprof_profile_free(again);
	pprof_builder_free(b);
	pprof_builder_free(all);
}
END_TEST

START_TEST(test_merge_pid)
{
	pprof_profile *one = profile_one(), *two = profile_two(), *out;
	struct pprof_builder *b = new_cpu();
	const struct pprof_filter f = {.by_pid = true, .pid = 1};

	ck_assert_int_eq(pprof_merge(b, one, &f), 0);
	ck_assert_int_eq(pprof_merge(b, two, &f), 0);
	ck_assert_uint_eq(pprof_sample_count(b), 2);
	ck_assert_int_eq(pprof_value_total(b, 0), 8);
	out = round_trip(b);
	ck_assert_int_eq(value_of(out, "b", 2), -1);
	/* Only what pid 1's samples reach was interned: no function b. */
	ck_assert_uint_eq(out->n_function, 3);
	pprof_profile_free(out);
	pprof_builder_free(b);
	b = new_cpu();
	ck_assert_int_eq(pprof_merge(b, two, &(struct pprof_filter){.by_pid = true, .pid = 2}), 0);
	ck_assert_uint_eq(pprof_sample_count(b), 0);
	pprof_profile_free(one);
	pprof_profile_free(two);
	pprof_builder_free(b);
}
END_TEST

/* Merging one profile into an empty builder gives back the same bytes: inline frames,
 * frames without mapping and labels with units all survive. */
START_TEST(test_merge_identity)
{
	struct pprof_builder *b = new_cpu(), *copy = new_cpu();
	const struct pprof_label labels[] = {{.key = "comm", .str = "app"},
					     {.key = "bytes", .num = 64, .num_unit = "bytes"}};
	const int64_t v[2] = {7, 70000000};
	uint64_t map, f[2], stack[2];
	uint8_t *a_buf, *b_buf;
	size_t a_len, b_len;
	pprof_profile *p;

	stack[0] = pprof_location(b, 0, 0xffffffff81000000, NULL, 0);
	map = pprof_mapping(b, &app_map);
	f[0] = pprof_function(b, "inlined", NULL, "app.h");
	f[1] = pprof_function(b, "outer", "_Z5outerv", "app.c");
	stack[1] = pprof_location(b, map, 0x401000, f, 2);
	ck_assert_int_eq(pprof_add_sample(b, stack, 2, v, labels, 2), 0);
	pprof_builder_set_time(b, 5000, 60);
	ck_assert_int_eq(pprof_encode(b, &a_buf, &a_len), 0);
	p = round_trip(b);
	ck_assert_int_eq(pprof_merge(copy, p, NULL), 0);
	ck_assert_int_eq(pprof_encode(copy, &b_buf, &b_len), 0);
	ck_assert_uint_eq(a_len, b_len);
	ck_assert(!memcmp(a_buf, b_buf, a_len));
	free(a_buf);
	free(b_buf);
	pprof_profile_free(p);
	pprof_builder_free(copy);
	pprof_builder_free(b);
}
END_TEST

START_TEST(test_merge_types)
{
	pprof_profile *one = profile_one();
	struct pprof_meta m = cpu_meta;
	struct pprof_builder *b;

	m.sample_types[1].unit = "microseconds";
	b = pprof_builder_new(&m);
	ck_assert_int_eq(pprof_merge(b, one, NULL), -EINVAL);
	pprof_builder_free(b);
	m = cpu_meta;
	m.n_sample_types = 1;
	b = pprof_builder_new(&m);
	ck_assert_int_eq(pprof_merge(b, one, NULL), -EINVAL);
	ck_assert_uint_eq(pprof_sample_count(b), 0);
	pprof_builder_free(b);
	pprof_profile_free(one);
}
END_TEST

START_TEST(test_merge_time)
{
	pprof_profile *one = profile_one();
	struct pprof_builder *b = new_cpu();

	/* An unset builder time takes the profile's. */
	ck_assert_int_eq(pprof_merge(b, one, NULL), 0);
	ck_assert_int_eq(pprof_builder_meta(b)->time_nanos, 1000);
	ck_assert_int_eq(pprof_builder_meta(b)->duration_nanos, 100);
	/* A later, longer window extends the end only. */
	pprof_builder_set_time(b, 1050, 1000);
	ck_assert_int_eq(pprof_merge(b, one, NULL), 0);
	ck_assert_int_eq(pprof_builder_meta(b)->time_nanos, 1000);
	ck_assert_int_eq(pprof_builder_meta(b)->duration_nanos, 1050);
	/* A profile without a time leaves it. */
	one->time_nanos = 0;
	ck_assert_int_eq(pprof_merge(b, one, NULL), 0);
	ck_assert_int_eq(pprof_builder_meta(b)->time_nanos, 1000);
	ck_assert_int_eq(pprof_value_total(b, 0), 9);
	pprof_profile_free(one);
	pprof_builder_free(b);
}
END_TEST

/* The encoded mapping of file, found by its file name. */
static const Perftools__Profiles__Mapping *mapping_of(const pprof_profile *p, const char *file)
{
	for (size_t i = 0; i < p->n_mapping; i++)
		if (!strcmp(p->string_table[p->mapping[i]->filename], file))
			return p->mapping[i];
	ck_abort_msg("no mapping of %s", file);
	return NULL;
}

/*
 * has_functions is sent only for mappings whose every location is named: one unnamed
 * location clears it (Pyroscope would otherwise drop its address and the frame),
 * and the unnamed location keeps its runtime address and the mapping's start, offset
 * and build-id, from which its file offset is recovered.
 */
START_TEST(test_has_functions)
{
	struct pprof_builder *b = new_cpu();
	struct pprof_mapping_desc lib = {.start = 0x7f0000001000,
					 .limit = 0x7f0000009000,
					 .offset = 0x1000,
					 .file = "/usr/lib/libx.so",
					 .build_id = "feed",
					 .has_functions = true};
	struct pprof_mapping_desc told = app_map;
	const Perftools__Profiles__Mapping *m;
	const Perftools__Profiles__Location *l;
	uint64_t named = loc_in(b, "main", 0x401000), lm, unnamed, stack[3];
	pprof_profile *p;

	lm = pprof_mapping(b, &lib);
	ck_assert(lm);
	unnamed = pprof_location(b, lm, 0x7f0000002345, NULL, 0);
	ck_assert(unnamed);
	/* found again: still one location, still unnamed */
	ck_assert_uint_eq(pprof_location(b, lm, 0x7f0000002345, NULL, 0), unnamed);
	/* a mapping told it has no functions stays so, however named its locations */
	told.file = "/usr/bin/told";
	told.has_functions = false;
	stack[0] = unnamed;
	stack[1] = named;
	stack[2] = pprof_location(b, pprof_mapping(b, &told), 0x401100,
				  (uint64_t[]){pprof_function(b, "f", NULL, "")}, 1);
	add(b, stack, 3, 1, 1);
	p = round_trip(b);
	ck_assert(mapping_of(p, "/usr/bin/app")->has_functions);
	ck_assert(!mapping_of(p, "/usr/bin/told")->has_functions);
	m = mapping_of(p, "/usr/lib/libx.so");
	ck_assert(!m->has_functions);
	ck_assert_str_eq(p->string_table[m->build_id], "feed");
	l = p->location[unnamed - 1];
	ck_assert_uint_eq(l->n_line, 0);
	ck_assert_uint_eq(l->mapping_id, m->id);
	ck_assert_uint_eq(l->address - m->memory_start + m->file_offset, 0x2345);
	pprof_profile_free(p);
	pprof_builder_free(b);
}
END_TEST

/* A merged profile keeps the rule: its unnamed location clears the flag again. */
START_TEST(test_has_functions_merge)
{
	struct pprof_builder *b = new_cpu(), *c;
	uint64_t m = pprof_mapping(b, &app_map), stack[2];
	pprof_profile *p, *q;

	stack[0] = pprof_location(b, m, 0x401234, NULL, 0);
	stack[1] = loc_in(b, "main", 0x401000);
	add(b, stack, 2, 3, 1);
	p = round_trip(b);
	ck_assert(!p->mapping[0]->has_functions);
	c = pprof_builder_like(p);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(pprof_merge(c, p, NULL), 0);
	q = round_trip(c);
	ck_assert(!q->mapping[0]->has_functions);
	ck_assert_uint_eq(q->location[0]->address, 0x401234);
	pprof_profile_free(q);
	pprof_profile_free(p);
	pprof_builder_free(c);
	pprof_builder_free(b);
}
END_TEST

/*
 * The name of a frame without Lines, the one emberctl shows and a push sends: the base
 * name of its mapping's file and the address's offset in that file, else the address.
 */
START_TEST(test_unnamed_frame)
{
	static const char long_file[] =
		"/opt/"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	const struct pprof_mapping_desc maps[] = {
		/* rebased to its file offset, as the drain sends user mappings */
		{.start = 0x1000, .limit = 0x9000, .offset = 0x1000, .file = "/opt/fx/fx_stripped"},
		{.start = 0x7f0000000000,
		 .limit = 0x7f0000010000,
		 .offset = 0x2000,
		 .file = "[anon:jit]"},
		{.start = 0x5000, .limit = 0x6000, .offset = 0, .file = "/trailing/"},
		{.start = 0x5000, .limit = 0x6000, .offset = 0, .file = ""},
		{.start = 0x5000, .limit = 0x6000, .offset = 0, .file = long_file},
	};
	struct pprof_builder *b = new_cpu();
	char buf[PPROF_UNNAMED_MAX], small[8];
	pprof_profile *p;

	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
		ck_assert_uint_eq(pprof_mapping(b, &maps[i]), i + 1);
	p = round_trip(b);
	pprof_unnamed_frame(p, p->mapping[0], 0x1234, buf, sizeof(buf));
	ck_assert_str_eq(buf, "fx_stripped+0x1234");
	pprof_unnamed_frame(p, p->mapping[1], 0x7f0000000100, buf, sizeof(buf));
	ck_assert_str_eq(buf, "[anon:jit]+0x2100");
	pprof_unnamed_frame(p, p->mapping[2], 0x5010, buf, sizeof(buf));
	ck_assert_str_eq(buf, "/trailing/+0x10");
	/* no file, no mapping, or an address below the mapping: the address alone */
	pprof_unnamed_frame(p, p->mapping[3], 0x5010, buf, sizeof(buf));
	ck_assert_str_eq(buf, "0x5010");
	pprof_unnamed_frame(p, NULL, 0xdeadbeef, buf, sizeof(buf));
	ck_assert_str_eq(buf, "0xdeadbeef");
	pprof_unnamed_frame(p, p->mapping[0], 0x10, buf, sizeof(buf));
	ck_assert_str_eq(buf, "0x10");
	/* cut to the buffer, always terminated */
	pprof_unnamed_frame(p, p->mapping[4], 0x5010, buf, sizeof(buf));
	ck_assert_uint_eq(strlen(buf), PPROF_UNNAMED_MAX - 1);
	ck_assert_int_eq(strncmp(buf, long_file + 5, 100), 0);
	pprof_unnamed_frame(p, p->mapping[0], 0x1234, small, sizeof(small));
	ck_assert_str_eq(small, "fx_stri");
	pprof_profile_free(p);
	pprof_builder_free(b);
}
END_TEST

/*
 * A merge with name_unnamed gives every location without Lines one Line, of the
 * function pprof_unnamed_frame() names; the location keeps its address and mapping,
 * and the mapping is still sent without has_functions (the name is not a symbol).
 * Named locations are untouched.
 */
START_TEST(test_merge_name_unnamed)
{
	const struct pprof_mapping_desc lib = {.start = 0x2000,
					       .limit = 0x9000,
					       .offset = 0x2000,
					       .file = "/usr/lib/libx.so",
					       .build_id = "feed",
					       .has_functions = true};
	const struct pprof_filter f = {.name_unnamed = true};
	struct pprof_builder *b = new_cpu(), *c;
	uint64_t lm = pprof_mapping(b, &lib), stack[3];
	const Perftools__Profiles__Mapping *m;
	pprof_profile *p, *q;

	stack[0] = pprof_location(b, lm, 0x2345, NULL, 0);
	stack[1] = pprof_location(b, 0, 0xabc, NULL, 0);
	stack[2] = loc_in(b, "main", 0x401000);
	add(b, stack, 3, 2, 1);
	p = round_trip(b);
	c = pprof_builder_like(p);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(pprof_merge(c, p, &f), 0);
	q = round_trip(c);
	ck_assert_uint_eq(q->n_sample, 1);
	ck_assert_uint_eq(q->sample[0]->n_location_id, 3);
	for (size_t i = 0; i < 3; i++) {
		const Perftools__Profiles__Location *l =
			q->location[q->sample[0]->location_id[i] - 1];
		const Perftools__Profiles__Function *fn;
		static const char *const want[] = {"libx.so+0x2345", "0xabc", "main"};
		static const uint64_t addr[] = {0x2345, 0xabc, 0x401000};

		ck_assert_uint_eq(l->n_line, 1);
		fn = q->function[l->line[0]->function_id - 1];
		ck_assert_str_eq(q->string_table[fn->name], want[i]);
		ck_assert_str_eq(q->string_table[fn->system_name], want[i]);
		ck_assert_uint_eq(l->address, addr[i]);
	}
	m = mapping_of(q, "/usr/lib/libx.so");
	ck_assert(!m->has_functions);
	ck_assert_str_eq(q->string_table[m->build_id], "feed");
	ck_assert(mapping_of(q, "/usr/bin/app")->has_functions);
	pprof_profile_free(q);
	pprof_profile_free(p);
	pprof_builder_free(c);
	pprof_builder_free(b);
}
END_TEST

Suite *pprof_suite(void)
{
	Suite *s = suite_create("pprof");
	TCase *build = tcase_create("builder"), *dec = tcase_create("decode");
	TCase *merge = tcase_create("merge");

	tcase_set_timeout(build, 60);
	tcase_set_timeout(dec, 60);
	tcase_add_test(build, test_meta_bounds);
	tcase_add_test(build, test_meta_copied);
	tcase_add_test(build, test_default_sample_type);
	tcase_add_test(build, test_intern);
	tcase_add_test(build, test_lines);
	tcase_add_test(build, test_intern_bad_ids);
	tcase_add_test(build, test_intern_utf8);
	tcase_add_test(build, test_fold);
	tcase_add_test(build, test_add_bounds);
	tcase_add_test(build, test_scale);
	tcase_add_test(build, test_has_functions);
	tcase_add_test(build, test_has_functions_merge);
	tcase_add_test(build, test_unnamed_frame);
	tcase_add_test(dec, test_encode_decode);
	tcase_add_test(dec, test_decode_gzip);
	tcase_add_test(dec, test_decode_gzip_bomb);
	tcase_add_test(dec, test_decode_garbage);
	tcase_add_test(dec, test_decode_hand_valid);
	tcase_add_loop_test(dec, test_decode_invalid, 0, N_BREAKS);
	tcase_add_test(merge, test_merge_sum);
	tcase_add_test(merge, test_merge_pid);
	tcase_add_test(merge, test_merge_identity);
	tcase_add_test(merge, test_merge_types);
	tcase_add_test(merge, test_merge_time);
	tcase_add_test(merge, test_comments);
	tcase_add_test(merge, test_merge_name_unnamed);
	suite_add_tcase(s, build);
	suite_add_tcase(s, dec);
	suite_add_tcase(s, merge);
	return s;
}
