// SPDX-License-Identifier: MIT
/*
 * fake_collector: a Pyroscope stand-in for the push tests. It validates pushes like the real
 * server (COLLECTORS.md 1.3-1.8), stores what it accepts for assertions, and injects faults.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "clock.h"
#include "compress.h"
#include "pprof.h"
#include "push/v1/push.pb-c.h"

#define PUSH_PATH "/push.v1.PusherService/Push"
/* Pyroscope's default limits (pkg/validation/limits.go RegisterFlags) */
#define MAX_LABELS 30	      /* validation.max-label-names-per-series (--max-label-names) */
#define MAX_LABEL_NAME 1024   /* validation.max-label-name-length */
#define MAX_LABEL_VALUE 2048  /* validation.max-label-value-length */
#define MAX_SAMPLES 16000     /* validation.max-profile-stacktrace-samples (--max-samples) */
#define MAX_SAMPLE_LABELS 100 /* validation.max-profile-stacktrace-sample-labels */
#define NEWER_THAN_NS (600 * NS_PER_SEC) /* validation.reject-newer-than */
#define INGEST_RATE (4u << 20)	/* distributor.ingestion-rate-limit-mb: 4 MiB/s (--ingest-rate) */
#define INGEST_BURST (2u << 20) /* distributor.ingestion-burst-size-mb: 2 MiB (--ingest-burst) */
/* Our own bounds: this is test code, but it must survive any input. */
#define CONN_MEMORY_LIMIT (64u << 10) /* headers and MHD's buffers per connection */
#define MAX_CONNECTIONS 64
#define MAX_REASONS 64
#define MAX_INGEST_LABELS 64

/* What the next push or ingest request gets instead of an honest answer. */
enum fault_mode {
	FAULT_NONE,
	FAULT_503,
	FAULT_429,
	FAULT_400,
	FAULT_500,
	FAULT_HTML502,
	FAULT_SLOW,
	FAULT_SLOWOK,
	FAULT_CLOSE,
	FAULT_DROP,
	FAULT_REFUSE,
	FAULT_MODES
};

static const char *const fault_names[FAULT_MODES] = {
	"none", "503", "429", "400", "500", "html502", "slow", "slowok", "close", "drop", "refuse",
};

struct options {
	const char *store;
	const char *port_file;
	unsigned int port;
	size_t max_body;
	size_t max_profile;
	int64_t max_age_ns;
	size_t max_label_names, max_samples;
	double ingest_rate, ingest_burst; /* bytes per second, bytes */
	bool utf8_labels;
	bool quiet;
};

/* Everything the handler threads share; guarded by lock. */
struct state {
	pthread_mutex_t lock;
	struct options opt;
	FILE *index;
	FILE *series; /* series.tsv: the series each stored profile split into */
	uint64_t seq;
	uint64_t requests, accepted;
	uint64_t status[600];
	struct {
		char name[48];
		uint64_t n;
	} reasons[MAX_REASONS];
	size_t n_reasons;
	uint64_t faults_served[FAULT_MODES];
	enum fault_mode fault;
	unsigned int fault_left;
	unsigned int fault_ms;
	int wake_fd; /* admin -> main thread: a refuse window starts */
	unsigned int refuse_s;
	/*
	 * From the refuse fault to the window's end, requests not yet started get no reply and
	 * nothing stored; the port closes once the inflight ones are done. Closing it under a
	 * request already stored would cut the reply and make the client send it twice.
	 */
	bool refusing;
	unsigned int inflight;
	atomic_int stopping; /* set by main before stopping MHD: cuts slow replies short */
	double tokens;	     /* the ingestion rate limiter's bucket, in bytes */
	int64_t tokens_ns;   /* when it was last refilled; 0: never (full) */
};

static struct state g = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake_fd = -1};

/* One request's body as it arrives. */
struct req {
	uint8_t *body;
	size_t len, cap;
	bool too_big;
};

/* A series' labels, owned copies, sorted by name before use. */
struct labelset {
	size_t n;
	char *name[MAX_INGEST_LABELS];
	char *value[MAX_INGEST_LABELS];
};

/* A verdict: status 0 means accepted. */
struct verdict {
	unsigned int status;
	const char *code;   /* Connect code */
	const char *reason; /* stats key */
	char msg[512];
};

static const char usage_text[] =
	"usage: fake_collector --store DIR [--port N] [--port-file FILE] [--max-age SECONDS]\n"
	"                      [--max-body BYTES] [--max-profile BYTES] [--max-label-names N]\n"
	"                      [--max-samples N] [--ingest-rate BYTES] [--ingest-burst BYTES]\n"
	"                      [--utf8-labels] [--quiet]\n"
	"\n"
	"A Pyroscope stand-in for ember's push tests, on 127.0.0.1 only (port 0 = ephemeral;\n"
	"the port is printed as 'listening on 127.0.0.1:PORT' and written to --port-file).\n"
	"It applies the server's ingest rules, each citing the Pyroscope source it follows.\n"
	"\n"
	"POST /push.v1.PusherService/Push   Connect unary push (COLLECTORS.md 1.3-1.7):\n"
	"  405 + Allow for another method; 415 + Accept-Post unless Content-Type is\n"
	"  application/proto (application/json is valid Connect but not implemented here:\n"
	"  it gets 415 too); 400 when Connect-Protocol-Version is present and not 1; 501\n"
	"  for a Content-Encoding other than gzip/identity; 429 resource_exhausted for a body\n"
	"  over --max-body (default 16 MiB). Each raw_profile is gunzipped when it starts with\n"
	"  1f 8b (over --max-profile bytes, default 4 MiB: 400), decoded and checked\n"
	"  (ValidateProfile: >= 1 sample type, no '-' in one, UTF-8 strings, <= --max-samples\n"
	"  (16000) samples, <= 100 labels per sample, time_nanos within [now - max-age\n"
	"  (default 3600 s), now + 10 min], 0 = now), normalized (Normalize: numeric sample\n"
	"  labels removed, samples without a positive value dropped, identical ones merged,\n"
	"  addresses of has_functions mappings cleared), split into one series per set of\n"
	"  string sample labels (but trace_id, span_id, profile_id), and each series' labels\n"
	"  checked (ValidateLabels: at least one, <= --max-label-names (30), __name__ set,\n"
	"  service_name not empty (unknown_service when absent), names <= 1024 and values\n"
	"  <= 2048 bytes, valid UTF-8, no duplicates, names [a-zA-Z_][a-zA-Z0-9_]* unless\n"
	"  --utf8-labels). Then the ingestion rate limiter: a bucket of --ingest-rate bytes/s\n"
	"  (4 MiB) holding --ingest-burst bytes (2 MiB), fed the uncompressed profile sizes and\n"
	"  the label bytes: 429 when it is short (always, for a request over the burst).\n"
	"  Errors are Connect JSON {\"code\",\"message\"} with the status of the code. Unlike\n"
	"  Pyroscope, one bad series rejects the whole request (ember sends one series per\n"
	"  request). Success: 200 with an empty application/proto body.\n"
	"POST /ingest?name=APP{k=v,..}&from=&until=&format=pprof&spyName=   legacy raw pprof\n"
	"  (COLLECTORS.md 1.8): 400 for a bad name or time, 413 over --max-body, 422 for other\n"
	"  formats or a profile failing the checks above; __name__ derived from sample types.\n"
	"\n"
	"Store (--store DIR), for every accepted profile: DIR/NNNNNN.pb (as received,\n"
	"uncompressed), DIR/NNNNNN.norm.pb (normalized, what the server keeps), DIR/NNNNNN.folded\n"
	"(its flame graph as the server draws it, from Line entries only: a location without\n"
	"one shows no frame; in the format of 'emberctl folded': root first, ';' joined,\n"
	"sorted, count of the samples type), a line\n"
	"in DIR/index.tsv: seq, arrival (unix ms), request labels (sorted k=v joined by ','),\n"
	"time_nanos, total of the first sample type, endpoint (push|ingest), series count; and\n"
	"a line per series in DIR/series.tsv: seq, index, series labels, samples. The sequence\n"
	"continues across restarts on the same DIR.\n"
	"\n"
	"Admin endpoints (same port):\n"
	"  POST /admin/fault?mode=M&count=N[&ms=D][&seconds=S]  the next N push/ingest requests\n"
	"    get fault M: 503, 429, 400, 500 (Connect JSON, nothing stored), html502 (HTML 502\n"
	"    body), slow (wait D ms, default 15000, then 503 unstored: a reply slower than the\n"
	"    client's timeout), slowok (wait D ms, then handle normally: may store a duplicate),\n"
	"    close (200 headers, then the connection is closed mid-body; nothing stored), drop\n"
	"    (connection closed with no reply), refuse (requests being served finish, new ones\n"
	"    get no reply, then the listening socket is closed for S seconds, default 5, or\n"
	"    until SIGUSR1: connections refused), none (clear).\n"
	"  GET /admin/stats   plain 'key value' lines: requests, accepted, status.CODE,\n"
	"    rejected.REASON, fault.MODE (faults served), fault_pending.\n"
	"SIGTERM/SIGINT stop it; SIGUSR1 ends a refuse window (ignored outside one).\n";

