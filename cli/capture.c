// SPDX-License-Identifier: MIT
/*
 * emberctl capture: asks the running emberd, over its control socket, to sample
 * one process or application at a higher rate for a while, and writes the
 * profile it sends back. Ctrl-C cancels.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ctlproto.h"
#include "timeparse.h"

#define DEFAULT_RUNTIME_DIR "/run/ember"
#define DEFAULT_HZ 499
#define DEFAULT_DURATION_MS 30000
#define DEFAULT_MALLOC_DURATION_MS 10000
/*
 * What the malloc capture's program adds to each probed call, walking a
 * shallow stack (bpf_stats run_time_ns / run_cnt, fx_malloc_ab, docs/benchmarks.md);
 * the trap itself is measured at start-up (cli/trapcost.c).
 */
#define MALLOC_WALK_NS 1200.0
/* Without a uprobe PMU to measure: bench/malloc_capture.sh's figures on a busy host. */
#define MALLOC_FALLBACK_PAIR_NS 10.0
#define MALLOC_FALLBACK_CALL_NS 7500.0
#define EXIT_CANCELLED 130
/* Beyond the duration, how long emberd may take to drain, name and send. */
#define RESULT_GRACE_MS (120 * 1000)
/* After Ctrl-C, how long to wait for emberd to confirm. */
#define CANCEL_WAIT_MS 3000
/* Without a terminal, a progress line every this many seconds. */
#define PROGRESS_EVERY_S 5

static const char capture_help[] =
	"Usage: emberctl capture (--pid N | --app NAME) [--hz N] [--duration DUR] -o FILE\n"
	"       emberctl capture --type malloc --pid N [--duration DUR] -o FILE\n"
	"\n"
	"Asks the running emberd to sample one process, or every process of one\n"
	"application, at a higher rate than it always does, for a while, and writes\n"
	"what it got as one gzipped pprof CPU profile. emberd samples everything at a\n"
	"low rate (19 Hz by default) so that it can always run; a capture at 499 Hz\n"
	"gets 26 times more samples of the one thing you are looking at, e.g. while\n"
	"you reproduce a slow request. The capture ends by itself after DUR; Ctrl-C\n"
	"cancels it and writes nothing.\n"
	"\n"
	"--type malloc is an emergency mode: uprobes on every malloc, calloc and\n"
	"realloc of one process (glibc's), each with its stack, for a short while. The\n"
	"profile has alloc_objects (calls) and alloc_space (bytes asked for) per stack:\n"
	"which functions allocate, and how much. It is costly: every such call traps\n"
	"into the kernel and walks its stack, 1 to 8 us a call depending on the host,\n"
	"where a 64-byte malloc/free pair takes ~10 ns: an allocation-heavy process\n"
	"runs its allocations 100 to 800 times slower while it lasts. Before it\n"
	"starts, emberctl measures a probe on this host and prints the slowdown. Hence\n"
	"at most 60 s, 10 s by default. free() is not probed (a trap there is single-\n"
	"stepped: ~3 times a malloc's), so there is no in-use view; for always-on\n"
	"allocation profiles, see [app] memory in ember.conf.\n"
	"\n"
	"Options:\n"
	"  -p, --pid N            the process to sample (all of its threads)\n"
	"  -a, --app NAME         every process of an application: its service name as\n"
	"                         \"emberctl list\" shows it (an [app] of the configuration,\n"
	"                         else a systemd unit, a container or an executable name);\n"
	"                         processes that start during the capture are included\n"
	"  -t, --type TYPE        cpu (sampled on-CPU stacks, the default) or malloc\n"
	"                         (every allocation of one --pid; see above)\n"
	"  -F, --hz N             samples per second and CPU, 1..999 (default 499; cpu only)\n"
	"  -D, --duration DUR     how long to sample, 1s..10m (default 30s); malloc:\n"
	"                         1s..60s (default 10s)\n"
	"  -o, --output FILE      where to write the profile; - for stdout (not a terminal)\n"
	"      --runtime-dir DIR  where emberd's control socket is: DIR/control (default\n"
	"                         $EMBER_RUNTIME_DIR, else " DEFAULT_RUNTIME_DIR "; emberd's\n"
	"                         --runtime-dir or [daemon] runtime_dir)\n"
	"  -h, --help             show this help\n"
	"\n"
	"Examples:\n"
	"  emberctl capture --pid 4242 --duration 30s -o slow.pb.gz\n"
	"  go tool pprof -top slow.pb.gz            # the hottest functions\n"
	"  emberctl capture --app checkout --hz 999 --duration 1m -o checkout.pb.gz\n"
	"  go tool pprof -http :8080 checkout.pb.gz # flame graph in a browser\n"
	"  emberctl capture --type malloc --pid 4242 --duration 10s -o alloc.pb.gz\n"
	"  go tool pprof -top -sample_index=alloc_space alloc.pb.gz\n"
	"\n"
	"Progress goes to stderr while it runs. Needs root: the socket accepts root\n"
	"only. One capture per process or app at a time, at most 4 at once; a second\n"
	"one of the same target is refused with the time the first one ends.\n"
	"Exit status: 0 written, 1 refused or failed (is emberd running?), 2 usage,\n"
	"130 cancelled.\n";

