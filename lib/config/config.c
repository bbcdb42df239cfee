// SPDX-License-Identifier: MIT
/*
 * Parses emberd's INI configuration with libinih: the [daemon] and [collector]
 * keys through their table (keys.c), the [app] sections, and what only the
 * whole file tells. inih does not report line numbers to handlers, so the
 * reader below counts lines itself.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "config.h"
#include "keys.h"
#include "timeparse.h"

/* State of one parse: the text being read and where we are in it. */
struct parse_ctx {
	const char *text, *end, *pos;
	const char *filename;
	unsigned int line;
	struct ember_config *cfg;
	struct config_errors *errs;
	unsigned int section_seq;  /* section headers read so far */
	unsigned int section_line; /* line of the last one */
	unsigned int app_seq;	   /* section_seq of the current [app] */
	unsigned int syntax_line;  /* first line check_syntax() refused, 0 if none */
	/* where the keys checked against each other were set: 0 when not */
	unsigned int interval_line, url_line, protocol_line, max_age_line, window_line;
	struct app_config *app; /* the [app] being read, NULL if none or refused */
};

static void add_error(struct config_errors *errs, const char *file, unsigned int line,
		      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void add_error(struct config_errors *errs, const char *file, unsigned int line,
		      const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	if (errs->n >= CONFIG_MAX_ERRORS) {
		errs->dropped++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	errs->line[errs->n] = line;
	if (line)
		snprintf(errs->msg[errs->n++], sizeof(errs->msg[0]), "%s:%u: %s", file, line, msg);
	else
		snprintf(errs->msg[errs->n++], sizeof(errs->msg[0]), "%s: %s", file, msg);
}

/* Puts the errors in line order, the whole file's (line 0) last; stable. */
static void sort_errors(struct config_errors *errs)
{
	for (size_t i = 1; i < errs->n; i++) {
		char msg[sizeof(errs->msg[0])];
		unsigned int line = errs->line[i], key = line ? line : UINT_MAX;
		size_t j = i;

		memcpy(msg, errs->msg[i], sizeof(msg));
		for (; j > 0 && (errs->line[j - 1] ? errs->line[j - 1] : UINT_MAX) > key; j--) {
			memcpy(errs->msg[j], errs->msg[j - 1], sizeof(msg));
			errs->line[j] = errs->line[j - 1];
		}
		memcpy(errs->msg[j], msg, sizeof(msg));
		errs->line[j] = line;
	}
}

void config_free(struct ember_config *c)
{
	if (!c)
		return;
	free(c->apps);
	c->apps = NULL;
	c->n_apps = 0;
}

/* The table's defaults, read as the file would give them (the bounds test checks each). */
void config_defaults(struct ember_config *c)
{
	char err[200];

	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < config_keys_n; i++)
		if (config_keys[i].def)
			config_key_set(c, &config_keys[i], config_keys[i].name, config_keys[i].def,
				       err, sizeof(err));
}

bool config_label_name_ok(const char *name)
{
	if (!name[0] || strlen(name) >= CONFIG_NAME_MAX || !strncmp(name, "__", 2))
		return false;
	if (!isalpha((unsigned char)name[0]) && name[0] != '_')
		return false;
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			return false;
	return true;
}

/* A glob fnmatch() can use as meant: non-empty, brackets closed, no dangling '\'. */
static bool glob_ok(const char *g)
{
	if (!g[0] || strlen(g) >= CONFIG_VALUE_MAX)
		return false;
	for (const char *p = g; *p; p++) {
		if (*p == '\\') {
			if (!*++p)
				return false;
		} else if (*p == '[') {
			const char *q = p + 1;

			if (*q == '!' || *q == '^')
				q++;
			if (*q == ']')
				q++;
			while (*q && *q != ']')
				q++;
			if (!*q)
				return false;
			p = q;
		}
	}
	return fnmatch(g, "", 0) != -1;
}

static const struct {
	const char *key;
	enum app_rule_kind kind;
} rule_keys[] = {
	{"match.unit", RULE_UNIT},	 {"match.cgroup", RULE_CGROUP},
	{"match.exe", RULE_EXE},	 {"match.comm", RULE_COMM},
	{"match.cmdline", RULE_CMDLINE}, {"match.container", RULE_CONTAINER},
};

static int add_rule(struct app_config *a, enum app_rule_kind kind, const char *env,
		    const char *pattern, char *err, size_t errlen)
{
	struct app_rule *r;

	if (!glob_ok(pattern)) {
		snprintf(err, errlen, "bad glob '%s' (empty, unclosed '[' or trailing '\\')",
			 pattern);
		return -EINVAL;
	}
	if (a->n_rules >= CONFIG_MAX_RULES) {
		snprintf(err, errlen, "more than %d match rules", CONFIG_MAX_RULES);
		return -E2BIG;
	}
	r = &a->rules[a->n_rules++];
	r->kind = kind;
	snprintf(r->env, sizeof(r->env), "%s", env ? env : "");
	snprintf(r->pattern, sizeof(r->pattern), "%s", pattern);
	return 0;
}

static int parse_app_memory(const char *value, enum app_memory *out, char *err, size_t errlen)
{
	static const char *const names[] = {"off", "alloc", "inuse"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(value, names[i])) {
			*out = (enum app_memory)i;
			return 0;
		}
	}
	snprintf(err, errlen, "memory: '%s' is not off, alloc or inuse", value);
	return -EINVAL;
}