static void usage(FILE *f)
{
	fputs(usage_text, f);
}

/* --- small helpers -------------------------------------------------------------------- */

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * NS_PER_MS};

	nanosleep(&ts, NULL);
}

static bool utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i, n;

	while (*p) {
		if (*p < 0x80) {
			p++;
			continue;
		}
		if ((*p & 0xe0) == 0xc0 && *p >= 0xc2)
			n = 1;
		else if ((*p & 0xf0) == 0xe0)
			n = 2;
		else if ((*p & 0xf8) == 0xf0 && *p <= 0xf4)
			n = 3;
		else
			return false;
		for (i = 1; i <= n; i++)
			if ((p[i] & 0xc0) != 0x80)
				return false;
		p += n + 1;
	}
	return true;
}

static bool legacy_name(const char *s)
{
	if (!(isalpha((unsigned char)*s) || *s == '_'))
		return false;
	for (s++; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_'))
			return false;
	return true;
}

static void verdict_set(struct verdict *v, unsigned int status, const char *code,
			const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void verdict_set(struct verdict *v, unsigned int status, const char *code,
			const char *reason, const char *fmt, ...)
{
	va_list ap;

	v->status = status;
	v->code = code;
	v->reason = reason;
	va_start(ap, fmt);
	vsnprintf(v->msg, sizeof(v->msg), fmt, ap);
	va_end(ap);
}

static void count_reason(const char *reason)
{
	size_t i;

	for (i = 0; i < g.n_reasons; i++)
		if (!strcmp(g.reasons[i].name, reason))
			break;
	if (i == g.n_reasons) {
		if (g.n_reasons == MAX_REASONS)
			return;
		snprintf(g.reasons[i].name, sizeof(g.reasons[i].name), "%s", reason);
		g.n_reasons++;
	}
	g.reasons[i].n++;
}

/* --- labels ----------------------------------------------------------------------------- */

static void labelset_free(struct labelset *ls)
{
	size_t i;

	for (i = 0; i < ls->n; i++) {
		free(ls->name[i]);
		free(ls->value[i]);
	}
	ls->n = 0;
}

static int labelset_add(struct labelset *ls, const char *name, size_t nlen, const char *value,
			size_t vlen)
{
	if (ls->n == MAX_INGEST_LABELS)
		return -E2BIG;
	ls->name[ls->n] = strndup(name, nlen);
	ls->value[ls->n] = strndup(value, vlen);
	if (!ls->name[ls->n] || !ls->value[ls->n]) {
		free(ls->name[ls->n]);
		free(ls->value[ls->n]);
		return -ENOMEM;
	}
	ls->n++;
	return 0;
}

static const char *labelset_get(const struct labelset *ls, const char *name)
{
	size_t i;

	for (i = 0; i < ls->n; i++)
		if (!strcmp(ls->name[i], name))
			return ls->value[i];
	return NULL;
}

static void labelset_sort(struct labelset *ls)
{
	size_t i, j;
	char *t;

	for (i = 1; i < ls->n; i++)
		for (j = i; j > 0 && strcmp(ls->name[j - 1], ls->name[j]) > 0; j--) {
			t = ls->name[j];
			ls->name[j] = ls->name[j - 1];
			ls->name[j - 1] = t;
			t = ls->value[j];
			ls->value[j] = ls->value[j - 1];
			ls->value[j - 1] = t;
		}
}

static bool check_label(const char *name, const char *value, struct verdict *v)
{
	if (strlen(name) > MAX_LABEL_NAME) {
		verdict_set(v, 400, "invalid_argument", "label_name_too_long",
			    "profile with labels has label name too long: '%.64s...'", name);
		return false;
	}
	if (strlen(value) > MAX_LABEL_VALUE) {
		verdict_set(v, 400, "invalid_argument", "label_value_too_long",
			    "profile with labels has label value too long for '%.64s'", name);
		return false;
	}
	if (!*name || !utf8_valid(name) || (!g.opt.utf8_labels && !legacy_name(name))) {
		verdict_set(v, 400, "invalid_argument", "invalid_labels",
			    "invalid labels with error: invalid label name '%.64s'", name);
		return false;
	}
	if (!utf8_valid(value)) {
		verdict_set(v, 400, "invalid_argument", "invalid_labels",
			    "invalid labels with error: invalid label value for '%.64s'", name);
		return false;
	}
	return true;
}

/*
 * ValidateLabels (pkg/validation/validate.go ValidateLabels), in its order: at least one
 * label, sorted, at most max-label-names-per-series names, a valid __name__, a non-empty
 * service_name, then per label: name and value lengths, a valid name (legacy
 * [a-zA-Z_][a-zA-Z0-9_]* unless --utf8-labels: model.LabelName.IsValid), a UTF-8 value
 * (model.LabelValue.IsValid), no duplicate name. ls is sorted on return.
 */
static bool check_labels(struct labelset *ls, struct verdict *v)
{
	const char *s;
	size_t i;

	if (!ls->n) {
		verdict_set(v, 400, "invalid_argument", "missing_labels",
			    "error at least one label pair is required per profile");
		return false;
	}
	labelset_sort(ls);
	if (ls->n > g.opt.max_label_names) {
		verdict_set(v, 400, "invalid_argument", "max_label_names_per_series",
			    "profile series has %zu label names; limit %zu", ls->n,
			    g.opt.max_label_names);
		return false;
	}
	s = labelset_get(ls, "__name__");
	if (!s || !*s || !utf8_valid(s)) {
		verdict_set(v, 400, "invalid_argument", "invalid_labels",
			    "invalid labels with error: invalid metric name");
		return false;
	}
	s = labelset_get(ls, "service_name");
	if (!s || !*s) {
		verdict_set(v, 400, "invalid_argument", "missing_labels",
			    "invalid labels with error: service name is not provided");
		return false;
	}
	for (i = 0; i < ls->n; i++) {
		if (!check_label(ls->name[i], ls->value[i], v))
			return false;
		if (i && !strcmp(ls->name[i - 1], ls->name[i])) {
			verdict_set(v, 400, "invalid_argument", "duplicate_label_names",
				    "profile with labels has duplicate label name: '%.64s'",
				    ls->name[i]);
			return false;
		}
	}
	return true;
}

/* "k=v,k=v" with tab, newline and backslash escaped, for index.tsv. */
static void labels_format(const struct labelset *ls, char *out, size_t outlen)
{
	size_t i, o = 0;
	const char *s;
	int pass;

	for (i = 0; i < ls->n; i++) {
		for (pass = 0; pass < 2; pass++) {
			s = pass ? ls->value[i] : ls->name[i];
			for (; *s && o + 3 < outlen; s++) {
				if (*s == '\t' || *s == '\n' || *s == '\\') {
					out[o++] = '\\';
					out[o++] = *s == '\t' ? 't' : *s == '\n' ? 'n' : '\\';
				} else {
					out[o++] = *s;
				}
			}
			if (o + 2 < outlen)
				out[o++] = pass ? ',' : '=';
		}
	}
	out[o ? o - 1 : 0] = '\0';
}

/* --- profiles --------------------------------------------------------------------------- */

static bool profile_strings_ok(const pprof_profile *p)
{
	size_t i;

	for (i = 0; i < p->n_string_table; i++)
		if (!utf8_valid(p->string_table[i]))
			return false;
	return true;
}

/*
 * ValidateProfile (pkg/validation/validate.go ValidateProfile) on a decoded profile: at
 * least one sample type, none with '-', every string UTF-8, at most max-samples samples
 * and 100 labels per sample, time_nanos within [now - reject-older-than, now +
 * reject-newer-than] (0 stands for now, and becomes now: Normalize does it too).
 * string_table[0] == "", string indices in range, non-zero location and function ids
 * and one value per sample type were checked by pprof_decode() already.
 */
static bool check_profile(pprof_profile *p, struct verdict *v)
{
	int64_t now = real_ns();
	size_t i;

	if (!p->n_sample_type) {
		verdict_set(v, 400, "invalid_argument", "empty_profile", "empty profile");
		return false;
	}
	for (i = 0; i < p->n_sample_type; i++)
		if (strchr(p->string_table[p->sample_type[i]->type], '-')) {
			verdict_set(v, 400, "invalid_argument", "malformed_profile",
				    "sample type contains -: '%.64s'",
				    p->string_table[p->sample_type[i]->type]);
			return false;
		}
	if (!profile_strings_ok(p)) {
		verdict_set(v, 400, "invalid_argument", "invalid_utf8",
			    "profile contains a string that is not valid UTF-8");
		return false;
	}
	if (p->n_sample > g.opt.max_samples) {
		verdict_set(v, 400, "invalid_argument", "samples_limit",
			    "the profile exceeds the samples count limit "
			    "(max_profile_stacktrace_samples, actual: %zu, limit: %zu)",
			    p->n_sample, g.opt.max_samples);
		return false;
	}
	for (i = 0; i < p->n_sample; i++)
		if (p->sample[i]->n_label > MAX_SAMPLE_LABELS) {
			verdict_set(v, 400, "invalid_argument", "too_many_sample_labels",
				    "sample has %zu labels, limit %d", p->sample[i]->n_label,
				    MAX_SAMPLE_LABELS);
			return false;
		}
	if (!p->time_nanos)
		p->time_nanos = now;
	if (p->time_nanos < now - g.opt.max_age_ns || p->time_nanos > now + NEWER_THAN_NS) {
		verdict_set(v, 400, "invalid_argument", "outside_ingestion_window",
			    "profile is outside of ingestion window (profile timestamp: %" PRId64
			    ", the ingestion window starts at %" PRId64 " and ends at %" PRId64 ")",
			    p->time_nanos, now - g.opt.max_age_ns, now + NEWER_THAN_NS);
		return false;
	}
	return true;
}

/*
 * A raw_profile (gzip or not: pkg/pprof/pprof.go RawFromBytes tries gzip, else takes the
 * bytes as they are) -> uncompressed bytes and a checked, decoded profile. Over
 * --max-profile bytes once decompressed (validation.max-profile-size-bytes): 400.
 */
static bool load_profile(const uint8_t *buf, size_t len, uint8_t **raw, size_t *raw_len,
			 pprof_profile **out, struct verdict *v)
{
	char err[256];
	int ret;

	*raw = NULL;
	if (is_gzip(buf, len)) {
		ret = gzip_decompress(buf, len, g.opt.max_profile, raw, raw_len);
		if (ret == -EFBIG)
			goto too_big;
		if (ret) {
			verdict_set(v, 400, "invalid_argument", "bad_profile",
				    "failed to decompress profile: %s", strerror(-ret));
			return false;
		}
	} else {
		if (len > g.opt.max_profile)
			goto too_big;
		*raw = malloc(len ? len : 1);
		if (!*raw) {
			verdict_set(v, 500, "internal", "oom", "out of memory");
			return false;
		}
		memcpy(*raw, buf, len);
		*raw_len = len;
	}
	ret = pprof_decode(*raw, *raw_len, out, err, sizeof(err));
	if (ret) {
		verdict_set(v, 400, "invalid_argument", "bad_profile",
			    "failed to parse profile: %s", err);
		goto fail;
	}
	if (check_profile(*out, v))
		return true;
	pprof_profile_free(*out);
fail:
	free(*raw);
	*raw = NULL;
	return false;
too_big:
	verdict_set(v, 400, "invalid_argument", "profile_too_big",
		    "uncompressed profile payload size exceeds limit of %zu bytes",
		    g.opt.max_profile);
	return false;
}

static int64_t profile_total(const pprof_profile *p)
{
	int64_t t = 0;
	size_t i;

	for (i = 0; i < p->n_sample; i++)
		if (p->sample[i]->n_value)
			t += p->sample[i]->value[0];
	return t;
}

/* --- Normalize, the series split and the flame graph ------------------------------------ */

/*
 * A normalized copy of a decoded profile: its own sample messages (values summed,
 * string labels only) over the decoded profile's tables, which it shares.
 */
struct norm {
	pprof_profile p;
	Perftools__Profiles__Sample *samples, **samplep;
	Perftools__Profiles__Label **labels; /* pool of the samples' label pointers */
	int64_t *values;
	const pprof_profile *src;
	struct pprof_reader *r; /* src's ids indexed */
};

/* One series of the split: its labels and its samples (a run of n.p.sample). */
struct series {
	struct labelset ls;
	size_t first, n;
};

#define MAX_SPLIT 256 /* series one profile may split into here */

struct split {
	struct series v[MAX_SPLIT];
	size_t n;
};

static void norm_free(struct norm *n)
{
	free(n->samples);
	free(n->samplep);
	free(n->labels);
	free(n->values);
	pprof_reader_free(n->r);
	memset(n, 0, sizeof(*n));
}

static bool trace_key(const pprof_profile *p, const Perftools__Profiles__Label *l)
{
	const char *k = p->string_table[l->key];

	/* pprof_split.go VisitSampleSeries: profile_id is renamed span_id, and
	 * GroupSamplesWithoutLabels leaves trace_id and span_id as sample labels. */
	return !strcmp(k, "trace_id") || !strcmp(k, "span_id") || !strcmp(k, "profile_id");
}

static int label_cmp(const void *a, const void *b)
{
	const Perftools__Profiles__Label *x = *(Perftools__Profiles__Label *const *)a;
	const Perftools__Profiles__Label *y = *(Perftools__Profiles__Label *const *)b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->str < y->str ? -1 : x->str > y->str;
}

static const pprof_profile *sort_profile; /* qsort has no context argument */

/* The labels that make series (all but trace_id, span_id, profile_id), compared. */
static int group_cmp(const Perftools__Profiles__Sample *a, const Perftools__Profiles__Sample *b)
{
	size_t i = 0, j = 0;
	int c;

	for (;;) {
		while (i < a->n_label && trace_key(sort_profile, a->label[i]))
			i++;
		while (j < b->n_label && trace_key(sort_profile, b->label[j]))
			j++;
		if (i == a->n_label || j == b->n_label)
			return (i < a->n_label) - (j < b->n_label);
		c = label_cmp(&a->label[i++], &b->label[j++]);
		if (c)
			return c;
	}
}

/* Series labels first (groups are runs), then the stack, then every label. */
static int sample_cmp(const void *pa, const void *pb)
{
	const Perftools__Profiles__Sample *a = *(Perftools__Profiles__Sample *const *)pa;
	const Perftools__Profiles__Sample *b = *(Perftools__Profiles__Sample *const *)pb;
	size_t i;
	int c = group_cmp(a, b);

	if (c)
		return c;
	if (a->n_location_id != b->n_location_id)
		return a->n_location_id < b->n_location_id ? -1 : 1;
	for (i = 0; i < a->n_location_id; i++)
		if (a->location_id[i] != b->location_id[i])
			return a->location_id[i] < b->location_id[i] ? -1 : 1;
	if (a->n_label != b->n_label)
		return a->n_label < b->n_label ? -1 : 1;
	for (i = 0; i < a->n_label; i++) {
		c = label_cmp(&a->label[i], &b->label[i]);
		if (c)
			return c;
	}
	return 0;
}

/* A sample's copy with its string labels only, sorted (Normalize, pprof.go). */
static void norm_sample(struct norm *n, size_t i, size_t *label_off)
{
	const Perftools__Profiles__Sample *s = n->src->sample[i];
	static const Perftools__Profiles__Sample init = PERFTOOLS__PROFILES__SAMPLE__INIT;
	Perftools__Profiles__Sample *d = &n->samples[i];
	size_t nt = n->src->n_sample_type, j;

	*d = init;
	d->n_location_id = s->n_location_id;
	d->location_id = s->location_id;
	d->n_value = nt;
	d->value = n->values + i * nt;
	memcpy(d->value, s->value, nt * sizeof(*d->value));
	d->label = n->labels + *label_off;
	for (j = 0; j < s->n_label; j++)
		if (s->label[j]->str) /* "Non-string labels are not supported." */
			d->label[d->n_label++] = s->label[j];
	qsort(d->label, d->n_label, sizeof(*d->label), label_cmp);
	*label_off += d->n_label;
	n->samplep[i] = d;
}

static bool positive(const Perftools__Profiles__Sample *s)
{
	size_t j;

	for (j = 0; j < s->n_value; j++)
		if (s->value[j] > 0)
			return true;
	return false;
}

/* clearAddresses (pprof.go): a mapping with has_functions loses its addresses. */
static void clear_addresses(pprof_profile *p, const struct pprof_reader *r)
{
	size_t i;

	for (i = 0; i < p->n_location; i++) {
		const Perftools__Profiles__Mapping *m =
			pprof_reader_mapping(r, p->location[i]->mapping_id);

		if (m && m->has_functions)
			p->location[i]->address = 0;
	}
	for (i = 0; i < p->n_mapping; i++) {
		if (!p->mapping[i]->has_functions)
			continue;
		p->mapping[i]->memory_start = 0;
		p->mapping[i]->memory_limit = 0;
		p->mapping[i]->file_offset = 0;
	}
}

/*
 * Normalize (pkg/pprof/pprof.go Profile.Normalize) of p into n: numeric sample labels
 * removed, identical samples (stack and string labels) merged with their values summed,
 * samples without a positive value dropped, then clearAddresses on p itself. time_nanos
 * 0 became now in check_profile(). Unused locations and functions are not removed here:
 * they change no flame graph. n shares p's tables; free n before p.
 */
static int normalize(pprof_profile *p, struct norm *n)
{
	size_t nt = p->n_sample_type, i, k, nlabels = 0, off = 0;

	memset(n, 0, sizeof(*n));
	n->src = p;
	if (pprof_reader_new(p, &n->r))
		return -ENOMEM;
	for (i = 0; i < p->n_sample; i++)
		nlabels += p->sample[i]->n_label;
	n->samples = calloc(p->n_sample + 1, sizeof(*n->samples));
	n->samplep = calloc(p->n_sample + 1, sizeof(*n->samplep));
	n->labels = calloc(nlabels + 1, sizeof(*n->labels));
	n->values = calloc(p->n_sample * nt + 1, sizeof(*n->values));
	if (!n->samples || !n->samplep || !n->labels || !n->values || !n->r) {
		norm_free(n);
		return -ENOMEM;
	}
	for (i = 0; i < p->n_sample; i++)
		norm_sample(n, i, &off);
	sort_profile = p;
	qsort(n->samplep, p->n_sample, sizeof(*n->samplep), sample_cmp);
	for (i = 0, k = 0; i < p->n_sample; i++) {
		if (k && !sample_cmp(&n->samplep[k - 1], &n->samplep[i])) {
			for (size_t j = 0; j < nt; j++)
				n->samplep[k - 1]->value[j] += n->samplep[i]->value[j];
			continue;
		}
		n->samplep[k++] = n->samplep[i];
	}
	for (i = 0, off = 0; i < k; i++)
		if (positive(n->samplep[i]))
			n->samplep[off++] = n->samplep[i];
	n->p = *p;
	n->p.n_sample = off;
	n->p.sample = n->samplep;
	clear_addresses(p, n->r);
	return 0;
}

/*
 * The split into series (pkg/model/pprofsplit/pprof_split.go VisitSampleSeries): each
 * distinct set of string sample labels (trace_id, span_id, profile_id aside) is one
 * series, whose labels are the request's plus each sample label whose name they lack
 * (addSampleLabelsToLabelsBuilder). Only then are labels validated, series by series
 * (ValidateLabels: a sample label can take a series over 30 names). Two groups that end
 * with the same labels stay two entries here (Pyroscope merges them: same flame graph).
 */
static bool split_series(const struct norm *n, const struct labelset *base, struct split *out,
			 struct verdict *v)
{
	const pprof_profile *p = n->src;
	size_t i, j, k;

	out->n = 0;
	for (i = 0; i < n->p.n_sample; i = j) {
		struct series *s;

		for (j = i + 1; j < n->p.n_sample && !group_cmp(n->p.sample[i], n->p.sample[j]);
		     j++)
			;
		if (out->n == MAX_SPLIT) {
			verdict_set(v, 400, "invalid_argument", "series_limit",
				    "the fake collector splits a profile into %d series at most",
				    MAX_SPLIT);
			return false;
		}
		s = &out->v[out->n++];
		*s = (struct series){.first = i, .n = j - i};
		for (k = 0; k < base->n; k++)
			if (labelset_add(&s->ls, base->name[k], strlen(base->name[k]),
					 base->value[k], strlen(base->value[k])))
				goto too_many;
		for (k = 0; k < n->p.sample[i]->n_label; k++) {
			const Perftools__Profiles__Label *l = n->p.sample[i]->label[k];
			const char *name = p->string_table[l->key];

			if (trace_key(p, l) || labelset_get(&s->ls, name))
				continue;
			if (labelset_add(&s->ls, name, strlen(name), p->string_table[l->str],
					 strlen(p->string_table[l->str])))
				goto too_many;
		}
		if (!check_labels(&s->ls, v))
			return false;
	}
	return true;
too_many:
	verdict_set(v, 400, "invalid_argument", "max_label_names_per_series",
		    "profile series has more than %d label names; limit %zu", MAX_INGEST_LABELS,
		    g.opt.max_label_names);
	return false;
}

static void split_free(struct split *sp)
{
	for (size_t i = 0; i < sp->n; i++)
		labelset_free(&sp->v[i].ls);
	sp->n = 0;
}

/* One line of a flame graph: root-first frames joined by ';', and its value. */
struct fline {
	char *text;
	int64_t value;
};

/* Appends a frame name made safe as emberctl folded does (';' -> ',', controls -> '?'). */
static void frame_add(char *buf, size_t cap, size_t *len, const char *name)
{
	for (; *name && *len + 2 < cap; name++) {
		char ch = *name == ';' ? ',' : *name;

		buf[(*len)++] = (unsigned char)ch < 0x20 || ch == 0x7f ? '?' : ch;
	}
	buf[(*len)++] = ';';
	buf[*len] = '\0';
}

/*
 * The frames of location l, innermost first, appended leaf-first to names[]: the name of
 * each of its Lines' functions, and nothing else. Pyroscope builds every flame graph so
 * (pkg/phlaredb/symdb/resolver_tree.go: InsertStacktrace and resolveStack append
 * Functions[line.FunctionId].Name for each entry of loc.Line, and nothing for a location
 * without one), so an unnamed frame vanishes and its time is its caller's self time.
 * Its server-side symbolizer, the one path that gives Lines to such locations, is off
 * by default (validation symbolizer.enabled = false): not emulated here.
 */
static size_t location_frames(const struct norm *nm, const Perftools__Profiles__Location *l,
			      const char **names, size_t n)
{
	for (size_t j = 0; j < l->n_line; j++) {
		const Perftools__Profiles__Function *fn =
			pprof_reader_function(nm->r, l->line[j]->function_id);

		names[n++] = nm->src->string_table[fn->name]; /* validated: fn exists */
	}
	return n;
}

static int fline_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fline *)a)->text, ((const struct fline *)b)->text);
}

