// SPDX-License-Identifier: MIT
/*
 * Pyroscope's push API on the client side, without I/O: request bodies, the
 * meaning of a reply and the retry delay (COLLECTORS.md 1.2-1.8).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "compress.h"
#include "labels.h"
#include "push.h"
#include "utf8.h"
#include "push/v1/push.pb-c.h"

/* Stored type -> Pyroscope's conventional __name__ (COLLECTORS.md 1.7). */
static const struct {
	const char *type, *name;
} profile_names[] = {
	{"cpu", "process_cpu"}, {"mem", "memory"},    {"memory", "memory"},
	{"wall", "wall"},	{"offcpu", "offcpu"},
};

const char *push_profile_name(const char *type)
{
	for (size_t i = 0; i < sizeof(profile_names) / sizeof(profile_names[0]); i++) {
		if (!strcmp(type, profile_names[i].type))
			return profile_names[i].name;
	}
	return type;
}

/* --- labels ------------------------------------------------------------------------ */

static const char *const drop_reasons[PUSH_DROP_NR] = {
	[PUSH_DROP_NAME] = "invalid or reserved name",
	[PUSH_DROP_VALUE] = "empty value or longer than 255 bytes",
	[PUSH_DROP_INGEST] = "value with ',', '{', '}' or surrounding spaces (protocol = ingest)",
	[PUSH_DROP_LIMIT] = "over the 30 labels a series holds",
	[PUSH_DROP_MALFORMED] = "stored line without '='",
};

const char *push_drop_reason_text(enum push_drop_reason r)
{
	return r < PUSH_DROP_NR ? drop_reasons[r] : "?";
}

static bool has_label(const struct push_labels *o, const char *name, size_t nlen)
{
	for (size_t i = 0; i < o->n; i++) {
		if (!strncmp(o->v[i].name, name, nlen) && o->v[i].name[nlen] == '\0')
			return true;
	}
	return false;
}

/* Counts a drop and keeps the first ones by name (valid UTF-8, cut) for the log. */
static void drop(struct push_labels *o, const char *name, size_t nlen, enum push_drop_reason why)
{
	struct push_label_drop *d;

	o->dropped++;
	if (o->n_drops == PUSH_MAX_DROPS)
		return;
	d = &o->drops[o->n_drops++];
	utf8_sanitize(name, nlen, d->name, sizeof(d->name), 0);
	d->reason = why;
}

/*
 * Adds name=value unless the name is taken (a shadowed label, by design), a
 * part is empty or too long, or the set is full. The value is made valid UTF-8.
 */
static void add_label(struct push_labels *o, const char *name, size_t nlen, const char *value,
		      size_t vlen)
{
	struct config_label *l;

	if (has_label(o, name, nlen)) {
		o->shadowed++;
		return;
	}
	if (!nlen || nlen >= sizeof(l->name)) {
		drop(o, name, nlen, PUSH_DROP_NAME);
		return;
	}
	if (!vlen || vlen >= sizeof(l->value)) {
		drop(o, name, nlen, PUSH_DROP_VALUE);
		return;
	}
	if (o->n == o->max) {
		drop(o, name, nlen, PUSH_DROP_LIMIT);
		return;
	}
	l = &o->v[o->n++];
	memcpy(l->name, name, nlen);
	l->name[nlen] = '\0';
	utf8_sanitize(value, vlen, l->value, sizeof(l->value), 0);
}

/* Adds a user label: a name ember accepts, never one of the reserved "__" ones. */
static void add_user_label(struct push_labels *o, const char *name, size_t nlen, const char *value,
			   size_t vlen, bool ingest)
{
	char buf[CONFIG_VALUE_MAX];

	if (nlen >= CONFIG_NAME_MAX) {
		drop(o, name, nlen, PUSH_DROP_NAME);
		return;
	}
	memcpy(buf, name, nlen);
	buf[nlen] = '\0';
	if (!config_label_name_ok(buf)) {
		drop(o, name, nlen, PUSH_DROP_NAME);
		return;
	}
	if (ingest && vlen < sizeof(buf)) {
		memcpy(buf, value, vlen);
		buf[vlen] = '\0';
		if (!config_ingest_value_ok(buf)) {
			drop(o, name, nlen, PUSH_DROP_INGEST);
			return;
		}
	}
	add_label(o, name, nlen, value, vlen);
}

