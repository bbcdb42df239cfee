/* SPDX-License-Identifier: MIT */
/*
 * What every BPF object's loader shares: libbpf's messages (shown with -v;
 * a refused program's verifier log kept for its error), the error of a load
 * that failed (which program, why, the verifier's last lines), and the
 * verifier's work for each program loaded (logged with -v).
 */
#ifndef EMBER_BPFLOAD_H
#define EMBER_BPFLOAD_H

#include <stddef.h>
#include <stdint.h>

struct bpf_object;

/* Routes libbpf's messages here: call once, before any object is opened. */
void bpfload_init(void);

/*
 * Before obj's load, for the object the daemon calls what ("cpu", "capture",
 * "growth"...): applies EMBER_TEST_REFUSE=what/program (the tests' way to see
 * a program refused: it is loaded sleepable, which the verifier refuses for
 * perf_event and tracepoint programs).
 */
void bpfload_prepare(struct bpf_object *obj, const char *what);

/*
 * The error of obj's load that returned rc into err: root or capabilities
 * for EPERM/EACCES; else the program the kernel refused, why, and the last
 * lines of its verifier log. Returns rc.
 */
int bpfload_error(int rc, const char *what, char *err, size_t errlen);

/* The program the last load refused ("" when none): a loader may go on without it. */
const char *bpfload_refused(void);

/*
 * The run time of obj's loaded programs since their load, summed (ns): one
 * system call a program. 0 while the kernel counts none (kernel.bpf_stats_enabled
 * off and no BPF_ENABLE_STATS fd held).
 */
int64_t bpfload_run_ns(const struct bpf_object *obj);

/*
 * After obj's load: logs (debug) the instructions the verifier processed for
 * each program, and counts a load in bpfload_generation().
 */
void bpfload_report(const struct bpf_object *obj, const char *what);

/* After an object loaded with bpfload_report() is closed: counts in bpfload_generation(). */
void bpfload_closed(void);

/*
 * Objects loaded and closed since the start (any thread: a capture loads on
 * its own): while it holds, the daemon's BPF maps are the same fds.
 */
uint64_t bpfload_generation(void);

/*
 * The last lines (at most lines, each trimmed, joined by " | ") of a verifier
 * log into out: what says why it refused. Pure.
 */
void bpfload_log_tail(const char *log, int lines, char *out, size_t outlen);

#endif
