// SPDX-License-Identifier: MIT
/*
 * emberctl: reads the local history that emberd writes (list, export).
 * Errors are one line on stderr; exit 0 ok, 1 runtime error, 2 usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "compress.h"
#include "history.h"
#include "pprof.h"
#include "timeparse.h"

#ifndef EMBER_VERSION
#define EMBER_VERSION "0.1.0"
#endif

#define DEFAULT_DATA_DIR "/var/lib/ember"
#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define NS_PER_SEC 1000000000LL
/* Skipped profiles named by id on stderr; the count covers any beyond. */
#define MAX_LISTED_IDS 20

static const char main_help[] =
	"Usage: emberctl [--data-dir DIR] COMMAND [OPTIONS]\n"
	"\n"
	"Reads the CPU profiles that emberd keeps in its local history.\n"
	"\n"
	"Commands:\n"
	"  list     one line per stored profile: start, duration, type, app, samples,\n"
	"           processes; then a summary\n"
	"  export   merge the stored profiles of a window into one gzipped pprof file\n"
	"           that go tool pprof, Pyroscope or speedscope can open\n"
	"  status   the history and the collector: push queue depth, last success and\n"
	"           error, sent / rejected / expired counts (works while emberd is down)\n"
	"Run \"emberctl COMMAND --help\" for a command's options.\n"
	"\n"
	"Options:\n"
	"  -d, --data-dir DIR  where emberd keeps history.db; default $EMBER_DATA_DIR,\n"
	"                      else " DEFAULT_DATA_DIR "\n"
	"  -h, --help          show this help\n"
	"  -V, --version       show the version\n"
	"\n"
	"Times (--since, --until):\n"
	"  2026-11-22T03:10:00Z       RFC 3339 in UTC (fractions such as :00.250Z too)\n"
	"  2026-11-22T04:10:00+01:00  RFC 3339 with an offset from UTC\n"
	"  2026-11-22                 midnight UTC of that day\n"
	"  1795317000                 unix seconds\n"
	"  -15m, -2h, -1d, -30s, now  relative to now (units: ms, s, m, h, d)\n"
	"A window [since, until) takes every profile that overlaps it; an omitted\n"
	"bound leaves that side open.\n"
	"\n"
	"Examples:\n"
	"  emberctl list --since -1h\n"
	"  emberctl export --since 2026-11-22T03:10:00Z --until 2026-11-22T03:20:00Z -o cpu.pb.gz\n"
	"  go tool pprof -top cpu.pb.gz\n"
	"\n"
	"The history is DIR/history.db, an SQLite database with one zstd-compressed\n"
	"pprof profile per row and interval. emberctl only reads it, and can do so\n"
	"while emberd writes; reading " DEFAULT_DATA_DIR " needs root.\n";

static const char list_help[] =
	"Usage: emberctl list [--since T] [--until T] [--type TYPE] [--app NAME] [--label K=V]\n"
	"\n"
	"Prints one line per stored profile, oldest first: start time (UTC), the\n"
	"interval it covers, its type, its application (\"-\" for host-wide), its\n"
	"samples and distinct processes; then the totals and the history's size.\n"
	"\n"
	"  -s, --since T    first time of the window (default: the oldest profile)\n"
	"  -u, --until T    end of the window, excluded (default: open)\n"
	"  -t, --type TYPE  only profiles of this type, e.g. cpu (default: all)\n"
	"  -a, --app NAME   only this application's profiles (default: all)\n"
	"  -l, --label K=V  only profiles carrying this label (repeatable: all must hold)\n"
	"  -h, --help       show this help\n"
	"Times: see \"emberctl --help\". Example: emberctl list --since -30m --type cpu\n";

static const char export_help[] =
	"Usage: emberctl export [--type cpu] [--since T] [--until T] [--pid N] -o FILE\n"
	"\n"
	"Merges every stored profile that overlaps the window into one profile (same\n"
	"stacks summed) and writes it gzipped in pprof format. Reports on stderr how\n"
	"many profiles and samples were merged, and which stored profiles were skipped\n"
	"because they are corrupt.\n"
	"\n"
	"  -t, --type TYPE    profile type to export (default: cpu)\n"
	"  -s, --since T      first time of the window (default: the oldest profile)\n"
	"  -u, --until T      end of the window, excluded (default: open)\n"
	"  -p, --pid N        keep only the samples of process N\n"
	"  -a, --app NAME     only this application's profiles (default: all)\n"
	"  -l, --label K=V    only profiles carrying this label (repeatable)\n"
	"  -o, --output FILE  where to write; written to FILE.tmp then renamed, so a\n"
	"                     reader never sees half a file; \"-\" writes to stdout\n"
	"  -h, --help         show this help\n"
	"Times: see \"emberctl --help\". Example:\n"
	"  emberctl export --since -10m --pid 4242 -o cpu.pb.gz && go tool pprof -top cpu.pb.gz\n";

