// SPDX-License-Identifier: MIT
/*
 * The control socket: accepts root clients only (SO_PEERCRED), reads one
 * bounded request per connection, runs its capture and streams progress and
 * the result back. Everything is non-blocking, on an epoll set of its own that
 * the daemon's loop watches through one fd.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "capload.h"
#include "clock.h"
#include "control.h"
#include "log.h"
#include "timer.h"

#define SOCKET_NAME "control"
#define TICK_NS NS_PER_SEC

/* What an epoll event of the control set is about: kind << 32 | client index. */
enum ev_kind { EV_LISTEN = 1, EV_TICK, EV_CLIENT, EV_CAPTURE_END, EV_LOADED };

/* Where a connection stands. */
enum cl_state {
	CL_FREE = 0,
	CL_READING,   /* waiting for its request */
	CL_LOADING,   /* its capture's programs load on a thread (capload.h); it may cancel */
	CL_CAPTURING, /* its capture runs; it may send CTL_CANCEL */
	CL_CLOSING,   /* the last reply is being written, then it is closed */
};

/* One connection of emberctl. */
struct client {
	enum cl_state state;
	int fd;
	pid_t peer_pid;		     /* for the log */
	uint8_t in[CTL_MAX_REQUEST]; /* the request (or a cancel) being read */
	size_t in_len;
	uint8_t *out; /* frames not yet written */
	size_t out_len, out_off;
	bool want_out;	       /* EPOLLOUT is watched */
	int64_t deadline_ns;   /* CLOCK_MONOTONIC: request or reply timeout */
	struct capture *cap;   /* while CL_CAPTURING */
	struct capload *load;  /* while CL_LOADING: the thread's until its message comes */
	int64_t load_start_ns; /* CLOCK_MONOTONIC: when it began loading */
	bool naming_held;      /* its end came while the symbol loader parsed: held for it */
};

struct control {
	int epfd, lfd, tickfd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	const struct capture_env *env;
	int loadfd[2]; /* the pipe finished loads come back through (capload.h) */
	struct client cl[CONTROL_MAX_CLIENTS];
	size_t nclients, ncaptures; /* captures: loading ones too, until their message */
	size_t loads;		    /* loads whose message is not read yet */
};

static int watch(struct control *c, int op, int fd, uint32_t events, enum ev_kind kind, size_t idx)
{
	struct epoll_event ev = {.events = events, .data.u64 = (uint64_t)kind << 32 | idx};

	return epoll_ctl(c->epfd, op, fd, &ev) ? -errno : 0;
}

/* The tick runs only while there are clients: an idle daemon does not wake up. */
static void arm_tick(struct control *c, bool on)
{
	struct itimerspec its = {};

	if (on)
		its.it_value.tv_sec = its.it_interval.tv_sec = TICK_NS / NS_PER_SEC;
	timerfd_settime(c->tickfd, 0, &its, NULL);
}

/* The target of the client's capture, running or loading; NULL: it has none. */
static const char *client_target(const struct client *cl)
{
	if (cl->load)
		return capture_target(cl->load->cap);
	return cl->cap ? capture_target(cl->cap) : NULL;
}

/*
 * Ends the client's capture; a load in flight is forgotten here and freed,
 * still counted until then, when its message comes (on_loaded()).
 */
static void end_capture(struct control *c, struct client *cl)
{
	cl->load = NULL;
	if (!cl->cap)
		return;
	epoll_ctl(c->epfd, EPOLL_CTL_DEL, capture_timer_fd(cl->cap), NULL);
	capture_free(cl->cap);
	cl->cap = NULL;
	cl->naming_held = false;
	c->ncaptures--;
}

static void drop_client(struct control *c, struct client *cl)
{
	end_capture(c, cl);
	close(cl->fd);
	free(cl->out);
	memset(cl, 0, sizeof(*cl));
	if (--c->nclients == 0)
		arm_tick(c, false);
}

