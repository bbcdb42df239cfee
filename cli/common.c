// SPDX-License-Identifier: MIT
/* What every emberctl command shares: messages, times, the selection options, files. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "compress.h"
#include "file.h"
#include "timeparse.h"

const char *usage_cmd;

/* One line on stderr, for errors and reports alike. */
void __attribute__((format(printf, 1, 2))) note(const char *fmt, ...)
{
	va_list ap;

	fputs("emberctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void __attribute__((noreturn, format(printf, 1, 2))) usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("emberctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see emberctl %s%s--help)\n", usage_cmd ? usage_cmd : "",
		usage_cmd ? " " : "");
	exit(EXIT_USAGE);
}

void __attribute__((noreturn)) show(const char *text)
{
	fputs(text, stdout);
	exit(ferror(stdout) || fflush(stdout) ? EXIT_RUNTIME : EXIT_SUCCESS);
}

/* "between A and B", "since A", "before B" or "in the history", for messages. */
void format_window(const struct selection *sel, char *buf, size_t len)
{
	char a[40], b[40];

	format_time(sel->since, a, sizeof(a));
	format_time(sel->until, b, sizeof(b));
	if (sel->since != INT64_MIN && sel->until != INT64_MAX)
		snprintf(buf, len, "between %s and %s", a, b);
	else if (sel->since != INT64_MIN)
		snprintf(buf, len, "since %s", a);
	else if (sel->until != INT64_MAX)
		snprintf(buf, len, "before %s", b);
	else
		snprintf(buf, len, "in the history");
}

int64_t parse_time_arg(const char *opt, const char *arg, int64_t now)
{
	int64_t ns;

	if (parse_time(arg, now, &ns))
		usage_error("%s: cannot read \"%s\" as a time (e.g. 2026-11-22T03:10:00Z, "
			    "1795317000, -15m, \"10 min ago\", today, now)",
			    opt, arg);
	return ns;
}

int64_t parse_pid_arg(const char *arg)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno || end == arg || *end || v <= 0 || v > INT32_MAX)
		usage_error("--pid: \"%s\" is not a process id", arg);
	return v;
}

void selection_init(struct selection *sel, const char *default_type)
{
	*sel = (struct selection){.since = INT64_MIN, .until = INT64_MAX, .type = default_type};
}

struct history_query selection_query(const struct selection *sel)
{
	return (struct history_query){
		.since_ns = sel->since,
		.until_ns = sel->until,
		.type = sel->type,
		.app = sel->app,
		.labels = sel->labels,
		.n_labels = sel->n_labels,
		.use_rollups = !sel->no_rollups,
	};
}

bool selection_option(struct selection *sel, int c, const char *arg, int64_t now)
{
	switch (c) {
	case 's':
		sel->since = parse_time_arg("--since", arg, now);
		return true;
	case 'u':
		sel->until = parse_time_arg("--until", arg, now);
		return true;
	case 't':
		sel->type = arg;
		return true;
	case 'a':
		sel->app = arg;
		return true;
	case 'p':
		sel->filter = (struct pprof_filter){.by_pid = true, .pid = parse_pid_arg(arg)};
		return true;
	case OPT_NO_ROLLUPS:
		sel->no_rollups = true;
		return true;
	case 'l':
		if (!strchr(arg, '=') || arg[0] == '=')
			usage_error("--label: \"%s\" is not KEY=VALUE", arg);
		if (sel->n_labels == MAX_LABEL_FILTERS)
			usage_error("--label: at most %d", MAX_LABEL_FILTERS);
		sel->labels[sel->n_labels++] = arg;
		return true;
	}
	return false;
}

void check_window(const struct selection *sel)
{
	char a[40], b[40];

	if (sel->since < sel->until)
		return;
	format_time(sel->since, a, sizeof(a));
	format_time(sel->until, b, sizeof(b));
	usage_error("the window is empty: --since %s is not before --until %s", a, b);
}

/*
 * getopt's own messages are off (opterr = 0, and a leading ':' in the option
 * strings makes it return ':' for a missing value): this says which it was.
 */