#define MAX_LABEL_FILTERS 32

/* What list and export select: a window, a type, an application and labels. */
struct selection {
	int64_t since, until; /* INT64_MIN / INT64_MAX when not given */
	const char *type; /* NULL: every type */
	const char *app; /* NULL: every application */
	const char *labels[MAX_LABEL_FILTERS]; /* "k=v", all must hold */
	size_t n_labels;
};

struct export_opts {
	struct selection sel;
	struct pprof_filter filter;
	const char *output;
};

struct command {
	const char *name;
	int (*run)(const char *data_dir, int argc, char **argv);
};

/* The command whose help a usage error points to; NULL before one is known. */
static const char *usage_cmd;

/* One line on stderr, for errors and reports alike. */
static void __attribute__((format(printf, 1, 2))) note(const char *fmt, ...)
{
	va_list ap;

	fputs("emberctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void __attribute__((noreturn, format(printf, 1, 2))) usage_error(const char *fmt, ...)
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

static void __attribute__((noreturn)) show(const char *text)
{
	fputs(text, stdout);
	exit(ferror(stdout) || fflush(stdout) ? EXIT_RUNTIME : EXIT_SUCCESS);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

/* RFC 3339 in UTC; milliseconds only when the time has some. */
static void format_time(int64_t ns, char *buf, size_t len)
{
	int64_t secs = ns / NS_PER_SEC, frac = ns % NS_PER_SEC;
	struct tm tm;
	time_t t;

	if (frac < 0) {
		secs--;
		frac += NS_PER_SEC;
	}
	t = (time_t)secs;
	if (!gmtime_r(&t, &tm)) {
		snprintf(buf, len, "@%" PRId64, ns);
		return;
	}
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	if (frac / 1000000)
		snprintf(buf + strlen(buf), len - strlen(buf), ".%03" PRId64, frac / 1000000);
	snprintf(buf + strlen(buf), len - strlen(buf), "Z");
}

/* In the units parse_duration reads: "10s", "5m", "1h", else "9.998s". */
static void format_duration(int64_t ns, char *buf, size_t len)
{
	int64_t secs = ns / NS_PER_SEC;

	if (ns < 0)
		snprintf(buf, len, "?");
	else if (ns % NS_PER_SEC)
		snprintf(buf, len, "%.3fs", (double)ns / NS_PER_SEC);
	else if (secs && secs % 3600 == 0)
		snprintf(buf, len, "%" PRId64 "h", secs / 3600);
	else if (secs && secs % 60 == 0)
		snprintf(buf, len, "%" PRId64 "m", secs / 60);
	else
		snprintf(buf, len, "%" PRId64 "s", secs);
}

static void format_bytes(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
	double v = (double)n;
	size_t i;

	if (n < 1024) {
		snprintf(buf, len, "%" PRIu64 " bytes", n);
		return;
	}
	for (i = 0, v /= 1024; v >= 1024 && i + 1 < sizeof(units) / sizeof(units[0]); i++)
		v /= 1024;
	snprintf(buf, len, "%.1f %s", v, units[i]);
}

/* "between A and B", "since A", "before B" or "in the history", for messages. */
static void format_window(const struct selection *sel, char *buf, size_t len)
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

static int64_t parse_time_arg(const char *opt, const char *arg, int64_t now)
{
	int64_t ns;

	if (parse_time(arg, now, &ns))
		usage_error("%s: cannot read \"%s\" as a time (e.g. 2026-11-22T03:10:00Z, "
			    "1795317000, -15m, now)",
			    opt, arg);
	return ns;
}

static int64_t parse_pid_arg(const char *arg)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno || end == arg || *end || v <= 0 || v > INT32_MAX)
		usage_error("--pid: \"%s\" is not a process id", arg);
	return v;
}

/* Parses the options list and export share; false for one it does not know. */
static bool selection_option(struct selection *sel, int c, const char *arg, int64_t now)
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

static void check_window(const struct selection *sel)
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
static void __attribute__((noreturn)) bad_option(int c, char **argv)
{
	const char *opt = argv[optind - 1];
	char short_opt[3] = {'-', (char)optopt, '\0'};

	if (optopt && strncmp(opt, "--", 2) != 0)
		opt = short_opt;
	if (c == ':')
		usage_error("option %s needs a value", opt);
	usage_error("unknown option %s", opt);
}

static void no_operands(int argc, char **argv)
{
	if (optind < argc)
		usage_error("unexpected argument \"%s\"", argv[optind]);
}

static const struct option list_options[] = {
	{"since", required_argument, NULL, 's'}, {"until", required_argument, NULL, 'u'},
	{"type", required_argument, NULL, 't'},	 {"app", required_argument, NULL, 'a'},
	{"label", required_argument, NULL, 'l'}, {"help", no_argument, NULL, 'h'},
	{0},
};

static void parse_list(int argc, char **argv, struct selection *sel)
{
	int64_t now = now_ns();
	int c;

	*sel = (struct selection){.since = INT64_MIN, .until = INT64_MAX};
	optind = 0;
	while ((c = getopt_long(argc, argv, "+:s:u:t:a:l:h", list_options, NULL)) != -1) {
		if (c == 'h')
			show(list_help);
		if (!selection_option(sel, c, optarg, now))
			bad_option(c, argv);
	}
	no_operands(argc, argv);
	check_window(sel);
}

static const struct option export_options[] = {
	{"since", required_argument, NULL, 's'}, {"until", required_argument, NULL, 'u'},
	{"type", required_argument, NULL, 't'},	 {"app", required_argument, NULL, 'a'},
	{"pid", required_argument, NULL, 'p'},	 {"output", required_argument, NULL, 'o'},
	{"label", required_argument, NULL, 'l'},
	{"help", no_argument, NULL, 'h'},	 {0},
};

static void parse_export(int argc, char **argv, struct export_opts *o)
{
	int64_t now = now_ns();
	int c;

	*o = (struct export_opts){.sel = {.since = INT64_MIN, .until = INT64_MAX, .type = "cpu"}};
	optind = 0;
	while ((c = getopt_long(argc, argv, "+:s:u:t:a:l:p:o:h", export_options, NULL)) != -1) {
		if (c == 'h')
			show(export_help);
		else if (c == 'p')
			o->filter =
				(struct pprof_filter){.by_pid = true, .pid = parse_pid_arg(optarg)};
		else if (c == 'o')
			o->output = optarg;
		else if (!selection_option(&o->sel, c, optarg, now))
			bad_option(c, argv);
	}
	no_operands(argc, argv);
	if (!o->output)
		usage_error("-o FILE is required (\"-o -\" writes to stdout)");
	check_window(&o->sel);
}

static struct history *open_history(const char *data_dir)
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

/* The database with its write-ahead log: what the history costs on disk. */
static uint64_t history_disk_bytes(const struct history *h)
{
	char wal[4096];
	struct stat st;
	uint64_t total = 0;

	if (stat(history_path(h), &st) == 0)
		total += (uint64_t)st.st_size;
	snprintf(wal, sizeof(wal), "%s-wal", history_path(h));
	if (stat(wal, &st) == 0)
		total += (uint64_t)st.st_size;
	return total;
}

struct list_totals {
	uint64_t profiles, samples;
};

static int print_row(const struct history_row *row, void *arg)
{
	struct list_totals *t = arg;
	char start[40], dur[32];

	if (t->profiles++ == 0)
		printf("%-24s %8s %-5s %-20s %10s %9s\n", "START", "DURATION", "TYPE", "APP",
		       "SAMPLES", "PROCESSES");
	format_time(row->meta.start_ns, start, sizeof(start));
	format_duration(row->meta.end_ns - row->meta.start_ns, dur, sizeof(dur));
	printf("%-24s %8s %-5s %-20s %10" PRIu64 " %9" PRIu32 "\n", start, dur, row->meta.type,
	       *row->meta.app ? row->meta.app : "-", row->meta.samples, row->meta.processes);
	t->samples += row->meta.samples;
	return 0;
}

static int cmd_list(const char *data_dir, int argc, char **argv)
{
	struct list_totals totals = {0};
	struct selection sel;
	struct history_query q;
	struct history *h;
	char window[128], size[32];
	int ret;

	parse_list(argc, argv, &sel);
	h = open_history(data_dir);
	if (!h)
		return EXIT_RUNTIME;
	q = (struct history_query){
		.since_ns = sel.since,
		.until_ns = sel.until,
		.type = sel.type,
		.app = sel.app,
		.labels = sel.labels,
		.n_labels = sel.n_labels,
	};
	ret = history_query(h, &q, false, print_row, &totals);
	if (ret) {
		note("cannot read %s: %s", history_path(h), strerror(-ret));
		history_close(h);
		return EXIT_RUNTIME;
	}
	format_window(&sel, window, sizeof(window));
	format_bytes(history_disk_bytes(h), size, sizeof(size));
	printf("%" PRIu64 " profile%s %s, %" PRIu64 " samples; history.db: %s on disk\n",
	       totals.profiles, totals.profiles == 1 ? "" : "s", window, totals.samples, size);
	history_close(h);
	return fflush(stdout) || ferror(stdout) ? EXIT_RUNTIME : EXIT_SUCCESS;
}

struct export_state {
	const struct pprof_filter *filter;
	struct pprof_builder *b; /* created from the first readable profile */
	uint64_t rows, merged;
	int64_t *skipped; /* ids of corrupt rows */
	size_t n_skipped, cap_skipped;
};

static int skip_row(struct export_state *s, int64_t id)
{
	int64_t *grown;

	if (s->n_skipped == s->cap_skipped) {
		s->cap_skipped = s->cap_skipped ? 2 * s->cap_skipped : 16;
		grown = reallocarray(s->skipped, s->cap_skipped, sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		s->skipped = grown;
	}
	s->skipped[s->n_skipped++] = id;
	return 0;
}

static struct pprof_builder *builder_like(const pprof_profile *p)
{
	struct pprof_meta meta = {.n_sample_types = p->n_sample_type, .period = p->period};

	if (p->n_sample_type > PPROF_MAX_SAMPLE_TYPES) {
		errno = E2BIG;
		return NULL;
	}
	for (size_t i = 0; i < p->n_sample_type; i++) {
		meta.sample_types[i].type = p->string_table[p->sample_type[i]->type];
		meta.sample_types[i].unit = p->string_table[p->sample_type[i]->unit];
	}
	if (p->period_type) {
		meta.period_type.type = p->string_table[p->period_type->type];
		meta.period_type.unit = p->string_table[p->period_type->unit];
	}
	return pprof_builder_new(&meta);
}

/* Merges one stored profile; one that does not decode or fit is skipped, not fatal. */
static int merge_row(const struct history_row *row, void *arg)
{
	struct export_state *s = arg;
	pprof_profile *p = NULL;
	char err[128];
	int ret;

	s->rows++;
	if (!row->pprof || pprof_decode(row->pprof, row->pprof_len, &p, err, sizeof(err)))
		return skip_row(s, row->id);
	if (!s->b) {
		s->b = builder_like(p);
		if (!s->b) {
			ret = errno == E2BIG ? skip_row(s, row->id) : -errno;
			goto out;
		}
	}
	ret = pprof_merge(s->b, p, s->filter);
	if (ret == -EINVAL) /* sample types unlike the first profile's */
		ret = skip_row(s, row->id);
	else if (!ret)
		s->merged++;
out:
	pprof_profile_free(p);
	return ret;
}

static void report_skipped(const struct export_state *s)
{
	char ids[MAX_LISTED_IDS * 22 + 8] = "";
	size_t n = s->n_skipped < MAX_LISTED_IDS ? s->n_skipped : MAX_LISTED_IDS;

	if (!s->n_skipped)
		return;
	for (size_t i = 0; i < n; i++)
		snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%s%" PRId64, i ? ", " : "",
			 s->skipped[i]);
	note("skipped %zu corrupt stored profile%s (id%s %s%s)", s->n_skipped,
	     s->n_skipped == 1 ? "" : "s", s->n_skipped == 1 ? "" : "s", ids,
	     s->n_skipped > n ? ", ..." : "");
}

/* Index of the "samples" value, which is what users count; else the first. */
static size_t samples_index(const struct pprof_builder *b)
{
	const struct pprof_meta *m = pprof_builder_meta(b);

	for (size_t i = 0; i < m->n_sample_types; i++) {
		if (!strcmp(m->sample_types[i].type, "samples"))
			return i;
	}
	return 0;
}

static int write_all(int fd, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Writes path.tmp, syncs it and renames it over path: never half a file. */
static int write_file_atomic(const char *path, const uint8_t *buf, size_t len)
{
	char *tmp;
	int fd, ret;

	if (!strcmp(path, "-"))
		return isatty(STDOUT_FILENO) ? -ENOTTY : write_all(STDOUT_FILENO, buf, len);
	if (asprintf(&tmp, "%s.tmp", path) < 0)
		return -ENOMEM;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		ret = -errno;
		goto out_free;
	}
	ret = write_all(fd, buf, len);
	if (!ret && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path) < 0)
		ret = -errno;
	if (ret)
		unlink(tmp);
out_free:
	free(tmp);
	return ret;
}