/* A stored line labels_parse left out: a drop, or a name twice (the first wins). */
static void stored_reject(void *arg, const char *name, size_t len, enum label_reject why)
{
	static const enum push_drop_reason reasons[] = {
		[LABEL_REJECT_MALFORMED] = PUSH_DROP_MALFORMED,
		[LABEL_REJECT_NAME] = PUSH_DROP_NAME,
		[LABEL_REJECT_VALUE] = PUSH_DROP_VALUE,
		[LABEL_REJECT_LIMIT] = PUSH_DROP_LIMIT,
	};
	struct push_labels *o = arg;

	if (why == LABEL_REJECT_TWICE)
		o->shadowed++;
	else
		drop(o, name, len, reasons[why]);
}

static int cmp_label(const void *a, const void *b)
{
	return strcmp(((const struct config_label *)a)->name,
		      ((const struct config_label *)b)->name);
}

void push_series_labels_for(const struct push_profile *p, const struct config_label *ext,
			    size_t n_ext, enum collector_protocol proto, struct push_labels *out)
{
	const char *name = push_profile_name(p->type ? p->type : "");
	bool ingest = proto == COLLECTOR_INGEST;
	struct label_set stored;
	const char *service;

	memset(out, 0, sizeof(*out));
	/* the server adds pyroscope_spy to an ingest: it takes one of the 30 */
	out->max =
		PUSH_MAX_LABELS - (ingest ? CONFIG_OWN_LABELS_INGEST - CONFIG_OWN_LABELS_PUSH : 0);
	add_label(out, "__name__", 8, name, strlen(name));
	add_label(out, "__delta__", 9, "false", 5);
	labels_parse(p->labels, &stored, stored_reject, out);
	service = labels_get(&stored, "service_name");
	if (!service && p->app && *p->app)
		service = p->app;
	/* service_name first, so that the 30-label limit never drops it */
	if (service)
		add_user_label(out, "service_name", 12, service, strlen(service), ingest);
	for (size_t i = 0; i < stored.n; i++) {
		const struct config_label *l = &stored.v[i];

		if (strcmp(l->name, "service_name"))
			add_user_label(out, l->name, strlen(l->name), l->value, strlen(l->value),
				       ingest);
	}
	for (size_t i = 0; i < n_ext; i++) {
		/* external labels never override the stored ones: the app's own win */
		add_user_label(out, ext[i].name, strnlen(ext[i].name, sizeof(ext[i].name)),
			       ext[i].value, strnlen(ext[i].value, sizeof(ext[i].value)), ingest);
	}
	qsort(out->v, out->n, sizeof(out->v[0]), cmp_label);
}

void push_series_labels(const struct push_profile *p, const struct config_label *ext, size_t n_ext,
			struct push_labels *out)
{
	push_series_labels_for(p, ext, n_ext, COLLECTOR_PUSH, out);
}

/* --- request bodies ---------------------------------------------------------------- */

static int gzip_profile(const struct push_profile *p, uint8_t **gz, size_t *gz_len)
{
	if (!p || !p->pprof || !p->pprof_len || !p->type)
		return -EINVAL;
	if (p->pprof_len > EMBER_MAX_PROFILE_BYTES)
		return -EFBIG;
	return gzip_compress(p->pprof, p->pprof_len, gz, gz_len);
}

