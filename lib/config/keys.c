// SPDX-License-Identifier: MIT
/*
 * The table of [daemon] and [collector] keys and the parsers of their types:
 * a key's bounds, default and reload class are written here and nowhere else.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "clock.h"
#include "keys.h"
#include "timeparse.h"
#include "util.h"

#define SEC 1000000000LL
#define MIN (60 * SEC)
#define DAY (86400 * SEC)

/* The field of struct ember_config a key sets. */
#define FIELD(f) \
	.off = offsetof(struct ember_config, f), .size = sizeof(((struct ember_config *)0)->f)
#define KEY(sec, nm, ty, rl, lo, hi, dflt, f, text)                                        \
	{                                                                                  \
		.name = nm, .section = CONFIG_SECTION_##sec, .type = CONFIG_T_##ty,        \
		.reload = CONFIG_RELOAD_##rl, .min = lo, .max = hi, .def = dflt, FIELD(f), \
		.doc = text                                                                \
	}
/* A word of words, stored as its index. */
#define CHOICE(sec, nm, rl, words, dflt, f, text)                                                  \
	{                                                                                          \
		.name = nm, .section = CONFIG_SECTION_##sec, .type = CONFIG_T_CHOICE,              \
		.reload = CONFIG_RELOAD_##rl, .def = dflt, .choices = words, FIELD(f), .doc = text \
	}
/* prefix.NAME = VALUE into the array f, counted in nf. */
#define PAIRS(sec, nm, ty, f, nf, text)                                             \
	{                                                                           \
		.name = nm, .section = CONFIG_SECTION_##sec, .type = CONFIG_T_##ty, \
		.reload = CONFIG_RELOAD_LIVE, FIELD(f),                             \
		.n_off = offsetof(struct ember_config, nf), .doc = text             \
	}

static const char *const profile_words[] = {"all", "matched", NULL};
static const char *const protocol_words[] = {"push", "ingest", NULL}; /* enum collector_protocol */

