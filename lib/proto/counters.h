/* SPDX-License-Identifier: MIT */
/*
 * emberd's counters, each declared once: its slot in struct ember_status, its
 * name in the status file, its Prometheus family and label, whether it is a
 * loss, the BPF metric it is read from and its phrase in the log. The status
 * file's writer and reader, `emberctl status --prometheus` and the daemon's
 * report all read this table (counters.c); a counter in one of them and not
 * the others does not build or fails check_statusfile's table test.
 */
#ifndef EMBER_COUNTERS_H
#define EMBER_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>

#include "statusfile.h"

/* The arrays of struct status_count in struct ember_status, one line word each. */
enum counter_group {
	COUNTER_DROP = 0, /* "drop NAME I T": st->drops, enum status_drop */
	COUNTER_SKIP,	  /* "skip NAME I T": st->skips, enum status_skip */
	COUNTER_UNWIND,	  /* "unwind NAME I T": st->unwind, enum status_unwind */
	COUNTER_OFFCPU,	  /* "offcpu NAME I T": st->offcpu, enum status_offcpu */
	COUNTER_TOTAL,	  /* a plain total, "KEY V" (allocs.*, refused.*): at off */
	COUNTER_GROUPS_NR,
};

/* Which metrics the daemon's report reads a counter from; the rest it counts itself. */
enum counter_src {
	COUNTER_SRC_HOST = 0, /* emberd's own figures (report.c) */
	COUNTER_SRC_CPU,      /* the cpu program's metrics: EMBER_SAMPLE_M_* */
	COUNTER_SRC_SAMPLING, /* the cpu and growth programs' EMBER_SAMPLE_M_*, summed */
	COUNTER_SRC_OFFCPU,   /* the offcpu program's EMBER_OFFCPU_M_* (EMBER_SAMPLE_M_* below) */
	COUNTER_SRC_PROC,     /* the process tracker's EMBER_PROC_M_* */
};

/* A Prometheus family of counters, one series per counter, told apart by a label. */
struct counter_family {
	const char *name;	   /* "ember_bpf_drops_total" */
	const char *label;	   /* the label telling its counters apart: "cause" */
	const char *help;	   /* # HELP */
	const char *interval;	   /* a gauge of the last interval's figures, or NULL */
	const char *interval_help; /* its # HELP */
};

enum counter_family_id {
	FAMILY_BPF_DROPS = 0,
	FAMILY_SKIPPED,
	FAMILY_UNWIND,
	FAMILY_OFFCPU,
	FAMILY_OFFCPU_LOSSES,
	FAMILY_REFUSED,
	FAMILY_ALLOC_LOSSES,
	FAMILY_NR,
};

/* One counter. */
struct counter {
	enum counter_group group;
	unsigned int index;	       /* its slot in the group's array (COUNTER_TOTAL: unused) */
	size_t off;		       /* COUNTER_TOTAL: its uint64_t in struct ember_status */
	const char *key;	       /* the status file's name: "stack_map_full" */
	enum counter_family_id family; /* its Prometheus family */
	const char *label;	       /* its label's value there */
	bool loss;		       /* something lost (a warning), not a figure */
	enum counter_src src;	       /* where the report reads it */
	unsigned int metric;	       /* the metric of src (not COUNTER_SRC_HOST) */
	const char *log;	       /* the interval log line's phrase for it, or NULL */
};

extern const struct counter counters[];
extern const size_t counters_nr;
extern const struct counter_family counter_families[FAMILY_NR];

/* The line word of a group's counters ("drop"), NULL for COUNTER_TOTAL. */
const char *counter_group_word(enum counter_group g);
/* How many counters a group has (its enum's _NR; COUNTER_TOTAL: its rows). */
unsigned int counter_group_size(enum counter_group g);
/* The counter in slot index of group g, or NULL. */
const struct counter *counter_of(enum counter_group g, unsigned int index);
/* The counter of g named key in the status file, or NULL. */
const struct counter *counter_named(enum counter_group g, const char *key);
/* The interval's and the total's figures of c in st (a plain total: its value twice). */
struct status_count counter_value(const struct ember_status *st, const struct counter *c);
/* c's count in st, for the writer (COUNTER_TOTAL: NULL, see counter_total()). */
struct status_count *counter_count(struct ember_status *st, const struct counter *c);
uint64_t *counter_total(struct ember_status *st, const struct counter *c);

#endif