/* Writes what is queued; drops the client once a closing one has it all, or on error. */
static void flush(struct control *c, struct client *cl)
{
	size_t idx = (size_t)(cl - c->cl);

	while (cl->out_off < cl->out_len) {
		ssize_t n = send(cl->fd, cl->out + cl->out_off, cl->out_len - cl->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (!cl->want_out)
				watch(c, EPOLL_CTL_MOD, cl->fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP,
				      EV_CLIENT, idx);
			cl->want_out = true;
			return;
		}
		if (n < 0) {
			if (client_target(cl))
				log_info("capture of %s cancelled: emberctl (pid %d) went away",
					 client_target(cl), cl->peer_pid);
			drop_client(c, cl);
			return;
		}
		cl->out_off += (size_t)n;
	}
	free(cl->out);
	cl->out = NULL;
	cl->out_len = cl->out_off = 0;
	if (cl->state == CL_CLOSING) {
		drop_client(c, cl);
		return;
	}
	if (cl->want_out)
		watch(c, EPOLL_CTL_MOD, cl->fd, EPOLLIN | EPOLLRDHUP, EV_CLIENT, idx);
	cl->want_out = false;
}

/* Queues a frame and writes what the socket takes now. */
static void send_msg(struct control *c, struct client *cl, const struct ctl_msg *m)
{
	uint8_t *frame, *grown;
	size_t len;
	int rc = ctl_encode(m, &frame, &len);

	if (rc) {
		log_warnx("control: cannot encode a reply of type %d: %s", (int)m->type,
			  strerror(-rc));
		return;
	}
	if (!cl->out_len) {
		cl->out = frame;
		cl->out_len = len;
	} else {
		grown = realloc(cl->out, cl->out_len + len);
		if (!grown) {
			free(frame);
			return;
		}
		memcpy(grown + cl->out_len, frame, len);
		cl->out = grown;
		cl->out_len += len;
		free(frame);
	}
	flush(c, cl);
}

static void send_error(struct control *c, struct client *cl, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The last word to a client: a one-line error, then the connection ends. */
static void send_error(struct control *c, struct client *cl, int code, const char *fmt, ...)
{
	struct ctl_msg m = {.type = CTL_ERROR, .code = code};
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m.text, sizeof(m.text), fmt, ap);
	va_end(ap);
	for (char *p = m.text; *p; p++) /* a path or a name may hold anything */
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			*p = '?';
	cl->state = CL_CLOSING;
	cl->deadline_ns = mono_ns() + CONTROL_REPLY_TIMEOUT_NS;
	send_msg(c, cl, &m);
}