/* Applies one key of an [app] section. */
static int set_app_key(struct app_config *a, const char *key, const char *value, char *err,
		       size_t errlen)
{
	for (size_t i = 0; i < sizeof(rule_keys) / sizeof(rule_keys[0]); i++)
		if (!strcmp(key, rule_keys[i].key))
			return add_rule(a, rule_keys[i].kind, NULL, value, err, errlen);
	if (!strncmp(key, "match.env.", 10)) {
		const char *var = key + 10;

		if (!var[0] || strlen(var) >= CONFIG_NAME_MAX || strchr(var, '=')) {
			snprintf(err, errlen, "match.env.NAME: bad variable name '%s'", var);
			return -EINVAL;
		}
		return add_rule(a, RULE_ENV, var, value, err, errlen);
	}
	if (!strncmp(key, "label.", 6))
		return config_add_label(a->labels, &a->n_labels, key + 6, value, err, errlen);
	if (!strcmp(key, "exclude")) {
		if (config_parse_bool(value, &a->exclude)) {
			snprintf(err, errlen, "exclude: '%s' is not yes or no", value);
			return -EINVAL;
		}
		return 0;
	}
	if (!strcmp(key, "memory"))
		return parse_app_memory(value, &a->memory, err, errlen);
	snprintf(err, errlen, "unknown key '%s' in [app \"%s\"]", key, a->name);
	return -ENOENT;
}

/* Parses 'app "NAME"' into name; false when the section is not of that form. */
static bool parse_app_section(const char *section, char *name, size_t len)
{
	const char *p = section + 3, *end;

	while (*p == ' ' || *p == '\t')
		p++;
	if (*p++ != '"')
		return false;
	end = strchr(p, '"');
	if (!end || end[1] || end == p || (size_t)(end - p) >= len)
		return false;
	for (const char *q = p; q < end; q++)
		if (!isprint((unsigned char)*q))
			return false;
	memcpy(name, p, end - p);
	name[end - p] = '\0';
	return true;
}

/* Starts the app of a new [app "NAME"] section; NULL (error logged) when refused. */
static struct app_config *begin_app(struct parse_ctx *ctx, const char *section)
{
	struct ember_config *c = ctx->cfg;
	char name[CONFIG_NAME_MAX];
	struct app_config *a;