#define MAX_FRAMES 2048 /* frames of one stack in the flame graph (Pyroscope keeps 1000) */

/* The index of the sample type shown: "samples" (what emberctl folded counts), else 0. */
static size_t shown_type(const pprof_profile *p)
{
	for (size_t i = 0; i < p->n_sample_type; i++)
		if (!strcmp(p->string_table[p->sample_type[i]->type], "samples"))
			return i;
	return 0;
}

/*
 * Writes samples [first, first + count) of n as folded stacks into f: root first, lines
 * sorted, equal stacks summed, in `emberctl folded`'s format, so the two diff.
 */
static int write_folded(FILE *f, const struct norm *n, size_t first, size_t count)
{
	static const char *names[MAX_FRAMES];
	const pprof_profile *p = n->src;
	size_t vi = shown_type(p), k = 0, i, j, nf;
	struct fline *lines = calloc(count + 1, sizeof(*lines));
	char *buf = malloc(1 << 16);
	int ret = 0;

	if (!lines || !buf) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = first; i < first + count; i++) {
		const Perftools__Profiles__Sample *s = n->p.sample[i];
		size_t len = 0;

		nf = 0;
		for (j = 0; j < s->n_location_id && nf + 64 < MAX_FRAMES; j++) {
			int64_t q = pprof_reader_location_index(n->r, s->location_id[j]);

			if (q >= 0 && p->location[q]->n_line < 64)
				nf = location_frames(n, p->location[q], names, nf);
		}
		if (!nf || !s->value[vi])
			continue; /* no frame left to show it under */
		buf[0] = '\0';
		while (nf)
			frame_add(buf, 1 << 16, &len, names[--nf]);
		buf[len - 1] = '\0';
		lines[k].text = strdup(buf);
		lines[k].value = s->value[vi];
		if (!lines[k++].text) {
			ret = -ENOMEM;
			goto out;
		}
	}
	qsort(lines, k, sizeof(*lines), fline_cmp);
	for (i = 0; i < k; i = j) {
		int64_t sum = 0;

		for (j = i; j < k && !strcmp(lines[i].text, lines[j].text); j++)
			sum += lines[j].value;
		fprintf(f, "%s %" PRId64 "\n", lines[i].text, sum);
	}