static int write_profile(const struct pprof_builder *b, const char *path)
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
static int explain_nothing(const struct export_opts *o, const struct export_state *s,
			   const char *window)
{
	const char *type = o->sel.type;

	if (!s->rows)
		note("no %s profiles%s%s %s", type, o->sel.app ? " of app " : "",
		     o->sel.app ? o->sel.app : "", window);
	else if (!s->merged)
		note("none of the %" PRIu64 " %s profiles %s could be read", s->rows, type, window);
	else if (o->filter.by_pid)
		note("no samples of pid %" PRId64 " in the %" PRIu64 " %s profiles %s",
		     o->filter.pid, s->merged, type, window);
	else
		note("the %" PRIu64 " %s profiles %s hold no samples", s->merged, type, window);
	return EXIT_RUNTIME;
}

static int cmd_export(const char *data_dir, int argc, char **argv)
{
	struct export_state s = {0};
	struct export_opts o;
	struct history_query q;
	struct history *h;
	char window[128], pid[32] = "";
	int64_t samples = 0;
	int ret, status = EXIT_RUNTIME;

	parse_export(argc, argv, &o);
	s.filter = &o.filter;
	h = open_history(data_dir);
	if (!h)
		return EXIT_RUNTIME;
	format_window(&o.sel, window, sizeof(window));
	q = (struct history_query){
		.since_ns = o.sel.since,
		.until_ns = o.sel.until,
		.type = o.sel.type,
		.app = o.sel.app,
		.labels = o.sel.labels,
		.n_labels = o.sel.n_labels,
	};
	ret = history_query(h, &q, true, merge_row, &s);
	if (ret) {
		note("cannot read %s: %s", history_path(h), strerror(-ret));
		goto out;
	}
	report_skipped(&s);
	if (s.b)
		samples = pprof_value_total(s.b, samples_index(s.b));
	if (!samples) {
		status = explain_nothing(&o, &s, window);
		goto out;
	}
	ret = write_profile(s.b, o.output);
	if (ret) {
		note("cannot write %s: %s", o.output,
		     ret == -ENOTTY ? "refusing to write a gzipped profile to a terminal" :
				      strerror(-ret));
		goto out;
	}
	if (o.filter.by_pid)
		snprintf(pid, sizeof(pid), " of pid %" PRId64, o.filter.pid);
	note("merged %" PRIu64 " %s profile%s %s: %" PRId64 " samples%s, written to %s", s.merged,
	     o.sel.type, s.merged == 1 ? "" : "s", window, samples, pid,
	     strcmp(o.output, "-") ? o.output : "stdout");
	status = EXIT_SUCCESS;
out:
	pprof_builder_free(s.b);
	free(s.skipped);
	history_close(h);
	return status;
}

