// SPDX-License-Identifier: MIT
/*
 * promcheck: a small strict checker of the Prometheus text exposition format
 * (0.0.4), for the tests of `emberctl status --format prometheus`. Reads a file
 * (or stdin), prints "promcheck: line N: why" and exits 1 at the first fault,
 * else prints the number of families and samples and exits 0.
 *
 * Checked: metric and label name charsets; label values with only \\ \" \n
 * escapes and valid UTF-8; float values (incl. +Inf, -Inf, NaN) and optional integer
 * timestamps; "# HELP name text" and "# TYPE name type" syntax and types; TYPE
 * at most once per family and before its samples; a family's lines contiguous;
 * no duplicate series (name + label set); no duplicate label in a series;
 * counters (and only counters here) named *_total and not negative; a final
 * newline; no leading whitespace (Prometheus tolerates it, ember never writes
 * it). With -m, also that every family has both HELP and TYPE (ember's rule).
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_INPUT (16u << 20)
#define MAX_FAMILIES 4096
#define MAX_SERIES 65536
#define MAX_LABELS 64
#define NAME_MAX_LEN 256

/* One family seen: its name, TYPE (or "" before one), and whether it is closed. */
struct family {
	char name[NAME_MAX_LEN];
	char type[16];
	bool help, closed, has_samples;
};