out:
	for (i = 0; lines && i < k; i++)
		free(lines[i].text);
	free(lines);
	free(buf);
	return ret;
}

/*
 * The per-tenant ingestion rate limiter (pkg/distributor/distributor.go rateLimit): a
 * token bucket of --ingest-rate bytes per second holding --ingest-burst bytes, fed the
 * request's uncompressed profile sizes plus its label names and values. A request larger
 * than the burst can never pass: 429 on every try. Under g.lock.
 */
static bool rate_allow(size_t bytes)
{
	int64_t now = real_ns();

	if (!g.tokens_ns)
		g.tokens = g.opt.ingest_burst;
	else
		g.tokens += g.opt.ingest_rate * (double)(now - g.tokens_ns) / NS_PER_SEC;
	if (g.tokens > g.opt.ingest_burst)
		g.tokens = g.opt.ingest_burst;
	g.tokens_ns = now;
	if ((double)bytes > g.tokens)
		return false;
	g.tokens -= (double)bytes;
	return true;
}

/* An accepted profile: DIR/NNNNNN.pb, then its line in index.tsv. Under g.lock. */
static int store_profile(const struct labelset *ls, const struct norm *n, const struct split *sp,
			 const uint8_t *raw, size_t len, const char *endpoint)
{
	char path[4096], labels[8192];
	uint8_t *packed;
	size_t plen, i;
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "%s/%06" PRIu64 ".pb", g.opt.store, g.seq + 1);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	ok = fwrite(raw, 1, len, f) == len;
	if (fclose(f) || !ok)
		return -EIO;
	/* what Pyroscope keeps: the normalized profile, and its flame graph */
	plen = perftools__profiles__profile__get_packed_size(&n->p);
	packed = malloc(plen ? plen : 1);
	if (!packed)
		return -ENOMEM;
	perftools__profiles__profile__pack(&n->p, packed);
	snprintf(path, sizeof(path), "%s/%06" PRIu64 ".norm.pb", g.opt.store, g.seq + 1);
	f = fopen(path, "w");
	ok = f && fwrite(packed, 1, plen, f) == plen;
	free(packed);
	if (!f || fclose(f) || !ok)
		return -EIO;
	snprintf(path, sizeof(path), "%s/%06" PRIu64 ".folded", g.opt.store, g.seq + 1);
	f = fopen(path, "w");
	ok = f && !write_folded(f, n, 0, n->p.n_sample);
	if (!f || fclose(f) || !ok)
		return -EIO;
	g.seq++;
	for (i = 0; i < sp->n; i++) {
		labels_format(&sp->v[i].ls, labels, sizeof(labels));
		fprintf(g.series, "%" PRIu64 "\t%zu\t%s\t%zu\n", g.seq, i, labels, sp->v[i].n);
	}
	fflush(g.series);
	labels_format(ls, labels, sizeof(labels));
	fprintf(g.index, "%" PRIu64 "\t%" PRId64 "\t%s\t%" PRId64 "\t%" PRId64 "\t%s\t%zu\n", g.seq,
		real_ns() / NS_PER_MS, labels, n->p.time_nanos, profile_total(&n->p), endpoint,
		sp->n);
	fflush(g.index);
	g.accepted++;
	if (!g.opt.quiet)
		printf("stored %06" PRIu64 " %s %s (%zu series)\n", g.seq, endpoint, labels, sp->n);
	fflush(stdout);
	return 0;
}

