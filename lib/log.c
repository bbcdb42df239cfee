// SPDX-License-Identifier: MIT
/*
 * Logging to stderr. Under systemd (JOURNAL_STREAM set) each line carries a
 * "<N>" syslog priority prefix, which journald turns into the entry's priority.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static const char *log_ident = "ember";
static int log_level = LOG_LVL_INFO;
static int log_journal = -1; /* unknown until first use */

void log_init(const char *ident, int level)
{
	log_ident = ident;
	log_level = level;
	log_journal = getenv("JOURNAL_STREAM") != NULL;
}

void log_set_level(int level)
{
	log_level = level;
}

bool log_enabled(int level)
{
	return level <= log_level;
}

static void log_vemit(int level, const char *fmt, va_list ap, int errnum)
{
	/* syslog priorities: err 3, warning 4, info 6, debug 7 */
	static const int prio[] = { 3, 4, 6, 7 };
	static const char *const tag[] = { "error: ", "warning: ", "", "debug: " };
	char msg[1024];

	if (!log_enabled(level))
		return;
	if (log_journal < 0)
		log_journal = getenv("JOURNAL_STREAM") != NULL;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (log_journal)
		fprintf(stderr, "<%d>%s%s%s%s\n", prio[level], tag[level], msg,
			errnum ? ": " : "", errnum ? strerror(errnum) : "");
	else
		fprintf(stderr, "%s: %s%s%s%s\n", log_ident, tag[level], msg,
			errnum ? ": " : "", errnum ? strerror(errnum) : "");
}

#define LOG_FN(fn, level, with_errno)                          \
	void fn(const char *fmt, ...)                          \
	{                                                      \
		int saved = errno;                             \
		va_list ap;                                    \
		va_start(ap, fmt);                             \
		log_vemit(level, fmt, ap, with_errno ? saved : 0); \
		va_end(ap);                                    \
		errno = saved;                                 \
	}

LOG_FN(log_err, LOG_LVL_ERR, 0)
LOG_FN(log_warn, LOG_LVL_WARN, 1)
LOG_FN(log_warnx, LOG_LVL_WARN, 0)
LOG_FN(log_info, LOG_LVL_INFO, 0)
LOG_FN(log_debug, LOG_LVL_DEBUG, 0)
