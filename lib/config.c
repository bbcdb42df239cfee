// SPDX-License-Identifier: MIT
/*
 * Parses emberd's INI configuration with libinih. inih does not report line
 * numbers to handlers, so the reader below counts lines itself.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "config.h"
#include "timeparse.h"

/* State of one parse: the text being read and where we are in it. */
struct parse_ctx {
	const char *text, *end, *pos;
	const char *filename;
	unsigned int line;
	struct ember_config *cfg;
	struct config_errors *errs;
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
	snprintf(errs->msg[errs->n++], sizeof(errs->msg[0]), "%s:%u: %s", file, line, msg);
}

void config_defaults(struct ember_config *c)
{
	memset(c, 0, sizeof(*c));
	c->hz = 19;
	c->interval_ns = 10LL * 1000000000LL;
	snprintf(c->data_dir, sizeof(c->data_dir), "%s", EMBER_DEFAULT_DATA_DIR);
	c->include_idle = false;
}

static int parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };

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

static int parse_uint(const char *v, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long n;

	if (!isdigit((unsigned char)v[0]))
		return -EINVAL;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || *end || n < min || n > max)
		return -EINVAL;
	*out = n;
	return 0;
}

/* Applies one [daemon] key; writes a message into err on failure. */
static int set_daemon_key(struct ember_config *c, const char *key, const char *value, char *err,
			  size_t errlen)
{
	unsigned long n;
	int64_t ns;

	if (!strcmp(key, "hz")) {
		if (parse_uint(value, EMBER_HZ_MIN, EMBER_HZ_MAX, &n)) {
			snprintf(err, errlen, "hz: '%s' is not a whole number from %d to %d",
				 value, EMBER_HZ_MIN, EMBER_HZ_MAX);
			return -EINVAL;
		}
		c->hz = n;
	} else if (!strcmp(key, "interval")) {
		if (parse_duration(value, &ns) || ns < EMBER_INTERVAL_MIN_NS ||
		    ns > EMBER_INTERVAL_MAX_NS) {
			snprintf(err, errlen,
				 "interval: '%s' is not a duration from 1s to 1h (e.g. 10s, 1m)",
				 value);
			return -EINVAL;
		}
		c->interval_ns = ns;
	} else if (!strcmp(key, "data_dir")) {
		if (value[0] != '/' || strlen(value) >= sizeof(c->data_dir)) {
			snprintf(err, errlen, "data_dir: '%s' must be an absolute path", value);
			return -EINVAL;
		}
		snprintf(c->data_dir, sizeof(c->data_dir), "%s", value);
	} else if (!strcmp(key, "include_idle")) {
		if (parse_bool(value, &c->include_idle)) {
			snprintf(err, errlen, "include_idle: '%s' is not yes or no", value);
			return -EINVAL;
		}
	} else {
		snprintf(err, errlen, "unknown key '%s' in [daemon]", key);
		return -ENOENT;
	}
	return 0;
}

int config_set(struct ember_config *c, const char *key, const char *value, char *err,
	       size_t errlen)
{
	return set_daemon_key(c, key, value, err, errlen);
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
	if (strcmp(section, "daemon")) {
		add_error(ctx->errs, ctx->filename, ctx->line, "unknown section [%s]", section);
		return 1;
	}
	if (set_daemon_key(ctx->cfg, name, val, err, sizeof(err)))
		add_error(ctx->errs, ctx->filename, ctx->line, "%s", err);
	return 1; /* our errors are collected above; 0 would only count a syntax error */
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
	if (memchr(buf, '\0', n)) {
		add_error(ctx->errs, ctx->filename, ctx->line, "NUL byte in line");
		buf[0] = '\n';
		buf[1] = '\0';
	}
	ctx->pos += n;
	return buf;
}

int config_parse(const char *text, size_t len, const char *filename, struct ember_config *c,
		 struct config_errors *errs)
{
	struct parse_ctx ctx = { .text = text, .end = text + len, .pos = text,
				 .filename = filename, .cfg = c, .errs = errs };
	int rc;

	if (len > CONFIG_MAX_BYTES) {
		add_error(errs, filename, 0, "file larger than %u bytes", CONFIG_MAX_BYTES);
		return -EINVAL;
	}
	rc = ini_parse_stream(read_line, &ctx, on_key, &ctx);
	if (rc > 0)
		add_error(errs, filename, rc, "syntax error (expected [section] or key = value)");
	else if (rc < 0)
		add_error(errs, filename, 0, "cannot parse (out of memory)");
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