/*
 * What the distributor does with one decoded, validated profile of a series with labels
 * ls (pkg/distributor/distributor.go): Normalize, split into series, validate each
 * series' labels; then, when store is set, keep it. A profile left with no sample is
 * answered 200 and dropped. 0 on success, else v says why.
 */
static bool ingest_profile(const struct labelset *ls, pprof_profile *p, const uint8_t *raw,
			   size_t len, const char *endpoint, bool store, struct verdict *v)
{
	static struct split sp; /* under g.lock: too big for a handler thread's stack */
	struct norm n;
	bool ok;

	if (normalize(p, &n)) {
		verdict_set(v, 500, "internal", "oom", "out of memory");
		return false;
	}
	pthread_mutex_lock(&g.lock);
	ok = split_series(&n, ls, &sp, v);
	if (ok && store && n.p.n_sample && store_profile(ls, &n, &sp, raw, len, endpoint)) {
		verdict_set(v, 500, "internal", "store_failed", "cannot store the profile");
		ok = false;
	}
	if (ok && store && !n.p.n_sample)
		count_reason("empty_after_normalize");
	split_free(&sp);
	pthread_mutex_unlock(&g.lock);
	norm_free(&n);
	return ok;
}

/* --- HTTP replies ----------------------------------------------------------------------- */

static enum MHD_Result send_reply(struct MHD_Connection *c, unsigned int status, const char *ctype,
				  const void *body, size_t len, const char *hname,
				  const char *hvalue)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	if (ctype)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (hname)
		MHD_add_response_header(r, hname, hvalue);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* A reply to a push or ingest request, counted in status.CODE. */
static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status, const char *ctype,
			     const void *body, size_t len, const char *hname, const char *hvalue)
{
	pthread_mutex_lock(&g.lock);
	if (status < 600)
		g.status[status]++;
	pthread_mutex_unlock(&g.lock);
	return send_reply(c, status, ctype, body, len, hname, hvalue);
}

static void json_escape(const char *s, char *out, size_t outlen)
{
	size_t o = 0;

	for (; *s && o + 7 < outlen; s++) {
		if (*s == '"' || *s == '\\') {
			out[o++] = '\\';
			out[o++] = *s;
		} else if ((unsigned char)*s < 0x20) {
			o += (size_t)snprintf(out + o, outlen - o, "\\u%04x", (unsigned char)*s);
		} else {
			out[o++] = *s;
		}
	}
	out[o] = '\0';
}

/* A Connect error: JSON {code, message}, counted under its reason. */
static enum MHD_Result reply_verdict(struct MHD_Connection *c, const struct verdict *v,
				     const char *hname, const char *hvalue)
{
	char msg[1024], body[1200];
	int n;

	pthread_mutex_lock(&g.lock);
	count_reason(v->reason);
	pthread_mutex_unlock(&g.lock);
	if (!g.opt.quiet)
		printf("rejected %u %s: %s\n", v->status, v->reason, v->msg);
	fflush(stdout);
	json_escape(v->msg, msg, sizeof(msg));
	n = snprintf(body, sizeof(body), "{\"code\":\"%s\",\"message\":\"%s\"}", v->code, msg);
	return reply(c, v->status, "application/json", body, (size_t)n, hname, hvalue);
}

/* "close": declares a body it never finishes, so the client sees a reply cut short. */
static ssize_t truncated_body(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)cls;
	if (pos || max < 8)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	memcpy(buf, "\n\n\n\n\n\n\n\n", 8);
	return 8;
}

static enum MHD_Result reply_cut(struct MHD_Connection *c)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_callback(64, 64, truncated_body, NULL, NULL);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/proto");
	ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

/* --- faults ----------------------------------------------------------------------------- */

/* Takes the pending fault for this request, if any. */
static enum fault_mode fault_take(unsigned int *ms)
{
	enum fault_mode f = FAULT_NONE;

	pthread_mutex_lock(&g.lock);
	if (g.fault != FAULT_NONE && g.fault != FAULT_REFUSE && g.fault_left) {
		f = g.fault;
		*ms = g.fault_ms;
		g.faults_served[f]++;
		if (!--g.fault_left)
			g.fault = FAULT_NONE;
	}
	pthread_mutex_unlock(&g.lock);
	return f;
}

static void wait_ms(unsigned int ms)
{
	while (ms && !g.stopping) {
		sleep_ms(ms < 50 ? ms : 50);
		ms -= ms < 50 ? ms : 50;
	}
}

/* Serves fault f; FAULT_SLOWOK returns MHD_YES with *handled = false (go on normally). */
static enum MHD_Result serve_fault(struct MHD_Connection *c, enum fault_mode f, unsigned int ms,
				   bool *handled)
{
	static const char html[] =
		"<html><head><title>502 Bad Gateway</title></head>\r\n"
		"<body><center><h1>502 Bad Gateway</h1></center></body></html>\r\n";
	struct verdict v;

	*handled = true;
	if (!g.opt.quiet)
		printf("fault %s\n", fault_names[f]);
	fflush(stdout);
	switch (f) {
	case FAULT_SLOWOK:
		wait_ms(ms);
		*handled = false;
		return MHD_YES;
	case FAULT_SLOW:
		wait_ms(ms);
		verdict_set(&v, 503, "unavailable", "fault_slow", "injected fault: slow reply");
		break;
	case FAULT_503:
		verdict_set(&v, 503, "unavailable", "fault_503", "injected fault: unavailable");
		break;
	case FAULT_429:
		verdict_set(&v, 429, "resource_exhausted", "fault_429",
			    "injected fault: push rate limit (4 MB) exceeded while adding 1 KB");
		break;
	case FAULT_400:
		verdict_set(&v, 400, "invalid_argument", "fault_400",
			    "injected fault: invalid argument");
		break;
	case FAULT_500:
		verdict_set(&v, 500, "internal", "fault_500", "injected fault: internal error");
		break;
	case FAULT_HTML502:
		return reply(c, 502, "text/html", html, sizeof(html) - 1, NULL, NULL);
	case FAULT_CLOSE:
		return reply_cut(c);
	default:
		return MHD_NO; /* FAULT_DROP: MHD closes the connection, no reply */
	}
	return reply_verdict(c, &v, NULL, NULL);
}