int push_build_request(const struct push_profile *p, const struct config_label *ext, size_t n_ext,
		       uint8_t **body, size_t *body_len)
{
	Types__V1__LabelPair pairs[PUSH_MAX_LABELS], *pair_ptrs[PUSH_MAX_LABELS];
	Push__V1__RawSample sample = PUSH__V1__RAW_SAMPLE__INIT, *samples[1] = {&sample};
	Push__V1__RawProfileSeries series = PUSH__V1__RAW_PROFILE_SERIES__INIT;
	Push__V1__RawProfileSeries *series_ptrs[1] = {&series};
	Push__V1__PushRequest req = PUSH__V1__PUSH_REQUEST__INIT;
	struct push_labels labels;
	uint8_t *gz = NULL;
	size_t gz_len;
	int ret;

	ret = gzip_profile(p, &gz, &gz_len);
	if (ret)
		return ret;
	push_series_labels(p, ext, n_ext, &labels);
	for (size_t i = 0; i < labels.n; i++) {
		types__v1__label_pair__init(&pairs[i]);
		pairs[i].name = labels.v[i].name;
		pairs[i].value = labels.v[i].value;
		pair_ptrs[i] = &pairs[i];
	}
	sample.raw_profile.data = gz;
	sample.raw_profile.len = gz_len;
	series.labels = pair_ptrs;
	series.n_labels = labels.n;
	series.samples = samples;
	series.n_samples = 1;
	req.series = series_ptrs;
	req.n_series = 1;
	*body_len = push__v1__push_request__get_packed_size(&req);
	*body = malloc(*body_len);
	if (*body)
		push__v1__push_request__pack(&req, *body);
	free(gz);
	return *body ? 0 : -ENOMEM;
}

/* The legacy name=APP{k=v,...}: APP may only use [A-Za-z0-9_.-/], values no ',' or '}'. */
static void ingest_app(const char *in, char *out, size_t len)
{
	size_t o = 0;

	for (; *in && o + 1 < len; in++) {
		char c = *in;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || strchr("_.-/", c);

		out[o++] = ok ? c : '_';
	}
	out[o] = '\0';
	if (!o)
		snprintf(out, len, "unknown_service");
}

/* APP{k=v,...}: service_name is in the braces too, where its value is kept as is. */
static int ingest_name(const struct push_labels *l, char *out, size_t len)
{
	size_t off;
	bool first = true;

	ingest_app("", out, len);
	for (size_t i = 0; i < l->n; i++) {
		if (!strcmp(l->v[i].name, "service_name"))
			ingest_app(l->v[i].value, out, len);
	}
	off = strlen(out);
	for (size_t i = 0; i < l->n; i++) {
		int w;

		if (!strncmp(l->v[i].name, "__", 2))
			continue;
		w = snprintf(out + off, len - off, "%s%s=%s", first ? "{" : ",", l->v[i].name,
			     l->v[i].value);
		if (w < 0 || (size_t)w >= len - off)
			return -ENOSPC;
		/* the value's ',' and '}' would end it early */
		for (char *c = out + off + w - strlen(l->v[i].value); *c; c++) {
			if (*c == ',' || *c == '}')
				*c = '_';
		}
		off += (size_t)w;
		first = false;
	}
	if (!first && off + 1 >= len)
		return -ENOSPC;
	if (!first)
		strcpy(out + off, "}");
	return 0;
}

int push_build_ingest(const struct push_profile *p, const struct config_label *ext, size_t n_ext,
		      char **query, uint8_t **body, size_t *body_len)
{
	char name[PUSH_MAX_LABELS * (CONFIG_NAME_MAX + CONFIG_VALUE_MAX + 2) + 16];
	struct push_labels labels;
	char *escaped;
	int ret;

	*query = NULL;
	ret = gzip_profile(p, body, body_len);
	if (ret)
		return ret;
	push_series_labels_for(p, ext, n_ext, COLLECTOR_INGEST, &labels);
	ret = ingest_name(&labels, name, sizeof(name));
	if (ret)
		goto err_body;
	/* curl_easy_escape ignores its handle since 7.82 */
	escaped = curl_easy_escape(NULL, name, (int)strlen(name));
	if (!escaped) {
		ret = -ENOMEM;
		goto err_body;
	}
	/* unix seconds: from rounded down, until rounded up, so the range covers the profile */
	if (asprintf(query, "name=%s&from=%lld&until=%lld&format=pprof&spyName=ember", escaped,
		     (long long)(p->start_ns / 1000000000),
		     (long long)((p->end_ns + 999999999) / 1000000000)) < 0) {
		*query = NULL;
		ret = -ENOMEM;
	}
	curl_free(escaped);
	if (!ret)
		return 0;
err_body:
	free(*body);
	*body = NULL;
	return ret;
}

