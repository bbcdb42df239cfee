// SPDX-License-Identifier: MIT
/*
 * mkhistory: writes a history of CPU profiles whose merged numbers are known,
 * for the emberctl tests. The table below is the answer key. --count and --v2
 * make a large or an older history for the retention test.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "clock.h"
#include "history.h"
#include "pprof.h"

/* 2026-01-01T00:00:00Z: profile k covers [T0 + 10k s, T0 + 10(k+1) s). */
#define T0 (1767225600LL * NS_PER_SEC)
#define INTERVAL (10 * NS_PER_SEC)
/* 100 Hz: each sample stands for 10 ms of CPU. */
#define PERIOD_NS 10000000LL
#define MAX_SAMPLES 4

enum func { F_NONE, F_MAIN, F_A, F_B, F_C, F_ODD, N_FUNCS };
enum stack { S_A, S_B, S_C, S_REC_A, S_REC_B, S_ODD, N_STACKS };
#define MAX_DEPTH 4

/* Each function has one fixed address, so locations agree across profiles. */
static const struct {
	const char *name;
	uint64_t address;
} funcs[N_FUNCS] = {
	[F_MAIN] = {"main", 0x401100},
	[F_A] = {"f_a", 0x401200},
	[F_B] = {"f_b", 0x401300},
	[F_C] = {"f_c", 0x401400},
	/* a name that folded output must make safe: ';' and a newline */
	[F_ODD] = {"odd;name\nx", 0x401500},
};

/* Leaf first, as pprof wants them; F_NONE ends a shorter stack. */
static const enum func stacks[N_STACKS][MAX_DEPTH] = {
	[S_A] = {F_A, F_MAIN},
	[S_B] = {F_B, F_MAIN},
	[S_C] = {F_C, F_B, F_MAIN},
	[S_REC_A] = {F_A, F_B, F_B, F_MAIN}, /* main -> f_b -> f_b -> f_a */
	[S_REC_B] = {F_B, F_C, F_B, F_MAIN}, /* main -> f_b -> f_c -> f_b */
	[S_ODD] = {F_ODD, F_MAIN},
};

struct sample {
	int pid;
	enum stack stack;
	int count;
};

struct profile {
	const char *app;
	const char *labels;
	struct sample samples[MAX_SAMPLES];
};

/*
 * The answer key. Merged over all three: f_a 34 (pid 100: 30), f_b 12 self
 * (pid 100: 10), f_c 9 (pid 200: 9); 55 samples, 18 + 20 + 17.
 */
static const struct profile profiles[] = {
	{"", "", {{100, S_A, 10}, {100, S_B, 5}, {200, S_C, 3}}},
	{"", "", {{100, S_A, 10}, {200, S_A, 4}, {200, S_C, 6}}},
	{"checkout", "service_name=checkout", {{100, S_A, 10}, {100, S_B, 5}, {200, S_B, 2}}},
};

/*
 * --diff: a base window of 3 profiles from 2026-01-02T00:00:00Z, then a new
 * window of 3 from 01:00:00Z in which f_a's samples double. Base: f_a, f_b
 * and f_c 30 self each of 90 (33.33%); new: f_a 60 of 120 (50%), f_b and f_c
 * 30 (25%): f_a +16.67 points, f_b and f_c -8.33.
 */
#define DIFF_BASE (T0 + 86400 * NS_PER_SEC)
#define DIFF_NEW (DIFF_BASE + 3600 * NS_PER_SEC)
static const struct profile diff_base = {"", "", {{100, S_A, 10}, {100, S_B, 10}, {100, S_C, 10}}};
static const struct profile diff_new = {"", "", {{100, S_A, 20}, {100, S_B, 10}, {100, S_C, 10}}};

/*
 * --deep: recursion and an odd name, at 00:01:00 in app "deep". Alone: 12
 * samples; f_a self 6, f_b self 4 (total 10, counted once per stack although
 * recursive), "odd;name\nx" self 2; callers of f_b: f_b 6 (then main), f_c 4
 * (then f_b, main).
 */
static const struct profile deep = {
	"deep",
	"service_name=deep",
	{{300, S_REC_A, 6}, {300, S_REC_B, 4}, {400, S_ODD, 2}},
};

static const struct pprof_meta cpu_meta = {
	.sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
	.n_sample_types = 2,
	.period_type = {"cpu", "nanoseconds"},
	.period = PERIOD_NS,
};

static uint64_t location_of(struct pprof_builder *b, uint64_t mapping, enum func f)
{
	uint64_t fid = pprof_function(b, funcs[f].name, funcs[f].name, "app.c");

	return fid ? pprof_location(b, mapping, funcs[f].address, &fid, 1) : 0;
}