static const char status_help[] =
	"Usage: emberctl status\n"
	"\n"
	"Shows the history (size, profiles, time span) and the collector as emberd\n"
	"last recorded it in the history: its URL (credentials removed), whether it\n"
	"is reachable, the last success, the last error with its HTTP status and\n"
	"message, the push queue (pending profiles and the age of the oldest), and\n"
	"how many profiles were sent, rejected (the collector refused them) or\n"
	"expired (older than max_age, kept locally). Secrets are never shown.\n";

/* "12 s ago", "3 min ago", "2 h ago": how long since ns. */
static void format_ago(int64_t ns, int64_t now, char *buf, size_t len)
{
	int64_t s = (now - ns) / NS_PER_SEC;

	if (s < 120)
		snprintf(buf, len, "%" PRId64 " s ago", s);
	else if (s < 7200)
		snprintf(buf, len, "%" PRId64 " min ago", s / 60);
	else
		snprintf(buf, len, "%" PRId64 " h ago", s / 3600);
}

static void print_when(const char *what, int64_t ns, int64_t now)
{
	char t[40], ago[32];

	if (!ns) {
		printf("  %-13s never\n", what);
		return;
	}
	format_time(ns, t, sizeof(t));
	format_ago(ns, now, ago, sizeof(ago));
	printf("  %-13s %s (%s)\n", what, t, ago);
}

