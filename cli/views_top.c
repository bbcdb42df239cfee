// SPDX-License-Identifier: MIT
/*
 * The flat view (emberctl top): one line per function, self and total, the
 * hottest first.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views.h"

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

static int flat_cmp(const void *pa, const void *pb, void *arg)
{
	const struct flat_row *a = pa, *b = pb;
	const struct flat_sort *k = arg;
	int c;

	c = k->by_total ? view_cmp_desc(a->total, b->total) : view_cmp_desc(a->self, b->self);
	if (!c)
		c = k->by_total ? view_cmp_desc(a->self, b->self) :
				  view_cmp_desc(a->total, b->total);
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
	int w = view_count_width(all, 5);

	qsort_r(rows, n, sizeof(*rows), flat_cmp, &k);
	printf("%*s %7s %*s %7s  %s\n", w, "self", "self%", w, "total", "total%", "function");
	for (size_t i = 0; i < shown; i++) {
		printf("%*" PRId64 " %6.2f%% %*" PRId64 " %6.2f%%  ", w, rows[i].self,
		       view_pct(rows[i].self, all), w, rows[i].total, view_pct(rows[i].total, all));
		view_put_name(stackset_name(set, rows[i].name));
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

	ret = view_load(argc, argv, &o, &s);
	if (ret)
		goto out;
	rows = flat_rows(s.set, &n);
	if (!rows) {
		note("out of memory");
		ret = EXIT_RUNTIME;
		goto out;
	}
	view_header(&o, &s);
	print_top(&o, s.set, rows, n);
	free(rows);
	ret = view_finish_stdout();
out:
	merge_state_free(&s);
	return ret;
}