static int add_sample(struct pprof_builder *b, uint64_t mapping, const struct sample *s)
{
	int64_t values[2] = {s->count, s->count * PERIOD_NS};
	char comm[16];
	struct pprof_label labels[2] = {
		{.key = "pid", .num = s->pid},
		{.key = "comm", .str = comm},
	};
	uint64_t locs[MAX_DEPTH];
	size_t n = 0;

	snprintf(comm, sizeof(comm), "app%d", s->pid);
	for (; n < MAX_DEPTH && stacks[s->stack][n] != F_NONE; n++) {
		locs[n] = location_of(b, mapping, stacks[s->stack][n]);
		if (!locs[n])
			return -ENOMEM;
	}
	return pprof_add_sample(b, locs, n, values, labels, 2);
}

static int encode_profile(const struct profile *p, int64_t start, uint8_t **out, size_t *len,
			  uint64_t *samples)
{
	const struct pprof_mapping_desc desc = {
		.start = 0x400000,
		.limit = 0x500000,
		.file = "/usr/bin/app",
		.has_functions = true,
	};
	struct pprof_builder *b = pprof_builder_new(&cpu_meta);
	uint64_t mapping;
	int ret = 0;

	if (!b)
		return -errno;
	pprof_builder_set_time(b, start, INTERVAL);
	mapping = pprof_mapping(b, &desc);
	*samples = 0;
	for (size_t i = 0; !ret && i < MAX_SAMPLES && p->samples[i].count; i++) {
		ret = mapping ? add_sample(b, mapping, &p->samples[i]) : -ENOMEM;
		*samples += (uint64_t)p->samples[i].count;
	}
	if (!ret)
		ret = pprof_encode(b, out, len);
	pprof_builder_free(b);
	return ret;
}

/*
 * --offcpu: a readable profile of another type ("offcpu") at 00:00:00, so that
 * --type has two to choose from: 7 samples of main -> f_b -> f_c, pid 500.
 */
static const struct profile offcpu = {"", "", {{500, S_C, 7}}};

static int put_typed(struct history *h, const struct profile *p, int64_t start, const char *type,
		     int64_t *id)
{
	struct history_meta m = {
		.start_ns = start,
		.end_ns = start + INTERVAL,
		.type = type,
		.app = p->app,
		.labels = p->labels,
		.processes = 2,
	};
	uint8_t *buf = NULL;
	size_t len;
	int ret;

	ret = encode_profile(p, start, &buf, &len, &m.samples);
	if (!ret)
		ret = history_put(h, &m, buf, len, id);
	free(buf);
	return ret;
}

static int put_profile(struct history *h, const struct profile *p, int64_t start, int64_t *id)
{
	return put_typed(h, p, start, "cpu", id);
}

/* A stored "mem" profile, so that type filters have something to leave out. */
static int put_mem(struct history *h)
{
	static const uint8_t not_cpu[] = "a mem profile; only its type matters here";
	struct history_meta m = {
		.start_ns = T0,
		.end_ns = T0 + INTERVAL,
		.type = "mem",
		.app = "",
		.labels = "",
		.samples = 1,
		.processes = 1,
	};

	return history_put(h, &m, not_cpu, sizeof(not_cpu), NULL);
}

static int smash_blob(const char *data_dir, int64_t id)
{
	char path[4096], sql[128];
	sqlite3 *db;
	int rc;

	snprintf(path, sizeof(path), "%s/history.db", data_dir);
	snprintf(sql, sizeof(sql), "UPDATE profiles SET blob = x'0badc0de' WHERE id = %lld",
		 (long long)id);
	rc = sqlite3_open(path, &db);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_close(db);
	return rc == SQLITE_OK ? 0 : -EIO;
}

/*
 * Two more cpu profiles after the three good ones: one whose blob is not a
 * pprof (id 4 in a fresh history) and one whose blob is not zstd (id 5).
 */
static int put_corrupt(struct history *h, const char *data_dir)
{
	static const uint8_t garbage[] = "not a profile";
	struct history_meta m = {
		.start_ns = T0 + 3 * INTERVAL,
		.end_ns = T0 + 4 * INTERVAL,
		.type = "cpu",
		.app = "",
		.labels = "",
		.samples = 1,
		.processes = 1,
	};
	int64_t id;
	int ret;

	ret = history_put(h, &m, garbage, sizeof(garbage), NULL);
	if (!ret)
		ret = put_profile(h, &profiles[0], T0 + 4 * INTERVAL, &id);
	return ret ? ret : smash_blob(data_dir, id);
}

