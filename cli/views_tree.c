// SPDX-License-Identifier: MIT
/*
 * The top-down call tree (emberctl tree), and the printing of a call tree that
 * callers and callees share (views_callers.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views.h"

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

static int by_total(const void *pa, const void *pb, void *arg)
{
	const struct calltree *t = arg;
	const struct calltree_node *a = &t->v[*(const uint32_t *)pa],
				   *b = &t->v[*(const uint32_t *)pb];
	int c = view_cmp_desc(a->total[0], b->total[0]);

	return c ? c :
		   strcmp(calltree_name(t, *(const uint32_t *)pa),
			  calltree_name(t, *(const uint32_t *)pb));
}

void tree_print_columns(const struct tree_print *tp, const char *fn)
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
		       view_pct(v->total[0], tp->all), tp->w, v->self[0],
		       view_pct(v->self[0], tp->all), ind, "");
	else if (tp->self)
		printf("%*" PRId64 " %6.2f%% %6.2f%% %*" PRId64 "  %*s", tp->w, v->total[0],
		       view_pct(v->total[0], tp->all), view_pct(v->total[0], tp->focus), tp->w,
		       v->self[0], ind, "");
	else
		printf("%*" PRId64 " %6.2f%% %6.2f%%  %*s", tp->w, v->total[0],
		       view_pct(v->total[0], tp->all), view_pct(v->total[0], tp->focus), ind, "");
	view_put_name(name);
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
void tree_print_children(const struct tree_print *tp, uint32_t node, long level, uint32_t *kids)
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
		tree_print_children(tp, kids[i], level + 1, kids + k);
	}
	if (!hidden)
		return;
	snprintf(what, sizeof(what), "%zu more below %g%% (%" PRId64 " sample%s)", hidden,
		 tp->min_percent, hidden_total, hidden_total == 1 ? "" : "s");
	print_elided(tp, level, what);
}

/* The smallest total shown: P% of base, rounded up to a whole sample. */
int64_t tree_prune_threshold(double min_percent, int64_t base)
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

	ret = view_load(argc, argv, &o, &s);
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
	tp.prune_below = tree_prune_threshold(o.min_percent, tp.all);
	tp.w = view_count_width(tp.all, 5);
	if (!tp.kids) {
		note("out of memory");
		ret = EXIT_RUNTIME;
	} else {
		view_header(&o, &s);
		tree_print_columns(&tp, "function");
		tree_print_children(&tp, 0, 0, tp.kids);
		ret = view_finish_stdout();
	}
	free(tp.kids);
	calltree_free(&t);
out:
	merge_state_free(&s);
	return ret;
}
