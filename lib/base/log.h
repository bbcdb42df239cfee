/* SPDX-License-Identifier: MIT */
/*
 * One small logging module: the journal (with priorities and the caller's
 * file, line and function) when stderr is connected to it, stderr otherwise.
 * Repeats of one message are rate-limited and later summarized with a count.
 */
#ifndef EMBER_LOG_H
#define EMBER_LOG_H

#include <stdbool.h>
#include <stdint.h>

enum log_level { LOG_LVL_ERR = 0, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

/* ident prefixes stderr lines; verbose raises the threshold to debug. */
void log_init(const char *ident, int level);
void log_set_level(int level);
bool log_enabled(int level);

/* Use the macros below: they pass the caller's place for the journal's CODE_ fields. */
void log_emit(int level, bool with_errno, const char *file, int line, const char *func,
	      const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* log_warn appends ": strerror(errno)"; the x variants do not. */
#define log_err(...) log_emit(LOG_LVL_ERR, false, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_warn(...) log_emit(LOG_LVL_WARN, true, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_warnx(...) log_emit(LOG_LVL_WARN, false, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_info(...) log_emit(LOG_LVL_INFO, false, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_debug(...) log_emit(LOG_LVL_DEBUG, false, __FILE__, __LINE__, __func__, __VA_ARGS__)

/*
 * Writes the "(repeated K times)" summaries of suppressed messages whose
 * window has ended (all of them with all = true, e.g. before exit). Each log
 * call does this too; the daemon also calls it once per interval so that a
 * message that stops repeating is summarized without waiting for another.
 */
void log_flush(bool all);

/* --- the rate limiter, pure (the clock is passed in) and unit-tested -------- */

/* Distinct messages tracked at once; more pass through unlimited. */
#define LOG_LIMIT_SLOTS 64
/* A formatted message is cut at this length. */
#define LOG_LINE_MAX 1024
/* Defaults of the daemon: at most LOG_LIMIT_BURST of one message per window. */
#define LOG_LIMIT_WINDOW_NS (60 * 1000000000LL)
#define LOG_LIMIT_BURST 10

/* One message (by key) within its current window. */
struct log_limit_slot {
	uint64_t key;		 /* log_limit_key(); 0: free slot */
	int64_t start_ns;	 /* when this window began */
	uint32_t seen;		 /* messages within this window */
	uint32_t suppressed;	 /* not written, to be summarized */
	int level;		 /* of the last suppressed message */
	char last[LOG_LINE_MAX]; /* the last suppressed message's text */
};

/* Allows burst messages of one key per window; counts the rest. */
struct log_limiter {
	int64_t window_ns;
	uint32_t burst;
	struct log_limit_slot slot[LOG_LIMIT_SLOTS];
};

/* Called once per summary: "LAST (repeated REPEATS times)". */
typedef void (*log_summary_fn)(int level, const char *last, uint32_t repeats, void *arg);

void log_limiter_init(struct log_limiter *l, int64_t window_ns, uint32_t burst);
/*
 * The identity of a message: its format string, or its text when the format
 * carries nothing of its own (e.g. "%s"). Never 0.
 */
uint64_t log_limit_key(const char *fmt, const char *text);
/* Whether a message may be written now; false: counted (and its text kept). */
bool log_limiter_allow(struct log_limiter *l, uint64_t key, int level, const char *text,
		       int64_t now_ns);
/*
 * Calls fn for every key with suppressed messages whose window has ended (or
 * every one when all), then forgets them. Returns the number of summaries.
 */
size_t log_limiter_flush(struct log_limiter *l, int64_t now_ns, bool all, log_summary_fn fn,
			 void *arg);

#endif