	if (!parse_app_section(section, name, sizeof(name))) {
		add_error(ctx->errs, ctx->filename, ctx->section_line,
			  "bad section [%s]: expected [app \"NAME\"]", section);
		return NULL;
	}
	for (size_t i = 0; i < c->n_apps; i++) {
		if (!strcmp(c->apps[i].name, name)) {
			add_error(ctx->errs, ctx->filename, ctx->section_line,
				  "app \"%s\" defined twice (first at line %u)", name,
				  c->apps[i].line);
			return NULL;
		}
	}
	if (c->n_apps >= CONFIG_MAX_APPS) {
		add_error(ctx->errs, ctx->filename, ctx->section_line, "more than %d apps",
			  CONFIG_MAX_APPS);
		return NULL;
	}
	a = realloc(c->apps, (c->n_apps + 1) * sizeof(*a));
	if (!a) {
		add_error(ctx->errs, ctx->filename, ctx->section_line, "out of memory");
		return NULL;
	}
	c->apps = a;
	a = &c->apps[c->n_apps++];
	memset(a, 0, sizeof(*a));
	snprintf(a->name, sizeof(a->name), "%s", name);
	a->line = ctx->section_line;
	return a;
}

/* Applies one key of the table's section; writes a message into err on failure. */
static int set_key(struct ember_config *c, enum config_section section, const char *key,
		   const char *value, char *err, size_t errlen)
{
	const struct config_key *k = config_key_find(section, key);

	if (!k) {
		snprintf(err, errlen, "unknown key '%s' in [%s]", key,
			 config_section_name(section));
		return -ENOENT;
	}
	return config_key_set(c, k, key, value, err, errlen);
}

int config_set(struct ember_config *c, const char *key, const char *value, char *err, size_t errlen)
{
	return set_key(c, CONFIG_SECTION_DAEMON, key, value, err, errlen);
}

/* inih keeps '#' inside values; cut "value   # comment" at the comment. */
static void strip_inline_comment(char *v)
{
	char *p = v;

	while ((p = strchr(p, '#'))) {
		if (p == v || isspace((unsigned char)p[-1])) {
			*p = '\0';
			break;
		}
		p++;
	}
	for (p = v + strlen(v); p > v && isspace((unsigned char)p[-1]); p--)
		p[-1] = '\0';
}

/* Remembers where the [collector] keys that check_collector() weighs were set. */
static void note_line(struct parse_ctx *ctx, const char *key)
{
	if (!strcmp(key, "url"))
		ctx->url_line = ctx->line;
	else if (!strcmp(key, "protocol"))
		ctx->protocol_line = ctx->line;
	else if (!strcmp(key, "max_age"))
		ctx->max_age_line = ctx->line;
	else if (!strcmp(key, "reject_older_than"))
		ctx->window_line = ctx->line;
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
	struct parse_ctx *ctx = user;
	char val[INI_MAX_LINE + 1], err[200];

	snprintf(val, sizeof(val), "%s", value);
	strip_inline_comment(val);
	if (!section[0]) {
		add_error(ctx->errs, ctx->filename, ctx->line, "key '%s' outside a section", name);
		return 1;
	}
	if (!strncmp(section, "app", 3) && (section[3] == ' ' || section[3] == '"')) {
		if (ctx->app_seq != ctx->section_seq) {
			ctx->app_seq = ctx->section_seq;
			ctx->app = begin_app(ctx, section);
		}
		if (ctx->app && set_app_key(ctx->app, name, val, err, sizeof(err)))
			add_error(ctx->errs, ctx->filename, ctx->line, "%s", err);
		return 1;
	}
	if (!strcmp(section, "collector")) {
		if (set_key(ctx->cfg, CONFIG_SECTION_COLLECTOR, name, val, err, sizeof(err)))
			add_error(ctx->errs, ctx->filename, ctx->line, "%s", err);
		else
			note_line(ctx, name);
		return 1;
	}
	if (strcmp(section, "daemon")) {
		add_error(ctx->errs, ctx->filename, ctx->line, "unknown section [%s]", section);
		return 1;
	}
	if (set_key(ctx->cfg, CONFIG_SECTION_DAEMON, name, val, err, sizeof(err)))
		add_error(ctx->errs, ctx->filename, ctx->line, "%s", err);
	else if (!strcmp(name, "interval"))
		ctx->interval_line = ctx->line;
	return 1; /* our errors are collected above; 0 would only count a syntax error */
}