/* n more profiles after the three of the answer key, 10 s apart, cycling through them. */
static int put_more(struct history *h, long n)
{
	int ret = 0;

	for (long i = 0; !ret && i < n; i++)
		ret = put_profile(h, &profiles[i % 3], T0 + (3 + i) * INTERVAL, NULL);
	return ret;
}

/*
 * The file as ember 0.2 left it: schema v2, without the start index and
 * without incremental auto-vacuum (which only a VACUUM can turn off again).
 */
static int make_v2(const char *data_dir)
{
	char path[4096];
	sqlite3 *db;
	int rc;

	snprintf(path, sizeof(path), "%s/history.db", data_dir);
	rc = sqlite3_open(path, &db);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db,
				  "PRAGMA auto_vacuum = NONE; VACUUM; DROP INDEX profiles_start; "
				  "PRAGMA user_version = 2; PRAGMA wal_checkpoint(TRUNCATE)",
				  NULL, NULL, NULL);
	sqlite3_close(db);
	return rc == SQLITE_OK ? 0 : -EIO;
}

static int put_diff(struct history *h)
{
	int ret = 0;

	for (int64_t i = 0; !ret && i < 3; i++) {
		ret = put_profile(h, &diff_base, DIFF_BASE + i * INTERVAL, NULL);
		if (!ret)
			ret = put_profile(h, &diff_new, DIFF_NEW + i * INTERVAL, NULL);
	}
	return ret;
}

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr,
		"usage: mkhistory [--mem] [--corrupt] [--count N] [--v2] [--diff] [--deep]\n"
		"                 [--offcpu] DIR\n"
		"  writes 3 cpu profiles from 2026-01-01T00:00:00Z, 10 s each\n"
		"  --mem      also a mem profile at 00:00:00\n"
		"  --corrupt  also 2 corrupt cpu profiles at 00:00:30 and 00:00:40\n"
		"  --count N  also N more cpu profiles from 00:00:30, 10 s apart\n"
		"  --v2       leave the file as schema v2 (no incremental auto-vacuum)\n"
		"  --diff     also 3 profiles from 2026-01-02T00:00:00Z and 3 from 01:00:00Z\n"
		"             in which f_a's samples double\n"
		"  --deep     also a cpu profile with recursion at 00:01:00, app deep\n"
		"  --offcpu   also an offcpu profile at 00:00:00: 7 samples in f_c\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"mem", no_argument, NULL, 'm'},	 {"corrupt", no_argument, NULL, 'c'},
		{"count", required_argument, NULL, 'n'}, {"v2", no_argument, NULL, '2'},
		{"diff", no_argument, NULL, 'd'},	 {"deep", no_argument, NULL, 'D'},
		{"offcpu", no_argument, NULL, 'o'},	 {0},
	};
	bool mem = false, corrupt = false, v2 = false, diff = false, with_deep = false, off = false;
	long more = 0;
	char *end;
	const char *err = NULL;
	struct history *h;
	int c, ret = 0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'm')
			mem = true;
		else if (c == 'c')
			corrupt = true;
		else if (c == '2')
			v2 = true;
		else if (c == 'n' && (more = strtol(optarg, &end, 10)) >= 0 && more <= 1000000 &&
			 !*end && end != optarg)
			continue;
		else if (c == 'd')
			diff = true;
		else if (c == 'D')
			with_deep = true;
		else if (c == 'o')
			off = true;
		else
			usage();
	}
	if (optind != argc - 1)
		usage();
	h = history_open(argv[optind], false, &err);
	if (!h) {
		fprintf(stderr, "mkhistory: %s: %s\n", argv[optind], err ? err : strerror(errno));
		return 1;
	}
	for (size_t i = 0; !ret && i < sizeof(profiles) / sizeof(profiles[0]); i++)
		ret = put_profile(h, &profiles[i], T0 + (int64_t)i * INTERVAL, NULL);
	if (!ret && corrupt)
		ret = put_corrupt(h, argv[optind]);
	if (!ret && mem)
		ret = put_mem(h);
	if (!ret && corrupt && more)
		ret = -EINVAL; /* the corrupt rows' ids are fixed */
	if (!ret)
		ret = put_more(h, more);
	if (!ret && diff)
		ret = put_diff(h);
	if (!ret && with_deep)
		ret = put_profile(h, &deep, T0 + 6 * INTERVAL, NULL);
	if (!ret && off)
		ret = put_typed(h, &offcpu, T0, "offcpu", NULL);
	history_close(h);
	if (!ret && v2)
		ret = make_v2(argv[optind]);
	if (ret)
		fprintf(stderr, "mkhistory: %s\n", strerror(-ret));
	return ret ? 1 : 0;
}