static enum fault_mode fault_parse(const char *s)
{
	int i;

	for (i = 0; s && i < FAULT_MODES; i++)
		if (!strcmp(s, fault_names[i]))
			return (enum fault_mode)i;
	return FAULT_MODES;
}

static unsigned int arg_uint(struct MHD_Connection *c, const char *key, unsigned int def)
{
	const char *s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return def;
	v = strtoul(s, &end, 10);
	return *end || v > 86400000ul ? def : (unsigned int)v;
}

static enum MHD_Result admin_fault(struct MHD_Connection *c)
{
	enum fault_mode f =
		fault_parse(MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "mode"));
	char body[128];
	int n;

	if (f == FAULT_MODES)
		return send_reply(c, 400, "text/plain", "unknown mode\n", 13, NULL, NULL);
	pthread_mutex_lock(&g.lock);
	g.fault = f;
	g.fault_left = arg_uint(c, "count", 1);
	g.fault_ms = arg_uint(c, "ms", 15000);
	if (f == FAULT_REFUSE) {
		g.refuse_s = arg_uint(c, "seconds", 5);
		g.refusing = true;
		g.faults_served[f]++;
		g.fault = FAULT_NONE;
		g.fault_left = 0;
		if (write(g.wake_fd, "r", 1) != 1)
			perror("fake_collector: wake");
	}
	n = snprintf(body, sizeof(body), "fault %s count %u ms %u\n", fault_names[f], g.fault_left,
		     g.fault_ms);
	pthread_mutex_unlock(&g.lock);
	return send_reply(c, 200, "text/plain", body, (size_t)n, NULL, NULL);
}

static enum MHD_Result admin_stats(struct MHD_Connection *c)
{
	char body[8192];
	size_t o = 0, i;

	pthread_mutex_lock(&g.lock);
	o += (size_t)snprintf(body + o, sizeof(body) - o,
			      "requests %" PRIu64 "\naccepted %" PRIu64 "\n", g.requests,
			      g.accepted);
	for (i = 0; i < 600; i++)
		if (g.status[i])
			o += (size_t)snprintf(body + o, sizeof(body) - o,
					      "status.%zu %" PRIu64 "\n", i, g.status[i]);
	for (i = 0; i < g.n_reasons; i++)
		o += (size_t)snprintf(body + o, sizeof(body) - o, "rejected.%s %" PRIu64 "\n",
				      g.reasons[i].name, g.reasons[i].n);
	for (i = 1; i < FAULT_MODES; i++)
		if (g.faults_served[i])
			o += (size_t)snprintf(body + o, sizeof(body) - o, "fault.%s %" PRIu64 "\n",
					      fault_names[i], g.faults_served[i]);
	o += (size_t)snprintf(body + o, sizeof(body) - o, "fault_pending %s %u\n",
			      fault_names[g.fault], g.fault_left);
	pthread_mutex_unlock(&g.lock);
	return send_reply(c, 200, "text/plain", body, o, NULL, NULL);
}

/* --- push ------------------------------------------------------------------------------- */

/* Connect's header checks (connect-go handler.go, protocol_connect.go, protocol.go). */
static bool push_headers_ok(struct MHD_Connection *c, struct verdict *v, const char **accept)
{
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	const char *pv =
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Connect-Protocol-Version");
	const char *ce = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Encoding");

	*accept = NULL;
	if (!ct || strcasecmp(ct, "application/proto")) {
		*accept = "application/proto, application/json";
		verdict_set(v, 415, "unknown", "bad_content_type", "unsupported content type %.64s",
			    ct ? ct : "(none)");
		return false;
	}
	if (pv && strcmp(pv, "1")) {
		verdict_set(v, 400, "invalid_argument", "bad_protocol_version",
			    "connect-protocol-version must be \"1\": got \"%.16s\"", pv);
		return false;
	}
	if (ce && *ce && strcasecmp(ce, "gzip") && strcasecmp(ce, "identity")) {
		verdict_set(v, 501, "unimplemented", "bad_encoding",
			    "unknown compression \"%.32s\": supported encodings are gzip", ce);
		return false;
	}
	return true;
}

/* The request body, gunzipped when Content-Encoding says so (into *tmp). */
static bool push_body(struct MHD_Connection *c, struct req *r, const uint8_t **buf, size_t *len,
		      uint8_t **tmp, struct verdict *v)
{
	const char *ce = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Encoding");
	int ret;

	*tmp = NULL;
	*buf = r->body;
	*len = r->len;
	if (!ce || strcasecmp(ce, "gzip"))
		return true;
	ret = gzip_decompress(r->body, r->len, g.opt.max_body, tmp, len);
	if (ret == -EFBIG) {
		verdict_set(v, 429, "resource_exhausted", "body_too_big",
			    "message is larger than configured max %zu", g.opt.max_body);
		return false;
	}
	if (ret) {
		verdict_set(v, 400, "invalid_argument", "bad_gzip", "decompress gzip: %s",
			    strerror(-ret));
		return false;
	}
	*buf = *tmp;
	return true;
}

/*
 * A series' labels, sorted, with service_name="unknown_service" added when absent
 * (pkg/distributor/distributor.go). They are validated after the split of each profile.
 */
static bool series_labels(const Push__V1__RawProfileSeries *s, struct labelset *ls,
			  struct verdict *v)
{
	size_t i;

	ls->n = 0;
	if (s->n_labels > MAX_INGEST_LABELS) {
		verdict_set(v, 400, "invalid_argument", "max_label_names_per_series",
			    "profile series has %zu label names; limit %zu", s->n_labels,
			    g.opt.max_label_names);
		return false;
	}
	for (i = 0; i < s->n_labels; i++)
		if (labelset_add(ls, s->labels[i]->name, strlen(s->labels[i]->name),
				 s->labels[i]->value, strlen(s->labels[i]->value))) {
			verdict_set(v, 500, "internal", "oom", "out of memory");
			return false;
		}
	if (!labelset_get(ls, "service_name") &&
	    labelset_add(ls, "service_name", 12, "unknown_service", 15)) {
		verdict_set(v, 400, "invalid_argument", "max_label_names_per_series",
			    "profile series has too many label names");
		return false;
	}
	labelset_sort(ls);
	return true;
}

/*
 * Validates every series and profile first (store false), then stores them all: all or
 * nothing, where Pyroscope may store some series of a request it answers with an error
 * (ember sends one series per request). *bytes gets what the rate limiter is fed.
 */
static bool push_apply(const Push__V1__PushRequest *pr, struct verdict *v, bool store,
		       size_t *bytes)
{
	struct labelset ls = {0};
	pprof_profile *p;
	uint8_t *raw;
	size_t i, j, len;
	bool ok = true;

	*bytes = 0;
	for (i = 0; ok && i < pr->n_series; i++) {
		ok = series_labels(pr->series[i], &ls, v);
		for (j = 0; ok && j < pr->series[i]->n_labels; j++)
			*bytes += strlen(pr->series[i]->labels[j]->name) +
				  strlen(pr->series[i]->labels[j]->value);
		for (j = 0; ok && j < pr->series[i]->n_samples; j++) {
			const ProtobufCBinaryData *d = &pr->series[i]->samples[j]->raw_profile;

			ok = load_profile(d->data, d->len, &raw, &len, &p, v);
			if (!ok)
				break;
			*bytes += len;
			ok = ingest_profile(&ls, p, raw, len, "push", store, v);
			pprof_profile_free(p);
			free(raw);
		}
		labelset_free(&ls);
	}
	return ok && !v->status;
}

/* The rate limiter's verdict on a request of bytes (distributor.go rateLimit). */
static bool push_rate_ok(size_t bytes, struct verdict *v)
{
	bool ok;

	pthread_mutex_lock(&g.lock);
	ok = rate_allow(bytes);
	pthread_mutex_unlock(&g.lock);
	if (!ok)
		verdict_set(v, 429, "resource_exhausted", "rate_limited",
			    "push rate limit (%.0f B) exceeded while adding %zu B",
			    g.opt.ingest_rate, bytes);
	return ok;
}

static enum MHD_Result handle_push(struct MHD_Connection *c, struct req *r)
{
	Push__V1__PushRequest *pr = NULL;
	struct verdict v = {0};
	const char *accept;
	const uint8_t *buf;
	uint8_t *tmp = NULL;
	size_t len, bytes;
	enum MHD_Result ret;

