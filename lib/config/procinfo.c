// SPDX-License-Identifier: MIT
/*
 * Process metadata from /proc (bounded reads through one pinned /proc/PID
 * directory), and the pure parsers behind it: cgroup file, systemd unit and
 * container id from a cgroup path, one variable from an environ block.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procinfo.h"

#define DELETED_SUFFIX " (deleted)"
/* systemd's UNIT_NAME_MAX: a unit name, with its NUL, fits in 256 bytes. */
#define UNIT_NAME_MAX 256

/* One '/'-separated component of a path, pointing into it. */
struct comp {
	const char *s;
	size_t n;
};

static bool comp_eq(const struct comp *c, const char *lit)
{
	return c->n == strlen(lit) && !memcmp(c->s, lit, c->n);
}

static bool has_prefix(const char *s, size_t n, const char *prefix)
{
	size_t pn = strlen(prefix);

	return n >= pn && !memcmp(s, prefix, pn);
}

static bool has_suffix(const char *s, size_t n, const char *suffix)
{
	size_t sn = strlen(suffix);

	return n >= sn && !memcmp(s + n - sn, suffix, sn);
}

/* Copies n bytes and a NUL into out; false (out "") when they do not fit. */
static bool copy_out(char *out, size_t outlen, const char *s, size_t n)
{
	if (!outlen)
		return false;
	if (n >= outlen) {
		out[0] = '\0';
		return false;
	}
	memcpy(out, s, n);
	out[n] = '\0';
	return true;
}

/* Moves *p past the next component of [*p, end); false when none is left. */
static bool next_comp(const char **p, const char *end, struct comp *c)
{
	const char *s = *p;

	while (s < end && *s == '/')
		s++;
	if (s == end)
		return false;
	c->s = s;
	while (s < end && *s != '/')
		s++;
	c->n = (size_t)(s - c->s);
	*p = s;
	return true;
}

/* --- /proc/PID/cgroup ------------------------------------------------------------- */

/* Which line a path came from, in increasing order of preference. */
enum cg_rank { CG_NONE, CG_V2_ROOT, CG_V1_SYSTEMD, CG_V2 };

/* True when the comma-separated controller list holds the token name=systemd. */
static bool has_systemd_controller(const char *s, const char *end)
{
	while (s < end) {
		const char *comma = memchr(s, ',', (size_t)(end - s));
		struct comp c = {s, (size_t)((comma ? comma : end) - s)};

		if (comp_eq(&c, "name=systemd"))
			return true;
		s = c.s + c.n + 1;
	}
	return false;
}

/*
 * "ID:controllers:path": ID is decimal, the path starts with '/' and may hold
 * ':' itself. Returns the rank of the line and its path, CG_NONE if malformed.
 */
static enum cg_rank parse_cgroup_line(const char *s, const char *end, struct comp *path)
{
	const char *c1, *c2;
	bool v2;

	if (memchr(s, '\0', (size_t)(end - s)))
		return CG_NONE;
	c1 = memchr(s, ':', (size_t)(end - s));
	if (!c1 || c1 == s)
		return CG_NONE;
	for (const char *d = s; d < c1; d++)
		if (*d < '0' || *d > '9')
			return CG_NONE;
	c2 = memchr(c1 + 1, ':', (size_t)(end - c1 - 1));
	if (!c2 || c2 + 1 == end || c2[1] != '/')
		return CG_NONE;
	path->s = c2 + 1;
	path->n = (size_t)(end - path->s);
	/* cgroup v2 marks a removed cgroup; the path is still the one it was in. */
	if (has_suffix(path->s, path->n, DELETED_SUFFIX))
		path->n -= strlen(DELETED_SUFFIX);
	v2 = c1 - s == 1 && *s == '0' && c2 == c1 + 1;
	if (v2)
		return path->n == 1 ? CG_V2_ROOT : CG_V2;
	return has_systemd_controller(c1 + 1, c2) ? CG_V1_SYSTEMD : CG_NONE;
}

int procinfo_parse_cgroup(const char *text, size_t len, char *out, size_t outlen)
{
	const char *p = text, *end = text + len;
	enum cg_rank best = CG_NONE;
	struct comp best_path = {0};

	if (!outlen)
		return -EINVAL;
	out[0] = '\0';
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		struct comp path;
		enum cg_rank r = parse_cgroup_line(p, eol, &path);

		/* First of equal rank wins: there is one v2 line and one name=systemd. */
		if (r > best) {
			best = r;
			best_path = path;
		}
		p = eol + 1;
	}
	if (best == CG_NONE)
		return -ENOENT;
	return copy_out(out, outlen, best_path.s, best_path.n) ? 0 : -ENAMETOOLONG;
}

