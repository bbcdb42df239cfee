/* SPDX-License-Identifier: MIT */
/*
 * emberctl's shared parts: one-line messages, times, the options that select
 * stored profiles (window, type, app, labels, pid), the merge of a selection
 * into one profile, and atomic file writes. Each command lives in its own file.
 */
#ifndef EMBER_CLI_H
#define EMBER_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "history.h"
#include "pprof.h"
#include "stackset.h"
#include "timeparse.h"
#include "util.h"

#ifndef EMBER_VERSION
#define EMBER_VERSION "0.1.0"
#endif

#define DEFAULT_DATA_DIR "/var/lib/ember"
#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
/* Skipped profiles named by id on stderr; the count covers any beyond. */
#define MAX_LISTED_IDS 20
#define MAX_LABEL_FILTERS 32

/* What commands select: a window, a type, an application, labels and a pid. */
struct selection {
	int64_t since, until;		       /* INT64_MIN / INT64_MAX when not given */
	const char *type;		       /* NULL: every type */
	const char *app;		       /* NULL: every application */
	const char *labels[MAX_LABEL_FILTERS]; /* "k=v", all must hold */
	size_t n_labels;
	struct pprof_filter filter; /* --pid: which samples to keep */
	bool no_rollups;	    /* --no-rollups: raw profiles only */
};

/* --no-rollups, which the views, flamegraph, diff and export take (no short form). */
#define OPT_NO_ROLLUPS 2000
#define NO_ROLLUPS_OPTION                                       \
	{                                                       \
		"no-rollups", no_argument, NULL, OPT_NO_ROLLUPS \
	}
/* Its help line. */
#define NO_ROLLUPS_HELP                                                                        \
	"      --no-rollups   read every raw profile, not the hourly rollups (same numbers,\n" \
	"                     slower; for checking and debugging)\n"

/* A command: runs with its own argv (argv[0] is its name); returns the exit status. */
struct command {
	const char *name;
	int (*run)(const char *data_dir, int argc, char **argv);
};

int cmd_list(const char *data_dir, int argc, char **argv);
int cmd_export(const char *data_dir, int argc, char **argv);
int cmd_status(const char *data_dir, int argc, char **argv);
int cmd_capture(const char *data_dir, int argc, char **argv);
/*
 * A uprobe on malloc, measured on this host now (cli/trapcost.c): the CPU ns of
 * a malloc(64)/free pair without and with one. 0, or -errno: no uprobe PMU.
 */
int malloc_trap_cost(double *plain_ns, double *probed_ns);
int cmd_flamegraph(const char *data_dir, int argc, char **argv);
int cmd_diff(const char *data_dir, int argc, char **argv);
/* The views of cli/views.c: flat, top-down, bottom-up and folded. */
int cmd_top(const char *data_dir, int argc, char **argv);
int cmd_tree(const char *data_dir, int argc, char **argv);
int cmd_callers(const char *data_dir, int argc, char **argv);
int cmd_callees(const char *data_dir, int argc, char **argv);
int cmd_folded(const char *data_dir, int argc, char **argv);

/* The command whose help a usage error points to; NULL before one is known. */
extern const char *usage_cmd;