	if (!push_headers_ok(c, &v, &accept))
		return reply_verdict(c, &v, accept ? "Accept-Post" : NULL, accept);
	if (r->too_big) {
		verdict_set(&v, 429, "resource_exhausted", "body_too_big",
			    "message size is larger than configured max %zu", g.opt.max_body);
		return reply_verdict(c, &v, NULL, NULL);
	}
	if (!push_body(c, r, &buf, &len, &tmp, &v))
		return reply_verdict(c, &v, NULL, NULL);
	pr = push__v1__push_request__unpack(NULL, len, buf);
	free(tmp);
	if (!pr)
		verdict_set(&v, 400, "invalid_argument", "bad_request_proto",
			    "unmarshal into push.v1.PushRequest: malformed message");
	else if (!pr->n_series)
		verdict_set(&v, 400, "invalid_argument", "no_profiles", "no profiles received");
	else if (push_apply(pr, &v, false, &bytes) && push_rate_ok(bytes, &v))
		push_apply(pr, &v, true, &bytes);
	if (pr)
		push__v1__push_request__free_unpacked(pr, NULL);
	if (v.status)
		return reply_verdict(c, &v, NULL, NULL);
	ret = reply(c, 200, "application/proto", "", 0, NULL, NULL);
	return ret;
}

/* --- legacy /ingest ---------------------------------------------------------------------- */

static bool app_char(char ch)
{
	return isalnum((unsigned char)ch) || strchr("_.-/", ch);
}

static const char *trim(const char *s, const char *end, size_t *len)
{
	while (s < end && *s == ' ')
		s++;
	while (end > s && end[-1] == ' ')
		end--;
	*len = (size_t)(end - s);
	return s;
}

/* One "k=v" of APP{...}: keys [A-Za-z0-9_.], __name__ reserved. */
static bool ingest_pair(const char *s, const char *end, struct labelset *ls)
{
	const char *eq = memchr(s, '=', (size_t)(end - s));
	const char *k, *val;
	size_t kl, vl, i;

	if (!eq)
		return false;
	k = trim(s, eq, &kl);
	val = trim(eq + 1, end, &vl);
	if (!kl || (kl == 8 && !memcmp(k, "__name__", 8)))
		return false;
	for (i = 0; i < kl; i++)
		if (!isalnum((unsigned char)k[i]) && k[i] != '_' && k[i] != '.')
			return false;
	if (kl > 2 && !memcmp(k, "__", 2) && strncmp(k, "__session_id__", kl))
		return true; /* dropped, as the server does */
	return !labelset_add(ls, k, kl, val, vl);
}

/* labelset.Parse: APP{k1=v1,k2=v2}; service_name = APP unless given. */
static bool ingest_name(const char *name, struct labelset *ls)
{
	const char *p = name, *brace, *end, *comma;

	while (*p && app_char(*p))
		p++;
	if (p == name || (*p && *p != '{'))
		return false;
	brace = p;
	if (*brace == '{') {
		end = strchr(brace, '}');
		if (!end || end[1])
			return false;
		for (p = brace + 1; p < end; p = comma + 1) {
			comma = memchr(p, ',', (size_t)(end - p));
			if (!comma)
				comma = end;
			if (comma > p && !ingest_pair(p, comma, ls))
				return false;
		}
	}
	if (!labelset_get(ls, "service_name"))
		return !labelset_add(ls, "service_name", 12, name, (size_t)(brace - name));
	return true;
}

/* attime.Parse for digits: 13 digits ms, 16 us, 19 ns, otherwise seconds; "now". */
static bool ingest_time(const char *s, int64_t *ns)
{
	size_t n;
	char *end;
	long long v;

	if (!s || !strcmp(s, "now")) {
		*ns = real_ns();
		return true;
	}
	n = strlen(s);
	errno = 0;
	v = strtoll(s, &end, 10);
	if (!n || *end || errno || v < 0)
		return false;
	*ns = n == 19 ? v : n == 16 ? v * 1000 : n == 13 ? v * NS_PER_MS : v * NS_PER_SEC;
	return true;
}

/* __name__ from the sample types (profile.go:172-250, simplified). */
static const char *ingest_metric(const pprof_profile *p)
{
	size_t i;
	const char *t;

	for (i = 0; i < p->n_sample_type; i++) {
		t = p->string_table[p->sample_type[i]->type];
		if (!strcmp(t, "wall"))
			return "wall";
		if (strstr(t, "cpu") || !strcmp(t, "samples"))
			return "process_cpu";
		if (!strncmp(t, "alloc_", 6) || !strncmp(t, "inuse_", 6) || !strcmp(t, "space") ||
		    !strcmp(t, "objects"))
			return "memory";
		if (!strncmp(t, "mutex_", 6))
			return "mutex";
		if (!strncmp(t, "block_", 6))
			return "block";
		if (!strncmp(t, "goroutine", 9))
			return "goroutines";
	}
	return "unknown";
}

static bool ingest_labels(struct MHD_Connection *c, struct labelset *ls, int64_t *from,
			  struct verdict *v)
{
	const char *name = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "name");
	const char *fmt = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
	const char *spy = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "spyName");
	int64_t until;

	if (!name || !ingest_name(name, ls)) {
		verdict_set(v, 400, "invalid_argument", "bad_name", "invalid name '%.128s'",
			    name ? name : "");
		return false;
	}
	if (!ingest_time(MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "from"), from) ||
	    !ingest_time(MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "until"), &until)) {
		verdict_set(v, 400, "invalid_argument", "bad_time", "invalid from or until");
		return false;
	}
	if (!fmt || strcmp(fmt, "pprof")) {
		verdict_set(v, 422, "unknown", "bad_format",
			    "the fake collector only implements format=pprof, got '%.32s'",
			    fmt ? fmt : "(folded)");
		return false;
	}
	if (labelset_add(ls, "__delta__", 9, "false", 5) ||
	    labelset_add(ls, "pyroscope_spy", 13, spy ? spy : "unknown", spy ? strlen(spy) : 7)) {
		verdict_set(v, 400, "invalid_argument", "max_label_names_per_series",
			    "too many labels");
		return false;
	}
	return true;
}

static enum MHD_Result handle_ingest(struct MHD_Connection *c, struct req *r)
{
	struct labelset ls = {0};
	struct verdict v = {0};
	pprof_profile *p = NULL;
	uint8_t *raw = NULL;
	size_t len;
	int64_t from = 0;

	if (r->too_big) {
		verdict_set(&v, 413, "resource_exhausted", "body_too_big",
			    "request body too large: limit %zu", g.opt.max_body);
		goto out;
	}
	if (!ingest_labels(c, &ls, &from, &v))
		goto out;
	if (!load_profile(r->body, r->len, &raw, &len, &p, &v)) {
		if (v.status == 400)
			v.status = 422; /* conversion failures are 422 on /ingest */
		goto out;
	}
	if (labelset_add(&ls, "__name__", 8, ingest_metric(p), strlen(ingest_metric(p))))
		verdict_set(&v, 400, "invalid_argument", "max_label_names_per_series", "labels");
	else if (labelset_sort(&ls),
		 ingest_profile(&ls, p, raw, len, "ingest", false, &v) && push_rate_ok(len, &v))
		ingest_profile(&ls, p, raw, len, "ingest", true, &v);
	pprof_profile_free(p);
	free(raw);
out:
	labelset_free(&ls);
	if (v.status)
		return reply_verdict(c, &v, NULL, NULL);
	return reply(c, 200, "text/plain", "", 0, NULL, NULL);
}

/* --- dispatch ---------------------------------------------------------------------------- */

static bool req_append(struct req *r, const char *data, size_t len)
{
	size_t cap;
	uint8_t *nb;

	if (r->too_big || r->len + len > g.opt.max_body) {
		r->too_big = true;
		return true;
	}
	if (r->len + len > r->cap) {
		cap = r->cap ? r->cap : 4096;
		while (cap < r->len + len)
			cap *= 2;
		nb = realloc(r->body, cap);
		if (!nb)
			return false;
		r->body = nb;
		r->cap = cap;
	}
	memcpy(r->body + r->len, data, len);
	r->len += len;
	return true;
}

static enum MHD_Result dispatch(struct MHD_Connection *c, const char *url, const char *method,
				struct req *r)
{
	struct verdict v = {0};
	enum fault_mode f;
	unsigned int ms = 0;
	bool push = !strcmp(url, PUSH_PATH), handled;
	enum MHD_Result ret;

