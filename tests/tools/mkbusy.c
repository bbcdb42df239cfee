// SPDX-License-Identifier: MIT
/*
 * mkbusy: writes a history shaped like a busy host's, for timing emberctl's
 * views (bench/views_speed.sh): one cpu profile per 10 s interval, each with
 * many processes and thousands of distinct deep stacks that share their outer
 * frames, as real call trees do. Deterministic: the same options write the
 * same profiles.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "history.h"
#include "pprof.h"

/* 2026-01-01T00:00:00Z: profile k covers [T0 + 10k s, T0 + 10(k+1) s). */
#define T0 (1767225600LL * NS_PER_SEC)
#define INTERVAL (10 * NS_PER_SEC)
#define PERIOD_NS 10101010LL /* 99 Hz */
#define MIN_DEPTH 20
#define MAX_DEPTH 40
/* Return addresses per function: a function is called from a few places. */
#define SITES 3
#define N_MODULES 8

/* What to write. */
struct shape {
	long profiles; /* 8640: 24 h of 10 s */
	long stacks;   /* distinct stacks per profile */
	long universe; /* distinct stacks over the whole history */
	long processes;
	long functions;
};

static const char *const modules[N_MODULES][2] = {
	{"/usr/sbin/nginx", "ngx"},
	{"/usr/lib/x86_64-linux-gnu/libc.so.6", "__libc"},
	{"/usr/bin/python3.11", "_Py"},
	{"/usr/lib/x86_64-linux-gnu/libssl.so.3", "ssl"},
	{"/usr/lib/jvm/libjvm.so", "JVM"},
	{"/usr/bin/postgres", "pg"},
	{"/usr/lib/x86_64-linux-gnu/libz.so.1", "zlib"},
	{"[kernel.kallsyms]", "do"},
};
static const char *const verbs[] = {"parse", "read", "write", "handle", "encode", "decode",
				    "alloc", "free", "flush", "lookup", "hash",	  "compress",
				    "send",  "recv", "copy",  "scan",	"sort",	  "merge"};
static const char *const nouns[] = {"request", "buffer", "header", "row",     "frame",
				    "page",    "token",	 "entry",  "message", "block",
				    "chunk",   "index",	 "tuple",  "event",   "socket"};

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* "ngx_http_parse_request_12": realistic length and spread. */
static void function_name(long f, char *buf, size_t len)
{
	size_t nv = sizeof(verbs) / sizeof(verbs[0]), nn = sizeof(nouns) / sizeof(nouns[0]);
	uint64_t h = mix((uint64_t)f);

	if (f % 7 == 3)
		snprintf(buf, len, "app::%s%sHandler<std::string>::operator()(%s&) const",
			 verbs[h % nv], nouns[(h >> 8) % nn], nouns[(h >> 16) % nn]);
	else
		snprintf(buf, len, "%s_%s_%s_%ld", modules[f % N_MODULES][1], verbs[h % nv],
			 nouns[(h >> 8) % nn], f / 16);
}

/*
 * Frame d (root first) of stack k: outer frames are shared by many stacks
 * (they depend on k / 2^(12 - d/3)), inner ones vary: a call tree's shape.
 */
static long frame_of(const struct shape *sh, long k, int d)
{
	int shift = 12 - d / 3;
	long group = shift > 0 ? k >> shift : k;

	if (d == 0)
		return (long)(mix((uint64_t)group % 4) % 4); /* a handful of roots */
	return (long)(mix(((uint64_t)group << 8) ^ (uint64_t)d) % (uint64_t)sh->functions);
}

static int depth_of(long k)
{
	return MIN_DEPTH + (int)(mix((uint64_t)k * 31) % (MAX_DEPTH - MIN_DEPTH + 1));
}

/* Stack j of profile p: half the stacks are always hot, the rest vary over the day. */
static long stack_of(const struct shape *sh, long p, long j)
{
	long hot = sh->stacks / 2;

	if (j < hot)
		return j;
	return hot +
	       (long)((mix((uint64_t)p) + (uint64_t)j * 7919) % (uint64_t)(sh->universe - hot));
}

static const struct pprof_meta cpu_meta = {
	.sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
	.n_sample_types = 2,
	.period_type = {"cpu", "nanoseconds"},
	.period = PERIOD_NS,
};

/* The ids of one profile's functions and mappings, interned on first use. */
struct ids {
	uint64_t *fn;
	uint64_t map[N_MODULES];
};

static uint64_t location(struct pprof_builder *b, struct ids *ids, long f, long site)
{
	struct pprof_mapping_desc md = {
		.start = 0x400000 + 0x10000000ULL * (uint64_t)(f % N_MODULES),
		.file = modules[f % N_MODULES][0],
		.has_functions = true,
	};
	char name[160];

	md.limit = md.start + 0x1000000;
	if (!ids->map[f % N_MODULES])
		ids->map[f % N_MODULES] = pprof_mapping(b, &md);
	if (!ids->fn[f]) {
		function_name(f, name, sizeof(name));
		ids->fn[f] = pprof_function(b, name, name, "");
	}
	if (!ids->map[f % N_MODULES] || !ids->fn[f])
		return 0;
	return pprof_location(b, ids->map[f % N_MODULES],
			      md.start + (uint64_t)f * 64 + (uint64_t)site * 8, &ids->fn[f], 1);
}

