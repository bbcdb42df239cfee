/* SPDX-License-Identifier: MIT */
/*
 * emberd's status file: the interval report's figures written to
 * <runtime_dir>/status (lib/proto/statusfile.h) for `emberctl status`,
 * atomically, after every interval.
 */
#ifndef EMBER_STATUS_H
#define EMBER_STATUS_H

#include "statusfile.h"

struct status;

/*
 * Creates runtime_dir when missing. Never fails the daemon: a status file that
 * cannot be written is a warning, once. NULL on ENOMEM.
 */
struct status *status_open(const char *runtime_dir);
/* Writes st (the interval report's) as the status file; readers see the old or the new one. */
void status_write(struct status *s, const struct ember_status *st);
/* Frees; accepts NULL. The caller writes the "stopped" state first. */
void status_close(struct status *s);

#endif