/* In the order of config/ember.conf and ember.conf(5). */
const struct config_key config_keys[] = {
	KEY(DAEMON, "hz", UINT, RESTART, EMBER_HZ_MIN, EMBER_HZ_MAX, "19", hz,
	    "samples per second per CPU"),
	/* a longer one than the BPF maps were sized for is refused (reload.c) */
	KEY(DAEMON, "interval", DURATION, REFUSED, EMBER_INTERVAL_MIN_NS, EMBER_INTERVAL_MAX_NS,
	    "10s", interval_ns, "one profile per application per interval"),
	KEY(DAEMON, "data_dir", PATH, RESTART, 1, PATH_MAX - 1, EMBER_DEFAULT_DATA_DIR, data_dir,
	    "where the local history lives"),
	/* room left for the names of the files it holds */
	KEY(DAEMON, "runtime_dir", PATH, RESTART, 1, PATH_MAX - 17, EMBER_DEFAULT_RUNTIME_DIR,
	    runtime_dir, "the control socket and the status file"),
	KEY(DAEMON, "retention", DURATION, LIVE, CONFIG_MIN_RETENTION_NS, INT64_MAX, "7d",
	    retention_ns, "profiles older than this are deleted"),
	KEY(DAEMON, "max_size", SIZE, LIVE, CONFIG_MIN_MAX_SIZE, UINT64_MAX, "1GiB", max_size,
	    "the history's size: past it the oldest profiles go"),
	KEY(DAEMON, "memory_limit", SIZE, LIVE, CONFIG_MIN_MEMORY_LIMIT, UINT64_MAX, "64MiB",
	    memory_limit, "emberd's RSS: its caches shrink to stay under"),
	KEY(DAEMON, "store_backlog", SIZE, LIVE, 0, UINT64_MAX, "16MiB", store_backlog,
	    "profiles kept in memory while the history cannot take them"),
	KEY(DAEMON, "unwind_memory", SIZE, RESTART, CONFIG_MIN_UNWIND_MEMORY,
	    CONFIG_MAX_UNWIND_MEMORY, "64MiB", unwind_memory,
	    "kernel memory for the unwind tables of binaries"),
	KEY(DAEMON, "live_allocs", UINT, RESTART, CONFIG_LIVE_ALLOCS_MIN, CONFIG_LIVE_ALLOCS_MAX,
	    "65536", live_allocs, "live sampled allocations kept in the kernel (memory = inuse)"),
	KEY(DAEMON, "live_allocs_per_process", UINT, RESTART, CONFIG_LIVE_ALLOCS_MIN,
	    CONFIG_LIVE_ALLOCS_MAX, "16384", live_allocs_per_process,
	    "of them, at most this many of one process"),
	KEY(DAEMON, "include_idle", BOOL, RESTART, 0, 1, "no", include_idle,
	    "count the idle task's samples too"),
	KEY(DAEMON, "growth_fault_period", UINT, RESTART, 0, EMBER_GROWTH_PERIOD_MAX, "100",
	    growth_fault_period, "memory growth: 1 anonymous page fault in N sampled; 0: off"),
	KEY(DAEMON, "growth_min_age", DURATION, RESTART, 0, EMBER_GROWTH_MIN_AGE_MAX_NS, "100ms",
	    growth_min_age_ns,
	    "memory growth: a process's first this long counted without a stack"),
	KEY(DAEMON, "offcpu", BOOL, RESTART, 0, 1, "off", offcpu,
	    "off-CPU time: where threads wait, and who woke them"),
	KEY(DAEMON, "offcpu_sample_period", UINT, RESTART, 1, EMBER_OFFCPU_PERIOD_MAX, "64",
	    offcpu_sample_period, "off-CPU time: 1 switch-out in N walked"),
	KEY(DAEMON, "offcpu_min_block", DURATION, RESTART, 0, EMBER_OFFCPU_MIN_BLOCK_MAX_NS, "0",
	    offcpu_min_block_ns, "off-CPU time: shorter sampled waits left out"),
	KEY(DAEMON, "offcpu_parked_stacks", UINT, RESTART, EMBER_OFFCPU_PARKED_MIN,
	    EMBER_OFFCPU_PARKED_LIMIT, "4096", offcpu_parked,
	    "off-CPU time: stacks of threads away kept in the kernel"),
	KEY(DAEMON, "cpu_budget", DURATION, LIVE, 0, EMBER_CPU_BUDGET_MAX_NS, "10ms", cpu_budget_ns,
	    "emberd's CPU a second, its programs' included (10ms: 1% of one CPU); 0: none"),
	CHOICE(DAEMON, "profile", LIVE, profile_words, "all", profile_matched,
	       "every process, or only those an [app] matches"),
	PAIRS(DAEMON, "labels.", LABEL, labels, n_labels, "a label of every profile"),

	/* a changed [collector] restarts the uploader with it (reload.c) */
	KEY(COLLECTOR, "url", URL, LIVE, 9, sizeof(((struct collector_config *)0)->url) - 1, NULL,
	    collector.url, "the collector's base URL; none: local history only"),
	CHOICE(COLLECTOR, "protocol", LIVE, protocol_words, "push", collector.protocol,
	       "Pyroscope's push API, or the legacy /ingest"),
	KEY(COLLECTOR, "tenant", TEXT, LIVE, 0, CONFIG_VALUE_MAX - 1, NULL, collector.tenant,
	    "X-Scope-OrgID"),
	KEY(COLLECTOR, "basic_auth_user", TEXT, LIVE, 0, CONFIG_VALUE_MAX - 1, NULL,
	    collector.basic_auth_user, "basic auth's user"),
	KEY(COLLECTOR, "basic_auth_password_file", SECRET, LIVE, 1, PATH_MAX - 1, NULL,
	    collector.basic_auth_password_file, "basic auth's password, in a file (chmod 600)"),
	KEY(COLLECTOR, "bearer_token_file", SECRET, LIVE, 1, PATH_MAX - 1, NULL,
	    collector.bearer_token_file, "a bearer token, in a file (chmod 600)"),
	PAIRS(COLLECTOR, "header.", HEADER, collector.headers, collector.n_headers,
	      "an extra request header"),
	KEY(COLLECTOR, "ca_file", PATH, LIVE, 1, PATH_MAX - 1, NULL, collector.ca_file,
	    "a CA bundle for TLS"),
	KEY(COLLECTOR, "insecure_skip_verify", BOOL, LIVE, 0, 1, "no",
	    collector.insecure_skip_verify, "no TLS certificate checks (logged loudly)"),
	KEY(COLLECTOR, "timeout", DURATION, LIVE, SEC / 10, 5 * MIN, "10s", collector.timeout_ns,
	    "per request"),
	KEY(COLLECTOR, "max_age", DURATION, LIVE, MIN, 30 * DAY, "50m", collector.max_age_ns,
	    "unsent profiles older than this are expired"),
	KEY(COLLECTOR, "reject_older_than", DURATION, LIVE, 15 * MIN, 366 * DAY, "1h",
	    collector.reject_older_than_ns, "the collector's ingestion window"),
	KEY(COLLECTOR, "max_profile_bytes", SIZE, LIVE, CONFIG_MIN_MAX_PROFILE_BYTES, UINT64_MAX,
	    "2MiB", collector.max_profile_bytes, "a pushed profile is folded to fit this size"),
	KEY(COLLECTOR, "max_samples", UINT, LIVE, CONFIG_MIN_MAX_SAMPLES, 10000000, "16000",
	    collector.max_samples, "and to hold at most this many samples"),
	KEY(COLLECTOR, "server_symbolization", BOOL, LIVE, 0, 1, "no",
	    collector.server_symbolization, "push unnamed frames without a name, for the server"),
	PAIRS(COLLECTOR, "external_labels.", LABEL, collector.external_labels,
	      collector.n_external_labels, "a label of every pushed series"),
};