	if (!strcmp(url, "/admin/stats") && !strcmp(method, "GET"))
		return admin_stats(c);
	if (!strcmp(url, "/admin/fault") && !strcmp(method, "POST"))
		return admin_fault(c);
	if (!push && strcmp(url, "/ingest") && strcmp(url, "/pyroscope/ingest")) {
		verdict_set(&v, 404, "not_found", "not_found", "404 page not found: %.128s", url);
		return reply_verdict(c, &v, NULL, NULL);
	}
	pthread_mutex_lock(&g.lock);
	g.requests++;
	pthread_mutex_unlock(&g.lock);
	if (strcmp(method, "POST")) {
		verdict_set(&v, 405, "unknown", "bad_method", "method %.16s not allowed", method);
		return reply_verdict(c, &v, "Allow", "POST");
	}
	f = fault_take(&ms);
	if (f != FAULT_NONE) {
		ret = serve_fault(c, f, ms, &handled);
		if (handled)
			return ret;
	}
	return push ? handle_push(c, r) : handle_ingest(c, r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct req *r = *con_cls;
	const char *cl;

	(void)cls;
	(void)version;
	if (!r) {
		pthread_mutex_lock(&g.lock);
		r = g.refusing ? NULL : calloc(1, sizeof(*r));
		g.inflight += r != NULL;
		pthread_mutex_unlock(&g.lock);
		if (!r)
			return MHD_NO; /* closing for a refuse window, or out of memory */
		cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
		if (cl && strtoull(cl, NULL, 10) > g.opt.max_body)
			r->too_big = true;
		*con_cls = r;
		return MHD_YES;
	}
	if (*upload_size) {
		if (!req_append(r, upload, *upload_size))
			return MHD_NO;
		*upload_size = 0;
		return MHD_YES;
	}
	return dispatch(c, url, method, r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct req *r = *con_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (r) {
		free(r->body);
		free(r);
		*con_cls = NULL;
		pthread_mutex_lock(&g.lock);
		g.inflight--;
		pthread_mutex_unlock(&g.lock);
	}
}

/* --- listening, store, main --------------------------------------------------------------- */

static int listen_on(unsigned int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)*port)};
	socklen_t alen = sizeof(a);
	int fd, one = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)&a, &alen)) {
		one = -errno;
		close(fd);
		return one;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

static struct MHD_Daemon *start_http(unsigned int *port)
{
	struct MHD_Daemon *d;
	int fd = listen_on(port);

	if (fd < 0) {
		fprintf(stderr, "fake_collector: 127.0.0.1:%u: %s\n", *port, strerror(-fd));
		return NULL;
	}
	d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
				     MHD_USE_ERROR_LOG,
			     0, NULL, NULL, on_request, NULL, MHD_OPTION_LISTEN_SOCKET, fd,
			     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY_LIMIT,
			     MHD_OPTION_CONNECTION_LIMIT, (unsigned int)MAX_CONNECTIONS,
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)60,
			     MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "fake_collector: cannot start the HTTP server\n");
		close(fd);
	}
	return d;
}

static int write_port_file(const char *path, unsigned int port)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "%u\n", port);
	if (fclose(f))
		return -EIO;
	return rename(tmp, path) ? -errno : 0;
}

/* Opens DIR/index.tsv for appending; the sequence continues from its last line. */
static int open_store(const char *dir)
{
	char path[4096], line[16384];
	FILE *f;

	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), "%s/index.tsv", dir);
	f = fopen(path, "r");
	if (f) {
		while (fgets(line, sizeof(line), f))
			g.seq = strtoull(line, NULL, 10) > g.seq ? strtoull(line, NULL, 10) : g.seq;
		fclose(f);
	}
	g.index = fopen(path, "a");
	if (!g.index)
		return -errno;
	snprintf(path, sizeof(path), "%s/series.tsv", dir);
	g.series = fopen(path, "a");
	return g.series ? 0 : -errno;
}

static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option lopts[] = {
		{"store", required_argument, NULL, 's'},
		{"port", required_argument, NULL, 'p'},
		{"port-file", required_argument, NULL, 'f'},
		{"max-age", required_argument, NULL, 'a'},
		{"max-body", required_argument, NULL, 'b'},
		{"max-profile", required_argument, NULL, 'm'},
		{"utf8-labels", no_argument, NULL, 'u'},
		{"max-label-names", required_argument, NULL, 'L'},
		{"max-samples", required_argument, NULL, 'S'},
		{"ingest-rate", required_argument, NULL, 'R'},
		{"ingest-burst", required_argument, NULL, 'B'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int ch;

	*o = (struct options){.max_body = 16u << 20,
			      .max_profile = 4u << 20,
			      .max_age_ns = 3600 * NS_PER_SEC,
			      .max_label_names = MAX_LABELS,
			      .max_samples = MAX_SAMPLES,
			      .ingest_rate = INGEST_RATE,
			      .ingest_burst = INGEST_BURST};
	while ((ch = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (ch) {
		case 's':
			o->store = optarg;
			break;
		case 'p':
			o->port = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 'f':
			o->port_file = optarg;
			break;
		case 'a':
			o->max_age_ns = strtoll(optarg, NULL, 10) * NS_PER_SEC;
			break;
		case 'b':
			o->max_body = strtoull(optarg, NULL, 10);
			break;
		case 'm':
			o->max_profile = strtoull(optarg, NULL, 10);
			break;
		case 'L':
			o->max_label_names = strtoull(optarg, NULL, 10);
			break;
		case 'S':
			o->max_samples = strtoull(optarg, NULL, 10);
			break;
		case 'R':
			o->ingest_rate = strtod(optarg, NULL);
			break;
		case 'B':
			o->ingest_burst = strtod(optarg, NULL);
			break;
		case 'u':
			o->utf8_labels = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (!o->store || optind != argc || o->port > 65535 || !o->max_body || !o->max_profile ||
	    o->max_age_ns <= 0 || !o->max_label_names || !o->max_samples ||
	    o->max_label_names > MAX_INGEST_LABELS || !(o->ingest_rate >= 0) ||
	    !(o->ingest_burst >= 0)) {
		usage(stderr);
		return -EINVAL;
	}
	return 0;
}

/* Waits (at most 30 s: a client may hang) until no request is being served. */
static void wait_idle(void)
{
	unsigned int n = 1;

	for (int i = 0; i < 3000 && n; i++) {
		pthread_mutex_lock(&g.lock);
		n = g.inflight;
		pthread_mutex_unlock(&g.lock);
		if (n)
			sleep_ms(10);
	}
	if (n)
		printf("closing the port under %u requests\n", n);
}

/* The signal read from sfd (0 when none could be read). */
static uint32_t take_signal(int sfd)
{
	struct signalfd_siginfo si;

	return read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si) ? si.ssi_signo : 0;
}

/*
 * A refuse window: the listening socket closed for refuse_s seconds, or until SIGUSR1 (a test
 * ends the window once its client was refused, rather than guessing how long that takes).
 * NULL when SIGTERM/SIGINT came meanwhile.
 */
static struct MHD_Daemon *refuse_window(struct MHD_Daemon *d, unsigned int port, int sfd)
{
	struct pollfd pfd = {.fd = sfd, .events = POLLIN};
	int64_t end;
	unsigned int s;
	int left;

	pthread_mutex_lock(&g.lock);
	s = g.refuse_s;
	pthread_mutex_unlock(&g.lock);
	wait_idle(); /* the admin request's reply too */
	MHD_stop_daemon(d);
	printf("refusing connections for %u s\n", s);
	fflush(stdout);
	end = (mono_ns() / NS_PER_MS) + (int64_t)s * 1000;
	while ((left = (int)(end - (mono_ns() / NS_PER_MS))) > 0) {
		if (poll(&pfd, 1, left) <= 0)
			continue;
		if (take_signal(sfd) != SIGUSR1)
			return NULL;
		break;
	}
	pthread_mutex_lock(&g.lock);
	g.refusing = false;
	pthread_mutex_unlock(&g.lock);
	printf("accepting connections again\n");
	fflush(stdout);
	return start_http(&port);
}

static int run(unsigned int port, int sfd, int wake_rd)
{
	struct pollfd pfd[2] = {{.fd = sfd, .events = POLLIN}, {.fd = wake_rd, .events = POLLIN}};
	struct MHD_Daemon *d = start_http(&port);
	char b;

	if (!d)
		return 1;
	printf("listening on 127.0.0.1:%u\n", port);
	fflush(stdout);
	if (g.opt.port_file && write_port_file(g.opt.port_file, port)) {
		perror("fake_collector: port file");
		MHD_stop_daemon(d);
		return 1;
	}
	while (d) {
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents && take_signal(sfd) != SIGUSR1)
			break;
		if (pfd[1].revents && read(wake_rd, &b, 1) == 1)
			d = refuse_window(d, port, sfd);
	}
	g.stopping = 1;
	if (d)
		MHD_stop_daemon(d);
	return 0;
}

int main(int argc, char **argv)
{
	sigset_t mask;
	int sfd, pipefd[2], ret;

	if (parse_args(argc, argv, &g.opt))
		return 2;
	if (open_store(g.opt.store)) {
		perror("fake_collector: store");
		return 1;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0 || pipe2(pipefd, O_CLOEXEC)) {
		perror("fake_collector");
		return 1;
	}
	g.wake_fd = pipefd[1];
	ret = run(g.opt.port, sfd, pipefd[0]);
	fclose(g.index);
	fclose(g.series);
	return ret;
}