struct span {
	uint64_t profiles;
	int64_t first, last;
};

static int note_span(const struct history_row *row, void *arg)
{
	struct span *s = arg;

	if (!s->profiles++ || row->meta.start_ns < s->first)
		s->first = row->meta.start_ns;
	if (row->meta.end_ns > s->last)
		s->last = row->meta.end_ns;
	return 0;
}

static void print_history(struct history *h, int64_t now)
{
	struct history_query q = { .since_ns = INT64_MIN, .until_ns = INT64_MAX };
	struct span sp = {0};
	char size[32];

	history_query(h, &q, false, note_span, &sp);
	format_bytes(history_disk_bytes(h), size, sizeof(size));
	printf("history:       %s, %s, %" PRIu64 " profiles\n", history_path(h), size,
	       sp.profiles);
	if (sp.profiles) {
		print_when("oldest", sp.first, now);
		print_when("newest", sp.last, now);
	}
}

static void print_collector(struct history *h, int64_t now)
{
	struct history_collector_state cs;
	struct history_push_counts pc;
	char t[40], ago[32];

	if (history_collector_load(h, &cs) || !cs.url[0]) {
		printf("collector:     none recorded (no [collector] url, or emberd has not "
		       "pushed yet)\n");
		return;
	}
	printf("collector:     %s\n", cs.url);
	if (cs.outage_since_ns) {
		format_time(cs.outage_since_ns, t, sizeof(t));
		format_ago(cs.outage_since_ns, now, ago, sizeof(ago));
		printf("  %-13s unreachable since %s (%s)\n", "state", t, ago);
	} else {
		printf("  %-13s reachable\n", "state");
	}
	print_when("last success", cs.last_success_ns, now);
	if (cs.last_error_ns) {
		format_time(cs.last_error_ns, t, sizeof(t));
		if (cs.last_status)
			printf("  %-13s %s: HTTP %ld: %s\n", "last error", t, cs.last_status,
			       cs.last_error);
		else
			printf("  %-13s %s: %s\n", "last error", t, cs.last_error);
	} else {
		printf("  %-13s none\n", "last error");
	}
	if (history_push_counts(h, &pc))
		return;
	printf("  %-13s %" PRIu64 " pending", "queue", pc.pending);
	if (pc.pending) {
		format_ago(pc.oldest_pending_ns, now, ago, sizeof(ago));
		printf(", oldest from %s", ago);
	}
	printf("\n  %-13s sent %" PRIu64 ", rejected %" PRIu64 ", expired %" PRIu64 "\n",
	       "profiles", pc.sent, pc.rejected, pc.expired);
}