/*
 * The line syntax inih refuses, said on the line itself: inih only returns the
 * first bad line's number. An indented line may continue the previous value
 * (inih's multi-line values): left to inih.
 */
static void check_syntax(struct parse_ctx *ctx, const char *buf)
{
	const char *p = buf + strspn(buf, " \t\r\n");
	size_t n = strcspn(p, "\r\n");

	if (!n || *p == ';' || *p == '#')
		return;
	if (*p == '[') {
		if (memchr(p, ']', n))
			return;
		add_error(ctx->errs, ctx->filename, ctx->line, "section header without ']'");
	} else if (memchr(p, '=', n) || memchr(p, ':', n) || p != buf) {
		return;
	} else {
		add_error(ctx->errs, ctx->filename, ctx->line,
			  "syntax error (expected [section] or key = value)");
	}
	if (!ctx->syntax_line)
		ctx->syntax_line = ctx->line;
}

/* ini_reader: hands inih one line at a time and counts lines. */
static char *read_line(char *buf, int size, void *stream)
{
	struct parse_ctx *ctx = stream;
	const char *nl;
	size_t n;

	if (ctx->pos >= ctx->end)
		return NULL;
	ctx->line++;
	nl = memchr(ctx->pos, '\n', ctx->end - ctx->pos);
	n = (nl ? nl + 1 : ctx->end) - ctx->pos;
	if (n >= (size_t)size) {
		add_error(ctx->errs, ctx->filename, ctx->line, "line longer than %d bytes",
			  size - 2);
		ctx->pos += n;
		buf[0] = '\n';
		buf[1] = '\0';
		return buf;
	}
	memcpy(buf, ctx->pos, n);
	buf[n] = '\0';
	if (buf[strspn(buf, " \t")] == '[') {
		ctx->section_seq++;
		ctx->section_line = ctx->line;
	}
	if (memchr(buf, '\0', n)) {
		add_error(ctx->errs, ctx->filename, ctx->line, "NUL byte in line");
		buf[0] = '\n';
		buf[1] = '\0';
	} else {
		check_syntax(ctx, buf);
	}
	ctx->pos += n;
	return buf;
}

size_t config_label_budget(enum collector_protocol protocol)
{
	return CONFIG_MAX_SERIES_LABELS -
	       (protocol == COLLECTOR_INGEST ? CONFIG_OWN_LABELS_INGEST : CONFIG_OWN_LABELS_PUSH);
}

bool config_ingest_value_ok(const char *value)
{
	size_t n = strlen(value);

	if (strpbrk(value, ",{}"))
		return false;
	return !n || (!isspace((unsigned char)value[0]) && !isspace((unsigned char)value[n - 1]));
}

static bool has_name(const struct config_label *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return true;
	return false;
}

/* Distinct label names a series of app a (NULL: the host's own profiles) carries. */
static size_t series_labels(const struct ember_config *c, const struct app_config *a)
{
	const struct collector_config *cc = &c->collector;
	size_t n = c->n_labels;

	for (size_t i = 0; a && i < a->n_labels; i++)
		n += !has_name(c->labels, c->n_labels, a->labels[i].name);
	for (size_t i = 0; i < cc->n_external_labels; i++) {
		const char *name = cc->external_labels[i].name;

		n += !has_name(c->labels, c->n_labels, name) &&
		     !(a && has_name(a->labels, a->n_labels, name));
	}
	return n;
}

