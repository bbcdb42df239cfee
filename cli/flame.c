// SPDX-License-Identifier: MIT
/*
 * emberctl flamegraph and diff: a window of the history drawn as a flame graph
 * (SVG or HTML, lib/profile/flamegraph.c), and what changed between two windows: the
 * functions whose share moved most, and a differential flame graph.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "cli.h"
#include "flamegraph.h"

#define DEFAULT_MOVERS 20
#define NEW_SLOT 0
#define BASE_SLOT 1

static const char flamegraph_help[] =
	"Usage: emberctl flamegraph [-o FILE.svg|FILE.html] [--since T] [--until T]\n"
	"                           [--type cpu] [--app NAME] [--label K=V] [--pid N]\n"
	"                           [--title TEXT]\n"
	"\n"
	"Merges every stored profile that overlaps the window and draws it as a flame\n"
	"graph: a box per function on each call path, callees stacked on their callers\n"
	"(the root, \"all\", at the bottom), each box as wide as the samples that went\n"
	"through it. Siblings are in alphabetical order: the x axis is not time. The\n"
	"file is self-contained and works offline in any browser:\n"
	"  hover   shows the function, its samples, its share of all and, when zoomed,\n"
	"          of the zoomed frame\n"
	"  click   zooms on a frame (its callers stay, faded); click it again, the\n"
	"          bottom frame or \"Reset Zoom\" to go back; Esc resets everything\n"
	"  search  the HTML page's box, or \"Search\" (Ctrl-F) in the SVG: a regular\n"
	"          expression (or plain text); matches turn magenta and the share of\n"
	"          samples they account for shows bottom right\n"
	"Frames narrower than 0.1 pixel are left out, with their callees; the subtitle\n"
	"counts them.\n"
	"\n"
	"  -o, --output FILE  FILE.svg (an SVG image carrying its script) or FILE.html\n"
	"                     (a web page holding it, with a search box): the extension\n"
	"                     chooses. Written to FILE.tmp then renamed. Default \"-\":\n"
	"                     SVG on stdout (not to a terminal)\n"
	"  -t, --type TYPE    which kind of profile: cpu (default), or another type the\n"
	"                     history holds (\"emberctl list\" shows each row's type)\n"
	"      --sample NAME  which value of each sample sets the widths: samples\n"
	"                     (default), cpu (nanoseconds), ... as the profiles record\n"
	"  -s, --since T      first time of the window (default: the oldest profile)\n"
	"  -u, --until T      end of the window, excluded (default: open)\n"
	"  -a, --app NAME     only this application's profiles (default: all)\n"
	"  -l, --label K=V    only profiles carrying this label (repeatable)\n"
	"  -p, --pid N        only the samples of process N\n" NO_ROLLUPS_HELP
	"      --title TEXT   the title (default: \"TYPE flame graph[: APP]\")\n"
	"  -h, --help         show this help\n"
	"Times: see \"emberctl --help\". Example:\n"
	"  emberctl flamegraph --since -1h --app checkout -o checkout.html\n";

static const char diff_help[] =
	"Usage: emberctl diff --base-since T --base-until T [--since T] [--until T]\n"
	"                     [--type cpu] [--app NAME] [--label K=V] [--pid N]\n"
	"                     [-n N] [-o FILE.svg|FILE.html] [--title TEXT]\n"
	"\n"
	"What changed between two windows of the history: a base window and a new one\n"
	"(by default everything after the base window). Prints the functions whose\n"
	"share moved most: self samples (time in the function itself, not its callees)\n"
	"as a percentage of each window's own total, so that windows of different\n"
	"lengths or loads compare fairly. Sorted by the size of the change, growers\n"
	"first on ties. Columns: base %, new %, delta in percentage points, function.\n"
	"\n"
	"With -o it also writes a differential flame graph (see \"emberctl flamegraph\n"
	"--help\" for how to use it): each box coloured by how its share of the window\n"
	"changed, red grew and blue shrank (full colour for the biggest change, or for\n"
	"1 percentage point when none is bigger, so noise stays pale), grey\n"
	"unchanged; each box as wide as the mean of its two shares, so that code that\n"
	"vanished still shows. Hover shows both windows' samples and the change.\n"
	"\n"
	"      --base-since T  first time of the base window (required)\n"
	"      --base-until T  end of the base window, excluded (required)\n"
	"  -s, --since T       first time of the new window (default: --base-until)\n"
	"  -u, --until T       end of the new window, excluded (default: open)\n"
	"  -t, --type TYPE     profile type (default: cpu)   these four apply to\n"
	"  -a, --app NAME      only this application         both windows\n"
	"  -l, --label K=V     only profiles with this label (repeatable)\n"
	"  -p, --pid N         only the samples of process N\n"
	"      --sample NAME   which value of each sample to compare: samples\n"
	"                      (default), cpu (nanoseconds), ... as the profiles record\n" NO_ROLLUPS_HELP
	"  -n, --top N         how many functions to print (default 20; 0: all)\n"
	"  -o, --output FILE   also write the differential flame graph, FILE.svg or\n"
	"                      FILE.html\n"
	"      --title TEXT    the flame graph's title\n"
	"  -h, --help          show this help\n"
	"Times: see \"emberctl --help\". Example, this hour against the same hour\n"
	"yesterday:\n"
	"  emberctl diff --base-since -25h --base-until -24h --since -1h -o diff.html\n";

enum { OPT_TITLE = 256, OPT_BASE_SINCE, OPT_BASE_UNTIL, OPT_SAMPLE };

/* The options of both commands. */
struct flame_opts {
	struct selection sel;  /* the window drawn; a diff's new window */
	struct selection base; /* a diff's base window */
	const char *output, *title;
	const char *sample; /* --sample: the value counted; NULL: each profile's default */
	enum flame_format fmt;
	long top; /* movers printed; 0: all */
};

