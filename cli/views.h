/* SPDX-License-Identifier: MIT */
/*
 * What emberctl's views (views_*.c) share: the options they take, the merge
 * of a window into folded stacks, the header line, and a call tree's printing.
 */
#ifndef EMBER_CLI_VIEWS_H
#define EMBER_CLI_VIEWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "calltree.h"
#include "cli.h"

/* The options every view shares, for the help texts. */
/* The options every view shares, for the help texts. */
#define SELECTION_HELP                                                                              \
	"Which profiles (all that overlap the window are merged):\n"                                \
	"  -s, --since T      first time of the window (default: the oldest profile)\n"             \
	"  -u, --until T      end of the window, excluded (default: open)\n"                        \
	"  -t, --type TYPE    which kind of profile: cpu (default), and the others the\n"           \
	"                     history holds (\"emberctl list\" shows each row's type;\n"            \
	"                     a type it does not hold is an error that names them)\n"               \
	"  -a, --app NAME     only this application's profiles (default: all)\n"                    \
	"  -l, --label K=V    only profiles carrying this label (repeatable)\n"                     \
	"  -p, --pid N        keep only the samples of process N\n"                                 \
	"      --sample NAME  which value of each sample to count, among the sample\n"              \
	"                     types the profiles record: samples (default: ticks of\n"              \
	"                     the sampling clock), cpu (nanoseconds of CPU), ...\n" NO_ROLLUPS_HELP \
	"  -d, --data-dir DIR where emberd keeps history.db (as before the command)\n"              \
	"  -h, --help         show this help\n"                                                     \
	"Times: RFC 3339, unix seconds, -15m, \"10 min ago\", today, yesterday (UTC);\n"            \
	"see \"emberctl --help\".\n"

enum view_opt_flags {
	VO_LIMIT = 1 << 0,    /* -n, --sort */
	VO_PRUNE = 1 << 1,    /* --min-percent, --max-depth */
	VO_OUTPUT = 1 << 2,   /* -o */
	VO_FUNCTION = 1 << 3, /* the FUNCTION operand */
};

#define OPT_SORT 1000
#define OPT_MAX_DEPTH 1001
#define OPT_SAMPLE 1002

/* A view: its help and options, and what the command line asked for. */
struct view_opts {
	const char *help;
	unsigned flags;
	const char *data_dir;
	struct selection sel;
	long limit;	      /* top: 0 shows all */
	bool by_total;	      /* top --sort total */
	double min_percent;   /* tree, callers, callees */
	long max_depth;	      /* 0: no bound */
	const char *output;   /* folded: NULL is stdout */
	const char *function; /* callers, callees */
	const char *sample;   /* --sample: the sample type counted; NULL is "samples" */
};

/* --type wall (views_wall.c): whether asked, and the merge of cpu and offcpu nanoseconds. */
bool view_is_wall(const struct view_opts *o);
int merge_wall(struct history *h, const struct view_opts *o, struct merge_state *s);

/* Parses, opens the history and merges the window's stacks into s->set. */
int view_load(int argc, char **argv, struct view_opts *o, struct merge_state *s);
double view_pct(int64_t v, int64_t of);
/* Digits of the widest count, and at least those of a column title. */
int view_count_width(int64_t max, int min);
/* "3 cpu profiles from A to B, 55 samples" and the filters, for a header. */
void view_describe(const struct view_opts *o, const struct merge_state *s, char *buf, size_t len);
void view_header(const struct view_opts *o, const struct merge_state *s);
/* A frame name and a newline; control characters (a newline, ESC) print as '?'. */
void view_put_name(const char *name);
/* stdout's fate: an error writing it (a full disk, a closed pipe) is a failure. */
int view_finish_stdout(void);
/* Descending order of two counts, for qsort. */
int view_cmp_desc(int64_t a, int64_t b);

/* --- call trees (views_tree.c) --- */

/* How a tree is printed: its columns, and what its percentages and pruning are of. */
struct tree_print {
	const struct calltree *t;
	int64_t all;	     /* every sample of the window */
	int64_t focus;	     /* the focus function's total; 0 for the top-down tree */
	int64_t prune_below; /* paths whose total is below this are summed, not shown */
	double min_percent;
	long max_depth; /* 0: no bound */
	bool self;	/* a self column */
	int w;		/* width of a count */
	uint32_t *kids; /* scratch: one array per depth, t->n long in all */
};

void tree_print_columns(const struct tree_print *tp, const char *fn);
/* Prints node's children (and theirs) at level, the largest first, pruned. */
void tree_print_children(const struct tree_print *tp, uint32_t node, long level, uint32_t *kids);
/* The smallest total shown: P% of base, rounded up to a whole sample. */
int64_t tree_prune_threshold(double min_percent, int64_t base);

#endif