/*
 * The time window: a profile is pushed at the earliest when its interval ends
 * and is refused once older than the server's window; max_age must fall in
 * between with margins, or every profile ends rejected or expired.
 */
static void check_window(const struct parse_ctx *ctx)
{
	const struct collector_config *cc = &ctx->cfg->collector;
	int64_t most = cc->reject_older_than_ns - CONFIG_CLOCK_MARGIN_NS;
	int64_t least = ctx->cfg->interval_ns + CONFIG_PUSH_SLACK_NS;
	char age[32], win[32], lim[32], ivl[32];
	unsigned int line;

	format_duration(cc->max_age_ns, age, sizeof(age));
	format_duration(cc->reject_older_than_ns, win, sizeof(win));
	format_duration(ctx->cfg->interval_ns, ivl, sizeof(ivl));
	if (cc->max_age_ns > most) {
		line = ctx->max_age_line ? ctx->max_age_line : ctx->window_line;
		format_duration(most, lim, sizeof(lim));
		add_error(ctx->errs, ctx->filename, line ? line : ctx->url_line,
			  "[collector] max_age = %s: the collector refuses profiles older than "
			  "reject_older_than = %s; at most %s leaves 5m for clock skew",
			  age, win, lim);
	} else if (cc->max_age_ns < least) {
		line = ctx->interval_line ? ctx->interval_line : ctx->max_age_line;
		format_duration(cc->max_age_ns - CONFIG_PUSH_SLACK_NS, lim, sizeof(lim));
		add_error(ctx->errs, ctx->filename, line ? line : ctx->url_line,
			  "interval = %s: a profile is pushed when its interval ends, and "
			  "[collector] max_age = %s leaves it no 5m to get through; make the "
			  "interval at most %s",
			  ivl, age,
			  cc->max_age_ns > CONFIG_PUSH_SLACK_NS ? lim : "0s (raise max_age)");
	}
}

/* Labels over the server's 30 names, and values the legacy ingest form would change. */
static void check_labels(const struct parse_ctx *ctx)
{
	const struct ember_config *c = ctx->cfg;
	const struct collector_config *cc = &c->collector;
	size_t budget = config_label_budget(cc->protocol), n = series_labels(c, NULL);
	bool ingest = cc->protocol == COLLECTOR_INGEST;

	if (n > budget)
		add_error(ctx->errs, ctx->filename, ctx->url_line,
			  "[daemon] labels and external_labels make %zu labels; with the %d ember "
			  "and the server add, at most %zu fit in a series",
			  n, CONFIG_MAX_SERIES_LABELS - (int)budget, budget);
	for (size_t i = 0; i < c->n_apps; i++) {
		const struct app_config *a = &c->apps[i];

		n = series_labels(c, a);
		if (n > budget)
			add_error(ctx->errs, ctx->filename, a->line,
				  "app \"%s\" would carry %zu labels with the [daemon] ones and "
				  "external_labels; at most %zu fit in a series with protocol = %s",
				  a->name, n, budget, ingest ? "ingest" : "push");
		if (ingest && !config_ingest_value_ok(a->name))
			add_error(ctx->errs, ctx->filename, a->line,
				  "app \"%s\": protocol = ingest cannot name this service as push "
				  "does (',', '{', '}' or surrounding spaces)",
				  a->name);
		for (size_t j = 0; ingest && j < a->n_labels; j++)
			if (!config_ingest_value_ok(a->labels[j].value))
				add_error(ctx->errs, ctx->filename, a->line,
					  "label.%s: protocol = ingest cannot carry this value "
					  "(',', '{', '}' or surrounding spaces)",
					  a->labels[j].name);
	}
	for (size_t i = 0; ingest && i < c->n_labels + cc->n_external_labels; i++) {
		const struct config_label *l =
			i < c->n_labels ? &c->labels[i] : &cc->external_labels[i - c->n_labels];

		if (!config_ingest_value_ok(l->value))
			add_error(ctx->errs, ctx->filename, ctx->protocol_line,
				  "protocol = ingest cannot carry %s%s = '%s' unchanged (',', '{', "
				  "'}' or surrounding spaces)",
				  i < c->n_labels ? "labels." : "external_labels.", l->name,
				  l->value);
	}
}

