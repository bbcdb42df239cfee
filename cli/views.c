// SPDX-License-Identifier: MIT
/*
 * emberctl's views of a window of the history, read from folded stacks
 * (lib/stackset) that every stored profile of the window streams into, one
 * decoded profile at a time: top (flat), tree (top-down), callers and callees
 * (bottom-up and top-down around one function) and folded (flame graph input).
 * Values are samples: the "samples" sample type of each profile.
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

/* The options every view shares, for the help texts. */
#define SELECTION_HELP                                                                   \
	"Which profiles (all that overlap the window are merged):\n"                     \
	"  -s, --since T      first time of the window (default: the oldest profile)\n"  \
	"  -u, --until T      end of the window, excluded (default: open)\n"             \
	"  -t, --type TYPE    profile type (default: cpu)\n"                             \
	"  -a, --app NAME     only this application's profiles (default: all)\n"         \
	"  -l, --label K=V    only profiles carrying this label (repeatable)\n"          \
	"  -p, --pid N        keep only the samples of process N\n"                      \
	NO_ROLLUPS_HELP                                                                  \
	"  -d, --data-dir DIR where emberd keeps history.db (as before the command)\n"   \
	"  -h, --help         show this help\n"                                          \
	"Times: RFC 3339, unix seconds, -15m, \"10 min ago\", today, yesterday (UTC);\n" \
	"see \"emberctl --help\".\n"

static const char top_help[] =
	"Usage: emberctl top [-n 20] [--sort self|total] [--since T] [--until T] ...\n"
	"\n"
	"The flat view: one line per function over every stored profile of the window,\n"
	"the hottest first. A header line names the span the merged profiles cover,\n"
	"how many were merged and their total samples (one sample is one tick of the\n"
	"sampling clock on a CPU: at 99 Hz, about 10 ms of CPU).\n"
	"\n"
	"Columns:\n"
	"  self     samples taken while the function itself was running (it was the\n"
	"           innermost frame): where the CPU time is spent\n"
	"  self%    self over all samples of the window; the self column sums to 100%\n"
	"  total    samples with the function anywhere on the stack: its own time and\n"
	"           that of everything it calls. A recursive function counts once per\n"
	"           sample, so total never exceeds 100%\n"
	"  total%   total over all samples of the window\n"
	"\n"
	"  -n, --limit N      show the first N functions (default 20; 0: all)\n"
	"      --sort KEY     self (default): by self, then total; total: by total,\n"
	"                     then self (callers such as main come first)\n"
	"\n" SELECTION_HELP "\n"
	"Examples:\n"
	"  emberctl top --since -15m\n"
	"  emberctl top --since \"2 hours ago\" --app checkout --sort total -n 40\n"
	"  emberctl top --since today --pid 4242\n";

static const char tree_help[] =
	"Usage: emberctl tree [--min-percent 1] [--max-depth N] [--since T] ...\n"
	"\n"
	"The top-down call tree: from the outermost frames (main, thread starts)\n"
	"inward, one line per call path, indented two spaces per level; children are\n"
	"sorted by total, largest first. A header line says what was merged: the span\n"
	"the profiles cover, how many, and their total samples.\n"
	"\n"
	"Columns:\n"
	"  total    samples in this function on this path, and in what it calls\n"
	"  total%   total over all samples of the window\n"
	"  self     samples in this function itself on this path (it was running)\n"
	"  self%    self over all samples of the window\n"
	"A node's total is its self plus its children's totals.\n"
	"\n"
	"  -m, --min-percent P  hide paths whose total is below P% of all samples\n"
	"                       (default 1; 0 shows everything); what is hidden under\n"
	"                       a node is summed on one \"... N more below P%\" line\n"
	"      --max-depth N    show N levels at most (default: all); a cut node says\n"
	"                       how many samples lie deeper\n"
	"\n" SELECTION_HELP "\n"
	"Examples:\n"
	"  emberctl tree --since -10m\n"
	"  emberctl tree --since -1h --min-percent 5 --max-depth 8\n";