static const struct option flame_options[] = {
	{"since", required_argument, NULL, 's'},
	{"until", required_argument, NULL, 'u'},
	{"type", required_argument, NULL, 't'},
	{"app", required_argument, NULL, 'a'},
	{"pid", required_argument, NULL, 'p'},
	{"label", required_argument, NULL, 'l'},
	{"output", required_argument, NULL, 'o'},
	{"title", required_argument, NULL, OPT_TITLE},
	{"help", no_argument, NULL, 'h'},
	{"sample", required_argument, NULL, OPT_SAMPLE},
	NO_ROLLUPS_OPTION,
	{0},
};

static const struct option diff_options[] = {
	{"since", required_argument, NULL, 's'},
	{"until", required_argument, NULL, 'u'},
	{"type", required_argument, NULL, 't'},
	{"app", required_argument, NULL, 'a'},
	{"pid", required_argument, NULL, 'p'},
	{"label", required_argument, NULL, 'l'},
	{"output", required_argument, NULL, 'o'},
	{"title", required_argument, NULL, OPT_TITLE},
	{"top", required_argument, NULL, 'n'},
	{"help", no_argument, NULL, 'h'},
	{"base-since", required_argument, NULL, OPT_BASE_SINCE},
	{"base-until", required_argument, NULL, OPT_BASE_UNTIL},
	{"sample", required_argument, NULL, OPT_SAMPLE},
	NO_ROLLUPS_OPTION,
	{0},
};

/* The format -o names; "-" is SVG. */
static void output_format(struct flame_opts *o)
{
	int fmt = strcmp(o->output, "-") ? flame_format_of(o->output) : FLAME_SVG;

	if (fmt < 0)
		usage_error("-o %s: the extension chooses the format: FILE.svg or FILE.html",
			    o->output);
	o->fmt = (enum flame_format)fmt;
}

static void parse_flamegraph(int argc, char **argv, struct flame_opts *o)
{
	int64_t now = real_ns();
	int c;

	*o = (struct flame_opts){.output = "-"};
	selection_init(&o->sel, "cpu");
	optind = 0;
	while ((c = getopt_long(argc, argv, "+:s:u:t:a:l:p:o:h", flame_options, NULL)) != -1) {
		if (c == 'h')
			show(flamegraph_help);
		else if (c == 'o')
			o->output = optarg;
		else if (c == OPT_TITLE)
			o->title = optarg;
		else if (c == OPT_SAMPLE)
			o->sample = optarg;
		else if (!selection_option(&o->sel, c, optarg, now))
			bad_option(c, argv);
	}
	no_operands(argc, argv);
	output_format(o);
	check_window(&o->sel);
}

