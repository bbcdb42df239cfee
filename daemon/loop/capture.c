// SPDX-License-Identifier: MIT
/*
 * On-demand captures: a sampler of their own at the requested rate, filtered
 * in BPF to one process or to an application's allow list, drained every few
 * seconds into one profile, which capture_finish() encodes and gzips. A malloc
 * capture probes one process's allocator instead and is drained once, at its end.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "apps.h"
#include "clock.h"
#include "capture.h"
#include "compress.h"
#include "drain.h"
#include "log.h"
#include "malloccap.h"
#include "procinfo.h"
#include "sampler.h"

/* How often a running capture is drained; its maps are sized for this. */
#define CAPTURE_DRAIN_EVERY_NS (2 * NS_PER_SEC)

struct capture {
	struct ctl_msg req; /* what was asked: target, hz, duration */
	char target[CONFIG_NAME_MAX + 8];
	const struct capture_env *env;
	const struct profile_type *type; /* cpu, or malloc */
	struct sampler *sampler;	 /* a CPU capture's */
	struct malloccap *mc;		 /* a malloc capture's */
	int timerfd;			 /* readable at the end of the duration */
	int64_t start_ns, end_ns;	 /* CLOCK_REALTIME */
	int64_t start_mono_ns, last_drain_mono_ns;
	struct drain_result r; /* the one profile, added to at every drain */
	struct proc_class cls; /* every sample goes to one profile: this class */
	uint32_t allowed;      /* insertions into the allow list (app captures) */
};

/* The Tgid line of /proc/PID/status: pid itself for a process, another for a thread. */
static int read_tgid(uint32_t pid, uint32_t *tgid)
{
	char path[64], line[256];
	FILE *f;
	int rc = -ESRCH;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %u", tgid) == 1) {
			rc = 0;
			break;
		}
	fclose(f);
	return rc;
}

static int read_env(const char *name, char *out, size_t len, void *arg)
{
	return procinfo_env(*(pid_t *)arg, name, out, len);
}

/* Lets in every running process whose service is the app's: those started later
 * come through capture_proc_classified(). The number let in. */
static uint32_t allow_app(struct capture *c)
{
	struct proc_info *pi = malloc(sizeof(*pi));
	DIR *d = opendir("/proc");
	struct dirent *de;
	struct app_match m;
	uint32_t n = 0;

	while (pi && d && (de = readdir(d))) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (!isdigit((unsigned char)de->d_name[0]) || *end || !pid || pid > INT32_MAX)
			continue;
		if (procinfo_read((pid_t)pid, pi))
			continue; /* gone meanwhile */
		apps_classify(c->env->cfg, pi, read_env, &pi->pid, &m);
		if (!strcmp(m.service, c->req.app))
			capture_proc_classified(c, (uint32_t)pid, m.service);
	}
	n = c->allowed;
	if (d)
		closedir(d);
	free(pi);
	return n;
}

static int arm_end(struct capture *c)
{
	int64_t ns = (int64_t)c->req.duration_ms * NS_PER_MS;
	struct itimerspec its = {.it_value = {ns / NS_PER_SEC, ns % NS_PER_SEC}};

	c->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (c->timerfd < 0 || timerfd_settime(c->timerfd, 0, &its, NULL))
		return -errno;
	return 0;
}

/* Checks the target before anything is loaded: a clear refusal is cheap. */
static int check_target(const struct ctl_msg *req, char *err, size_t errlen)
{
	uint32_t tgid;

	if (req->target != CTL_TARGET_PID)
		return 0;
	if (read_tgid(req->pid, &tgid)) {
		snprintf(err, errlen, "no such process: pid %u", req->pid);
		return -ESRCH;
	}
	if (tgid != req->pid) {
		snprintf(err, errlen, "pid %u is a thread of process %u: capture --pid %u",
			 req->pid, tgid, tgid);
		return -EINVAL;
	}
	return 0;
}

/*
 * Probes the process's allocator. Its tables are loaded first: every stack
 * starts inside libc, which frame pointers cannot leave.
 */
static int load_malloc(struct capture *c, char *err, size_t errlen)
{
	struct malloccap_opts mo = {
		.pid = c->req.pid,
		.events_fd = c->env->events_fd,
		.known_fd = c->env->known_fd,
	};

	unwinder_fds(c->env->unw, &mo.unwind);
	unwinder_settle(c->env->unw); /* capture_prepare() asked for them */
	return malloccap_open(&mo, &c->mc, err, errlen);
}