static const char callers_help[] =
	"Usage: emberctl callers FUNCTION [--min-percent 1] [--max-depth N] [--since T] ...\n"
	"\n"
	"Bottom-up: who calls FUNCTION, then who calls those, out to main, with how\n"
	"many of FUNCTION's samples came through each path. FUNCTION is an exact name,\n"
	"else a part of exactly one function's name (a part that several names share\n"
	"is an error that lists them). A recursive FUNCTION is followed from its\n"
	"innermost call, so its recursion shows as FUNCTION calling itself.\n"
	"\n"
	"Columns:\n"
	"  total    samples with FUNCTION on the stack that came through this path\n"
	"  %all     total over all samples of the window\n"
	"  %fn      total over FUNCTION's total: the share of its cost this caller\n"
	"           accounts for\n"
	"\n"
	"  -m, --min-percent P  hide paths below P% of FUNCTION's total (default 1;\n"
	"                       0 shows everything)\n"
	"      --max-depth N    show N levels at most (default: all)\n"
	"\n" SELECTION_HELP "\n"
	"Examples:\n"
	"  emberctl callers malloc --since -1h\n"
	"  emberctl callers json_parse --app checkout --min-percent 5\n";

static const char callees_help[] =
	"Usage: emberctl callees FUNCTION [--min-percent 1] [--max-depth N] [--since T] ...\n"
	"\n"
	"Top-down from FUNCTION: what it calls and where its time goes, merged over\n"
	"every path that reaches it. FUNCTION is an exact name, else a part of exactly\n"
	"one function's name. A recursive FUNCTION is followed from its outermost\n"
	"call, so each sample counts once.\n"
	"\n"
	"Columns:\n"
	"  total    samples in this function on this path, and in what it calls\n"
	"  %all     total over all samples of the window\n"
	"  %fn      total over FUNCTION's total\n"
	"  self     samples in this function itself on this path\n"
	"\n"
	"  -m, --min-percent P  hide paths below P% of FUNCTION's total (default 1;\n"
	"                       0 shows everything)\n"
	"      --max-depth N    show N levels at most (default: all)\n"
	"\n" SELECTION_HELP "\n"
	"Examples:\n"
	"  emberctl callees handle_request --since -30m\n";

static const char folded_help[] =
	"Usage: emberctl folded [-o FILE] [--since T] [--until T] ...\n"
	"\n"
	"Every stack of the window as one \"frame;frame;frame count\" line, outermost\n"
	"frame first, count in samples: the format of flamegraph.pl (FlameGraph's\n"
	"stackcollapse output), inferno and speedscope. Lines are sorted, so two\n"
	"windows can be compared with diff. What was merged is said on stderr.\n"
	"\n"
	"Frame names are made safe for the format: ';' in a name becomes ',', and\n"
	"control characters (newline, tab, ...) become '?'. Spaces stay (a count is\n"
	"what follows the last space).\n"
	"\n"
	"  -o, --output FILE  write to FILE (through FILE.tmp, renamed when complete)\n"
	"                     instead of stdout\n"
	"\n" SELECTION_HELP "\n"
	"Examples:\n"
	"  emberctl folded --since -10m | flamegraph.pl > cpu.svg\n"
	"  emberctl folded --since today -o cpu.folded    # speedscope cpu.folded\n"
	"For pprof tools (go tool pprof, Pyroscope), see \"emberctl export\".\n";

/* The options a view takes beyond the selection. */
enum view_opt_flags {
	VO_LIMIT = 1 << 0, /* -n, --sort */
	VO_PRUNE = 1 << 1, /* --min-percent, --max-depth */
	VO_OUTPUT = 1 << 2, /* -o */
	VO_FUNCTION = 1 << 3, /* the FUNCTION operand */
};

#define OPT_SORT 1000
#define OPT_MAX_DEPTH 1001

/* A view: its help and options, and what the command line asked for. */
struct view_opts {
	const char *help;
	unsigned flags;
	const char *data_dir;
	struct selection sel;
	long limit; /* top: 0 shows all */
	bool by_total; /* top --sort total */
	double min_percent; /* tree, callers, callees */
	long max_depth; /* 0: no bound */
	const char *output; /* folded: NULL is stdout */
	const char *function; /* callers, callees */
};