static long parse_top(const char *arg)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < 0)
		usage_error("--top: \"%s\" is not a count (0 prints all)", arg);
	return v;
}

static void parse_diff(int argc, char **argv, struct flame_opts *o)
{
	int64_t now = real_ns(), base_since = INT64_MIN, base_until = INT64_MAX;
	bool since_given = false;
	int c;

	*o = (struct flame_opts){.top = DEFAULT_MOVERS};
	selection_init(&o->sel, "cpu");
	optind = 0;
	while ((c = getopt_long(argc, argv, "+:s:u:t:a:l:p:o:n:h", diff_options, NULL)) != -1) {
		if (c == 'h')
			show(diff_help);
		else if (c == 'o')
			o->output = optarg;
		else if (c == OPT_TITLE)
			o->title = optarg;
		else if (c == OPT_SAMPLE)
			o->sample = optarg;
		else if (c == 'n')
			o->top = parse_top(optarg);
		else if (c == OPT_BASE_SINCE)
			base_since = parse_time_arg("--base-since", optarg, now);
		else if (c == OPT_BASE_UNTIL)
			base_until = parse_time_arg("--base-until", optarg, now);
		else if (selection_option(&o->sel, c, optarg, now))
			since_given |= c == 's';
		else
			bad_option(c, argv);
	}
	no_operands(argc, argv);
	if (base_since == INT64_MIN || base_until == INT64_MAX)
		usage_error(
			"--base-since and --base-until are required: the window to compare with");
	if (!since_given)
		o->sel.since = base_until;
	o->base = o->sel;
	o->base.since = base_since;
	o->base.until = base_until;
	if (o->output && !strcmp(o->output, "-"))
		usage_error("-o -: stdout carries the table; write the flame graph to a file");
	if (o->output)
		output_format(o);
	if (base_since >= base_until)
		usage_error("the base window is empty: --base-since is not before --base-until");
	check_window(&o->sel);
}

/* "app checkout, cpu, env=prod, pid 42": what was selected, besides the window. */
static void describe(const struct selection *sel, char *buf, size_t len)
{
	size_t n;

	if (sel->app)
		snprintf(buf, len, "app %s, %s", sel->app, sel->type);
	else
		snprintf(buf, len, "all apps, %s", sel->type);
	for (size_t i = 0; i < sel->n_labels; i++) {
		n = strlen(buf);
		snprintf(buf + n, len - n, ", %s", sel->labels[i]);
	}
	n = strlen(buf);
	if (sel->filter.by_pid)
		snprintf(buf + n, len - n, ", pid %" PRId64, sel->filter.pid);
}

/* The call tree in pre-order as the writer takes it: slot 0 the window, slot 1 the base. */
static struct flame_frame *tree_frames(const struct calltree *t, size_t *n)
{
	uint32_t *order = calltree_preorder(t);
	struct flame_frame *fr = NULL;

	if (order)
		fr = malloc(t->n * sizeof(*fr));
	for (size_t i = 0; fr && i < t->n; i++) {
		const struct calltree_node *node = &t->v[order[i]];

		fr[i] = (struct flame_frame){
			.name = calltree_name(t, order[i]),
			.depth = node->depth,
			.value = node->total[NEW_SLOT],
			.base = node->total[BASE_SLOT],
		};
	}
	free(order);
	*n = t->n;
	return fr;
}