/* A refused connection gets one error frame, written if the socket takes it now. */
static void refuse(int fd, int code, const char *text)
{
	struct ctl_msg m = {.type = CTL_ERROR, .code = code};
	uint8_t *frame;
	size_t len;

	snprintf(m.text, sizeof(m.text), "%s", text);
	if (!ctl_encode(&m, &frame, &len)) {
		if (send(fd, frame, len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			log_debug("control: cannot send the refusal: %s", strerror(errno));
		free(frame);
	}
	close(fd);
}

/* The client whose capture, running or loading, has req's target (a load only reads its request). */
static struct client *running_capture(struct control *c, const struct ctl_msg *req)
{
	for (size_t i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		const struct client *cl = &c->cl[i];
		const struct capture *cap = cl->load ? cl->load->cap : cl->cap;

		if (cap && capture_same_target(cap, req))
			return &c->cl[i];
	}
	return NULL;
}

static int64_t next_end_ns(struct control *c)
{
	int64_t next = INT64_MAX;

	for (size_t i = 0; i < CONTROL_MAX_CLIENTS; i++)
		if (c->cl[i].cap && capture_end_ns(c->cl[i].cap) < next)
			next = capture_end_ns(c->cl[i].cap);
	return next;
}

/* Refuses a second capture of the same target, or one past CONTROL_MAX_CAPTURES. True: refused. */
static bool busy(struct control *c, struct client *cl, const struct ctl_msg *req,
		 const char *target)
{
	struct client *other = running_capture(c, req);
	char when[32];

	if (other && other->load) {
		send_error(c, cl, EBUSY,
			   "%s is already being captured (by emberctl pid %d, its programs "
			   "still loading): wait for it, or stop that one",
			   target, other->peer_pid);
		return true;
	}
	if (other) {
		int64_t end = capture_end_ns(other->cap);

		format_time_of_day(end, when, sizeof(when));
		send_error(c, cl, EBUSY,
			   "%s is already being captured (by emberctl pid %d, "
			   "until %s, %lld s from now): wait for it, or stop that one",
			   target, other->peer_pid, when,
			   (long long)((end - real_ns()) / NS_PER_SEC + 1));
		return true;
	}
	if (c->ncaptures < CONTROL_MAX_CAPTURES)
		return false;
	if (next_end_ns(c) == INT64_MAX)
		snprintf(when, sizeof(when), "once one has loaded");
	else
		format_time_of_day(next_end_ns(c), when, sizeof(when));
	send_error(c, cl, EAGAIN,
		   "emberd already runs %d captures, the most at once; "
		   "the next one ends at %s",
		   CONTROL_MAX_CAPTURES, when);
	return true;
}

/* Checks the request, then loads its capture on a thread: the loop goes on meanwhile. */
static void start_capture(struct control *c, struct client *cl, const struct ctl_msg *req)
{
	char target[CONFIG_NAME_MAX + 8], err[512];
	struct capture *cap;
	int rc;

	ctl_target_name(req, target, sizeof(target));
	if (busy(c, cl, req, target))
		return;
	rc = capture_prepare(c->env, req, &cap, err, sizeof(err));
	if (!rc) {
		rc = capload_start(cap, (size_t)(cl - c->cl), c->loadfd[1], &cl->load);
		if (rc) {
			capture_free(cap);
			snprintf(err, sizeof(err), "cannot start loading the capture: %s",
				 strerror(-rc));
		}
	}
	if (rc) {
		log_info("capture of %s refused: %s", target, err);
		send_error(c, cl, -rc, "%s", err);
		return;
	}
	c->ncaptures++;
	c->loads++;
	cl->state = CL_LOADING;
	cl->load_start_ns = mono_ns();
	log_info("capture of %s for emberctl (pid %d): loading its programs", target, cl->peer_pid);
}

/* A capture loaded: it begins (its end armed), and emberctl is told; or why not. */
static void capture_loaded(struct control *c, struct client *cl, struct capload *l)
{
	struct ctl_msg acc = {.type = CTL_ACCEPTED};
	const struct ctl_msg *req;
	char target[CONFIG_NAME_MAX + 8], err[512];
	int rc = l->rc;

	cl->load = NULL;
	cl->cap = l->cap;
	l->cap = NULL;
	snprintf(target, sizeof(target), "%s", capture_target(cl->cap));
	snprintf(err, sizeof(err), "%s", l->err);
	capload_free(l);
	if (!rc)
		rc = capture_begin(cl->cap, err, sizeof(err));
	if (!rc && watch(c, EPOLL_CTL_ADD, capture_timer_fd(cl->cap), EPOLLIN, EV_CAPTURE_END,
			 (size_t)(cl - c->cl))) {
		rc = -EIO;
		snprintf(err, sizeof(err), "cannot watch the capture's timer: %s", strerror(errno));
	}
	if (rc) {
		log_info("capture of %s refused: %s", target, err);
		end_capture(c, cl);
		send_error(c, cl, -rc, "%s", err);
		return;
	}
	cl->state = CL_CAPTURING;
	req = capture_request(cl->cap);
	acc.hz = req->hz;
	acc.duration_ms = req->duration_ms;
	acc.end_ns = capture_end_ns(cl->cap);
	if (req->kind == CTL_KIND_MALLOC)
		log_info("capture of %s: malloc, calloc and realloc probed for %.3gs for emberctl "
			 "(pid %d); its allocations are much slower meanwhile",
			 target, req->duration_ms / 1000.0, cl->peer_pid);
	else
		log_info("capture of %s at %u Hz for %.3gs started for emberctl (pid %d)", target,
			 req->hz, req->duration_ms / 1000.0, cl->peer_pid);
	log_debug("capture of %s: its programs loaded and attached in %.1f ms, off the loop",
		  target, (mono_ns() - cl->load_start_ns) / 1e6);
	send_msg(c, cl, &acc);
}

/*
 * Every load finished: its client's capture begins, or the load is freed
 * when its client went away or cancelled meanwhile (its slot forgot it).
 */
static void on_loaded(struct control *c)
{
	struct capload *l;

	while ((l = capload_read(c->loadfd[0]))) {
		struct client *cl = &c->cl[l->owner % CONTROL_MAX_CLIENTS];

		c->loads--;
		if (cl->load == l) {
			capture_loaded(c, cl, l);
			continue;
		}
		capload_free(l);
		c->ncaptures--;
	}
}

static void on_request(struct control *c, struct client *cl, const struct ctl_msg *m)
{
	if (cl->state == CL_READING && m->type == CTL_CAPTURE) {
		start_capture(c, cl, m);
	} else if ((cl->state == CL_CAPTURING || cl->state == CL_LOADING) &&
		   m->type == CTL_CANCEL) {
		char target[CONFIG_NAME_MAX + 8];

		snprintf(target, sizeof(target), "%s", client_target(cl));
		log_info("capture of %s cancelled by emberctl (pid %d)", target, cl->peer_pid);
		end_capture(c, cl);
		send_error(c, cl, ECANCELED, "capture of %s cancelled; nothing was written",
			   target);
	} else {
		if (client_target(cl))
			log_info("capture of %s cancelled: emberctl (pid %d) sent a request of "
				 "type %d",
				 client_target(cl), cl->peer_pid, (int)m->type);
		end_capture(c, cl);
		send_error(c, cl, EPROTO, "unexpected request (type %d) at this point",
			   (int)m->type);
	}
}

/* Reads what the client sent: a request, a cancel, or the end of the connection. */
static void on_readable(struct control *c, struct client *cl)
{
	for (;;) {
		ssize_t n = recv(cl->fd, cl->in + cl->in_len, sizeof(cl->in) - cl->in_len,
				 MSG_DONTWAIT);
		struct ctl_msg m;
		char err[CTL_TEXT_MAX];
		size_t need;
		long flen;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			if (client_target(cl))
				log_info("capture of %s cancelled: emberctl (pid %d) went away",
					 client_target(cl), cl->peer_pid);
			drop_client(c, cl);
			return;
		}
		if (cl->state == CL_CLOSING) {
			cl->in_len = 0; /* nothing more is expected: discard */
			continue;
		}
		cl->in_len += (size_t)n;
		flen = ctl_frame_len(cl->in, cl->in_len, CTL_MAX_REQUEST, &need);
		if (flen == 0)
			continue;
		if (flen < 0 || ctl_decode(cl->in, (size_t)flen, &m, err, sizeof(err))) {
			if (flen < 0)
				snprintf(err, sizeof(err), "%s",
					 flen == -EMSGSIZE ? "request too large" :
							     "not a control request");
			if (client_target(cl))
				log_info("capture of %s cancelled: bad request from emberctl "
					 "(pid %d): %s",
					 client_target(cl), cl->peer_pid, err);
			end_capture(c, cl);
			send_error(c, cl, EINVAL, "bad request: %s", err);
			return;
		}
		memmove(cl->in, cl->in + flen, cl->in_len - (size_t)flen);
		cl->in_len -= (size_t)flen;
		on_request(c, cl, &m);
		if (cl->state == CL_FREE || cl->state == CL_CLOSING)
			return;
	}
}

static void on_accept(struct control *c)
{
	for (;;) {
		struct ucred cred;
		socklen_t len = sizeof(cred);
		struct client *cl = NULL;
		int fd = accept4(c->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0 && errno == EINTR)
			continue;
		if (fd < 0)
			return; /* EAGAIN, or an error the next connection may not have */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) || len != sizeof(cred)) {
			refuse(fd, EPERM, "permission denied: cannot identify the caller");
			continue;
		}
		if (cred.uid != 0) {
			log_info("control: refused a client with uid %u (pid %d): root only",
				 cred.uid, cred.pid);
			refuse(fd, EPERM, "permission denied: captures are for root only");
			continue;
		}
		for (size_t i = 0; i < CONTROL_MAX_CLIENTS && !cl; i++)
			if (c->cl[i].state == CL_FREE)
				cl = &c->cl[i];
		if (!cl) {
			refuse(fd, EBUSY, "too many emberctl connections at once; try again");
			continue;
		}
		cl->fd = fd;
		cl->peer_pid = cred.pid;
		cl->state = CL_READING;
		cl->deadline_ns = mono_ns() + CONTROL_REQUEST_TIMEOUT_NS;
		if (watch(c, EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLRDHUP, EV_CLIENT,
			  (size_t)(cl - c->cl))) {
			close(fd);
			memset(cl, 0, sizeof(*cl));
			continue;
		}
		if (c->nclients++ == 0)
			arm_tick(c, true);
	}
}