void __attribute__((noreturn)) bad_option(int c, char **argv)
{
	const char *opt = argv[optind - 1];
	char short_opt[3] = {'-', (char)optopt, '\0'};

	if (optopt && strncmp(opt, "--", 2) != 0)
		opt = short_opt;
	if (c == ':')
		usage_error("option %s needs a value", opt);
	usage_error("unknown option %s", opt);
}

void no_operands(int argc, char **argv)
{
	if (optind < argc)
		usage_error("unexpected argument \"%s\"", argv[optind]);
}

const char *absolute_data_dir(const char *dir)
{
	char buf[PATH_MAX], *abs;
	int ret;

	if (dir[0] == '/')
		return dir;
	ret = path_absolute(dir, buf, sizeof(buf));
	if (ret) {
		note("--data-dir: cannot make \"%s\" absolute from the working directory: %s", dir,
		     strerror(-ret));
		exit(EXIT_RUNTIME);
	}
	abs = strdup(buf);
	if (!abs) {
		note("--data-dir: %s", strerror(errno));
		exit(EXIT_RUNTIME);
	}
	return abs;
}

struct history *open_history(const char *data_dir)
{
	const char *err = NULL;
	struct history *h;

	h = history_open(data_dir, true, &err);
	if (h)
		return h;
	if (errno == ENOENT)
		note("no history in %s (has emberd run with this data directory? see --data-dir)",
		     data_dir);
	else
		note("cannot read the history in %s: %s", data_dir, err ? err : strerror(errno));
	return NULL;
}

bool close_history(struct history *h)
{
	struct history_damage d;

	if (!h)
		return false;
	history_damage_info(h, &d);
	if (d.damaged)
		note("%s is damaged (%s): read %" PRIu64 " rows, could not read about %" PRIu64
		     " (a damaged history is moved aside by emberd; see the README)",
		     history_path(h), d.first_error[0] ? d.first_error : "corrupt", d.rows_read,
		     d.unreadable);
	history_close(h);
	return d.damaged;
}

const char *history_strerror(int err)
{
	if (err == -EBADMSG)
		return "the database is damaged and no row of it could be read";
	return strerror(-err);
}

/*
 * The database with its write-ahead log as the file system has them, the
 * figure emberd's retention logs and bounds by max_size.
 */
uint64_t history_disk_bytes(struct history *h)
{
	struct history_size sz;

	if (history_size(h, &sz))
		return 0;
	return sz.file_bytes + sz.wal_bytes;
}

int write_file_atomic(const char *path, const uint8_t *buf, size_t len)
{
	if (!strcmp(path, "-"))
		return isatty(STDOUT_FILENO) ? -ENOTTY : write_all(STDOUT_FILENO, buf, len);
	return file_write_atomic(path, buf, len, WRITE_SYNC);
}

int write_profile(const struct pprof_builder *b, const char *path)
{
	uint8_t *raw = NULL, *gz = NULL;
	size_t raw_len, gz_len;
	int ret;

	ret = pprof_encode(b, &raw, &raw_len);
	if (!ret)
		ret = gzip_compress(raw, raw_len, &gz, &gz_len);
	if (!ret)
		ret = write_file_atomic(path, gz, gz_len);
	free(raw);
	free(gz);
	return ret;
}

/* Says why nothing came out: no rows, only corrupt ones, or none of the pid. */
/* "12 s ago", "3 min ago", "2 h ago": how long since ns. */
const char *term_safe(const char *s, char *buf, size_t len)
{
	size_t o = 0;

	for (; *s && o + 5 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0x7f || c == '\\')
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", c);
		else
			buf[o++] = (char)c;
	}
	buf[o] = '\0';
	return buf;
}

void format_ago(int64_t ns, int64_t now, char *buf, size_t len)
{
	int64_t s = (now - ns) / NS_PER_SEC;

	if (s < 120)
		snprintf(buf, len, "%" PRId64 " s ago", s);
	else if (s < 7200)
		snprintf(buf, len, "%" PRId64 " min ago", s / 60);
	else
		snprintf(buf, len, "%" PRId64 " h ago", s / 3600);
}
