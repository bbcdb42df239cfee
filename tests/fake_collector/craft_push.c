// SPDX-License-Identifier: MIT
/*
 * craft_push: writes one Connect PushRequest (one series, one profile) shaped by its
 * options, for tests that check the fake collector's rules with curl.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "compress.h"
#include "pprof.h"
#include "utf8.h"
#include "push/v1/push.pb-c.h"

#define MAX_LABELS 64

struct craft {
	int labels; /* series labels in all, __name__ and service_name included */
	const char *sample_type;
	const char *fn;		  /* the leaf function's name */
	const char *sample_label; /* "k=v": a string sample label on every sample */
	long long time_offset;	  /* seconds from now; with time_zero, time_nanos is 0 */
	int time_zero;
	long stacks; /* distinct stacks, each with a long function name: size */
};

static const char usage_text[] =
	"usage: craft_push [--labels N] [--sample-type NAME] [--fn NAME] [--sample-label K=V]\n"
	"                  [--time-offset SECONDS | --time-zero] [--stacks N] > request.bin\n"
	"One PushRequest: series labels __name__=process_cpu, service_name=crafted, then\n"
	"l3..lN=v; a CPU profile of --stacks samples (default 1) under main, the first in\n"
	"--fn (default work), gzipped. POST it with Content-Type: application/proto.\n";