/* Drains, encodes and sends the profile; the capture's sampler is freed first. */
static void finish(struct control *c, struct client *cl)
{
	struct ctl_msg res;
	char target[CONFIG_NAME_MAX + 8], err[256];
	uint8_t *gz = NULL;
	size_t len = 0;
	int rc;

	snprintf(target, sizeof(target), "%s", capture_target(cl->cap));
	rc = capture_finish(cl->cap, &gz, &len, &res, err, sizeof(err));
	end_capture(c, cl); /* the sampler goes before the bytes do */
	if (rc) {
		log_info("capture of %s ended without a profile: %s", target, err);
		send_error(c, cl, -rc, "%s", err);
		free(gz);
		return;
	}
	log_info("capture of %s done: %lu samples of %u process%s, %zu bytes to emberctl "
		 "(pid %d)",
		 target, res.samples, res.processes, res.processes == 1 ? "" : "es", len,
		 cl->peer_pid);
	cl->state = CL_CLOSING;
	cl->deadline_ns = mono_ns() + CONTROL_REPLY_TIMEOUT_NS;
	send_msg(c, cl, &res);
	free(gz);
}

/*
 * The capture's time is up. While the symbol loader parses binaries, its end
 * is held, up to SYMBOLIZER_WAIT_NS, for the loader to say it is idle
 * (control_loader_idle()), so that their frames are named; it samples on
 * meanwhile, and its profile's duration says so.
 */
