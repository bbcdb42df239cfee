// SPDX-License-Identifier: MIT
/*
 * libbpf's messages, the errors of loads that failed, and the verifier's work
 * per program loaded, for every BPF object of the daemon (bpfload.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpfload.h"
#include "log.h"

/* The verifier's last lines an error quotes: its verdict and the instructions just before. */
#define TAIL_LINES 4

/* The last program libbpf said was refused, and its verifier log's tail (the loading thread's). */
static struct {
	char prog[64];
	char why[128];
	char tail[640];
} refused;

/* Objects loaded and closed since the start (bpfload_generation()). */
static _Atomic uint64_t generation;

static const char LOG_BEGIN[] = "-- BEGIN PROG LOAD LOG --";
static const char LOG_END[] = "-- END PROG LOAD LOG --";
static const char LOAD_FAILED[] = "load failed: ";

void bpfload_log_tail(const char *log, int lines, char *out, size_t outlen)
{
	const char *end = log + strlen(log), *p = end;
	const char *starts[TAIL_LINES * 2];
	size_t used = 0;
	int n = 0;

	out[0] = '\0';
	if (lines > TAIL_LINES * 2)
		lines = TAIL_LINES * 2;
	/* backwards over the lines, skipping blank ones, until `lines` are found */
	while (p > log && n < lines) {
		const char *e = p, *s;

		while (e > log && (e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t'))
			e--;
		s = e;
		while (s > log && s[-1] != '\n')
			s--;
		if (s == e)
			break;
		starts[n++] = s;
		p = s;
	}
	for (int i = n - 1; i >= 0; i--) {
		const char *s = starts[i], *e = strchr(s, '\n');
		int len;

		if (!e)
			e = end;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			e--;
		while (s < e && (*s == ' ' || *s == '\t'))
			s++;
		len = (int)(e - s);
		if (used + 4 >= outlen)
			break;
		used += (size_t)snprintf(out + used, outlen - used, "%s%.*s", used ? " | " : "",
					 len, s);
		if (used >= outlen) {
			used = outlen - 1;
			break;
		}
	}
}

/* Keeps what libbpf says of a program it could not load: its name, why, and its log's tail. */
static void keep_refusal(const char *msg)
{
	const char *q, *b = strstr(msg, LOG_BEGIN), *e;
	char *log;

	q = strstr(msg, "prog '");
	if (!q)
		return;
	q += strlen("prog '");
	e = strchr(q, '\'');
	if (!e)
		return;
	snprintf(refused.prog, sizeof(refused.prog), "%.*s", (int)(e - q), q);
	if (!b) {
		/* "prog 'X': BPF program load failed: WHY" */
		q = strstr(e, LOAD_FAILED);
		if (q) {
			q += strlen(LOAD_FAILED);
			snprintf(refused.why, sizeof(refused.why), "%.*s", (int)strcspn(q, "\n"),
				 q);
		}
		return;
	}
	b += strlen(LOG_BEGIN);
	e = strstr(b, LOG_END);
	log = strndup(b, e ? (size_t)(e - b) : strlen(b));
	if (!log)
		return;
	bpfload_log_tail(log, TAIL_LINES, refused.tail, sizeof(refused.tail));
	free(log);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *msg = NULL;
	int n;

	if (level == LIBBPF_DEBUG)
		return 0;
	/* whole: a refused program's log is as long as its verifier made it, its tail matters */
	n = vasprintf(&msg, fmt, ap);
	if (n < 0)
		return 0;
	if (level == LIBBPF_WARN && strstr(msg, "prog '"))
		keep_refusal(msg);
	/* libbpf's own chatter (verifier logs included) only with -v */
	if (log_enabled(LOG_LVL_DEBUG))
		fputs(msg, stderr);
	free(msg);
	return n;
}

void bpfload_init(void)
{
	libbpf_set_print(libbpf_print);
}

void bpfload_prepare(struct bpf_object *obj, const char *what)
{
	const char *want = getenv("EMBER_TEST_REFUSE"), *slash;
	struct bpf_program *prog;

	memset(&refused, 0, sizeof(refused));
	if (!want || !(slash = strchr(want, '/')) || strncmp(want, what, (size_t)(slash - want)) ||
	    strlen(what) != (size_t)(slash - want))
		return;
	bpf_object__for_each_program(prog, obj) if (!strcmp(bpf_program__name(prog), slash + 1))
		bpf_program__set_flags(prog, bpf_program__flags(prog) | BPF_F_SLEEPABLE);
}

int bpfload_error(int rc, const char *what, char *err, size_t errlen)
{
	/* a verifier's refusal may say EACCES too (an access it rejects): its log tells */
	if (refused.tail[0]) {
		snprintf(err, errlen,
			 "cannot load the %s BPF programs: the kernel's verifier refused %s (%s); "
			 "its last words: '%s' (-v: its whole log)",
			 what, refused.prog, refused.why[0] ? refused.why : strerror(-rc),
			 refused.tail);
	} else if (rc == -EPERM || rc == -EACCES) {
		snprintf(err, errlen,
			 "the kernel refused to load the %s BPF programs (%s): emberd needs root, "
			 "or CAP_BPF and CAP_PERFMON",
			 what, strerror(-rc));
	} else if (refused.prog[0]) {
		snprintf(err, errlen, "cannot load the %s BPF programs: the kernel refused %s (%s)",
			 what, refused.prog, refused.why[0] ? refused.why : strerror(-rc));
	} else {
		snprintf(err, errlen, "cannot load the %s BPF programs: %s", what, strerror(-rc));
	}
	return rc;
}

const char *bpfload_refused(void)
{
	return refused.prog;
}

int64_t bpfload_run_ns(const struct bpf_object *obj)
{
	struct bpf_program *prog;
	int64_t ns = 0;

	bpf_object__for_each_program(prog, obj)
	{
		struct bpf_prog_info info = {0};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
			ns += (int64_t)info.run_time_ns;
	}
	return ns;
}

void bpfload_report(const struct bpf_object *obj, const char *what)
{
	char line[1024];
	size_t used = 0;
	struct bpf_program *prog;
	unsigned long total = 0;

	atomic_fetch_add(&generation, 1);
	if (!log_enabled(LOG_LVL_DEBUG))
		return;
	line[0] = '\0';
	bpf_object__for_each_program(prog, obj)
	{
		struct bpf_prog_info info = {0};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		total += info.verified_insns;
		if (used < sizeof(line))
			used += (size_t)snprintf(line + used, sizeof(line) - used, "%s %s %u",
						 used ? "," : "", bpf_program__name(prog),
						 info.verified_insns);
	}
	log_debug("bpf %s: instructions verified:%s; %lu in all", what, line, total);
}

void bpfload_closed(void)
{
	atomic_fetch_add(&generation, 1);
}

uint64_t bpfload_generation(void)
{
	return atomic_load(&generation);
}