/* --- systemd unit from a cgroup path ---------------------------------------------- */

/* Characters systemd allows in unit names (unit_name_is_valid). */
static bool unit_chars_ok(const struct comp *c)
{
	for (size_t i = 0; i < c->n; i++) {
		char ch = c->s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || strchr(":-_.\\@", ch)))
			return false;
	}
	return c->n < UNIT_NAME_MAX;
}

/* A unit name with the given suffix and a non-empty name before it. */
static bool is_unit_type(const struct comp *c, const char *suffix)
{
	return c->n > strlen(suffix) && has_suffix(c->s, c->n, suffix) && unit_chars_ok(c);
}

static bool is_slice(const struct comp *c)
{
	return is_unit_type(c, ".slice");
}

/* The unit types that have cgroups holding processes (.timer for completeness). */
static bool is_process_unit(const struct comp *c)
{
	static const char *const types[] = {".service", ".scope", ".socket",
					    ".mount",	".swap",  ".timer"};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (is_unit_type(c, types[i]))
			return true;
	return false;
}

/*
 * The first component after the leading slices. ".." components are skipped
 * too: a reader in a cgroup namespace sees others' paths relative to its own.
 */
static bool first_after_slices(const char **p, const char *end, struct comp *c)
{
	while (next_comp(p, end, c))
		if (!is_slice(c) && !comp_eq(c, ".."))
			return true;
	return false;
}

bool procinfo_unit_from_cgroup(const char *path, char *out, size_t outlen)
{
	const char *p = path, *end = path + strlen(path);
	struct comp unit, user_unit;

	if (outlen)
		out[0] = '\0';
	if (!first_after_slices(&p, end, &unit) || !is_process_unit(&unit))
		return false;
	/* A user manager: the user's own units sit below it, again after slices. */
	if (has_prefix(unit.s, unit.n, "user@") && is_unit_type(&unit, ".service") &&
	    first_after_slices(&p, end, &user_unit) && is_process_unit(&user_unit) &&
	    !comp_eq(&user_unit, "init.scope"))
		unit = user_unit;
	return copy_out(out, outlen, unit.s, unit.n);
}

/* --- container id from a cgroup path ---------------------------------------------- */