static void on_capture_end(struct control *c, struct client *cl)
{
	uint64_t ticks;

	if (read(capture_timer_fd(cl->cap), &ticks, sizeof(ticks)) < 0 && errno == EAGAIN)
		return;
	if (!cl->naming_held && symbolizer_loading(c->env->sym) &&
	    !timer_arm(capture_timer_fd(cl->cap), SYMBOLIZER_WAIT_NS, 0)) {
		cl->naming_held = true;
		return;
	}
	finish(c, cl);
}

void control_loader_idle(struct control *c)
{
	for (size_t i = 0; i < CONTROL_MAX_CLIENTS; i++)
		if (c->cl[i].state == CL_CAPTURING && c->cl[i].naming_held)
			finish(c, &c->cl[i]);
}

/* Every second while clients are connected: timeouts, progress, periodic drains. */
static void on_tick(struct control *c)
{
	int64_t now = mono_ns();
	uint64_t ticks;

	if (read(c->tickfd, &ticks, sizeof(ticks)) < 0)
		return;
	for (size_t i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		struct client *cl = &c->cl[i];

		if ((cl->state == CL_READING || cl->state == CL_CLOSING) && now > cl->deadline_ns) {
			log_info("control: emberctl (pid %d) %s in time: dropped", cl->peer_pid,
				 cl->state == CL_READING ? "sent no request" :
							   "did not read its reply");
			drop_client(c, cl);
		} else if (cl->state == CL_CAPTURING) {
			struct ctl_msg p = {.type = CTL_PROGRESS};

			capture_tick(cl->cap);
			p.elapsed_ms = capture_elapsed_ms(cl->cap);
			p.samples = capture_samples(cl->cap);
			if (!cl->out_len) /* a client that does not read gets no backlog */
				send_msg(c, cl, &p);
		}
	}
}

void control_dispatch(struct control *c)
{
	struct epoll_event ev[16];
	int n = epoll_wait(c->epfd, ev, 16, 0);

	for (int i = 0; i < n; i++) {
		enum ev_kind kind = ev[i].data.u64 >> 32;
		struct client *cl = &c->cl[(uint32_t)ev[i].data.u64 % CONTROL_MAX_CLIENTS];

		if (kind == EV_LISTEN) {
			on_accept(c);
		} else if (kind == EV_TICK) {
			on_tick(c);
		} else if (kind == EV_LOADED) {
			on_loaded(c);
		} else if (kind == EV_CAPTURE_END && cl->cap) {
			on_capture_end(c, cl);
		} else if (kind == EV_CLIENT && cl->state != CL_FREE) {
			if (ev[i].events & EPOLLOUT)
				flush(c, cl);
			if (cl->state != CL_FREE &&
			    (ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)))
				on_readable(c, cl);
		}
	}
}

/* Whether a server answers at path: a second emberd must not steal its socket. */
static bool someone_listens(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool yes;

	if (fd < 0)
		return false;
	yes = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0;
	close(fd);
	return yes;
}

/* Binds and listens on path, 0600 from the start (umask), replacing a stale socket. */
static int listen_on(struct control *c, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	mode_t old;
	int rc;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", c->path);
	if (!lstat(c->path, &st)) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen,
				 "%s exists and is not a socket: remove it or set "
				 "another runtime_dir",
				 c->path);
			return -EEXIST;
		}
		if (someone_listens(&sa)) {
			snprintf(err, errlen, "another emberd is already running: it listens on %s",
				 c->path);
			return -EADDRINUSE;
		}
		unlink(c->path); /* stale: left by an emberd that did not exit cleanly */
	}
	c->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->lfd < 0)
		goto fail;
	old = umask(0177);
	rc = bind(c->lfd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc || chmod(c->path, 0600) || listen(c->lfd, CONTROL_MAX_CLIENTS))
		goto fail;
	return 0;
