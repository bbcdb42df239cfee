/* SPDX-License-Identifier: MIT */
/* Parsing of user-given times and durations (pure). */
#ifndef EMBER_TIMEPARSE_H
#define EMBER_TIMEPARSE_H

#include <stddef.h>
#include <stdint.h>

#include "clock.h" /* format_duration(), the inverse of parse_duration() */

/*
 * Parses a point in time: RFC 3339 ("2026-11-22T03:14:00Z", with offset or
 * fractional seconds), unix seconds ("1763781240"), a time relative to now
 * ("-15m", "-2h", "-1d", "-30s", "now"), journalctl's "N UNIT ago" ("10 min
 * ago", "2 hours ago", "1h 30min ago"; units ms, s, sec, second(s), m, min,
 * minute(s), h, hr, hour(s), d, day(s), w, week(s)), or "today", "yesterday",
 * "tomorrow": midnight UTC of that day (UTC, not local time). Returns 0 and
 * *out_ns in ns since the epoch, or -EINVAL.
 */
int parse_time(const char *s, int64_t now_ns, int64_t *out_ns);

/*
 * Parses a duration: "10", "10s", "500ms", "2m", "1h", "7d". A bare number is
 * seconds. Returns 0 and *out_ns, or -EINVAL (also on overflow or negative).
 */
int parse_duration(const char *s, int64_t *out_ns);

#endif