/* Draws the stacks of s->set to path; 0, or EXIT_RUNTIME after a note. */
static int write_graph(const struct flame_opts *o, const struct stackset *set, bool diff,
		       const char *title, const char *subtitle, const char *unit)
{
	struct calltree t = {0};
	struct flame_doc doc = {.title = title,
				.subtitle = subtitle,
				.unit = o->sample ? o->sample :
					unit[0]	  ? unit :
						    "samples",
				.diff = diff};
	struct flame_frame *fr = NULL;
	char *buf = NULL;
	size_t len;
	int ret;

	ret = calltree_build(&t, set, CALLTREE_TOP_DOWN, 0);
	if (!ret) {
		fr = tree_frames(&t, &doc.n_frames);
		ret = fr ? 0 : -ENOMEM;
	}
	doc.frames = fr;
	if (!ret)
		ret = flame_render(&doc, o->fmt, &buf, &len);
	if (!ret)
		ret = write_file_atomic(o->output, (const uint8_t *)buf, len);
	if (ret)
		note("cannot write %s: %s", o->output,
		     ret == -ENOTTY ?
			     "refusing to write a flame graph to a terminal (-o FILE.svg)" :
			     strerror(-ret));
	free(buf);
	free(fr);
	calltree_free(&t);
	return ret ? EXIT_RUNTIME : 0;
}

/* " (12 samples cut at 1024 frames)" when stacks were too deep, else "". */
static void truncation(const struct stackset *set, char *buf, size_t len)
{
	uint64_t cut = stackset_truncated(set);

	buf[0] = '\0';
	if (cut)
		snprintf(buf, len, " (%" PRIu64 " sample%s cut at %d frames)", cut,
			 cut == 1 ? "" : "s", STACKSET_MAX_DEPTH);
}

int cmd_flamegraph(const char *data_dir, int argc, char **argv)
{
	struct merge_state s = {0};
	struct flame_opts o;
	struct history *h;
	char what[512], window[128], cut[64], subtitle[1024], title[256];
	int64_t samples;
	int status = EXIT_RUNTIME;

	parse_flamegraph(argc, argv, &o);
	s.value_type = o.sample;
	h = open_history(data_dir);
	if (!h)
		return EXIT_RUNTIME;
	if (merge_stacks(h, &o.sel, &s))
		goto out;
	report_skipped(&s);
	samples = stackset_total(s.set, NEW_SLOT);
	describe(&o.sel, what, sizeof(what));
	format_window(&o.sel, window, sizeof(window));
	truncation(s.set, cut, sizeof(cut));
	snprintf(subtitle, sizeof(subtitle),
		 "%s, %s: %" PRId64 " samples from %" PRIu64 " profile%s%s", what, window, samples,
		 s.merged, s.merged == 1 ? "" : "s", cut);
	snprintf(title, sizeof(title), "%s flame graph%s%s", o.sel.type, o.sel.app ? ": " : "",
		 o.sel.app ? o.sel.app : "");
	status = write_graph(&o, s.set, false, o.title ? o.title : title, subtitle, s.value_name);
	if (!status)
		note("%s, %s: %" PRId64 " samples from %" PRIu64 " profile%s, drawn to %s", what,
		     window, samples, s.merged, s.merged == 1 ? "" : "s",
		     strcmp(o.output, "-") ? o.output : "stdout");
out:
	merge_state_free(&s);
	close_history(h);
	return status;
}

/* One function's self samples in both windows, and the change of its share. */
struct mover {
	uint32_t name;
	int64_t self[STACKSET_SLOTS];
	double pct[STACKSET_SLOTS]; /* of each window's total */
	double delta;		    /* new - base, in percentage points */
};

static const struct stackset *sort_set; /* qsort has no context argument */

/* Biggest change first; on a tie a grower first, then by name. */
static int cmp_movers(const void *pa, const void *pb)
{
	const struct mover *a = pa, *b = pb;
	double da = fabs(a->delta), db = fabs(b->delta);

	if (da != db)
		return da < db ? 1 : -1;
	if ((a->delta > 0) != (b->delta > 0))
		return a->delta > 0 ? -1 : 1;
	return strcmp(stackset_name(sort_set, a->name), stackset_name(sort_set, b->name));
}

/* Every function with self samples in either window, sorted; NULL on no memory. */
static struct mover *movers(const struct stackset *set, size_t *n)
{
	size_t names = stackset_names(set), k = 0;
	struct mover *m = calloc(names ? names : 1, sizeof(*m));
	int64_t total[STACKSET_SLOTS];