static bool is_container_id(const char *s, size_t n)
{
	if (n != PROCINFO_CONTAINER_ID_LEN)
		return false;
	/* Runtimes print ids in lowercase; accepting both would make one id two. */
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/*
 * Prefixed ids, as "PREFIX<id>" (cgroupfs driver) or "PREFIX<id>.scope"
 * (systemd driver). crio-conmon-<id> and libpod-conmon-<id> do not match: the
 * monitor process is not the container's workload.
 */
static const struct {
	const char *prefix, *runtime;
} container_prefixes[] = {
	{"docker-", "docker"},
	{"cri-containerd-", "containerd"},
	{"crio-", "cri-o"},
	{"libpod-", "podman"},
};

/* The id and runtime one component names; prev is the component before it. */
static bool container_comp(const struct comp *c, const struct comp *prev, bool under_kubepods,
			   struct comp *id, const char **runtime)
{
	struct comp body = *c;

	if (has_suffix(body.s, body.n, ".scope"))
		body.n -= strlen(".scope");
	for (size_t i = 0; i < sizeof(container_prefixes) / sizeof(container_prefixes[0]); i++) {
		size_t pn = strlen(container_prefixes[i].prefix);

		if (has_prefix(body.s, body.n, container_prefixes[i].prefix) &&
		    is_container_id(body.s + pn, body.n - pn)) {
			id->s = body.s + pn;
			id->n = body.n - pn;
			*runtime = container_prefixes[i].runtime;
			return true;
		}
	}
	/* Bare ids: "/docker/<id>", "/kubepods/<qos>/pod<uid>/<id>", others unknown. */
	if (!is_container_id(c->s, c->n))
		return false;
	*id = *c;
	if (prev && comp_eq(prev, "docker"))
		*runtime = "docker";
	else if (under_kubepods)
		*runtime = "containerd";
	else
		*runtime = "";
	return true;
}

bool procinfo_container_from_cgroup(const char *path, char *id, size_t idlen, char *runtime,
				    size_t rtlen)
{
	const char *p = path, *end = path + strlen(path), *rt = NULL;
	struct comp c, prev, found = {0};
	bool have_prev = false, under_kubepods = false;

	if (idlen)
		id[0] = '\0';
	if (runtime && rtlen)
		runtime[0] = '\0';
	if (idlen <= PROCINFO_CONTAINER_ID_LEN)
		return false;
	while (next_comp(&p, end, &c)) {
		struct comp cid;
		const char *crt;

		if (has_prefix(c.s, c.n, "kubepods"))
			under_kubepods = true;
		/* The innermost wins: a container nested in another (kind, dind). */
		if (container_comp(&c, have_prev ? &prev : NULL, under_kubepods, &cid, &crt)) {
			found = cid;
			rt = crt;
		}
		prev = c;
		have_prev = true;
	}
	if (!rt)
		return false;
	copy_out(id, idlen, found.s, found.n);
	if (runtime && rtlen)
		snprintf(runtime, rtlen, "%s", rt);
	return true;
}

/* --- environ ---------------------------------------------------------------------- */

/* A streaming search for "name=" at the start of NUL-separated entries. */
struct env_scan {
	const char *name;
	size_t nlen;
	char *out;
	size_t outlen;
	size_t pos;  /* bytes of name matched in the current entry */
	size_t vlen; /* bytes of the value copied */
	bool skip;   /* the current entry is some other variable */
	bool in_value;
	int result; /* 1 while scanning, then 0 or -errno */
};

static void env_scan_init(struct env_scan *sc, const char *name, char *out, size_t outlen)
{
	memset(sc, 0, sizeof(*sc));
	sc->name = name;
	sc->nlen = strlen(name);
	sc->out = out;
	sc->outlen = outlen;
	sc->result = 1;
	out[0] = '\0';
}

static void env_scan_feed(struct env_scan *sc, const char *buf, size_t len)
{
	for (size_t i = 0; i < len && sc->result == 1; i++) {
		char ch = buf[i];

		if (ch == '\0') {
			if (sc->in_value)
				sc->result = 0;
			sc->pos = 0;
			sc->skip = false;
		} else if (sc->skip) {
			continue;
		} else if (sc->in_value) {
			if (sc->vlen + 1 >= sc->outlen)
				sc->result = -ERANGE;
			else
				sc->out[sc->vlen++] = ch;
		} else if (sc->pos < sc->nlen) {
			if (ch == sc->name[sc->pos])
				sc->pos++;
			else
				sc->skip = true;
		} else if (ch == '=') {
			sc->in_value = true;
		} else {
			sc->skip = true;
		}
	}
}

/* The end of the block ends the last entry, NUL or not. */
static int env_scan_finish(struct env_scan *sc)
{
	if (sc->result == 1)
		sc->result = sc->in_value ? 0 : -ENOENT;
	sc->out[sc->result ? 0 : sc->vlen] = '\0';
	return sc->result;
}

static bool env_name_ok(const char *name)
{
	return name && name[0] && !strchr(name, '=');
}

int procinfo_parse_environ(const char *buf, size_t len, const char *name, char *out, size_t outlen)
{
	struct env_scan sc;

	if (!env_name_ok(name) || !outlen)
		return -EINVAL;
	env_scan_init(&sc, name, out, outlen);
	env_scan_feed(&sc, buf, len);
	return env_scan_finish(&sc);
}

/* --- reading /proc/PID ------------------------------------------------------------ */

/* Reads up to cap bytes of name below dirfd: the count, or -errno. */
static ssize_t read_at(int dirfd, const char *name, char *buf, size_t cap)
{
	size_t n = 0;
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return -errno;
	while (n < cap) {
		ssize_t r = read(fd, buf + n, cap - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			r = -errno;
			close(fd);
			return r;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	return (ssize_t)n;
}

/* A process gone between opening its directory and reading one of its files. */
static bool gone(ssize_t err)
{
	return err == -ENOENT || err == -ESRCH;
}

/* include/linux/sched.h */
#define PROC_PF_EXITING 0x00000004UL

bool procinfo_parse_stat_exiting(const char *text, size_t len)
{
	const char *p = NULL, *end = text + len;
	unsigned long flags;
	char num[24];
	size_t n;

	/* the comm, in parentheses, may hold anything: the fields follow its last ')' */
	for (const char *q = text; q < end; q++)
		if (*q == ')')
			p = q;
	if (!p || end - p < 4 || p[1] != ' ')
		return false;
	p += 2;
	if (*p == 'Z' || *p == 'X')
		return true;
	/* state ppid pgrp session tty_nr tpgid flags: the 7th field from here */
	for (int field = 0; field < 6; field++) {
		p = memchr(p, ' ', (size_t)(end - p));
		if (!p || ++p >= end)
			return false;
	}
	for (n = 0; p + n < end && n < sizeof(num) - 1 && p[n] >= '0' && p[n] <= '9'; n++)
		num[n] = p[n];
	if (!n || n == sizeof(num) - 1)
		return false;
	num[n] = '\0';
	flags = strtoul(num, NULL, 10);
	return (flags & PROC_PF_EXITING) != 0;
}

/* The decimal at *p (its end bounded by end) into *v, *p past it and one space. */
static bool stat_number(const char **p, const char *end, uint64_t *v)
{
	const char *q = *p;
	uint64_t x = 0;

	if (q >= end || *q < '0' || *q > '9')
		return false;
	for (; q < end && *q >= '0' && *q <= '9'; q++) {
		if (x > (UINT64_MAX - 9) / 10)
			return false;
		x = x * 10 + (uint64_t)(*q - '0');
	}
	*v = x;
	*p = q < end && *q == ' ' ? q + 1 : q;
	return true;
}

/* Past n space-separated fields from *p (any text: tty_nr may be negative). */
static bool stat_skip(const char **p, const char *end, int n)
{
	for (int i = 0; i < n; i++) {
		const char *sp = memchr(*p, ' ', (size_t)(end - *p));

		if (!sp)
			return false;
		*p = sp + 1;
	}
	return true;
}

int procinfo_parse_stat(const char *text, size_t len, struct proc_stat *out)
{
	const char *p = NULL, *end = text + len;
	uint64_t flags, utime, stime;

	/* the comm, in parentheses, may hold anything: the fields follow its last ')' */
	for (const char *q = text; q < end; q++)
		if (*q == ')')
			p = q;
	if (!p || end - p < 4 || p[1] != ' ')
		return -EINVAL;
	p += 2;
	out->state = *p;
	/* state ppid pgrp session tty_nr tpgid, then flags (field 9 of the man page) */
	if (!stat_skip(&p, end, 6) || !stat_number(&p, end, &flags))
		return -EINVAL;
	/* minflt cminflt majflt cmajflt, then utime stime (14, 15) */
	if (!stat_skip(&p, end, 4) || !stat_number(&p, end, &utime) ||
	    !stat_number(&p, end, &stime) || utime > UINT64_MAX - stime)
		return -EINVAL;
	/* cutime cstime priority nice num_threads itrealvalue, then starttime (22) */
	if (!stat_skip(&p, end, 6) || !stat_number(&p, end, &out->start_ticks))
		return -EINVAL;
	out->flags = (unsigned long)flags;
	out->cpu_ticks = utime + stime;
	return 0;
}

bool procinfo_exiting(int dirfd)
{
	char buf[1024];
	ssize_t n = read_at(dirfd, "stat", buf, sizeof(buf) - 1);

	if (n < 0)
		return gone(n);
	buf[n] = '\0';
	return procinfo_parse_stat_exiting(buf, (size_t)n);
}

static int read_comm(int dirfd, struct proc_info *out)
{
	char buf[sizeof(out->comm) + 1];
	ssize_t n = read_at(dirfd, "comm", buf, sizeof(buf) - 1);

	if (n < 0)
		return gone(n) ? (int)n : 0;
	buf[n] = '\0';
	n = (ssize_t)strcspn(buf, "\n");
	copy_out(out->comm, sizeof(out->comm), buf, (size_t)n);
	return 0;
}

static void read_exe(int dirfd, struct proc_info *out)
{
	ssize_t n = readlinkat(dirfd, "exe", out->exe, sizeof(out->exe));

	/* Missing for kernel threads and zombies, EACCES for others' processes. */
	if (n <= 0 || (size_t)n >= sizeof(out->exe) || memchr(out->exe, '\0', (size_t)n)) {
		out->exe[0] = '\0';
		return;
	}
	if (has_suffix(out->exe, (size_t)n, DELETED_SUFFIX))
		n -= (ssize_t)strlen(DELETED_SUFFIX);
	out->exe[n] = '\0';
}

static int read_cmdline(int dirfd, struct proc_info *out)
{
	ssize_t n = read_at(dirfd, "cmdline", out->cmdline, sizeof(out->cmdline) - 1);

	if (n < 0)
		return gone(n) ? (int)n : 0;
	/* The arguments end in a NUL each (a process may rewrite them to end otherwise). */
	while (n > 0 && out->cmdline[n - 1] == '\0')
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (out->cmdline[i] == '\0')
			out->cmdline[i] = ' ';
	out->cmdline[n] = '\0';
	return 0;
}

/* Bytes of /proc/PID/cgroup read on the stack first: a few lines on most hosts. */
#define CGROUP_SMALL 4096

/* Parses what was read of the cgroup file: only whole lines count at the bound. */
static void parse_cgroup_text(char *buf, size_t n, size_t cap, struct proc_info *out)
{
	if (n == cap) {
		char *nl = memrchr(buf, '\n', n);

		n = nl ? (size_t)(nl - buf) : 0;
	}
	procinfo_parse_cgroup(buf, n, out->cgroup, sizeof(out->cgroup));
}

static int read_cgroup(int dirfd, struct proc_info *out)
{
	char small[CGROUP_SMALL], *buf = small;
	size_t cap = sizeof(small);
	ssize_t n = read_at(dirfd, "cgroup", small, cap);

	if (n == (ssize_t)cap) { /* a long one: read it again, whole, into the heap */
		cap = PROCINFO_CGROUP_MAX_BYTES;
		buf = malloc(cap);
		if (!buf)
			return -ENOMEM;
		n = read_at(dirfd, "cgroup", buf, cap);
	}
	/* ENOENT may be a kernel without cgroups; ESRCH is a process gone. */
	if (n >= 0)
		parse_cgroup_text(buf, (size_t)n, cap, out);
	if (buf != small)
		free(buf);
	return n == -ESRCH ? (int)n : 0;
}

static int open_pid_dir(pid_t pid)
{
	char path[32];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int procinfo_open(pid_t pid, struct proc_info *out)
{
	memset(out, 0, sizeof(*out));
	if (pid <= 0)
		return -EINVAL;
	out->pid = pid;
	return open_pid_dir(pid);
}

int procinfo_fill(int dirfd, unsigned int mask, struct proc_info *out)
{
	unsigned int want = mask & PROCINFO_ALL & ~out->have;
	int err = 0;

	if ((want & PROCINFO_COMM) && !(err = read_comm(dirfd, out)))
		out->have |= PROCINFO_COMM;
	if (!err && (want & PROCINFO_CMDLINE) && !(err = read_cmdline(dirfd, out)))
		out->have |= PROCINFO_CMDLINE;
	if (!err && (want & PROCINFO_EXE)) {
		read_exe(dirfd, out);
		out->have |= PROCINFO_EXE;
	}
	if (!err && (want & PROCINFO_CGROUP) && !(err = read_cgroup(dirfd, out))) {
		procinfo_unit_from_cgroup(out->cgroup, out->unit, sizeof(out->unit));
		procinfo_container_from_cgroup(out->cgroup, out->container_id,
					       sizeof(out->container_id), out->container_runtime,
					       sizeof(out->container_runtime));
		out->have |= PROCINFO_CGROUP;
	}
	return err;
}

int procinfo_read(pid_t pid, struct proc_info *out)
{
	int dirfd = procinfo_open(pid, out), err;

	if (dirfd < 0)
		return dirfd;
	err = procinfo_fill(dirfd, PROCINFO_ALL, out);
	close(dirfd);
	if (err) {
		memset(out, 0, sizeof(*out));
		out->pid = pid;
	}
	return err;
}

int procinfo_env(pid_t pid, const char *name, char *out, size_t outlen)
{
	char buf[4096];
	struct env_scan sc;
	size_t total = 0;
	int dirfd, fd;

	if (!env_name_ok(name) || !outlen)
		return -EINVAL;
	out[0] = '\0';
	if (pid <= 0)
		return -EINVAL;
	dirfd = open_pid_dir(pid);
	if (dirfd < 0)
		return dirfd;
	fd = openat(dirfd, "environ", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	close(dirfd);
	if (fd < 0)
		return -errno;
	env_scan_init(&sc, name, out, outlen);
	/* Streamed: no copy of the block, which may be megabytes. */
	while (sc.result == 1 && total < PROCINFO_ENVIRON_MAX_BYTES) {
		ssize_t r = read(fd, buf, sizeof(buf));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			r = -errno;
			close(fd);
			out[0] = '\0';
			return (int)r;
		}
		if (r == 0)
			break;
		env_scan_feed(&sc, buf, (size_t)r);
		total += (size_t)r;
	}
	close(fd);
	return env_scan_finish(&sc);
}

/* --- host name -------------------------------------------------------------------- */

static char hostname[256];
static pthread_once_t hostname_once = PTHREAD_ONCE_INIT;

static void hostname_init(void)
{
	if (gethostname(hostname, sizeof(hostname) - 1))
		hostname[0] = '\0';
	hostname[sizeof(hostname) - 1] = '\0';
}

const char *procinfo_hostname(void)
{
	pthread_once(&hostname_once, hostname_init);
	return hostname;
}
