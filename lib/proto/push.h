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
	const char *type;   /* "cpu", ... */
	const char *app;    /* service_name when labels lack one; may be "" */
	const char *labels; /* labels_format's text, from the history */
	int64_t start_ns, end_ns;
	const uint8_t *pprof; /* uncompressed profile.proto */
	size_t pprof_len;
};

/* Labels kept by name for the log: the first ones dropped from one series. */
#define PUSH_MAX_DROPS 16

/* Why a label did not go to the collector. */
enum push_drop_reason {
	PUSH_DROP_NAME = 0,  /* not [a-zA-Z_][a-zA-Z0-9_]*, or a reserved "__" one */
	PUSH_DROP_VALUE,     /* empty, or longer than CONFIG_VALUE_MAX - 1 bytes */
	PUSH_DROP_INGEST,    /* a value name=APP{k=v,...} cannot carry (',', '{', '}') */
	PUSH_DROP_LIMIT,     /* past the 30 names a series holds */
	PUSH_DROP_MALFORMED, /* a stored line without '=' */
	PUSH_DROP_NR,
};

struct push_label_drop {
	char name[CONFIG_NAME_MAX]; /* cut, valid UTF-8 */
	enum push_drop_reason reason;
};

/* The labels a collector should see, bounded by PUSH_MAX_LABELS. */
struct push_labels {
	struct config_label v[PUSH_MAX_LABELS];
	size_t n;
	size_t max;	 /* of n: fewer where the server adds its own */
	size_t dropped;	 /* invalid or over the limit */
	size_t shadowed; /* external labels the stored ones override: by design */
	struct push_label_drop drops[PUSH_MAX_DROPS]; /* the first dropped */
	size_t n_drops;
};

/* "invalid name", ...: the reason of a drop, for the log. */
const char *push_drop_reason_text(enum push_drop_reason r);

/* The __name__ Pyroscope expects for a stored profile type ("cpu" -> "process_cpu"). */
const char *push_profile_name(const char *type);

/*
 * The series labels, sorted by name: __name__, __delta__="false",
 * service_name, the stored labels, then the external labels whose names the
 * stored ones do not already use. No other "__" labels; invalid names dropped.
 */
void push_series_labels(const struct push_profile *p, const struct config_label *ext, size_t n_ext,
			struct push_labels *out);
/*
 * The same for a protocol: with ingest the server adds pyroscope_spy (one name
 * less fits) and values must survive name=APP{k=v,...} unchanged.
 */
void push_series_labels_for(const struct push_profile *p, const struct config_label *ext,
			    size_t n_ext, enum collector_protocol proto, struct push_labels *out);

/* A serialized push.v1.PushRequest with one series and one gzip'd raw_profile. */
int push_build_request(const struct push_profile *p, const struct config_label *ext, size_t n_ext,
		       uint8_t **body, size_t *body_len);

/*
 * The legacy /ingest form: the query string (name=APP{k=v,...}, percent-encoded,
 * from/until in unix seconds, format=pprof, spyName=ember) without the '?',
 * and the gzip'd profile as the body. APP is service_name with what the legacy
 * form refuses made '_', and service_name itself goes inside the braces too,
 * exactly as push sends it: the server takes that one, so both protocols name
 * a service the same way.
 */
int push_build_ingest(const struct push_profile *p, const struct config_label *ext, size_t n_ext,
		      char **query, uint8_t **body, size_t *body_len);

/* What became of one request. */
enum push_verdict {
	PUSH_SENT,   /* 2xx: stored by the collector */
	PUSH_RETRY,  /* transient: back off and send the same profile again */
	PUSH_REJECT, /* refused for good: mark rejected, go on */
};

struct push_reply {
	int curl_code;		/* CURLcode; 0 when an HTTP reply arrived */
	const char *curl_error; /* CURLOPT_ERRORBUFFER text, may be NULL or "" */
	long status;		/* HTTP status, 0 when none */
	const char *body;	/* may be NULL; not terminated */
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