fail:
	rc = -errno;
	snprintf(err, errlen, "cannot listen on %s: %s", c->path, strerror(errno));
	return rc;
}

int control_open(const char *runtime_dir, const struct capture_env *env, struct control **out,
		 char *err, size_t errlen)
{
	struct control *c = calloc(1, sizeof(*c));
	struct stat st;
	int rc;

	if (!c)
		return -ENOMEM;
	c->epfd = c->lfd = c->tickfd = c->loadfd[0] = c->loadfd[1] = -1;
	c->env = env;
	if (strlen(runtime_dir) + sizeof("/" SOCKET_NAME) > sizeof(c->path)) {
		snprintf(err, errlen,
			 "runtime_dir %s is too long for a socket path (at most %zu "
			 "bytes)",
			 runtime_dir, sizeof(c->path) - sizeof("/" SOCKET_NAME));
		free(c);
		return -ENAMETOOLONG;
	}
	snprintf(c->path, sizeof(c->path), "%s/" SOCKET_NAME, runtime_dir);
	if (mkdir(runtime_dir, 0755) && errno != EEXIST) {
		rc = -errno;
		snprintf(err, errlen, "cannot create the runtime directory %s: %s", runtime_dir,
			 strerror(errno));
		free(c);
		return rc;
	}
	if (!stat(runtime_dir, &st) && (st.st_mode & 022))
		log_warnx("runtime_dir %s is writable by others: anyone could replace the control "
			  "socket that emberctl trusts (make it 0755)",
			  runtime_dir);
	rc = listen_on(c, err, errlen);
	if (rc) {
		if (c->lfd >= 0)
			close(c->lfd);
		c->lfd = -1;
		c->path[0] = '\0'; /* not ours: leave it */
		control_close(c);
		return rc;
	}
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	c->tickfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (c->epfd < 0 || c->tickfd < 0 || capload_pipe(c->loadfd) ||
	    watch(c, EPOLL_CTL_ADD, c->lfd, EPOLLIN, EV_LISTEN, 0) ||
	    watch(c, EPOLL_CTL_ADD, c->loadfd[0], EPOLLIN, EV_LOADED, 0) ||
	    watch(c, EPOLL_CTL_ADD, c->tickfd, EPOLLIN, EV_TICK, 0)) {
		rc = -errno;
		snprintf(err, errlen, "cannot set up the control socket: %s", strerror(errno));
		control_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

void control_close(struct control *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		if (c->cl[i].state == CL_FREE)
			continue;
		if (client_target(&c->cl[i])) {
			char target[CONFIG_NAME_MAX + 8];

			snprintf(target, sizeof(target), "%s", client_target(&c->cl[i]));
			log_info("capture of %s cancelled: emberd is stopping", target);
			end_capture(c, &c->cl[i]);
			send_error(c, &c->cl[i], ECANCELED,
				   "emberd is stopping: capture of %s "
				   "cancelled; nothing was written",
				   target);
		}
		if (c->cl[i].state != CL_FREE) /* what the socket did not take is lost */
			drop_client(c, &c->cl[i]);
	}
	/* loads in flight end on their own (the verifier cannot be cut short) */
	for (; c->loads; c->loads--)
		capload_free(capload_wait(c->loadfd[0]));
	if (c->loadfd[0] >= 0) {
		close(c->loadfd[0]);
		close(c->loadfd[1]);
	}
	if (c->lfd >= 0)
		close(c->lfd);
	if (c->path[0])
		unlink(c->path);
	if (c->tickfd >= 0)
		close(c->tickfd);
	if (c->epfd >= 0)
		close(c->epfd);
	free(c);
}

int control_fd(const struct control *c)
{
	return c->epfd;
}

void control_proc_classified(struct control *c, const struct proc_class *pc)
{
	for (size_t i = 0; c && i < CONTROL_MAX_CLIENTS; i++)
		if (c->cl[i].cap)
			capture_proc_classified(c->cl[i].cap, (uint32_t)pc->pid, pc->match.service);
}

void control_proc_exited(struct control *c, uint32_t pid)
{
	for (size_t i = 0; c && i < CONTROL_MAX_CLIENTS; i++) {
		if (!c->cl[i].cap || !capture_proc_exited(c->cl[i].cap, pid))
			continue;
		log_info("capture of %s: the process exited; ending the capture now",
			 capture_target(c->cl[i].cap));
		finish(c, &c->cl[i]);
	}
}
