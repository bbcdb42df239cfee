/* SPDX-License-Identifier: MIT */
/* The one place that reads clocks and writes times and durations for people. */
#ifndef EMBER_CLOCK_H
#define EMBER_CLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define NS_PER_US INT64_C(1000)
#define NS_PER_MS INT64_C(1000000)
#define NS_PER_SEC INT64_C(1000000000)
#define NS_PER_MIN (60 * NS_PER_SEC)
#define NS_PER_HOUR (3600 * NS_PER_SEC)
#define SECS_PER_DAY INT64_C(86400)
#define NS_PER_DAY (SECS_PER_DAY * NS_PER_SEC)

/* clk (CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID...) in ns; 0 if it cannot be read. */
int64_t clock_ns(clockid_t clk);

/* Wall-clock time, ns since the epoch: what is stored and shown. */
int64_t real_ns(void);

/* CLOCK_MONOTONIC in ns: what deadlines, backoffs and rate limits are measured with. */
int64_t mono_ns(void);

/* ns (on any clock) as a struct timespec, for pthread_cond_timedwait() and timers. */
struct timespec ns_to_timespec(int64_t abs_ns);

/* RFC 3339 in UTC, milliseconds only when the time has some: "2026-11-22T03:14:00.250Z". */
void format_time(int64_t ns, char *buf, size_t len);

/* Local time to the second, for log lines people read on the host: "2026-11-22 04:14:00". */
void format_local_time(int64_t ns, char *buf, size_t len);

/* The time of day in UTC: "03:14:00 UTC". */
void format_time_of_day(int64_t ns, char *buf, size_t len);

/* ns as parse_duration() reads it: "10s", "5m", "1h", "7d", else "9.998s"; "?" if negative. */
void format_duration(int64_t ns, char *buf, size_t len);

#endif