static int parse(int argc, char **argv, struct craft *c)
{
	static const struct option lopts[] = {
		{"labels", required_argument, NULL, 'l'},
		{"sample-type", required_argument, NULL, 't'},
		{"fn", required_argument, NULL, 'f'},
		{"sample-label", required_argument, NULL, 's'},
		{"time-offset", required_argument, NULL, 'o'},
		{"time-zero", no_argument, NULL, 'z'},
		{"stacks", required_argument, NULL, 'n'},
		{0},
	};
	int ch;

	*c = (struct craft){.labels = 2, .sample_type = "samples", .fn = "work", .stacks = 1};
	while ((ch = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		switch (ch) {
		case 'l':
			c->labels = atoi(optarg);
			break;
		case 't':
			c->sample_type = optarg;
			break;
		case 'f':
			c->fn = optarg;
			break;
		case 's':
			c->sample_label = optarg;
			break;
		case 'o':
			c->time_offset = atoll(optarg);
			break;
		case 'z':
			c->time_zero = 1;
			break;
		case 'n':
			c->stacks = atol(optarg);
			break;
		default:
			fputs(usage_text, stderr);
			return -EINVAL;
		}
	}
	if (c->labels < 2 || c->labels > MAX_LABELS || c->stacks < 1 || c->stacks > 1000000) {
		fputs(usage_text, stderr);
		return -EINVAL;
	}
	return 0;
}

/* The profile: stacks [fn_i, main], one sample each. */
static int profile(const struct craft *c, uint8_t **out, size_t *len)
{
	struct pprof_meta m = {.sample_types = {{c->sample_type, "count"}},
			       .n_sample_types = 1,
			       .period_type = {"cpu", "nanoseconds"},
			       .period = 10000000};
	struct pprof_label lab = {0};
	struct pprof_builder *b;
	char key[256], name[300];
	uint64_t f, stack[2];
	int64_t one = 1;
	int ret = -ENOMEM;

	m.time_nanos = c->time_zero ? 0 : (real_ns() / NS_PER_SEC + c->time_offset) * NS_PER_SEC;
	b = pprof_builder_new(&m);
	if (!b)
		return -ENOMEM;
	if (c->sample_label) {
		snprintf(key, sizeof(key), "%s", c->sample_label);
		lab.str = strchr(key, '=');
		if (!lab.str)
			goto out;
		*(char *)lab.str++ = '\0';
		lab.key = key;
	}
	f = pprof_function(b, "main", NULL, "");
	stack[1] = f ? pprof_location(b, 0, 0, &f, 1) : 0;
	for (long i = 0; i < c->stacks && stack[1]; i++) {
		if (i)
			snprintf(name, sizeof(name), "%s_%0200ld", c->fn, i);
		f = pprof_function(b, i ? name : c->fn, NULL, "");
		stack[0] = f ? pprof_location(b, 0, 0, &f, 1) : 0;
		if (!stack[0] || pprof_add_sample(b, stack, 2, &one, &lab, c->sample_label ? 1 : 0))
			goto out;
	}
	ret = pprof_encode(b, out, len);
out:
	pprof_builder_free(b);
	return ret;
}

/*
 * ember's pprof builder repairs invalid UTF-8 (U+FFFD): to send a name as
 * given, the encoded profile's string table gets the raw bytes back.
 */
static int raw_name(const char *fn, uint8_t **buf, size_t *len)
{
	pprof_profile *p = perftools__profiles__profile__unpack(NULL, *len, *buf);
	char *fixed = utf8_dup(fn);
	uint8_t *out;
	size_t n;

	if (!p || !fixed) {
		free(fixed);
		if (p)
			perftools__profiles__profile__free_unpacked(p, NULL);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->n_string_table; i++)
		if (!strcmp(p->string_table[i], fixed))
			p->string_table[i] = (char *)fn;
	n = perftools__profiles__profile__get_packed_size(p);
	out = malloc(n ? n : 1);
	if (out) {
		perftools__profiles__profile__pack(p, out);
		free(*buf);
		*buf = out;
		*len = n;
	}
	/* the replaced pointers are not the unpacked message's own: put them back */
	for (size_t i = 0; i < p->n_string_table; i++)
		if (p->string_table[i] == fn)
			p->string_table[i] = NULL;
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(fixed);
	return out ? 0 : -ENOMEM;
}

int main(int argc, char **argv)
{
	Push__V1__PushRequest req = PUSH__V1__PUSH_REQUEST__INIT;
	Push__V1__RawProfileSeries series = PUSH__V1__RAW_PROFILE_SERIES__INIT, *sp = &series;
	Push__V1__RawSample sample = PUSH__V1__RAW_SAMPLE__INIT, *smp = &sample;
	Types__V1__LabelPair pairs[MAX_LABELS], *pp[MAX_LABELS];
	char names[MAX_LABELS][16];
	struct craft c;
	uint8_t *raw, *gz, *buf;
	size_t len, gzlen, n;

	if (parse(argc, argv, &c))
		return 2;
	if (profile(&c, &raw, &len) || raw_name(c.fn, &raw, &len) ||
	    gzip_compress(raw, len, &gz, &gzlen)) {
		fprintf(stderr, "craft_push: cannot build the profile\n");
		return 1;
	}
	for (int i = 0; i < c.labels; i++) {
		types__v1__label_pair__init(&pairs[i]);
		pp[i] = &pairs[i];
		snprintf(names[i], sizeof(names[i]), "l%d", i + 1);
		pairs[i].name = i == 0 ? "__name__" : i == 1 ? "service_name" : names[i];
		pairs[i].value = i == 0 ? "process_cpu" : i == 1 ? "crafted" : "v";
	}
	series.n_labels = (size_t)c.labels;
	series.labels = pp;
	sample.raw_profile.data = gz;
	sample.raw_profile.len = gzlen;
	series.n_samples = 1;
	series.samples = &smp;
	req.n_series = 1;
	req.series = &sp;
	n = push__v1__push_request__get_packed_size(&req);
	buf = malloc(n ? n : 1);
	if (!buf)
		return 1;
	push__v1__push_request__pack(&req, buf);
	if (fwrite(buf, 1, n, stdout) != n || fflush(stdout))
		return 1;
	fprintf(stderr, "craft_push: %zu bytes of profile, %zu gzipped, %zu of request\n", len,
		gzlen, n);
	free(buf);
	free(gz);
	free(raw);
	return 0;
}
