/* SPDX-License-Identifier: MIT */
/*
 * cpu_budget at work: what emberd cost in each interval (its threads' CPU,
 * its BPF programs' run time), the settings budget.c decides from it applied
 * to off-CPU time's duty cycle, and a line in the log when they change.
 */
#ifndef EMBER_SELFCOST_H
#define EMBER_SELFCOST_H

#include "report.h"

struct selfcost;

/* Starts measuring from now, with src's parts. NULL on ENOMEM. */
struct selfcost *selfcost_open(const struct report_sources *src);
/*
 * The interval that ends: measures it, decides and applies the next settings,
 * logs a change, and writes the figures into out (the status file's).
 */
void selfcost_interval(struct selfcost *sc, const struct report_sources *src,
		       struct status_budget *out);
/* Accepts NULL. */
void selfcost_close(struct selfcost *sc);

#endif