/* What the command line asked for. */
struct capture_opts {
	struct ctl_msg req; /* the CTL_CAPTURE request */
	const char *output;
	const char *runtime_dir;
	bool have_pid, have_app, have_hz, have_duration;
};

/* The connection to emberd and the frame being read from it. */
struct conn {
	int fd, sigfd;
	uint8_t *buf;
	size_t len, cap;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	bool tty;	/* stderr is a terminal: one updating progress line */
	bool line_open; /* that line holds text not yet ended by '\n' */
	int64_t last_progress_s;
};

/* A malloc capture: one pid, no rate, and a duration under its own cap. */
static void check_malloc_opts(struct capture_opts *o)
{
	if (o->have_app)
		usage_error("--type malloc probes one process: --pid N, not --app");
	if (o->have_hz)
		usage_error("--type malloc records every call: --hz does not apply");
	if (!o->have_duration)
		o->req.duration_ms = DEFAULT_MALLOC_DURATION_MS;
	if (o->req.duration_ms > CTL_MALLOC_DURATION_MAX_MS)
		usage_error("--duration: a malloc capture lasts at most %d s (it slows every "
			    "allocation of pid %u by 100 times or more); asked for %.3g s",
			    CTL_MALLOC_DURATION_MAX_MS / 1000, o->req.pid,
			    o->req.duration_ms / 1000.0);
}