const size_t config_keys_n = sizeof(config_keys) / sizeof(config_keys[0]);

const char *config_section_name(enum config_section s)
{
	return s == CONFIG_SECTION_DAEMON ? "daemon" : "collector";
}

const char *config_reload_name(enum config_reload r)
{
	static const char *const names[] = {"live", "restart", "refused"};

	return r <= CONFIG_RELOAD_REFUSED ? names[r] : "?";
}

static bool is_prefix(const struct config_key *k)
{
	return k->name[strlen(k->name) - 1] == '.';
}

const struct config_key *config_key_find(enum config_section s, const char *name)
{
	for (size_t i = 0; i < config_keys_n; i++) {
		const struct config_key *k = &config_keys[i];

		if (k->section != s)
			continue;
		if (is_prefix(k) ? !strncmp(name, k->name, strlen(k->name)) :
				   !strcmp(name, k->name))
			return k;
	}
	return NULL;
}

/* --- values ----------------------------------------------------------------------- */

int config_parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = {"yes", "true", "on", "1"};
	static const char *const no[] = {"no", "false", "off", "0"};

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(v, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* A whole decimal number, no sign or space. */
static int parse_uint(const char *v, uint64_t *out)
{
	char *end;

	if (!isdigit((unsigned char)v[0]))
		return -EINVAL;
	errno = 0;
	*out = strtoull(v, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

/* Labels ember sets itself; configuration may not. */
static bool label_reserved(const char *name)
{
	return !strcmp(name, "service_name") || !strcmp(name, "hostname");
}

int config_add_label(struct config_label *v, size_t *n, const char *name, const char *value,
		     char *err, size_t errlen)
{
	if (!config_label_name_ok(name) || label_reserved(name)) {
		snprintf(err, errlen,
			 "label '%s': names are [a-zA-Z_][a-zA-Z0-9_]*, not "
			 "__-prefixed, and not service_name or hostname (set by ember)",
			 name);
		return -EINVAL;
	}
	if (!value[0] || strlen(value) >= CONFIG_VALUE_MAX) {
		snprintf(err, errlen, "label '%s': the value must be 1 to %d bytes", name,
			 CONFIG_VALUE_MAX - 1);
		return -EINVAL;
	}
	for (size_t i = 0; i < *n; i++) {
		if (!strcmp(v[i].name, name)) {
			snprintf(err, errlen, "label '%s' set twice", name);
			return -EINVAL;
		}
	}
	if (*n >= CONFIG_MAX_USER_LABELS) {
		snprintf(err, errlen, "more than %d labels", CONFIG_MAX_USER_LABELS);
		return -E2BIG;
	}
	snprintf(v[*n].name, sizeof(v[*n].name), "%s", name);
	snprintf(v[*n].value, sizeof(v[*n].value), "%s", value);
	(*n)++;
	return 0;
}

/* An HTTP header name: a token (RFC 9110), not one ember sets itself. */
static bool header_name_ok(const char *name)
{
	static const char *const own[] = {
		"content-type", "content-length", "content-encoding", "connect-protocol-version",
		"host",		"authorization",  "x-scope-orgid",    "expect"};

	if (!name[0] || strlen(name) >= CONFIG_NAME_MAX)
		return false;
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("!#$%&'*+-.^_`|~", *p))
			return false;
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (!strcasecmp(name, own[i]))
			return false;
	return true;
}

static int add_header(struct config_label *v, size_t *n, const char *name, const char *value,
		      char *err, size_t errlen)
{
	if (!header_name_ok(name) || strpbrk(value, "\r\n")) {
		snprintf(err, errlen,
			 "header.%s: not a header name ember lets you set, or a value with a "
			 "line break",
			 name);
		return -EINVAL;
	}
	if (*n >= CONFIG_MAX_HEADERS) {
		snprintf(err, errlen, "more than %d headers", CONFIG_MAX_HEADERS);
		return -E2BIG;
	}
	snprintf(v[*n].name, CONFIG_NAME_MAX, "%s", name);
	snprintf(v[(*n)++].value, CONFIG_VALUE_MAX, "%s", value);
	return 0;
}

/*
 * A file holding a secret: a regular file, and readable by its owner only (a
 * password readable by other users is refused, not warned about).
 */
static int check_secret_file(const char *key, const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (stat(path, &st)) {
		snprintf(err, errlen, "%s: %s: %s", key, path, strerror(errno));
		return -errno;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: %s is not a regular file", key, path);
		return -EINVAL;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		snprintf(err, errlen,
			 "%s: %s is accessible to other users (mode %03o): "
			 "chmod 600 it",
			 key, path, st.st_mode & 0777);
		return -EPERM;
	}
	return 0;
}

static bool url_ok(const char *v, size_t max)
{
	size_t n = strlen(v);

	return (!strncmp(v, "http://", 7) || !strncmp(v, "https://", 8)) && n <= max &&
	       !strpbrk(v, " \t\r\n") && n > 8;
}

/* A byte count as the file writes it: "64MiB", "4GiB", else bytes. */
static void format_size(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = {"TiB", "GiB", "MiB", "KiB"};

	for (int i = 0; i < 4 && n; i++) {
		unsigned int shift = 40 - 10 * i;

		if (!(n & ((1ULL << shift) - 1))) {
			snprintf(buf, len, "%" PRIu64 "%s", n >> shift, units[i]);
			return;
		}
	}
	snprintf(buf, len, "%" PRIu64, n);
}

/* A duration as the file writes it: "100ms", else format_duration()'s "10s", "7d". */
static void format_ns(int64_t ns, char *buf, size_t len)
{
	if (ns % SEC && ns % 1000000 == 0)
		snprintf(buf, len, "%" PRId64 "ms", ns / 1000000);
	else
		format_duration(ns, buf, len);
}

/* "from MIN to MAX" or "of at least MIN" (no upper bound), as the file writes them. */
static void format_range(const struct config_key *k, char *buf, size_t len)
{
	char lo[32], hi[32];
	bool open = k->type == CONFIG_T_DURATION ? k->max == INT64_MAX : k->max == UINT64_MAX;

	if (k->type == CONFIG_T_DURATION) {
		format_ns((int64_t)k->min, lo, sizeof(lo));
		format_ns((int64_t)k->max, hi, sizeof(hi));
	} else if (k->type == CONFIG_T_SIZE) {
		format_size(k->min, lo, sizeof(lo));
		format_size(k->max, hi, sizeof(hi));
	} else {
		snprintf(lo, sizeof(lo), "%" PRIu64, k->min);
		snprintf(hi, sizeof(hi), "%" PRIu64, k->max);
	}
	if (open)
		snprintf(buf, len, "of at least %s", lo);
	else
		snprintf(buf, len, "from %s to %s", lo, hi);
}

/* A number in a field of 1 (bool), 4 or 8 bytes. */
static void store_uint(void *p, size_t size, uint64_t v)
{
	uint32_t u32 = (uint32_t)v;
	bool b = v != 0;

	if (size == sizeof(v))
		memcpy(p, &v, size);
	else if (size == sizeof(u32))
		memcpy(p, &u32, size);
	else
		memcpy(p, &b, sizeof(b));
}

static uint64_t load_uint(const void *p, size_t size)
{
	uint64_t v = 0;
	uint32_t u32;
	bool b;

	if (size == sizeof(v)) {
		memcpy(&v, p, size);
	} else if (size == sizeof(u32)) {
		memcpy(&u32, p, size);
		v = u32;
	} else {
		memcpy(&b, p, sizeof(b));
		v = b;
	}
	return v;
}

/* A number of k's type (whole, duration, size) within its bounds, or a message. */
static int set_number(const struct config_key *k, const char *value, void *p, char *err,
		      size_t errlen)
{
	static const char *const what[] = {
		[CONFIG_T_UINT] = "a whole number",
		[CONFIG_T_DURATION] = "a duration",
		[CONFIG_T_SIZE] = "a size",
	};
	static const char *const example[] = {
		[CONFIG_T_UINT] = "",
		[CONFIG_T_DURATION] = " (e.g. 500ms, 10s, 2m, 1h, 7d)",
		[CONFIG_T_SIZE] = " (e.g. 64MiB, 1GiB)",
	};
	char range[80];
	int64_t ns;
	uint64_t v;
	int rc;

	if (k->type == CONFIG_T_DURATION) {
		rc = parse_duration(value, &ns);
		v = (uint64_t)ns;
	} else if (k->type == CONFIG_T_SIZE) {
		rc = parse_size(value, &v);
	} else {
		rc = parse_uint(value, &v);
	}
	if (rc || v < k->min || v > k->max) {
		format_range(k, range, sizeof(range));
		snprintf(err, errlen, "%s: '%s' is not %s %s%s", k->name, value, what[k->type],
			 range, example[k->type]);
		return -EINVAL;
	}
	store_uint(p, k->size, v);
	return 0;
}

static int set_choice(const struct config_key *k, const char *value, void *p, char *err,
		      size_t errlen)
{
	size_t i, off;

	for (i = 0; k->choices[i]; i++) {
		if (!strcmp(value, k->choices[i])) {
			store_uint(p, k->size, i);
			return 0;
		}
	}
	off = (size_t)snprintf(err, errlen, "%s: '%s' is not ", k->name, value);
	for (i = 0; k->choices[i] && off < errlen; i++)
		off += (size_t)snprintf(err + off, errlen - off, "%s%s",
					!i		   ? "" :
					!k->choices[i + 1] ? " or " :
							     ", ",
					k->choices[i]);
	return -EINVAL;
}

/* Strings: paths, secrets' paths, plain text and the URL. */
static int set_text(const struct config_key *k, const char *value, char *p, char *err,
		    size_t errlen)
{
	size_t n = strlen(value);
	int rc;

	switch (k->type) {
	case CONFIG_T_URL:
		if (!url_ok(value, k->max)) {
			snprintf(err, errlen, "%s: '%.120s' is not an http:// or https:// URL",
				 k->name, value);
			return -EINVAL;
		}
		while (n > 8 && value[n - 1] == '/') /* the API paths are appended */
			n--;
		break;
	case CONFIG_T_TEXT:
		if (n > k->max || strpbrk(value, "\r\n|:")) {
			snprintf(err, errlen, "%s: '%s' is not a valid value", k->name, value);
			return -EINVAL;
		}
		break;
	default: /* paths */
		if (value[0] != '/' || n > k->max) {
			snprintf(err, errlen, "%s: '%s' must be an absolute path", k->name, value);
			return -EINVAL;
		}
		rc = k->type == CONFIG_T_SECRET ? check_secret_file(k->name, value, err, errlen) :
						  0;
		if (rc)
			return rc;
	}
	memset(p, 0, k->size);
	memcpy(p, value, n);
	return 0;
}

int config_key_set(struct ember_config *c, const struct config_key *k, const char *name,
		   const char *value, char *err, size_t errlen)
{
	char *p = (char *)c + k->off;
	size_t *n = (size_t *)((char *)c + k->n_off);
	bool b;

	switch (k->type) {
	case CONFIG_T_UINT:
	case CONFIG_T_DURATION:
	case CONFIG_T_SIZE:
		return set_number(k, value, p, err, errlen);
	case CONFIG_T_BOOL:
		if (config_parse_bool(value, &b)) {
			snprintf(err, errlen, "%s: '%s' is not yes or no", k->name, value);
			return -EINVAL;
		}
		store_uint(p, k->size, b);
		return 0;
	case CONFIG_T_CHOICE:
		return set_choice(k, value, p, err, errlen);
	case CONFIG_T_LABEL:
		return config_add_label((struct config_label *)p, n, name + strlen(k->name), value,
					err, errlen);
	case CONFIG_T_HEADER:
		return add_header((struct config_label *)p, n, name + strlen(k->name), value, err,
				  errlen);
	default:
		return set_text(k, value, p, err, errlen);
	}
}

/* --- comparing, copying, showing ---------------------------------------------------- */

static bool is_text(const struct config_key *k)
{
	return k->type == CONFIG_T_PATH || k->type == CONFIG_T_SECRET || k->type == CONFIG_T_TEXT ||
	       k->type == CONFIG_T_URL;
}

static bool is_pairs(const struct config_key *k)
{
	return k->type == CONFIG_T_LABEL || k->type == CONFIG_T_HEADER;
}

bool config_key_equal(const struct config_key *k, const struct ember_config *a,
		      const struct ember_config *b)
{
	const char *pa = (const char *)a + k->off, *pb = (const char *)b + k->off;
	const struct config_label *la = (const void *)pa, *lb = (const void *)pb;
	size_t na, nb;

	if (is_text(k))
		return !strcmp(pa, pb);
	if (!is_pairs(k))
		return load_uint(pa, k->size) == load_uint(pb, k->size);
	memcpy(&na, (const char *)a + k->n_off, sizeof(na));
	memcpy(&nb, (const char *)b + k->n_off, sizeof(nb));
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (strcmp(la[i].name, lb[i].name) || strcmp(la[i].value, lb[i].value))
			return false;
	return true;
}

void config_key_copy(const struct config_key *k, struct ember_config *dst,
		     const struct ember_config *src)
{
	memcpy((char *)dst + k->off, (const char *)src + k->off, k->size);
	if (is_pairs(k))
		memcpy((char *)dst + k->n_off, (const char *)src + k->n_off, sizeof(size_t));
}

void config_key_format(const struct config_key *k, const struct ember_config *c, char *buf,
		       size_t len)
{
	const char *p = (const char *)c + k->off;
	uint64_t v = is_text(k) || is_pairs(k) ? 0 : load_uint(p, k->size);
	size_t n;

	switch (k->type) {
	case CONFIG_T_DURATION:
		format_ns((int64_t)v, buf, len);
		break;
	case CONFIG_T_SIZE:
		format_size(v, buf, len);
		break;
	case CONFIG_T_BOOL:
		snprintf(buf, len, "%s", v ? "yes" : "no");
		break;
	case CONFIG_T_CHOICE:
		snprintf(buf, len, "%s", k->choices[v]);
		break;
	case CONFIG_T_LABEL:
	case CONFIG_T_HEADER:
		memcpy(&n, (const char *)c + k->n_off, sizeof(n));
		snprintf(buf, len, "%zu set", n);
		break;
	case CONFIG_T_UINT:
		snprintf(buf, len, "%" PRIu64, v);
		break;
	default:
		snprintf(buf, len, "%s", p);
	}
}
