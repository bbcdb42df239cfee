/* SPDX-License-Identifier: MIT */
/*
 * What goes to a Pyroscope collector and what its reply means: the Connect
 * PushRequest and the legacy /ingest form of one profile, the classification
 * of a reply, and the retry backoff. Pure: no I/O, no clock, no randomness.
 */
#ifndef EMBER_PUSH_H
#define EMBER_PUSH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* Pyroscope's default validation.max-label-names-per-series. */
#define PUSH_MAX_LABELS CONFIG_MAX_SERIES_LABELS
/* Largest reply body the uploader keeps; only its message matters. */
#define PUSH_MAX_REPLY_BYTES 4096
/* Backoff of retries: exponential from the first to the last delay. */
#define PUSH_BACKOFF_FIRST_NS (500LL * 1000000)
#define PUSH_BACKOFF_MAX_NS (300LL * 1000000000)

/* One stored profile, as the history hands it out. */
struct push_profile {
	const char *type;		/* "cpu", ... */
	const char *app;		/* service_name when labels lack one; may be "" */
	const char *labels;		/* "k=v" lines, '\n'-separated, from the history */
	int64_t start_ns, end_ns;
	const uint8_t *pprof;		/* uncompressed profile.proto */
	size_t pprof_len;
};

/* The labels a collector should see, bounded by PUSH_MAX_LABELS. */
struct push_labels {
	struct config_label v[PUSH_MAX_LABELS];
	size_t n;
	size_t dropped;			/* invalid, duplicate or over the limit */
};

/* The __name__ Pyroscope expects for a stored profile type ("cpu" -> "process_cpu"). */
const char *push_profile_name(const char *type);

/*
 * The series labels, sorted by name: __name__, __delta__="false",
 * service_name, the stored labels, then the external labels whose names the
 * stored ones do not already use. No other "__" labels; invalid names dropped.
 */
void push_series_labels(const struct push_profile *p, const struct config_label *ext,
			size_t n_ext, struct push_labels *out);

/* A serialized push.v1.PushRequest with one series and one gzip'd raw_profile. */
int push_build_request(const struct push_profile *p, const struct config_label *ext,
		       size_t n_ext, uint8_t **body, size_t *body_len);

/*
 * The legacy /ingest form: the query string (name=APP{k=v,...}, percent-encoded,
 * from/until in unix seconds, format=pprof, spyName=ember) without the '?',
 * and the gzip'd profile as the body.
 */
int push_build_ingest(const struct push_profile *p, const struct config_label *ext,
		      size_t n_ext, char **query, uint8_t **body, size_t *body_len);

/* What became of one request. */
enum push_verdict {
	PUSH_SENT,			/* 2xx: stored by the collector */
	PUSH_RETRY,			/* transient: back off and send the same profile again */
	PUSH_REJECT,			/* refused for good: mark rejected, go on */
};

struct push_reply {
	int curl_code;			/* CURLcode; 0 when an HTTP reply arrived */
	const char *curl_error;		/* CURLOPT_ERRORBUFFER text, may be NULL or "" */
	long status;			/* HTTP status, 0 when none */
	const char *body;		/* may be NULL; not terminated */
	size_t body_len;
};

/*
 * Retry on transport errors, timeouts, 408, 429 and 5xx except 501 (Connect's
 * "unimplemented": a request this client will never get right); reject other
 * 4xx. msg gets one printable line: "HTTP 400 invalid_argument: <message>".
 */
enum push_verdict push_classify(const struct push_reply *r, char *msg, size_t msglen);

/*
 * The "message" and "code" strings of a Connect/Pyroscope JSON error body
 * (top-level keys only), control characters replaced; false when neither is there.
 */
bool push_error_message(const char *body, size_t len, char *code, size_t codelen, char *msg,
			size_t msglen);

/*
 * Delay before retry number attempt (1 = the first retry), "equal jitter": half
 * of d = min(MAX, FIRST * 2^(attempt-1)) plus a uniform share of the other half
 * drawn from rnd, so the delay is in [d/2, d] and still grows while spreading
 * clients that failed together.
 */
int64_t push_backoff_ns(unsigned int attempt, uint64_t rnd);

#endif