static void parse_opts(int argc, char **argv, struct capture_opts *o)
{
	enum { OPT_RUNTIME_DIR = 256 };
	static const struct option opts[] = {
		{"pid", required_argument, NULL, 'p'},
		{"app", required_argument, NULL, 'a'},
		{"type", required_argument, NULL, 't'},
		{"hz", required_argument, NULL, 'F'},
		{"duration", required_argument, NULL, 'D'},
		{"output", required_argument, NULL, 'o'},
		{"runtime-dir", required_argument, NULL, OPT_RUNTIME_DIR},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int64_t ns;
	char *end;
	long v;
	int c;

	o->req.type = CTL_CAPTURE;
	o->req.hz = DEFAULT_HZ;
	o->req.duration_ms = DEFAULT_DURATION_MS;
	o->runtime_dir = getenv("EMBER_RUNTIME_DIR");
	if (!o->runtime_dir || !*o->runtime_dir)
		o->runtime_dir = DEFAULT_RUNTIME_DIR;
	optind = 0;
	while ((c = getopt_long(argc, argv, "+:p:a:t:F:D:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			o->req.pid = (uint32_t)parse_pid_arg(optarg);
			o->have_pid = true;
			break;
		case 'a':
			if (!*optarg || strlen(optarg) >= sizeof(o->req.app))
				usage_error("--app: the name must have 1 to %zu characters",
					    sizeof(o->req.app) - 1);
			snprintf(o->req.app, sizeof(o->req.app), "%s", optarg);
			o->have_app = true;
			break;
		case 't':
			if (!strcmp(optarg, "cpu"))
				o->req.kind = CTL_KIND_CPU;
			else if (!strcmp(optarg, "malloc"))
				o->req.kind = CTL_KIND_MALLOC;
			else
				usage_error("--type: '%s' is not a capture type: cpu or malloc",
					    optarg);
			break;
		case 'F':
			o->have_hz = true;
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < EMBER_HZ_MIN || v > EMBER_HZ_MAX)
				usage_error("--hz: '%s' is not a rate in %d..%d", optarg,
					    EMBER_HZ_MIN, EMBER_HZ_MAX);
			o->req.hz = (uint32_t)v;
			break;
		case 'D':
			if (parse_duration(optarg, &ns) || ns < CTL_DURATION_MIN_MS * NS_PER_MS ||
			    ns > CTL_DURATION_MAX_MS * NS_PER_MS)
				usage_error("--duration: '%s' is not a duration in 1s..10m (e.g. "
					    "30s, 2m)",
					    optarg);
			o->req.duration_ms = (uint32_t)(ns / NS_PER_MS);
			o->have_duration = true;
			break;
		case 'o':
			o->output = optarg;
			break;
		case OPT_RUNTIME_DIR:
			o->runtime_dir = optarg;
			break;
		case 'h':
			show(capture_help);
		default:
			bad_option(c, argv);
		}
	}
	no_operands(argc, argv);
	if (o->have_pid == o->have_app)
		usage_error("say what to capture: either --pid N or --app NAME");
	o->req.target = o->have_pid ? CTL_TARGET_PID : CTL_TARGET_APP;
	if (o->req.kind == CTL_KIND_MALLOC)
		check_malloc_opts(o);
	if (!o->output)
		usage_error("say where to write the profile: -o FILE");
}

/* Says, before anything is probed, what the process will pay: measured here and now. */
static void warn_malloc_cost(const struct capture_opts *o)
{
	double plain = MALLOC_FALLBACK_PAIR_NS, call = MALLOC_FALLBACK_CALL_NS, probed;
	bool measured = !malloc_trap_cost(&plain, &probed) && plain > 0 && probed > plain;

	if (measured)
		call = probed - plain + MALLOC_WALK_NS;
	else
		plain = MALLOC_FALLBACK_PAIR_NS;
	note("malloc, calloc and realloc will be ~%.0fx slower in pid %u while this runs "
	     "(%.0f s at most): each call traps into the kernel and walks its stack, ~%.1f us "
	     "%s, where a 64-byte malloc/free pair takes %.0f ns",
	     (plain + call) / plain, o->req.pid, o->req.duration_ms / 1000.0, call / 1000,
	     measured ? "on this host now" : "(measured on a busy host; cannot measure here)",
	     plain);
}

/* Connects to RUNTIME_DIR/control; a note saying why not and -1 on failure. */
static int connect_daemon(struct conn *cn, const char *runtime_dir)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if ((size_t)snprintf(cn->path, sizeof(cn->path), "%s/control", runtime_dir) >=
	    sizeof(cn->path)) {
		note("--runtime-dir %s is too long for a socket path", runtime_dir);
		return -1;
	}
	memcpy(sa.sun_path, cn->path, sizeof(cn->path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		note("cannot create a socket: %s", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return fd;
	if (errno == ENOENT || errno == ECONNREFUSED)
		note("cannot reach emberd: %s: %s; is emberd running? (its socket is "
		     "RUNTIME_DIR/control: --runtime-dir or EMBER_RUNTIME_DIR)",
		     cn->path, strerror(errno));
	else if (errno == EACCES || errno == EPERM)
		note("permission denied on %s: captures need root", cn->path);
	else
		note("cannot connect to emberd at %s: %s", cn->path, strerror(errno));
	close(fd);
	return -1;
}

static int send_msg(int fd, const struct ctl_msg *m)
{
	uint8_t *frame;
	size_t len, off = 0;
	int rc = ctl_encode(m, &frame, &len);

	if (rc)
		return rc;
	while (!rc && off < len) {
		ssize_t n = send(fd, frame + off, len - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			rc = -errno;
		else
			off += (size_t)n;
	}
	free(frame);
	return rc;
}

/*
 * Waits up to timeout_ms for the next whole frame and decodes it into m.
 * 1 with a frame, 0 on timeout, -EINTR when a signal came, -EPIPE when emberd
 * closed the connection, or another negative errno after a note.
 */
static int next_frame(struct conn *cn, struct ctl_msg *m, int64_t timeout_ms)
{
	int64_t until = mono_ns() / NS_PER_MS + timeout_ms;
	char err[256];

	for (;;) {
		struct pollfd pf[2] = {{cn->fd, POLLIN, 0}, {cn->sigfd, POLLIN, 0}};
		size_t need;
		long flen = ctl_frame_len(cn->buf, cn->len, CTL_MAX_REPLY, &need);
		int64_t left = until - mono_ns() / NS_PER_MS;
		ssize_t n;

		if (flen < 0) {
			note("emberd sent something that is not a reply (%s)",
			     strerror((int)-flen));
			return (int)flen;
		}
		if (flen > 0) {
			int rc = ctl_decode(cn->buf, (size_t)flen, m, err, sizeof(err));

			if (rc) {
				note("emberd sent a malformed reply: %s", err);
				return rc;
			}
			return 1; /* the caller consumes it with consume_frame() */
		}
		if (need > cn->cap) {
			uint8_t *b = realloc(cn->buf, need);

			if (!b)
				return -ENOMEM;
			cn->buf = b;
			cn->cap = need;
		}
		if (left <= 0)
			return 0;
		if (poll(pf, 2, left > 1000 ? 1000 : (int)left) < 0 && errno != EINTR)
			return -errno;
		if (pf[1].revents & POLLIN)
			return -EINTR;
		if (!(pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = recv(cn->fd, cn->buf + cn->len, cn->cap - cn->len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 && errno != ECONNRESET ? -errno : -EPIPE;
		cn->len += (size_t)n;
	}
}

static void consume_frame(struct conn *cn)
{
	size_t need;
	long flen = ctl_frame_len(cn->buf, cn->len, CTL_MAX_REPLY, &need);

	if (flen > 0) {
		memmove(cn->buf, cn->buf + flen, cn->len - (size_t)flen);
		cn->len -= (size_t)flen;
	}
}

static void end_line(struct conn *cn)
{
	if (cn->line_open)
		fputc('\n', stderr);
	cn->line_open = false;
}

static void show_progress(struct conn *cn, const struct capture_opts *o, const struct ctl_msg *m,
			  const char *target)
{
	int64_t s = (m->elapsed_ms + 500) / 1000;
	const char *what = o->req.kind == CTL_KIND_MALLOC ? "allocations" : "samples";

	if (cn->tty) {
		fprintf(stderr,
			"\r\033[Kemberctl: capturing %s: %" PRId64 " of %u s, %" PRIu64 " %s",
			target, s, o->req.duration_ms / 1000, m->samples, what);
		cn->line_open = true;
	} else if (s / PROGRESS_EVERY_S != cn->last_progress_s / PROGRESS_EVERY_S) {
		note("capturing %s: %" PRId64 " of %u s, %" PRIu64 " %s so far", target, s,
		     o->req.duration_ms / 1000, m->samples, what);
	}
	fflush(stderr);
	cn->last_progress_s = s;
}

/* Ctrl-C: asks emberd to stop and waits (briefly) until it says it did. */
static int cancel(struct conn *cn, bool accepted)
{
	struct ctl_msg m = {.type = CTL_CANCEL};

	end_line(cn);
	if (accepted && !send_msg(cn->fd, &m)) {
		int64_t until = mono_ns() / NS_PER_MS + CANCEL_WAIT_MS;
		struct signalfd_siginfo si;

		while (read(cn->sigfd, &si, sizeof(si)) > 0)
			; /* this Ctrl-C is handled */
		while (mono_ns() / NS_PER_MS < until &&
		       next_frame(cn, &m, until - mono_ns() / NS_PER_MS) == 1 &&
		       m.type != CTL_ERROR)
			consume_frame(cn);
	}
	note("capture cancelled; no file written");
	return EXIT_CANCELLED;
}

static int write_result(const struct capture_opts *o, const struct ctl_msg *m, const char *target)
{
	char size[32];
	int rc = write_file_atomic(o->output, m->data, m->data_len);

	if (rc) {
		note("cannot write %s: %s", o->output,
		     rc == -ENOTTY ? "stdout is a terminal (use -o FILE)" : strerror(-rc));
		return EXIT_RUNTIME;
	}
	format_bytes(m->data_len, size, sizeof(size));
	if (o->req.kind == CTL_KIND_MALLOC)
		note("wrote %s: %" PRIu64 " allocations of %s over %.1f s, %s", o->output,
		     m->samples, target, m->elapsed_ms / 1000.0, size);
	else
		note("wrote %s: %" PRIu64 " samples of %s (%u process%s) over %.1f s at %u Hz, %s",
		     o->output, m->samples, target, m->processes, m->processes == 1 ? "" : "es",
		     m->elapsed_ms / 1000.0, o->req.hz, size);
	if (strcmp(o->output, "-"))
		note("look at it: go tool pprof -top%s %s",
		     o->req.kind == CTL_KIND_MALLOC ? " -sample_index=alloc_space" : "", o->output);
	return EXIT_SUCCESS;
}

/* Reads replies until the result, an error, Ctrl-C or a timeout. */
static int run(struct conn *cn, const struct capture_opts *o)
{
	int64_t deadline = mono_ns() / NS_PER_MS + o->req.duration_ms + RESULT_GRACE_MS;
	char target[CONFIG_NAME_MAX + 8], when[40];
	bool accepted = false;
	struct ctl_msg m;

	ctl_target_name(&o->req, target, sizeof(target));
	for (;;) {
		int rc = next_frame(cn, &m, deadline - mono_ns() / NS_PER_MS);

		if (rc == -EINTR)
			return cancel(cn, accepted);
		if (rc <= 0 || m.type != CTL_PROGRESS)
			end_line(cn); /* the progress line stays one line */
		if (rc == 0) {
			note("no result from emberd %u s after the capture should have ended; "
			     "see its log",
			     RESULT_GRACE_MS / 1000);
			return EXIT_RUNTIME;
		}
		if (rc == -EPIPE) {
			note("emberd closed the connection without a result (did it stop? see its "
			     "log)");
			return EXIT_RUNTIME;
		}
		if (rc < 0)
			return EXIT_RUNTIME;
		if (m.type == CTL_ERROR) {
			note("%s", m.text);
			return EXIT_RUNTIME;
		}
		if (m.type == CTL_ACCEPTED) {
			accepted = true;
			format_time(m.end_ns, when, sizeof(when));
			if (o->req.kind == CTL_KIND_MALLOC)
				note("capturing every malloc, calloc and realloc of %s for %.3g s, "
				     "until %s; Ctrl-C cancels",
				     target, m.duration_ms / 1000.0, when);
			else
				note("capturing %s at %u Hz for %.3g s, until %s; Ctrl-C cancels",
				     target, m.hz, m.duration_ms / 1000.0, when);
		} else if (m.type == CTL_PROGRESS) {
			show_progress(cn, o, &m, target);
		} else if (m.type == CTL_RESULT) {
			rc = write_result(o, &m, target);
			return rc;
		} else {
			note("emberd sent an unexpected reply (type %d)", (int)m.type);
			return EXIT_RUNTIME;
		}
		consume_frame(cn);
	}
}

int cmd_capture(const char *data_dir, int argc, char **argv)
{
	struct capture_opts o = {0};
	struct conn cn = {.fd = -1, .sigfd = -1};
	sigset_t mask;
	int rc = EXIT_RUNTIME;

	(void)data_dir;
	parse_opts(argc, argv, &o);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	/*
	 * Signals arrive on a descriptor: Ctrl-C becomes a cancel, never a torn file.
	 * A shell without job control starts background commands with SIGINT
	 * ignored; kill -INT must still cancel such a capture.
	 */
	signal(SIGINT, SIG_DFL);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) ||
	    (cn.sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		note("cannot set up signal handling: %s", strerror(errno));
		return EXIT_RUNTIME;
	}
	cn.tty = isatty(STDERR_FILENO);
	cn.last_progress_s = 0;
	if (o.req.kind == CTL_KIND_MALLOC)
		warn_malloc_cost(&o);
	cn.fd = connect_daemon(&cn, o.runtime_dir);
	if (cn.fd >= 0) {
		/* a refusal may already wait in the socket even if sending failed: read it */
		if (send_msg(cn.fd, &o.req))
			o.req.duration_ms = 0;
		rc = run(&cn, &o);
		close(cn.fd);
	}
	close(cn.sigfd);
	free(cn.buf);
	return rc;
}