static struct family fams[MAX_FAMILIES];
static size_t n_fams;
static char *series[MAX_SERIES]; /* "name{sorted labels}" of every sample */
static size_t n_series;
static struct family *current; /* the family whose lines come now */
static unsigned int lineno;

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	if (lineno)
		fprintf(stderr, "promcheck: line %u: ", lineno);
	else
		fprintf(stderr, "promcheck: at the end: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static bool name_start(int c, bool metric)
{
	return isalpha(c) || c == '_' || (metric && c == ':');
}

static bool name_char(int c, bool metric)
{
	return name_start(c, metric) || isdigit(c);
}

/* A metric ([a-zA-Z_:][a-zA-Z0-9_:]*) or label ([a-zA-Z_][a-zA-Z0-9_]*) name at *p. */
static void take_name(const char **p, bool metric, char *out)
{
	size_t n = 0;

	if (!name_start((unsigned char)**p, metric))
		die("bad %s name at \"%.20s\"", metric ? "metric" : "label", *p);
	while (name_char((unsigned char)**p, metric)) {
		if (n + 1 >= NAME_MAX_LEN)
			die("name too long");
		out[n++] = *(*p)++;
	}
	out[n] = '\0';
}

static struct family *find_family(const char *name)
{
	for (size_t i = 0; i < n_fams; i++)
		if (!strcmp(fams[i].name, name))
			return &fams[i];
	return NULL;
}

/* Moves to family name: a family's lines must be contiguous. */
static struct family *enter_family(const char *name)
{
	struct family *f = find_family(name);

	if (f && f != current && f->closed)
		die("lines of family %s are not contiguous", name);
	if (!f) {
		if (n_fams == MAX_FAMILIES)
			die("too many families");
		f = &fams[n_fams++];
		snprintf(f->name, sizeof(f->name), "%s", name);
	}
	if (current && current != f)
		current->closed = true;
	current = f;
	return f;
}

/* The family a sample name belongs to (histogram and summary suffixes included). */
static struct family *family_of_sample(const char *name)
{
	static const char *const sfx[] = {"_bucket", "_count", "_sum"};
	struct family *f;
	char base[NAME_MAX_LEN];

	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		size_t n = strlen(name), s = strlen(sfx[i]);

		if (n <= s || strcmp(name + n - s, sfx[i]))
			continue;
		memcpy(base, name, n - s);
		base[n - s] = '\0';
		f = find_family(base);
		if (f && (!strcmp(f->type, "histogram") || !strcmp(f->type, "summary")))
			return enter_family(base);
	}
	return enter_family(name);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

static void comment_line(const char *p)
{
	char name[NAME_MAX_LEN], kind[8];
	struct family *f;

	p++; /* '#' */
	if (*p != ' ')
		return; /* "#foo": a plain comment */
	p++;
	if (strncmp(p, "HELP ", 5) && strncmp(p, "TYPE ", 5))
		return; /* any other comment is ignored, as Prometheus does */
	memcpy(kind, p, 4);
	kind[4] = '\0';
	p += 5;
	take_name(&p, true, name);
	f = enter_family(name);
	if (!strcmp(kind, "HELP")) {
		if (f->help)
			die("second HELP for %s", name);
		if (*p != ' ' && *p)
			die("HELP %s: no space after the name", name);
		for (p += *p == ' '; *p; p++)
			if (*p == '\\' && p[1] != '\\' && p[1] != 'n')
				die("HELP %s: bad escape \\%c", name, p[1] ? p[1] : '0');
			else if (*p == '\\')
				p++;
		f->help = true;
		return;
	}
	if (f->type[0])
		die("second TYPE for %s", name);
	if (f->has_samples)
		die("TYPE for %s after its samples", name);
	if (*p++ != ' ')
		die("TYPE %s: no type", name);
	if (strcmp(p, "counter") && strcmp(p, "gauge") && strcmp(p, "histogram") &&
	    strcmp(p, "summary") && strcmp(p, "untyped"))
		die("TYPE %s: unknown type \"%s\"", name, p);
	snprintf(f->type, sizeof(f->type), "%s", p);
	if (!strcmp(p, "counter") && !ends_with(name, "_total"))
		die("counter %s does not end in _total", name);
	if (strcmp(p, "counter") && ends_with(name, "_total"))
		die("%s ends in _total but is a %s, not a counter", name, p);
}

/* A label value up to the closing quote; only \\ \" \n escapes. */
static void take_value(const char **p, char *out, size_t cap)
{
	size_t n = 0;

	if (*(*p)++ != '"')
		die("label value does not start with a quote");
	for (;;) {
		char c = *(*p)++;

		if (!c)
			die("unterminated label value");
		if (c == '"')
			break;
		if (c == '\\') {
			c = *(*p)++;
			if (c != '\\' && c != '"' && c != 'n')
				die("bad escape \\%c in a label value", c ? c : '0');
		}
		if (n + 1 < cap)
			out[n++] = c;
	}
	out[n] = '\0';
}

/* Whether s is well-formed UTF-8 (no overlong forms, surrogates or values past U+10FFFF). */
static bool utf8_ok(const unsigned char *s)
{
	while (*s) {
		unsigned int c = *s, n, cp;

		if (c < 0x80) {
			s++;
			continue;
		}
		n = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
		if (!n || c > 0xf4)
			return false;
		cp = c & (0x3f >> n);
		for (unsigned int i = 1; i <= n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i] & 0x3f);
		}
		if (cp < (n == 1 ? 0x80u :
			  n == 2 ? 0x800u :
				   0x10000u) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		s += n + 1;
	}
	return true;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "{a="1",b="2"}" into a canonical sorted form appended to key. */
static void take_labels(const char **p, char *key, size_t cap)
{
	static char pairs[MAX_LABELS][NAME_MAX_LEN + 1024];
	char *order[MAX_LABELS], name[NAME_MAX_LEN], value[1024];
	size_t n = 0;

	(*p)++; /* '{' */
	while (**p != '}') {
		if (n == MAX_LABELS)
			die("too many labels");
		take_name(p, false, name);
		if (!strncmp(name, "__", 2))
			die("label %s: names starting with __ are reserved", name);
		if (*(*p)++ != '=')
			die("label %s: no '='", name);
		take_value(p, value, sizeof(value));
		if (!utf8_ok((const unsigned char *)value))
			die("label %s: value is not UTF-8", name);
		for (size_t i = 0; i < n; i++)
			if (!strncmp(pairs[i], name, strlen(name)) && pairs[i][strlen(name)] == '=')
				die("label %s twice", name);
		snprintf(pairs[n], sizeof(pairs[n]), "%s=%s", name, value);
		order[n] = pairs[n];
		n++;
		if (**p == ',')
			(*p)++;
		else if (**p != '}')
			die("expected ',' or '}' after a label, got \"%.10s\"", *p);
	}
	(*p)++;
	qsort(order, n, sizeof(order[0]), cmp_str);
	for (size_t i = 0; i < n; i++)
		snprintf(key + strlen(key), cap - strlen(key), "%s%s", i ? "," : "{", order[i]);
	if (n)
		snprintf(key + strlen(key), cap - strlen(key), "}");
}

/* A float as Prometheus reads it: decimal, exponent, [+-]Inf, NaN (hex refused: strict). */
static void check_float(const char *s)
{
	char *end;

	const char *u = s + (*s == '-' || *s == '+');

	/* Go's ParseFloat, which Prometheus uses, takes these in any case */
	if (!strcasecmp(u, "inf") || !strcasecmp(u, "infinity") || !strcasecmp(s, "nan"))
		return;
	if (!*s || strpbrk(s, "xXpP_") || strcasestr(s, "nan") || strcasestr(s, "inf"))
		die("bad value \"%s\"", s);
	errno = 0;
	strtod(s, &end);
	if (*end || end == s)
		die("bad value \"%s\"", s);
}

static void check_timestamp(const char *s)
{
	const char *p = s + (*s == '-');

	if (!*p || strspn(p, "0123456789") != strlen(p))
		die("bad timestamp \"%s\" (an integer of milliseconds)", s);
}

static void sample_line(const char *p)
{
	char name[NAME_MAX_LEN], key[8192], value[64], ts[64];
	struct family *f;
	int n;

	take_name(&p, true, name);
	snprintf(key, sizeof(key), "%s", name);
	if (*p == '{')
		take_labels(&p, key, sizeof(key));
	if (*p != ' ' && *p != '\t')
		die("no value after %s", name);
	ts[0] = '\0';
	n = sscanf(p, " %63s %63s", value, ts);
	if (n < 1)
		die("no value after %s", name);
	/* nothing may follow the timestamp */
	{
		const char *q = p;

		while (*q == ' ' || *q == '\t')
			q++;
		q += strlen(value);
		while (*q == ' ' || *q == '\t')
			q++;
		q += strlen(ts);
		while (*q == ' ' || *q == '\t')
			q++;
		if (*q)
			die("trailing text after the sample of %s", name);
	}
	check_float(value);
	if (ts[0])
		check_timestamp(ts);
	f = family_of_sample(name);
	if (!strcmp(f->type, "counter") && strtod(value, NULL) < 0)
		die("counter %s is negative", name);
	f->has_samples = true;
	for (size_t i = 0; i < n_series; i++)
		if (!strcmp(series[i], key))
			die("duplicate series %s", key);
	if (n_series == MAX_SERIES)
		die("too many series");
	series[n_series++] = strdup(key);
}

int main(int argc, char **argv)
{
	static char buf[MAX_INPUT + 1];
	size_t len = 0, got, samples;
	bool require_meta = argc > 1 && !strcmp(argv[1], "-m");
	FILE *f = stdin;
	char *line, *next;

	if (require_meta) {
		argc--;
		argv++;
	}
	if (argc > 2 || (argc == 2 && !strcmp(argv[1], "--help"))) {
		fprintf(stderr, "usage: promcheck [-m] [FILE]  (stdin without FILE; -m: every "
				"family needs HELP and TYPE)\n");
		return 2;
	}
	if (argc == 2 && !(f = fopen(argv[1], "r"))) {
		fprintf(stderr, "promcheck: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	while ((got = fread(buf + len, 1, sizeof(buf) - 1 - len, f)) > 0)
		len += got;
	if (f != stdin)
		fclose(f);
	buf[len] = '\0';
	if (memchr(buf, '\0', len))
		die("NUL byte in the input");
	if (len == 0 || buf[len - 1] != '\n') {
		lineno = 0;
		die("the input does not end with a newline");
	}
	for (line = buf; *line; line = next) {
		next = strchr(line, '\n');
		*next++ = '\0';
		lineno++;
		if (line[0] == '#' && !utf8_ok((const unsigned char *)line))
			die("comment is not UTF-8");
		if (strchr(line, '\r'))
			die("carriage return");
		if (line[0] == '#')
			comment_line(line);
		else if (line[strspn(line, " \t")] == '\0')
			continue; /* blank lines are ignored */
		else if (line[0] == ' ' || line[0] == '\t')
			die("leading whitespace");
		else
			sample_line(line);
	}
	samples = n_series;
	for (size_t i = 0; require_meta && i < n_fams; i++)
		if (!fams[i].help || !fams[i].type[0]) {
			lineno = 0;
			die("family %s has no %s", fams[i].name, fams[i].help ? "TYPE" : "HELP");
		}
	printf("promcheck: OK: %zu families, %zu samples\n", n_fams, samples);
	return 0;
}