static int cmd_status(const char *data_dir, int argc, char **argv)
{
	static const struct option opts[] = { {"help", no_argument, NULL, 'h'}, {0} };
	int64_t now = now_ns();
	struct history *h;
	int c;

	optind = 0;
	while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
		if (c == 'h')
			show(status_help);
		bad_option(c, argv);
	}
	no_operands(argc, argv);
	h = open_history(data_dir);
	if (!h)
		return EXIT_RUNTIME;
	print_history(h, now);
	print_collector(h, now);
	history_close(h);
	return fflush(stdout) || ferror(stdout) ? EXIT_RUNTIME : EXIT_SUCCESS;
}

static const struct command commands[] = {
	{"list", cmd_list},
	{"export", cmd_export},
	{"status", cmd_status},
};

static const struct option main_options[] = {
	{"data-dir", required_argument, NULL, 'd'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{0},
};

/* Global options stop at the command ("+"): its options are its own. */
static const char *parse_global(int argc, char **argv)
{
	const char *data_dir = getenv("EMBER_DATA_DIR");
	int c;

	if (!data_dir || !*data_dir)
		data_dir = DEFAULT_DATA_DIR;
	while ((c = getopt_long(argc, argv, "+:d:hV", main_options, NULL)) != -1) {
		if (c == 'd')
			data_dir = optarg;
		else if (c == 'h')
			show(main_help);
		else if (c == 'V')
			show("emberctl " EMBER_VERSION "\n");
		else
			bad_option(c, argv);
	}
	if (optind >= argc)
		usage_error("no command given: list or export");
	return data_dir;
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	}
	usage_error("unknown command \"%s\"; commands: list, export", name);
}

int main(int argc, char **argv)
{
	const struct command *cmd;
	const char *data_dir;

	opterr = 0;
	data_dir = parse_global(argc, argv);
	cmd = find_command(argv[optind]);
	usage_cmd = cmd->name;
	return cmd->run(data_dir, argc - optind, argv + optind);
}