/* A CPU capture's sampler, filtered in BPF to its process or its app's allow list. */
static int load_sampler(struct capture *c, char *err, size_t errlen)
{
	struct sampler_opts so = {
		.hz = c->req.hz,
		.interval_ns = CAPTURE_DRAIN_EVERY_NS,
		.include_idle = false,
		.target_tgid = c->req.target == CTL_TARGET_PID ? c->req.pid : 0,
		.allow_list = c->req.target == CTL_TARGET_APP,
		.events_fd = c->env->events_fd,
		.known_fd = c->env->known_fd,
	};
	int rc;

	unwinder_fds(c->env->unw, &so.unwind);
	rc = sampler_open(&so, &c->sampler, err, errlen);
	return rc ? rc : sampler_start(c->sampler, err, errlen);
}

/* A one-line cause in err for rc when the step that failed gave none. */
static int said(int rc, char *err, size_t errlen)
{
	if (rc && errlen && (rc == -ENOMEM || !err[0]))
		snprintf(err, errlen, "cannot start the capture: %s", strerror(-rc));
	return rc;
}

int capture_prepare(const struct capture_env *env, const struct ctl_msg *req, struct capture **out,
		    char *err, size_t errlen)
{
	struct capture *c;
	int rc;

	if (errlen)
		err[0] = '\0';
	rc = check_target(req, err, errlen);
	if (rc)
		return rc;
	c = calloc(1, sizeof(*c));
	if (!c)
		return said(-ENOMEM, err, errlen);
	c->req = *req;
	c->env = env;
	c->timerfd = -1;
	ctl_target_name(req, c->target, sizeof(c->target));
	ctl_target_name(req, c->cls.match.service, sizeof(c->cls.match.service));
	c->cls.match.app = -1;
	c->type = &profile_types[req->kind == CTL_KIND_MALLOC ? PROFILE_MALLOC : PROFILE_CPU];
	if (req->target == CTL_TARGET_PID) /* it may be excluded, thus never loaded */
		unwinder_add(env->unw, req->pid);
	*out = c;
	return 0;
}

int capture_load(struct capture *c, char *err, size_t errlen)
{
	if (errlen)
		err[0] = '\0';
	return said(c->req.kind == CTL_KIND_MALLOC ? load_malloc(c, err, errlen) :
						     load_sampler(c, err, errlen),
		    err, errlen);
}

int capture_begin(struct capture *c, char *err, size_t errlen)
{
	int rc;

	if (errlen)
		err[0] = '\0';
	/* its process may have exited while it loaded, unseen: its exit came meanwhile */
	rc = check_target(&c->req, err, errlen);
	if (rc)
		return rc;
	if (c->req.target == CTL_TARGET_APP && !allow_app(c)) {
		snprintf(err, errlen,
			 "no running process belongs to app %s (the service name "
			 "that emberctl list shows)",
			 c->req.app);
		return -ESRCH;
	}
	rc = said(arm_end(c), err, errlen);
	if (rc)
		return rc;
	c->start_ns = real_ns();
	c->end_ns = c->start_ns + (int64_t)c->req.duration_ms * NS_PER_MS;
	c->start_mono_ns = c->last_drain_mono_ns = mono_ns();
	return 0;
}

void capture_free(struct capture *c)
{
	if (!c)
		return;
	sampler_close(c->sampler);
	malloccap_close(c->mc);
	drain_result_free(&c->r);
	if (c->timerfd >= 0)
		close(c->timerfd);
	free(c);
}

int capture_timer_fd(const struct capture *c)
{
	return c->timerfd;
}

const char *capture_target(const struct capture *c)
{
	return c->target;
}

const struct ctl_msg *capture_request(const struct capture *c)
{
	return &c->req;
}

bool capture_same_target(const struct capture *c, const struct ctl_msg *req)
{
	if (c->req.target != req->target || c->req.kind != req->kind)
		return false;
	return req->target == CTL_TARGET_PID ? c->req.pid == req->pid :
					       !strcmp(c->req.app, req->app);
}

int64_t capture_end_ns(const struct capture *c)
{
	return c->end_ns;
}

