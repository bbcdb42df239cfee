// SPDX-License-Identifier: MIT
/*
 * What emberctl's views share: their options, the merge of a window's stacks
 * (lib/stackset) that every stored profile of the window streams into, one
 * decoded profile at a time, and the header line that says what was merged.
 * Each view is a file: views_top.c, views_tree.c (tree), views_callers.c
 * (callers, callees), views_folded.c.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "views.h"

static const struct option selection_long[] = {
	{"since", required_argument, NULL, 's'},	 {"until", required_argument, NULL, 'u'},
	{"type", required_argument, NULL, 't'},		 {"app", required_argument, NULL, 'a'},
	{"label", required_argument, NULL, 'l'},	 {"pid", required_argument, NULL, 'p'},
	{"data-dir", required_argument, NULL, 'd'},	 {"help", no_argument, NULL, 'h'},
	{"sample", required_argument, NULL, OPT_SAMPLE}, NO_ROLLUPS_OPTION,
};

/* The long options of a view with these flags, and its short option string. */
static void build_options(unsigned flags, struct option *opts, char *shorts)
{
	size_t n = sizeof(selection_long) / sizeof(selection_long[0]);

	memcpy(opts, selection_long, sizeof(selection_long));
	strcpy(shorts, ":s:u:t:a:l:p:d:h");
	if (flags & VO_LIMIT) {
		opts[n++] = (struct option){"limit", required_argument, NULL, 'n'};
		opts[n++] = (struct option){"sort", required_argument, NULL, OPT_SORT};
		strcat(shorts, "n:");
	}
	if (flags & VO_PRUNE) {
		opts[n++] = (struct option){"min-percent", required_argument, NULL, 'm'};
		opts[n++] = (struct option){"max-depth", required_argument, NULL, OPT_MAX_DEPTH};
		strcat(shorts, "m:");
	}
	if (flags & VO_OUTPUT) {
		opts[n++] = (struct option){"output", required_argument, NULL, 'o'};
		strcat(shorts, "o:");
	}
	opts[n] = (struct option){0};
}

/* A whole number in [min, max], else a usage error naming opt. */
static long parse_count(const char *opt, const char *arg, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max)
		usage_error("%s: \"%s\" is not a whole number from %ld to %ld", opt, arg, min, max);
	return v;
}

static double parse_percent(const char *arg)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !isfinite(v) || v < 0 || v > 100)
		usage_error("--min-percent: \"%s\" is not a percentage from 0 to 100", arg);
	return v;
}

/* Options only some views take; false for one this view does not. */
static bool view_option(struct view_opts *o, int c, const char *arg)
{
	if (c == 'n' && (o->flags & VO_LIMIT))
		o->limit = parse_count("-n", arg, 0, INT32_MAX);
	else if (c == OPT_SORT && (o->flags & VO_LIMIT) && !strcmp(arg, "self"))
		o->by_total = false;
	else if (c == OPT_SORT && (o->flags & VO_LIMIT) && !strcmp(arg, "total"))
		o->by_total = true;
	else if (c == OPT_SORT && (o->flags & VO_LIMIT))
		usage_error("--sort: \"%s\" is neither self nor total", arg);
	else if (c == 'm' && (o->flags & VO_PRUNE))
		o->min_percent = parse_percent(arg);
	else if (c == OPT_MAX_DEPTH && (o->flags & VO_PRUNE))
		o->max_depth = parse_count("--max-depth", arg, 1, STACKSET_MAX_DEPTH);
	else if (c == 'o' && (o->flags & VO_OUTPUT))
		o->output = arg;
	else if (c == OPT_SAMPLE)
		o->sample = arg;
	else if (c == 'd')
		o->data_dir = absolute_data_dir(arg);
	else
		return false;
	return true;
}