/* --- replies ----------------------------------------------------------------------- */

struct scan {
	const char *s;
	size_t n, i;
};

static void skip_ws(struct scan *sc)
{
	while (sc->i < sc->n && strchr(" \t\r\n", sc->s[sc->i]) && sc->s[sc->i])
		sc->i++;
}

static unsigned int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return (unsigned int)(c - '0');
	if (c >= 'a' && c <= 'f')
		return (unsigned int)(c - 'a' + 10);
	if (c >= 'A' && c <= 'F')
		return (unsigned int)(c - 'A' + 10);
	return 16;
}

/* \uXXXX: ASCII kept, anything else becomes '?' (a log line needs no more). */
static unsigned char scan_unicode(struct scan *sc)
{
	unsigned int v = 0;

	for (int k = 0; k < 4 && sc->i < sc->n; k++) {
		unsigned int d = hex_digit(sc->s[sc->i]);

		if (d == 16)
			return '?';
		v = v * 16 + d;
		sc->i++;
	}
	return v < 0x80 ? (unsigned char)v : '?';
}

/*
 * Reads the JSON string at sc->i (its opening quote) into out (may be NULL),
 * truncated to outlen - 1 bytes, control characters made spaces. False when
 * it does not end inside the buffer.
 */
static bool scan_string(struct scan *sc, char *out, size_t outlen)
{
	size_t o = 0;
	bool closed = false;

	sc->i++;
	while (sc->i < sc->n) {
		unsigned char c = (unsigned char)sc->s[sc->i++];

		if (c == '"') {
			closed = true;
			break;
		}
		if (c == '\\' && sc->i < sc->n) {
			c = (unsigned char)sc->s[sc->i++];
			if (c == 'u')
				c = scan_unicode(sc);
			else if (strchr("bfnrt", c) && c)
				c = ' ';
		}
		if (c < 0x20 || c == 0x7f)
			c = ' ';
		if (out && o + 1 < outlen)
			out[o++] = (char)c;
	}
	if (out && outlen)
		out[o] = '\0';
	return closed;
}

/* Skips one value: stops before the ',' '}' or ']' that ends it at its own depth. */
static bool skip_value(struct scan *sc)
{
	size_t depth = 0;

	while (sc->i < sc->n) {
		char c = sc->s[sc->i];

		if (c == '"') {
			if (!scan_string(sc, NULL, 0))
				return false;
			continue;
		}
		if ((c == ',' || c == '}' || c == ']') && depth == 0)
			return true;
		if (c == '{' || c == '[')
			depth++;
		else if (c == '}' || c == ']')
			depth--;
		sc->i++;
	}
	return false;
}

/* One "key": value member of the top-level object; false at its end or on garbage. */
static bool scan_member(struct scan *sc, char *code, size_t codelen, char *msg, size_t msglen,
			bool *found)
{
	char key[16];
	bool wanted;

	skip_ws(sc);
	if (sc->i >= sc->n || sc->s[sc->i] != '"' || !scan_string(sc, key, sizeof(key)))
		return false;
	skip_ws(sc);
	if (sc->i >= sc->n || sc->s[sc->i] != ':')
		return false;
	sc->i++;
	skip_ws(sc);
	wanted = !strcmp(key, "message") || !strcmp(key, "code");
	if (sc->i < sc->n && sc->s[sc->i] == '"' && wanted) {
		bool is_msg = !strcmp(key, "message");

		if (!scan_string(sc, is_msg ? msg : code, is_msg ? msglen : codelen))
			return false;
		*found = true;
	} else if (!skip_value(sc)) {
		return false;
	}
	skip_ws(sc);
	if (sc->i < sc->n && sc->s[sc->i] == ',') {
		sc->i++;
		return true;
	}
	return false;
}