/* One line on stderr, for errors and reports alike. */
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A usage error: one line pointing to --help, exit 2. */
void usage_error(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* Prints text (a --help) and exits. */
void show(const char *text) __attribute__((noreturn));
/* "between A and B", "since A", "before B" or "in the history". */
void format_window(const struct selection *sel, char *buf, size_t len);
void format_ago(int64_t ns, int64_t now, char *buf, size_t len); /* "3 min ago" */
/*
 * s for a terminal: control characters (an escape sequence's ESC above all) as
 * \xNN, so that a name another user chose cannot drive the administrator's
 * terminal. Cut to fit buf; returns buf.
 */
const char *term_safe(const char *s, char *buf, size_t len);

int64_t parse_time_arg(const char *opt, const char *arg, int64_t now);
int64_t parse_pid_arg(const char *arg);

/* An open window of every type (or of default_type, which may be NULL). */
void selection_init(struct selection *sel, const char *default_type);
/* Handles -s/-u/-t/-a/-l/-p and --no-rollups; false for an option it does not know. */
bool selection_option(struct selection *sel, int c, const char *arg, int64_t now);
/* Usage error when the window is empty. */
void check_window(const struct selection *sel);
/* The history query for a selection (its labels point into sel). */
struct history_query selection_query(const struct selection *sel);

/* getopt reported c for an unknown option or a missing value: a usage error. */
void bad_option(int c, char **argv) __attribute__((noreturn));
void no_operands(int argc, char **argv);

/*
 * dir, or a relative dir made absolute once at start (file.h's path_absolute()),
 * so that every message names the same place; exits 1 after a note when it cannot be.
 */
const char *absolute_data_dir(const char *dir);
/* Read-only; NULL after a one-line note that says why. */
struct history *open_history(const char *data_dir);
/*
 * Closes h; when its reads met a damaged file, first says so on stderr: the
 * rows read, the ids that could not be. true when it was damaged.
 */
bool close_history(struct history *h);
/* Why a read failed, in words: "the database is damaged: ..." for -EBADMSG. */
const char *history_strerror(int err);
uint64_t history_disk_bytes(struct history *h);

/* file_write_atomic() (file.h), synced: path.tmp renamed; "-" is stdout (-ENOTTY on a terminal). */
int write_file_atomic(const char *path, const uint8_t *buf, size_t len);
/* Encodes, gzips and writes atomically. */
int write_profile(const struct pprof_builder *b, const char *path);

/*
 * The merge of every stored profile a selection takes: into a pprof builder,
 * or, when set is given, into folded stacks (each profile's value_type, default
 * its default sample type, into slot), which streams: one decoded profile at a time.
 */
struct merge_state {
	const struct pprof_filter *filter;
	struct pprof_builder *b;   /* created from the first readable profile */
	struct stackset *set;	   /* owned; freed by merge_state_free() */
	struct pprof_arena *arena; /* where set's profiles are decoded, one at a time */
	const char *data_dir;	   /* set: merge_stacks() reads with a thread per CPU */
	const char *value_type;	   /* NULL: each profile's default (pprof_sample_type_index) */
	char value_name[64];	   /* the value merged, as the first merged profile names it */
	int slot;
	uint64_t rows, merged;
	int64_t first_ns, last_ns; /* start of the first and end of the last merged profile */
	uint64_t no_value;	   /* rows without value_type among their sample types */
	int64_t *skipped;	   /* ids of corrupt rows */
	size_t n_skipped, cap_skipped;
};

/* Merges the selection into s->b; 0 or a negative errno after a note. */
int merge_selection(struct history *h, const struct selection *sel, struct merge_state *s);
void merge_state_free(struct merge_state *s);
/* Names the corrupt profiles that were skipped, on stderr. */
void report_skipped(const struct merge_state *s);
/* Index of the "samples" value, which is what users count; else the first. */
size_t samples_index(const struct pprof_builder *b);
/*
 * Merges the selection into folded stacks: a new set, or more into s->set (a
 * diff's second window into another slot). 0, or EXIT_RUNTIME after a note
 * (nothing readable, or no samples: see explain_nothing()).
 */
int merge_stacks(struct history *h, const struct selection *sel, struct merge_state *s);
/*
 * 0 when the history holds profiles of sel's type (or sel takes every type, or
 * the history holds none at all); else a note naming the types it holds, and
 * EXIT_RUNTIME, as when nothing matches. types.c.
 */
int check_type(struct history *h, const struct selection *sel);
/* Says why a merge gave no samples; returns EXIT_RUNTIME. */
int explain_nothing(const struct selection *sel, const struct merge_state *s);

#endif