/* What only the whole file tells about pushing; nothing when no collector is set. */
static void check_collector(const struct parse_ctx *ctx)
{
	if (!ctx->cfg->collector.url[0])
		return;
	check_window(ctx);
	check_labels(ctx);
}

/* Checks what only the whole file tells: rules present, label count per series. */
static void check_apps(const struct ember_config *c, const char *filename,
		       struct config_errors *errs)
{
	const struct collector_config *cc = &c->collector;

	if (cc->basic_auth_user[0] && !cc->basic_auth_password_file[0])
		add_error(errs, filename, 0,
			  "[collector] basic_auth_user needs "
			  "basic_auth_password_file");
	if (cc->basic_auth_password_file[0] && cc->bearer_token_file[0])
		add_error(errs, filename, 0,
			  "[collector] basic auth and a bearer token exclude "
			  "each other");
	for (size_t i = 0; i < c->n_apps; i++) {
		const struct app_config *a = &c->apps[i];
		size_t labels = c->n_labels + a->n_labels;

		if (!a->n_rules)
			add_error(errs, filename, a->line,
				  "app \"%s\" has no match rule (match.unit, match.exe, ...)",
				  a->name);
		for (size_t j = 0; j < a->n_labels; j++)
			for (size_t k = 0; k < c->n_labels; k++)
				if (!strcmp(a->labels[j].name, c->labels[k].name))
					labels--; /* the app's value overrides the host's */
		if (labels > CONFIG_MAX_USER_LABELS)
			add_error(errs, filename, a->line,
				  "app \"%s\" would carry %zu labels with the [daemon] ones; "
				  "at most %d fit in a series",
				  a->name, labels, CONFIG_MAX_USER_LABELS);
	}
}

int config_parse(const char *text, size_t len, const char *filename, struct ember_config *c,
		 struct config_errors *errs)
{
	struct parse_ctx ctx = {.text = text,
				.end = text + len,
				.pos = text,
				.filename = filename,
				.cfg = c,
				.errs = errs};
	int rc;

	if (len > CONFIG_MAX_BYTES) {
		add_error(errs, filename, 0, "file larger than %u bytes", CONFIG_MAX_BYTES);
		return -EINVAL;
	}
	rc = ini_parse_stream(read_line, &ctx, on_key, &ctx);
	if (rc > 0 && (unsigned int)rc != ctx.syntax_line)
		add_error(errs, filename, rc, "syntax error (expected [section] or key = value)");
	else if (rc < 0)
		add_error(errs, filename, 0, "cannot parse (out of memory)");
	check_apps(c, filename, errs);
	check_collector(&ctx);
	sort_errors(errs);
	return errs->n || errs->dropped ? -EINVAL : 0;
}

int config_load(const char *path, struct ember_config *c, struct config_errors *errs)
{
	struct stat st;
	char *buf = NULL;
	ssize_t got;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		add_error(errs, path, 0, "cannot open: %s", strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > CONFIG_MAX_BYTES) {
		add_error(errs, path, 0, "not a regular file of at most %u bytes",
			  CONFIG_MAX_BYTES);
		close(fd);
		return -EINVAL;
	}
	buf = malloc(st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	got = read(fd, buf, st.st_size);
	close(fd);
	if (got < 0) {
		add_error(errs, path, 0, "cannot read: %s", strerror(errno));
		free(buf);
		return -EIO;
	}
	rc = config_parse(buf, got, path, c, errs);
	free(buf);
	return rc;
}