bool push_error_message(const char *body, size_t len, char *code, size_t codelen, char *msg,
			size_t msglen)
{
	struct scan sc = {.s = body, .n = body ? len : 0};
	bool found = false;

	if (codelen)
		code[0] = '\0';
	if (msglen)
		msg[0] = '\0';
	skip_ws(&sc);
	if (sc.i >= sc.n || sc.s[sc.i] != '{')
		return false;
	sc.i++;
	while (scan_member(&sc, code, codelen, msg, msglen, &found))
		;
	return found;
}

/* Copies printable text up to stop (or the end), spaces collapsed, other bytes '?'. */
static void copy_text(const char *s, size_t n, char stop, char *out, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < n && s[i] != stop && o + 1 < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\t' || c == '\r' || c == '\n')
			c = ' ';
		if (c == ' ' && (o == 0 || out[o - 1] == ' '))
			continue;
		out[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	while (o && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
}

/* A proxy's HTML page: its <title>, or the body's first line. */
static void text_summary(const char *body, size_t len, char *out, size_t outlen)
{
	static const char tag[] = "<title>";
	size_t tl = sizeof(tag) - 1;

	for (size_t i = 0; i + tl <= len; i++) {
		if (!strncasecmp(body + i, tag, tl)) {
			copy_text(body + i + tl, len - i - tl, '<', out, outlen);
			return;
		}
	}
	copy_text(body, len, '\n', out, outlen);
}

static enum push_verdict verdict_of_status(long status)
{
	if (status >= 200 && status < 300)
		return PUSH_SENT;
	if (status == 408 || status == 429)
		return PUSH_RETRY;
	if ((status >= 400 && status < 500) || status == 501)
		return PUSH_REJECT;
	/* 5xx; 1xx/3xx/others: a misrouted URL keeps the queue until it is fixed or expires */
	return PUSH_RETRY;
}

enum push_verdict push_classify(const struct push_reply *r, char *msg, size_t msglen)
{
	char code[32], text[200];
	enum push_verdict v;

	if (r->curl_code) {
		snprintf(msg, msglen, "%s",
			 r->curl_error && *r->curl_error ? r->curl_error :
							   curl_easy_strerror(r->curl_code));
		return PUSH_RETRY;
	}
	if (r->status <= 0) {
		snprintf(msg, msglen, "no HTTP status");
		return PUSH_RETRY;
	}
	v = verdict_of_status(r->status);
	if (v == PUSH_SENT) {
		snprintf(msg, msglen, "HTTP %ld", r->status);
		return v;
	}
	if (!push_error_message(r->body, r->body_len, code, sizeof(code), text, sizeof(text)))
		text_summary(r->body ? r->body : "", r->body ? r->body_len : 0, text, sizeof(text));
	snprintf(msg, msglen, "HTTP %ld%s%s%s%s", r->status, *code ? " " : "", code,
		 *text ? ": " : "", text);
	return v;
}

int64_t push_backoff_ns(unsigned int attempt, uint64_t rnd)
{
	int64_t d = PUSH_BACKOFF_FIRST_NS, half;

	for (unsigned int i = 1; i < attempt && d < PUSH_BACKOFF_MAX_NS; i++)
		d *= 2;
	if (d > PUSH_BACKOFF_MAX_NS)
		d = PUSH_BACKOFF_MAX_NS;
	half = d / 2;
	return d - half + (int64_t)(rnd % (uint64_t)(half + 1));
}