uint32_t capture_elapsed_ms(const struct capture *c)
{
	return (uint32_t)((mono_ns() - c->start_mono_ns) / NS_PER_MS);
}

uint64_t capture_samples(struct capture *c)
{
	uint64_t m[EMBER_SAMPLE_M_NR], mm[EMBER_MALLOC_M_NR];

	if (c->mc)
		return malloccap_metrics(c->mc, mm) ? 0 : mm[EMBER_MALLOC_M_COUNTED];
	return sampler_metrics(c->sampler, m) ? 0 : m[EMBER_SAMPLE_M_COUNTED];
}

static const struct proc_class *classify_one(uint32_t pid, const char *comm, uint64_t user_leaf,
					     void *arg)
{
	struct capture *c = arg;

	(void)comm;
	(void)user_leaf;
	c->cls.pid = (pid_t)pid;
	return &c->cls;
}

static int drain(struct capture *c)
{
	int64_t now = real_ns();
	int rc;

	c->last_drain_mono_ns = mono_ns();
	rc = drain_more(&(struct drain_request){.type = c->type,
						.src = c->mc ? (void *)c->mc : (void *)c->sampler,
						.sym = c->env->sym,
						.hz = c->req.hz,
						.start_ns = c->start_ns,
						.end_ns = now,
						.classify = classify_one,
						.arg = c},
			&c->r);
	if (rc)
		log_warnx("capture of %s: cannot drain the samples: %s", c->target, strerror(-rc));
	return rc;
}

void capture_tick(struct capture *c)
{
	if (c->mc)
		return; /* drained once, detached: nothing must write the maps meanwhile */
	if (mono_ns() - c->last_drain_mono_ns >= CAPTURE_DRAIN_EVERY_NS)
		drain(c);
}

int capture_finish(struct capture *c, uint8_t **gz, size_t *gz_len, struct ctl_msg *res, char *err,
		   size_t errlen)
{
	int64_t now = real_ns();
	struct drain_profile *p;
	uint8_t *raw = NULL;
	size_t raw_len;
	int rc;

	malloccap_detach(c->mc); /* full speed again, before the slow part */
	rc = drain(c);
	if (rc) {
		snprintf(err, errlen, "cannot drain the samples: %s", strerror(-rc));
		return rc;
	}
	if ((!c->r.n || !c->r.v[0].st.samples) && c->mc) {
		snprintf(err, errlen, "%s called no malloc, calloc or realloc during the capture",
			 c->target);
		return -ENODATA;
	}
	if (!c->r.n || !c->r.v[0].st.samples) {
		snprintf(err, errlen, "%s was never on a CPU during the capture: no samples",
			 c->target);
		return -ENODATA;
	}
	p = &c->r.v[0];
	pprof_builder_set_time(p->b, c->start_ns, now - c->start_ns);
	rc = pprof_encode(p->b, &raw, &raw_len);
	if (!rc)
		rc = gzip_compress(raw, raw_len, gz, gz_len);
	free(raw);
	if (rc) {
		snprintf(err, errlen, "cannot encode the profile: %s", strerror(-rc));
		return rc;
	}
	memset(res, 0, sizeof(*res));
	res->type = CTL_RESULT;
	res->elapsed_ms = capture_elapsed_ms(c);
	res->samples = p->st.samples;
	res->processes = p->st.processes;
	res->data = *gz;
	res->data_len = *gz_len;
	return 0;
}

void capture_proc_classified(struct capture *c, uint32_t pid, const char *service)
{
	bool in = !strcmp(service, c->req.app);
	int rc;

	if (c->req.target != CTL_TARGET_APP)
		return;
	if (in)
		unwinder_add(c->env->unw, pid); /* it may be excluded, thus never loaded */
	rc = sampler_allow(c->sampler, pid, in);
	if (rc == -E2BIG)
		log_warnx("capture of %s: more than %d processes; pid %u is not sampled", c->target,
			  EMBER_SAMPLE_ALLOW_MAX, pid);
	else if (!rc && in)
		c->allowed++;
}

bool capture_proc_exited(struct capture *c, uint32_t pid)
{
	if (c->req.target == CTL_TARGET_APP)
		sampler_allow(c->sampler, pid, false);
	return c->req.target == CTL_TARGET_PID && c->req.pid == pid;
}
