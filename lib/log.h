/* SPDX-License-Identifier: MIT */
/* One small logging module: stderr, or the journal when running under systemd. */
#ifndef EMBER_LOG_H
#define EMBER_LOG_H

#include <stdbool.h>

enum log_level { LOG_LVL_ERR = 0, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

/* ident prefixes stderr lines; verbose raises the threshold to debug. */
void log_init(const char *ident, int level);
void log_set_level(int level);
bool log_enabled(int level);

/* log_warn appends ": strerror(errno)"; the x variants do not. */
void log_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