/* Options may follow FUNCTION ("callers malloc --since -1h"): getopt permutes. */
static void parse_view(int argc, char **argv, struct view_opts *o)
{
	struct option opts[20];
	char shorts[48];
	int64_t now = real_ns();
	int c;

	selection_init(&o->sel, "cpu");
	o->limit = 20;
	o->min_percent = 1;
	build_options(o->flags, opts, shorts);
	optind = 0;
	while ((c = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
		if (c == 'h')
			show(o->help);
		else if (!view_option(o, c, optarg) && !selection_option(&o->sel, c, optarg, now))
			bad_option(c, argv);
	}
	if ((o->flags & VO_FUNCTION) && optind < argc)
		o->function = argv[optind++];
	if ((o->flags & VO_FUNCTION) && !o->function)
		usage_error("which function? e.g. \"emberctl %s main\"", usage_cmd);
	no_operands(argc, argv);
	check_window(&o->sel);
}

/* Parses, opens the history and merges the window's stacks into s->set. */
int view_load(int argc, char **argv, struct view_opts *o, struct merge_state *s)
{
	struct history *h;
	int ret;

	parse_view(argc, argv, o);
	h = open_history(o->data_dir);
	if (!h)
		return EXIT_RUNTIME;
	s->data_dir = o->data_dir;
	s->value_type = o->sample;
	ret = view_is_wall(o) ? merge_wall(h, o, s) : merge_stacks(h, &o->sel, s);
	close_history(h);
	return ret;
}

double view_pct(int64_t v, int64_t of)
{
	return of ? 100.0 * (double)v / (double)of : 0;
}

/* Digits of the widest count, and at least those of a column title. */
int view_count_width(int64_t max, int min)
{
	int w = snprintf(NULL, 0, "%" PRId64, max);

	return w > min ? w : min;
}

/* "3 cpu profiles from A to B, 55 samples" and the filters, for a header. */
void view_describe(const struct view_opts *o, const struct merge_state *s, char *buf, size_t len)
{
	char a[40], b[40];

	format_time(s->first_ns, a, sizeof(a));
	format_time(s->last_ns, b, sizeof(b));
	snprintf(buf, len, "%" PRIu64 " %s profile%s from %s to %s, %" PRId64 " %s", s->merged,
		 o->sel.type ? o->sel.type : "", s->merged == 1 ? "" : "s", a, b,
		 stackset_total(s->set, 0),
		 o->sample	  ? o->sample :
		 s->value_name[0] ? s->value_name :
				    "samples");
	if (o->sel.app)
		snprintf(buf + strlen(buf), len - strlen(buf), ", app %s", o->sel.app);
	for (size_t i = 0; i < o->sel.n_labels; i++)
		snprintf(buf + strlen(buf), len - strlen(buf), ", label %s", o->sel.labels[i]);
	if (o->sel.filter.by_pid)
		snprintf(buf + strlen(buf), len - strlen(buf), ", pid %" PRId64, o->sel.filter.pid);
	if (stackset_truncated(s->set))
		snprintf(buf + strlen(buf), len - strlen(buf),
			 " (%" PRIu64 " stacks cut at %d frames)", stackset_truncated(s->set),
			 STACKSET_MAX_DEPTH);
}

void view_header(const struct view_opts *o, const struct merge_state *s)
{
	char line[1024];

	view_describe(o, s, line, sizeof(line));
	printf("%s\n", line);
}

/* A frame name and a newline; control characters (a newline, ESC) print as '?'. */
void view_put_name(const char *name)
{
	for (; *name; name++)
		putchar((unsigned char)*name < 0x20 || *name == 0x7f ? '?' : *name);
	putchar('\n');
}

/* stdout's fate: an error writing it (a full disk, a closed pipe) is a failure. */
int view_finish_stdout(void)
{
	if (fflush(stdout) || ferror(stdout)) {
		note("cannot write the output: %s", strerror(errno));
		return EXIT_RUNTIME;
	}
	return EXIT_SUCCESS;
}

int view_cmp_desc(int64_t a, int64_t b)
{
	return a > b ? -1 : a < b;
}