static const struct option selection_long[] = {
	{"since", required_argument, NULL, 's'},    {"until", required_argument, NULL, 'u'},
	{"type", required_argument, NULL, 't'},	    {"app", required_argument, NULL, 'a'},
	{"label", required_argument, NULL, 'l'},    {"pid", required_argument, NULL, 'p'},
	{"data-dir", required_argument, NULL, 'd'}, {"help", no_argument, NULL, 'h'},
	NO_ROLLUPS_OPTION,
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
	else if (c == 'd')
		o->data_dir = arg;
	else
		return false;
	return true;
}

/* Options may follow FUNCTION ("callers malloc --since -1h"): getopt permutes. */
static void parse_view(int argc, char **argv, struct view_opts *o)
{
	struct option opts[16];
	char shorts[48];
	int64_t now = now_ns();
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
static int load_view(int argc, char **argv, struct view_opts *o, struct merge_state *s)
{
	struct history *h;
	int ret;

	parse_view(argc, argv, o);
	h = open_history(o->data_dir);
	if (!h)
		return EXIT_RUNTIME;
	s->data_dir = o->data_dir;
	ret = merge_stacks(h, &o->sel, s);
	history_close(h);
	return ret;
}

static double pct(int64_t v, int64_t of)
{
	return of ? 100.0 * (double)v / (double)of : 0;
}

/* Digits of the widest count, and at least those of a column title. */
static int count_width(int64_t max, int min)
{
	int w = snprintf(NULL, 0, "%" PRId64, max);

	return w > min ? w : min;
}

/* "3 cpu profiles from A to B, 55 samples" and the filters, for a header. */
static void describe(const struct view_opts *o, const struct merge_state *s, char *buf, size_t len)
{
	char a[40], b[40];

	format_time(s->first_ns, a, sizeof(a));
	format_time(s->last_ns, b, sizeof(b));
	snprintf(buf, len, "%" PRIu64 " %s profile%s from %s to %s, %" PRId64 " samples", s->merged,
		 o->sel.type ? o->sel.type : "", s->merged == 1 ? "" : "s", a, b,
		 stackset_total(s->set, 0));
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

static void header(const struct view_opts *o, const struct merge_state *s)
{
	char line[1024];

	describe(o, s, line, sizeof(line));
	printf("%s\n", line);
}

/* A frame name and a newline; control characters (a newline, ESC) print as '?'. */
static void put_name(const char *name)
{
	for (; *name; name++)
		putchar((unsigned char)*name < 0x20 || *name == 0x7f ? '?' : *name);
	putchar('\n');
}

/* stdout's fate: an error writing it (a full disk, a closed pipe) is a failure. */
static int finish_stdout(void)
{
	if (fflush(stdout) || ferror(stdout)) {
		note("cannot write the output: %s", strerror(errno));
		return EXIT_RUNTIME;
	}
	return EXIT_SUCCESS;
}

/* --- top --------------------------------------------------------------------- */

/* One function of the flat view. */
struct flat_row {
	uint32_t name;
	int64_t self, total;
};

/* Sorting context: the set for names and which value leads. */
struct flat_sort {
	const struct stackset *set;
	bool by_total;
};

static int cmp_i64_desc(int64_t a, int64_t b)
{
	return a > b ? -1 : a < b;
}

static int flat_cmp(const void *pa, const void *pb, void *arg)
{
	const struct flat_row *a = pa, *b = pb;
	const struct flat_sort *k = arg;
	int c;

	c = k->by_total ? cmp_i64_desc(a->total, b->total) : cmp_i64_desc(a->self, b->self);
	if (!c)
		c = k->by_total ? cmp_i64_desc(a->self, b->self) : cmp_i64_desc(a->total, b->total);
	return c ? c : strcmp(stackset_name(k->set, a->name), stackset_name(k->set, b->name));
}

/*
 * Self goes to each stack's innermost frame; total to every function on the
 * stack once (seen[] holds the last stack that counted it), recursion or not.
 */
static struct flat_row *flat_rows(const struct stackset *set, size_t *n_out)
{
	size_t n = stackset_names(set);
	struct flat_row *rows = calloc(n ? n : 1, sizeof(*rows));
	uint32_t *seen = calloc(n ? n : 1, sizeof(*seen));
	struct stackset_stack st;

	if (!rows || !seen) {
		free(rows);
		free(seen);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		rows[i].name = (uint32_t)i;
	for (size_t i = 0; i < stackset_len(set); i++) {
		stackset_get(set, i, &st);
		if (!st.value[0] || !st.n)
			continue;
		rows[st.frames[st.n - 1]].self += st.value[0];
		for (uint32_t j = 0; j < st.n; j++) {
			if (seen[st.frames[j]] == i + 1)
				continue;
			seen[st.frames[j]] = (uint32_t)(i + 1);
			rows[st.frames[j]].total += st.value[0];
		}
	}
	free(seen);
	*n_out = 0;
	for (size_t i = 0; i < n; i++) { /* only functions with samples */
		if (rows[i].total)
			rows[(*n_out)++] = rows[i];
	}
	return rows;
}

static void print_top(const struct view_opts *o, const struct stackset *set, struct flat_row *rows,
		      size_t n)
{
	struct flat_sort k = {.set = set, .by_total = o->by_total};
	int64_t all = stackset_total(set, 0);
	size_t shown = o->limit && (size_t)o->limit < n ? (size_t)o->limit : n;
	int w = count_width(all, 5);

	qsort_r(rows, n, sizeof(*rows), flat_cmp, &k);
	printf("%*s %7s %*s %7s  %s\n", w, "self", "self%", w, "total", "total%", "function");
	for (size_t i = 0; i < shown; i++) {
		printf("%*" PRId64 " %6.2f%% %*" PRId64 " %6.2f%%  ", w, rows[i].self,
		       pct(rows[i].self, all), w, rows[i].total, pct(rows[i].total, all));
		put_name(stackset_name(set, rows[i].name));
	}
	if (shown < n)
		printf("... %zu more function%s (-n 0 shows all)\n", n - shown,
		       n - shown == 1 ? "" : "s");
}

int cmd_top(const char *data_dir, int argc, char **argv)
{
	struct view_opts o = {.help = top_help, .flags = VO_LIMIT, .data_dir = data_dir};
	struct merge_state s = {0};
	struct flat_row *rows;
	size_t n;
	int ret;

	ret = load_view(argc, argv, &o, &s);
	if (ret)
		goto out;
	rows = flat_rows(s.set, &n);
	if (!rows) {
		note("out of memory");
		ret = EXIT_RUNTIME;
		goto out;
	}
	header(&o, &s);
	print_top(&o, s.set, rows, n);
	free(rows);
	ret = finish_stdout();
out:
	merge_state_free(&s);
	return ret;
}

/* --- tree, callers, callees ------------------------------------------------------ */

/* How a tree is printed: its columns, and what its percentages and pruning are of. */
struct tree_print {
	const struct calltree *t;
	int64_t all; /* every sample of the window */
	int64_t focus; /* the focus function's total; 0 for the top-down tree */
	int64_t prune_below; /* paths whose total is below this are summed, not shown */
	double min_percent;
	long max_depth; /* 0: no bound */
	bool self; /* a self column */
	int w; /* width of a count */
	uint32_t *kids; /* scratch: one array per depth, t->n long in all */
};

static int by_total(const void *pa, const void *pb, void *arg)
{
	const struct calltree *t = arg;
	const struct calltree_node *a = &t->v[*(const uint32_t *)pa],
				   *b = &t->v[*(const uint32_t *)pb];
	int c = cmp_i64_desc(a->total[0], b->total[0]);

	return c ? c :
		   strcmp(calltree_name(t, *(const uint32_t *)pa),
			  calltree_name(t, *(const uint32_t *)pb));
}

static void print_columns(const struct tree_print *tp, const char *fn)
{
	if (!tp->focus)
		printf("%*s %7s %*s %7s  %s\n", tp->w, "total", "total%", tp->w, "self", "self%",
		       "function");
	else if (tp->self)
		printf("%*s %7s %7s %*s  %s\n", tp->w, "total", "%all", "%fn", tp->w, "self", fn);
	else
		printf("%*s %7s %7s  %s\n", tp->w, "total", "%all", "%fn", fn);
}

static void print_node(const struct tree_print *tp, uint32_t node, long level)
{
	const struct calltree_node *v = &tp->t->v[node];
	const char *name = calltree_name(tp->t, node);
	int ind = (int)(2 * level);

	if (!tp->focus)
		printf("%*" PRId64 " %6.2f%% %*" PRId64 " %6.2f%%  %*s", tp->w, v->total[0],
		       pct(v->total[0], tp->all), tp->w, v->self[0], pct(v->self[0], tp->all), ind,
		       "");
	else if (tp->self)
		printf("%*" PRId64 " %6.2f%% %6.2f%% %*" PRId64 "  %*s", tp->w, v->total[0],
		       pct(v->total[0], tp->all), pct(v->total[0], tp->focus), tp->w, v->self[0],
		       ind, "");
	else
		printf("%*" PRId64 " %6.2f%% %6.2f%%  %*s", tp->w, v->total[0],
		       pct(v->total[0], tp->all), pct(v->total[0], tp->focus), ind, "");
	put_name(name);
}

/* Where the function column starts. */
static int fn_column(const struct tree_print *tp)
{
	return tp->self ? 2 * tp->w + 19 : tp->w + 18;
}

/* A line at the children's level, in the function column, for what is not shown. */
static void print_elided(const struct tree_print *tp, long level, const char *what)
{
	printf("%*s... %s\n", fn_column(tp) + (int)(2 * level), "", what);
}

/* Prints node's children (and theirs) at level, the largest first, pruned. */
static void print_children(const struct tree_print *tp, uint32_t node, long level, uint32_t *kids)
{
	const struct calltree *t = tp->t;
	int64_t hidden_total = 0;
	size_t k = 0, hidden = 0;
	char what[128];

	for (uint32_t c = t->v[node].first_child; c; c = t->v[c].next_sibling)
		kids[k++] = c;
	if (!k)
		return;
	if (tp->max_depth && level >= tp->max_depth) {
		snprintf(what, sizeof(what),
			 "%" PRId64 " samples in %zu callee%s deeper than "
			 "--max-depth %ld",
			 t->v[node].total[0] - t->v[node].self[0], k, k == 1 ? "" : "s",
			 tp->max_depth);
		print_elided(tp, level, what);
		return;
	}
	qsort_r(kids, k, sizeof(*kids), by_total, (void *)t);
	for (size_t i = 0; i < k; i++) {
		if (t->v[kids[i]].total[0] < tp->prune_below) {
			hidden++;
			hidden_total += t->v[kids[i]].total[0];
			continue;
		}
		print_node(tp, kids[i], level);
		print_children(tp, kids[i], level + 1, kids + k);
	}
	if (!hidden)
		return;
	snprintf(what, sizeof(what), "%zu more below %g%% (%" PRId64 " sample%s)", hidden,
		 tp->min_percent, hidden_total, hidden_total == 1 ? "" : "s");
	print_elided(tp, level, what);
}

/* The smallest total shown: P% of base, rounded up to a whole sample. */
static int64_t prune_threshold(double min_percent, int64_t base)
{
	double x = min_percent * (double)base / 100.0;
	int64_t t = (int64_t)x;

	return (double)t < x - 1e-9 ? t + 1 : t;
}

int cmd_tree(const char *data_dir, int argc, char **argv)
{
	struct view_opts o = {.help = tree_help, .flags = VO_PRUNE, .data_dir = data_dir};
	struct merge_state s = {0};
	struct tree_print tp = {0};
	struct calltree t;
	int ret;

	ret = load_view(argc, argv, &o, &s);
	if (ret)
		goto out;
	if (calltree_build(&t, s.set, CALLTREE_TOP_DOWN, 0)) {
		note("out of memory");
		ret = EXIT_RUNTIME;
		goto out;
	}
	tp = (struct tree_print){
		.t = &t,
		.all = stackset_total(s.set, 0),
		.min_percent = o.min_percent,
		.max_depth = o.max_depth,
		.self = true,
		.kids = malloc(t.n * sizeof(uint32_t)),
	};
	tp.prune_below = prune_threshold(o.min_percent, tp.all);
	tp.w = count_width(tp.all, 5);
	if (!tp.kids) {
		note("out of memory");
		ret = EXIT_RUNTIME;
	} else {
		header(&o, &s);
		print_columns(&tp, "function");
		print_children(&tp, 0, 0, tp.kids);
		ret = finish_stdout();
	}
	free(tp.kids);
	calltree_free(&t);
out:
	merge_state_free(&s);
	return ret;
}

/* Names that contain part, sorted; for resolving and for the error that lists them. */
static size_t matching_names(const struct stackset *set, const char *part, const char **found,
			     size_t max, size_t *n_found)
{
	size_t n = 0;

	*n_found = 0;
	for (size_t i = 0; i < stackset_names(set); i++) {
		const char *name = stackset_name(set, (uint32_t)i);

		if (!strstr(name, part))
			continue;
		if (n < max)
			found[n++] = name;
		(*n_found)++;
	}
	return n;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * FUNCTION by exact name, else by the one name that contains it. Else a note
 * (with up to 10 candidates) and -1.
 */
static int64_t resolve_function(const struct view_opts *o, const struct merge_state *s)
{
	const char *found[10];
	char list[1024] = "", what[1024];
	size_t n, total;
	int64_t id = stackset_find_name(s->set, o->function);

	if (id >= 0)
		return id;
	n = matching_names(s->set, o->function, found, 10, &total);
	if (total == 1)
		return stackset_find_name(s->set, found[0]);
	describe(o, s, what, sizeof(what));
	if (!total) {
		note("no function is named or contains \"%s\" in %s", o->function, what);
		return -1;
	}
	qsort(found, n, sizeof(*found), cmp_str);
	for (size_t i = 0; i < n; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
			 found[i]);
	note("\"%s\" is part of %zu function names: %s%s; give one of them whole", o->function,
	     total, list, total > n ? ", ..." : "");
	return -1;
}

static int focused(const char *data_dir, int argc, char **argv, const char *help,
		   enum calltree_kind kind)
{
	struct view_opts o = {.help = help, .flags = VO_PRUNE | VO_FUNCTION, .data_dir = data_dir};
	struct merge_state s = {0};
	struct tree_print tp = {0};
	struct calltree t = {0};
	char col[512];
	int64_t id;
	int ret;

	ret = load_view(argc, argv, &o, &s);
	if (ret)
		goto out;
	ret = EXIT_RUNTIME;
	id = resolve_function(&o, &s);
	if (id < 0)
		goto out;
	if (calltree_build(&t, s.set, kind, (uint32_t)id)) {
		note("out of memory");
		goto out;
	}
	tp = (struct tree_print){
		.t = &t,
		.all = stackset_total(s.set, 0),
		.focus = t.v[0].total[0],
		.min_percent = o.min_percent,
		.max_depth = o.max_depth,
		.self = kind == CALLTREE_CALLEES,
		.kids = malloc(t.n * sizeof(uint32_t)),
	};
	tp.prune_below = prune_threshold(o.min_percent, tp.focus);
	tp.w = count_width(tp.all, 5);
	if (tp.kids) {
		header(&o, &s);
		snprintf(col, sizeof(col), "%s of %s",
			 kind == CALLTREE_CALLERS ? "callers" : "callees",
			 stackset_name(s.set, (uint32_t)id));
		print_columns(&tp, col);
		print_children(&tp, 0, 0, tp.kids);
		ret = finish_stdout();
	} else {
		note("out of memory");
	}
out:
	free(tp.kids);
	calltree_free(&t);
	merge_state_free(&s);
	return ret;
}

int cmd_callers(const char *data_dir, int argc, char **argv)
{
	return focused(data_dir, argc, argv, callers_help, CALLTREE_CALLERS);
}

int cmd_callees(const char *data_dir, int argc, char **argv)
{
	return focused(data_dir, argc, argv, callees_help, CALLTREE_CALLEES);
}

/* --- folded ---------------------------------------------------------------------- */

/* One output line: the stack's frames as text, and its count. */
struct folded_line {
	char *text;
	int64_t count;
};

/* A frame name as the format can carry it: ';' -> ',', control characters -> '?'. */
static char *safe_name(const char *name)
{
	char *s = strdup(name);

	for (char *p = s; p && *p; p++) {
		if (*p == ';')
			*p = ',';
		else if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	}
	return s;
}

/* "a;b;c" of one stack from the safe names. */
static char *stack_text(char *const *names, const struct stackset_stack *st)
{
	size_t len = 1, off = 0;
	char *text;

	for (uint32_t j = 0; j < st->n; j++)
		len += strlen(names[st->frames[j]]) + 1;
	if (!st->n)
		return strdup("[no frames]");
	text = malloc(len);
	for (uint32_t j = 0; text && j < st->n; j++) {
		size_t n = strlen(names[st->frames[j]]);

		memcpy(text + off, names[st->frames[j]], n);
		off += n;
		text[off++] = j + 1 < st->n ? ';' : '\0';
	}
	return text;
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text, ((const struct folded_line *)b)->text);
}

/* The sorted lines of every stack with samples; equal texts (once made safe) summed. */
static struct folded_line *folded_lines(const struct stackset *set, size_t *n_out)
{
	size_t n_names = stackset_names(set), n = 0;
	char **names = calloc(n_names ? n_names : 1, sizeof(char *));
	struct folded_line *lines = calloc(stackset_len(set) + 1, sizeof(*lines));
	struct stackset_stack st;
	bool ok = names && lines;

	for (size_t i = 0; ok && i < n_names; i++)
		ok = (names[i] = safe_name(stackset_name(set, (uint32_t)i))) != NULL;
	for (size_t i = 0; ok && i < stackset_len(set); i++) {
		stackset_get(set, i, &st);
		if (!st.value[0])
			continue;
		lines[n] =
			(struct folded_line){.text = stack_text(names, &st), .count = st.value[0]};
		ok = lines[n++].text != NULL;
	}
	for (size_t i = 0; names && i < n_names; i++)
		free(names[i]);
	free(names);
	if (ok)
		qsort(lines, n, sizeof(*lines), line_cmp);
	*n_out = 0;
	for (size_t i = 0; ok && i < n; i++) {
		if (*n_out && !strcmp(lines[*n_out - 1].text, lines[i].text)) {
			lines[*n_out - 1].count += lines[i].count;
			free(lines[i].text);
		} else {
			lines[(*n_out)++] = lines[i];
		}
	}
	if (ok)
		return lines;
	for (size_t i = 0; lines && i < n; i++)
		free(lines[i].text);
	free(lines);
	return NULL;
}

static int write_folded(const char *path, const struct folded_line *lines, size_t n)
{
	FILE *f = stdout;
	char *buf = NULL;
	size_t len = 0;
	int ret = 0;

	if (path && strcmp(path, "-")) {
		f = open_memstream(&buf, &len);
		if (!f)
			return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s %" PRId64 "\n", lines[i].text, lines[i].count);
	if (f == stdout)
		return finish_stdout() ? -EIO : 0;
	if (fclose(f))
		ret = -ENOMEM;
	if (!ret)
		ret = write_file_atomic(path, (const uint8_t *)buf, len);
	free(buf);
	return ret;
}

int cmd_folded(const char *data_dir, int argc, char **argv)
{
	struct view_opts o = {.help = folded_help, .flags = VO_OUTPUT, .data_dir = data_dir};
	struct merge_state s = {0};
	struct folded_line *lines;
	char what[1024];
	size_t n = 0;
	int ret;

	ret = load_view(argc, argv, &o, &s);
	if (ret)
		goto out;
	ret = EXIT_RUNTIME;
	lines = folded_lines(s.set, &n);
	if (!lines) {
		note("out of memory");
		goto out;
	}
	ret = write_folded(o.output, lines, n);
	if (ret && ret != -EIO)
		note("cannot write %s: %s", o.output, strerror(-ret));
	if (!ret) {
		describe(&o, &s, what, sizeof(what));
		note("%zu stacks of %s, written to %s", n, what,
		     o.output && strcmp(o.output, "-") ? o.output : "stdout");
	}
	ret = ret ? EXIT_RUNTIME : EXIT_SUCCESS;
	for (size_t i = 0; i < n; i++)
		free(lines[i].text);
	free(lines);
out:
	merge_state_free(&s);
	return ret;
}
