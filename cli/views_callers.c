// SPDX-License-Identifier: MIT
/*
 * Around one function: who calls it (emberctl callers, bottom-up) and what it
 * calls (emberctl callees, top-down), printed as views_tree.c prints trees.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views.h"

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
	char list[1024] = "", what[1024], safe[256];
	size_t n, total;
	int64_t id = stackset_find_name(s->set, o->function);

	if (id >= 0)
		return id;
	n = matching_names(s->set, o->function, found, 10, &total);
	if (total == 1)
		return stackset_find_name(s->set, found[0]);
	view_describe(o, s, what, sizeof(what));
	if (!total) {
		note("no function is named or contains \"%s\" in %s", o->function, what);
		return -1;
	}
	qsort(found, n, sizeof(*found), cmp_str);
	for (size_t i = 0; i < n; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
			 term_safe(found[i], safe, sizeof(safe)));
	note("\"%s\" is part of %zu function names: %s%s; give one of them whole",
	     term_safe(o->function, what, sizeof(what)), total, list, total > n ? ", ..." : "");
	return -1;
}

static int focused(const char *data_dir, int argc, char **argv, const char *help,
		   enum calltree_kind kind)
{
	struct view_opts o = {.help = help, .flags = VO_PRUNE | VO_FUNCTION, .data_dir = data_dir};
	struct merge_state s = {0};
	struct tree_print tp = {0};
	struct calltree t = {0};
	char col[512], safe[256];
	int64_t id;
	int ret;

	ret = view_load(argc, argv, &o, &s);
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
	tp.prune_below = tree_prune_threshold(o.min_percent, tp.focus);
	tp.w = view_count_width(tp.all, 5);
	if (tp.kids) {
		view_header(&o, &s);
		snprintf(col, sizeof(col), "%s of %s",
			 kind == CALLTREE_CALLERS ? "callers" : "callees",
			 term_safe(stackset_name(s.set, (uint32_t)id), safe, sizeof(safe)));
		tree_print_columns(&tp, col);
		tree_print_children(&tp, 0, 0, tp.kids);
		ret = view_finish_stdout();
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