	if (!m)
		return NULL;
	for (int slot = 0; slot < STACKSET_SLOTS; slot++)
		total[slot] = stackset_total(set, slot);
	for (size_t i = 0; i < stackset_len(set); i++) {
		struct stackset_stack st;

		stackset_get(set, i, &st);
		if (!st.n)
			continue;
		for (int slot = 0; slot < STACKSET_SLOTS; slot++)
			m[st.frames[st.n - 1]].self[slot] += st.value[slot];
	}
	for (size_t i = 0; i < names; i++) {
		if (!m[i].self[NEW_SLOT] && !m[i].self[BASE_SLOT])
			continue;
		m[k] = m[i];
		m[k].name = (uint32_t)i;
		for (int slot = 0; slot < STACKSET_SLOTS; slot++)
			m[k].pct[slot] = total[slot] > 0 ? 100.0 * (double)m[k].self[slot] /
								   (double)total[slot] :
							   0;
		m[k].delta = m[k].pct[NEW_SLOT] - m[k].pct[BASE_SLOT];
		k++;
	}
	sort_set = set;
	qsort(m, k, sizeof(*m), cmp_movers);
	*n = k;
	return m;
}

/* The table on stdout; names made printable (no control bytes, valid UTF-8). */
static int print_movers(const struct stackset *set, long top)
{
	char name[FLAME_MAX_NAME];
	struct mover *m;
	size_t n;

	m = movers(set, &n);
	if (!m) {
		note("out of memory");
		return EXIT_RUNTIME;
	}
	if (top > 0 && (size_t)top < n)
		n = (size_t)top;
	printf("%8s %8s %10s  %s\n", "base", "new", "delta", "function (self)");
	for (size_t i = 0; i < n; i++) {
		flame_sanitize(stackset_name(set, m[i].name), name, sizeof(name));
		printf("%7.2f%% %7.2f%% %+8.2fpp  %s\n", m[i].pct[BASE_SLOT], m[i].pct[NEW_SLOT],
		       m[i].delta, name);
	}
	free(m);
	return fflush(stdout) ? EXIT_RUNTIME : 0;
}

/* Merges one window into its slot; *merged gets its profile count. */
static int merge_window(struct history *h, const struct selection *sel, struct merge_state *s,
			int slot, uint64_t *merged)
{
	s->slot = slot;
	if (merge_stacks(h, sel, s))
		return EXIT_RUNTIME;
	*merged = s->merged;
	return 0;
}

int cmd_diff(const char *data_dir, int argc, char **argv)
{
	struct merge_state s = {0};
	struct flame_opts o;
	struct history *h;
	char what[512], base_win[128], new_win[128], summary[1024], title[256];
	uint64_t merged[STACKSET_SLOTS];
	int status = EXIT_RUNTIME;

	parse_diff(argc, argv, &o);
	s.value_type = o.sample;
	h = open_history(data_dir);
	if (!h)
		return EXIT_RUNTIME;
	if (merge_window(h, &o.base, &s, BASE_SLOT, &merged[BASE_SLOT]) ||
	    merge_window(h, &o.sel, &s, NEW_SLOT, &merged[NEW_SLOT]))
		goto out;
	report_skipped(&s);
	describe(&o.sel, what, sizeof(what));
	format_window(&o.base, base_win, sizeof(base_win));
	format_window(&o.sel, new_win, sizeof(new_win));
	snprintf(summary, sizeof(summary),
		 "%s; base %s: %" PRId64 " samples from %" PRIu64 " profiles; new %s: %" PRId64
		 " samples from %" PRIu64 " profiles",
		 what, base_win, stackset_total(s.set, BASE_SLOT), merged[BASE_SLOT], new_win,
		 stackset_total(s.set, NEW_SLOT), merged[NEW_SLOT]);
	note("%s", summary);
	status = print_movers(s.set, o.top);
	if (status || !o.output)
		goto out;
	snprintf(title, sizeof(title), "%s differential flame graph%s%s: red grew, blue shrank",
		 o.sel.type, o.sel.app ? ": " : "", o.sel.app ? o.sel.app : "");
	status = write_graph(&o, s.set, true, o.title ? o.title : title, summary, s.value_name);
	if (!status)
		note("differential flame graph written to %s",
		     strcmp(o.output, "-") ? o.output : "stdout");
out:
	merge_state_free(&s);
	close_history(h);
	return status;
}