static int add_stack(struct pprof_builder *b, struct ids *ids, const struct shape *sh, long p,
		     long k)
{
	uint64_t locs[MAX_DEPTH];
	int depth = depth_of(k);
	long pid = 1000 + (long)(mix((uint64_t)k ^ 0x5eed) % (uint64_t)sh->processes);
	int64_t count = 1 + (int64_t)(mix((uint64_t)(p * 1000003 + k)) % 20);
	int64_t values[2] = {count, count * PERIOD_NS};
	char comm[16];
	struct pprof_label labels[2] = {{.key = "pid", .num = pid}, {.key = "comm", .str = comm}};

	snprintf(comm, sizeof(comm), "worker%ld", pid % 50);
	for (int d = 0; d < depth; d++) {
		/* leaf first */
		locs[depth - 1 - d] = location(b, ids, frame_of(sh, k, d),
					       (long)(mix((uint64_t)k + (uint64_t)d) % SITES));
		if (!locs[depth - 1 - d])
			return -ENOMEM;
	}
	return pprof_add_sample(b, locs, (size_t)depth, values, labels, 2);
}

static int put_one(struct history *h, const struct shape *sh, long p, uint64_t *raw_bytes)
{
	struct pprof_builder *b = pprof_builder_new(&cpu_meta);
	struct ids ids = {.fn = calloc((size_t)sh->functions, sizeof(uint64_t))};
	struct history_meta m = {
		.start_ns = T0 + p * INTERVAL,
		.end_ns = T0 + (p + 1) * INTERVAL,
		.type = "cpu",
		.app = "",
		.labels = "",
		.processes = (uint32_t)sh->processes,
	};
	uint8_t *buf = NULL;
	size_t len = 0;
	int ret = b && ids.fn ? 0 : -ENOMEM;

	if (b)
		pprof_builder_set_time(b, m.start_ns, INTERVAL);
	for (long j = 0; !ret && j < sh->stacks; j++)
		ret = add_stack(b, &ids, sh, p, stack_of(sh, p, j));
	if (!ret) {
		m.samples = (uint64_t)pprof_value_total(b, 0);
		ret = pprof_encode(b, &buf, &len);
	}
	if (!ret)
		ret = history_put(h, &m, buf, len, NULL);
	*raw_bytes += len;
	free(buf);
	free(ids.fn);
	pprof_builder_free(b);
	return ret;
}

static long number(const char *arg)
{
	char *end;
	long v = strtol(arg, &end, 10);

	if (end == arg || *end || v <= 0 || v > 10000000) {
		fprintf(stderr, "mkbusy: \"%s\" is not a positive count\n", arg);
		exit(2);
	}
	return v;
}

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr,
		"usage: mkbusy [-n PROFILES] [-s STACKS] [-U UNIVERSE] [-P PROCESSES]\n"
		"              [-f FUNCTIONS] DIR\n"
		"  writes PROFILES cpu profiles of 10 s from 2026-01-01T00:00:00Z (default 8640:\n"
		"  24 h), each with STACKS distinct stacks (2000) of depth %d-%d drawn from\n"
		"  UNIVERSE stacks in all (6000), over PROCESSES pids (200) and FUNCTIONS\n"
		"  function names (1500)\n",
		MIN_DEPTH, MAX_DEPTH);
	exit(2);
}

int main(int argc, char **argv)
{
	struct shape sh = {.profiles = 8640,
			   .stacks = 2000,
			   .universe = 6000,
			   .processes = 200,
			   .functions = 1500};
	const char *err = NULL;
	uint64_t raw = 0;
	struct history *h;
	int c, ret = 0;

	while ((c = getopt(argc, argv, "n:s:U:P:f:")) != -1) {
		if (c == 'n')
			sh.profiles = number(optarg);
		else if (c == 's')
			sh.stacks = number(optarg);
		else if (c == 'U')
			sh.universe = number(optarg);
		else if (c == 'P')
			sh.processes = number(optarg);
		else if (c == 'f')
			sh.functions = number(optarg);
		else
			usage();
	}
	if (optind != argc - 1 || sh.universe < sh.stacks || sh.functions < 8)
		usage();
	h = history_open(argv[optind], false, &err);
	if (!h) {
		fprintf(stderr, "mkbusy: %s: %s\n", argv[optind], err ? err : strerror(errno));
		return 1;
	}
	for (long p = 0; !ret && p < sh.profiles; p++)
		ret = put_one(h, &sh, p, &raw);
	history_close(h);
	if (ret) {
		fprintf(stderr, "mkbusy: %s\n", strerror(-ret));
		return 1;
	}
	printf("mkbusy: %ld profiles, %" PRIu64 " bytes of pprof (%.0f KiB each)\n", sh.profiles,
	       raw, (double)raw / (double)sh.profiles / 1024);
	return 0;
}
