/* SPDX-License-Identifier: MIT */
/*
 * The service manager's notify protocol (sd_notify): READY=1, STATUS=,
 * RELOADING=1, STOPPING=1, and a watchdog petted from the event loop. Every
 * call does nothing when emberd was not started with NOTIFY_SOCKET.
 */
#ifndef EMBER_NOTIFY_H
#define EMBER_NOTIFY_H

#include <stdbool.h>

#include "report.h"

/*
 * A timerfd firing at half of WATCHDOG_USEC, for the loop: it pets the
 * watchdog only while it turns, so a stalled loop gets restarted. *fd is -1
 * without a watchdog. 0 or -errno.
 */
int notify_watchdog_open(int *fd);
/* The watchdog's timer fired: WATCHDOG=1. */
void notify_watchdog_pet(void);

/* Start-up is done (BPF attached, history open): READY=1 with a STATUS= line. */
void notify_ready(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A one-line STATUS= summary (systemctl status shows it). */
void notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The interval's STATUS= line, from its report. */
void notify_report(const struct interval_report *r);
/* SIGHUP received: RELOADING=1; notify_ready() ends the reload. */
void notify_reloading(void);
/* A stop was asked for: STOPPING=1, before the last interval is stored. */
void notify_stopping(void);
/* Closes the watchdog's timerfd. */
void notify_close(void);

#endif
