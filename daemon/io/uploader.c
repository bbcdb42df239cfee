// SPDX-License-Identifier: MIT
/*
 * Store-and-forward to the collector: takes pending profiles from the history
 * (oldest and newest in turn), pushes each one in its own request, retries
 * transient failures with backoff and records every outcome in the history.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "clock.h"
#include "history.h"
#include "log.h"
#include "push.h"
#include "pushfit.h"
#include "uploader.h"
#include "worker.h"

/* A secret file holds one line: a token or a password. */
#define SECRET_MAX 4096
/* Without a wake-up (none lost, but cheap insurance), look for work this often. */
#define IDLE_RECHECK_NS (60 * NS_PER_SEC)
/* After a history error (disk full, a lock held too long), wait before trying again. */
#define HISTORY_RETRY_NS (5 * NS_PER_SEC)
/* The longest pause while kept verdicts fill their list (see pause_pushing()). */
#define KEPT_PAUSE_MAX_NS HISTORY_RETRY_NS
/* The same rejection is logged at most this often. */
#define REJECT_LOG_NS (60 * NS_PER_SEC)
/*
 * A backlog longer than this is drained from both ends in turn, so that the
 * newest profiles are not stuck behind it; a shorter one (a brief outage)
 * goes out oldest first, in order, in a few seconds anyway.
 */
#define ALTERNATE_MIN_PENDING 64
#define PUSH_PATH "/push.v1.PusherService/Push"
#define INGEST_PATH "/ingest?"
#define EXPIRED_MSG "older than the collector accepts"
/* Folded profiles are summed into one log line at most this often. */
#define FIT_LOG_NS (60 * NS_PER_SEC)
/* Dropped labels (name, reason) logged once each; past this many, only counted. */
#define MAX_LOGGED_DROPS 64
/* A kept verdict's message: what push_one() has for it. */
#define KEPT_MSG_LEN 256
_Static_assert(UPLOADER_UNMARKED_MAX <= HISTORY_VERDICTS_MAX, "history_mark_all() takes them all");

/* The reply body, kept up to PUSH_MAX_REPLY_BYTES: only its message matters. */
struct reply {
	char buf[PUSH_MAX_REPLY_BYTES];
	size_t len;
};

struct uploader {
	struct collector_config cc; /* a copy: the daemon may reload its own */
	char *base;		    /* cc.url without a trailing '/' */
	char log_url[1024];	    /* cc.url without credentials, for logs and status */
	char *password;		    /* basic auth, from its file; never logged */
	struct history *hist;	    /* this thread's own connection */
	CURL *curl;		    /* one handle: its connection is kept alive */
	struct curl_slist *headers;
	char errbuf[CURL_ERROR_SIZE];
	struct reply reply;
	uint64_t rnd;			   /* xorshift state for the backoff's jitter */
	bool newest_turn;		   /* take the newest pending profile next */
	struct history_collector_state cs; /* what the history shows `emberctl status` */
	char reject_msg[256];		   /* the last rejection logged, when, and how many since */
	int64_t reject_logged_ns;
	uint64_t reject_quiet;
	struct pushfit_limits limits; /* from cc: what one pushed profile may be */
	struct fit_log {	      /* folds since the last line, FIT_LOG_NS apart */
		int64_t logged_ns;
		uint64_t profiles, stacks_in, stacks_folded;
		double share; /* the largest share of a profile folded */
	} fit_log;
	struct push_label_drop logged_drops[MAX_LOGGED_DROPS];
	size_t n_logged_drops;
	bool state_failed; /* save_state() warned; it warns again after a success */
	/*
	 * Verdicts the history could not take (a full disk): their profiles are
	 * not taken again, the verdicts are written before each push (all in one
	 * transaction), and with the list full, pushing pauses (write_kept()).
	 */
	struct history_verdict kept[UPLOADER_UNMARKED_MAX];
	char kept_msg[UPLOADER_UNMARKED_MAX][KEPT_MSG_LEN];
	size_t n_kept;
	unsigned int kept_pauses; /* pauses in a row with the list full */

	struct uploader_transport transport; /* libcurl's, or a test's */
	struct worker worker;		     /* its lock guards stats */
	struct uploader_stats stats;
};

static uint64_t next_random(struct uploader *u)
{
	u->rnd ^= u->rnd << 13;
	u->rnd ^= u->rnd >> 7;
	u->rnd ^= u->rnd << 17;
	return u->rnd;
}

/* --- setup ------------------------------------------------------------------------- */

/* Reads a one-line secret (trailing newline and spaces dropped) into *out. */
static int read_secret(const char *path, char **out, char *err, size_t errlen)
{
	char buf[SECRET_MAX + 1];
	struct stat st;
	ssize_t n;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	n = S_ISREG(st.st_mode) ? read(fd, buf, sizeof(buf)) : -1;
	if (n < 0 || n > SECRET_MAX) {
		ret = n < 0 && S_ISREG(st.st_mode) ? -errno : -EINVAL;
		snprintf(err, errlen, "%s: %s", path,
			 n > SECRET_MAX ? "longer than 4096 bytes" : "not a readable regular file");
		goto out;
	}
	while (n > 0 && strchr(" \t\r\n", buf[n - 1]))
		n--;
	buf[n] = '\0';
	if (n == 0 || strlen(buf) != (size_t)n || strpbrk(buf, "\r\n")) {
		ret = -EINVAL;
		snprintf(err, errlen, "%s: %s", path, n ? "holds more than one line" : "is empty");
		goto out;
	}
	*out = strdup(buf);
	if (!*out)
		ret = -ENOMEM;
out:
	explicit_bzero(buf, sizeof(buf));
	if (fd >= 0)
		close(fd);
	return ret;
}

static int add_header(struct uploader *u, const char *fmt, const char *a, const char *b)
{
	struct curl_slist *l;
	char *h;

	if (asprintf(&h, fmt, a, b) < 0)
		return -ENOMEM;
	l = curl_slist_append(u->headers, h);
	explicit_bzero(h, strlen(h));
	free(h);
	if (!l)
		return -ENOMEM;
	u->headers = l;
	return 0;
}

static bool header_ok(const char *s)
{
	return !strpbrk(s, "\r\n");
}

static int build_auth(struct uploader *u, char *err, size_t errlen)
{
	const struct collector_config *cc = &u->cc;
	char *token = NULL;
	int ret;

	if (*cc->bearer_token_file && *cc->basic_auth_user) {
		snprintf(err, errlen, "collector: both basic auth and a bearer token are set");
		return -EINVAL;
	}
	if (*cc->basic_auth_user && !*cc->basic_auth_password_file) {
		snprintf(err, errlen, "collector: basic_auth_user needs basic_auth_password_file");
		return -EINVAL;
	}
	if (*cc->basic_auth_user)
		return read_secret(cc->basic_auth_password_file, &u->password, err, errlen);
	if (!*cc->bearer_token_file)
		return 0;
	ret = read_secret(cc->bearer_token_file, &token, err, errlen);
	if (ret)
		return ret;
	ret = add_header(u, "Authorization: Bearer %s%s", token, "");
	explicit_bzero(token, strlen(token));
	free(token);
	return ret;
}

static int build_headers(struct uploader *u, char *err, size_t errlen)
{
	const struct collector_config *cc = &u->cc;
	bool push = cc->protocol == COLLECTOR_PUSH;
	int ret;

	ret = add_header(u, "Content-Type: %s%s",
			 push ? "application/proto" : "application/octet-stream", "");
	if (!ret && push)
		ret = add_header(u, "Connect-Protocol-Version: 1%s%s", "", "");
	/* no 100-continue round trip: proxies that ignore it would delay every push */
	if (!ret)
		ret = add_header(u, "Expect:%s%s", "", "");
	if (!ret && *cc->tenant) {
		if (!header_ok(cc->tenant)) {
			snprintf(err, errlen, "collector: tenant holds a line break");
			return -EINVAL;
		}
		ret = add_header(u, "X-Scope-OrgID: %s%s", cc->tenant, "");
	}
	for (size_t i = 0; !ret && i < cc->n_headers && i < CONFIG_MAX_HEADERS; i++) {
		if (!header_ok(cc->headers[i].name) || !header_ok(cc->headers[i].value)) {
			snprintf(err, errlen, "collector: header %s holds a line break",
				 cc->headers[i].name);
			return -EINVAL;
		}
		ret = add_header(u, "%s: %s", cc->headers[i].name, cc->headers[i].value);
	}
	if (!ret)
		ret = build_auth(u, err, errlen);
	else
		snprintf(err, errlen, "collector: %s", strerror(-ret));
	return ret;
}

/* The URL must parse; the logged form drops any user:password it holds. */
static int check_url(struct uploader *u, char *err, size_t errlen)
{
	CURLU *h = curl_url();
	char *s = NULL;
	size_t n;
	int ret = 0;

	if (!h)
		return -ENOMEM;
	if (strnlen(u->cc.url, sizeof(u->cc.url)) == sizeof(u->cc.url) ||
	    curl_url_set(h, CURLUPART_URL, u->cc.url, 0) != CURLUE_OK) {
		snprintf(err, errlen, "collector: invalid url");
		ret = -EINVAL;
		goto out;
	}
	curl_url_set(h, CURLUPART_USER, NULL, 0);
	curl_url_set(h, CURLUPART_PASSWORD, NULL, 0);
	if (curl_url_get(h, CURLUPART_URL, &s, 0) == CURLUE_OK)
		snprintf(u->log_url, sizeof(u->log_url), "%s", s);
	curl_free(s);
	n = strnlen(u->cc.url, sizeof(u->cc.url));
	while (n && u->cc.url[n - 1] == '/')
		n--;
	u->base = strndup(u->cc.url, n);
	if (!u->base)
		ret = -ENOMEM;
out:
	curl_url_cleanup(h);
	return ret;
}

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg)
{
	struct reply *r = arg;
	size_t n = size * nmemb, room = sizeof(r->buf) - r->len;

	memcpy(r->buf + r->len, data, n < room ? n : room);
	r->len += n < room ? n : room;
	return n; /* the rest is read and dropped: the connection stays usable */
}

/* Aborts an in-flight request when the daemon stops. */
static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct uploader *u = arg;

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	return worker_stopping(&u->worker) ? 1 : 0;
}

static int setup_curl(struct uploader *u)
{
	const struct collector_config *cc = &u->cc;
	int64_t ms = cc->timeout_ns > 0 ? cc->timeout_ns / 1000000 : 10000;
	CURLcode rc = CURLE_OK;
	CURL *c;

	u->curl = c = curl_easy_init();
	if (!c)
		return -ENOMEM;
	rc |= curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	rc |= curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	rc |= curl_easy_setopt(c, CURLOPT_ERRORBUFFER, u->errbuf);
	rc |= curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	rc |= curl_easy_setopt(c, CURLOPT_WRITEDATA, &u->reply);
	rc |= curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	rc |= curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	rc |= curl_easy_setopt(c, CURLOPT_XFERINFODATA, u);
	rc |= curl_easy_setopt(c, CURLOPT_HTTPHEADER, u->headers);
	rc |= curl_easy_setopt(c, CURLOPT_USERAGENT, "emberd/" EMBER_VERSION);
	rc |= curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(ms < 1 ? 1 : ms));
	rc |= curl_easy_setopt(c, CURLOPT_POST, 1L);
	rc |= curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
	rc |= curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	if (*cc->ca_file)
		rc |= curl_easy_setopt(c, CURLOPT_CAINFO, cc->ca_file);
	if (cc->insecure_skip_verify) {
		rc |= curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		rc |= curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (u->password) {
		rc |= curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		rc |= curl_easy_setopt(c, CURLOPT_USERNAME, cc->basic_auth_user);
		rc |= curl_easy_setopt(c, CURLOPT_PASSWORD, u->password);
	}
	return rc == CURLE_OK ? 0 : -EINVAL;
}

/* --- waiting ----------------------------------------------------------------------- */

static bool stopping(struct uploader *u)
{
	return worker_stopping(&u->worker);
}

/* Sleeps ns unless stopped; a wake-up does not cut a backoff short. false when stopped. */
static bool sleep_for(struct uploader *u, int64_t ns)
{
	bool go_on;

	worker_lock(&u->worker);
	go_on = worker_sleep(&u->worker, ns);
	worker_unlock(&u->worker);
	return go_on;
}

/*
 * Waits for a stored profile (uploader_wake), the stop, or the idle recheck;
 * sooner with verdicts kept, to write them once the history takes writes.
 */
static void wait_for_work(struct uploader *u)
{
	worker_lock(&u->worker);
	worker_wait(&u->worker, u->n_kept ? HISTORY_RETRY_NS : IDLE_RECHECK_NS);
	worker_unlock(&u->worker);
}

/* --- state ------------------------------------------------------------------------- */

/* Warned once while it fails (a full disk fails every push), again after a success. */
static void save_state(struct uploader *u)
{
	int ret = history_collector_save(u->hist, &u->cs);

	if (ret && !u->state_failed)
		log_warnx("collector: cannot record its state in %s: %s", history_path(u->hist),
			  strerror(-ret));
	u->state_failed = ret != 0;
}

/* Pending in the history, less the profiles whose verdicts are kept (pushed already). */
static void refresh_counts(struct uploader *u)
{
	uint64_t n;
	int64_t oldest;

	if (history_pending_count(u->hist, &n, &oldest))
		return;
	n = n > u->n_kept ? n - u->n_kept : 0;
	worker_lock(&u->worker);
	u->stats.pending = n;
	u->stats.oldest_pending_ns = oldest;
	worker_unlock(&u->worker);
}

/* The collector answered (sent or rejected): an outage, if any, is over. */
static void collector_reachable(struct uploader *u, int64_t now)
{
	uint64_t pending = 0;
	int64_t oldest;

	if (!u->cs.outage_since_ns)
		return;
	history_pending_count(u->hist, &pending, &oldest);
	log_info("collector %s reachable again after %lld s, %llu profiles pending", u->log_url,
		 (long long)((now - u->cs.outage_since_ns) / NS_PER_SEC),
		 (unsigned long long)pending);
	u->cs.outage_since_ns = 0;
	worker_lock(&u->worker);
	u->stats.outage = false;
	u->stats.outage_since_ns = 0;
	worker_unlock(&u->worker);
}

static void record_error(struct uploader *u, long status, const char *msg, int64_t now)
{
	u->cs.last_error_ns = now;
	u->cs.last_status = status;
	snprintf(u->cs.last_error, sizeof(u->cs.last_error), "%s", msg);
	worker_lock(&u->worker);
	u->stats.last_status = status;
	snprintf(u->stats.last_error, sizeof(u->stats.last_error), "%s", msg);
	worker_unlock(&u->worker);
}

/* --- verdicts the history cannot take -------------------------------------------- */

static void count_kept(struct uploader *u)
{
	worker_lock(&u->worker);
	u->stats.unmarked = u->n_kept;
	worker_unlock(&u->worker);
}

/* Keeps a verdict the history refused (err); there is room: pushing pauses when full. */
static void keep_verdict(struct uploader *u, const struct history_pending *p,
			 enum history_push_state state, const char *msg, int64_t now, int err)
{
	size_t i = u->n_kept;

	if (i == UPLOADER_UNMARKED_MAX) /* never: run() pushes only with room */
		return;
	if (!i)
		log_warnx("collector: cannot record push verdicts in %s: %s; kept in memory (at "
			  "most %d) until it can, their profiles are not pushed again",
			  history_path(u->hist), strerror(-err), UPLOADER_UNMARKED_MAX);
	u->kept[i] = (struct history_verdict){.id = p->id, .state = state, .at_ns = now};
	if (msg) {
		snprintf(u->kept_msg[i], sizeof(u->kept_msg[i]), "%s", msg);
		u->kept[i].message = u->kept_msg[i];
	}
	u->n_kept++;
	count_kept(u);
}

/* The verdict on a pushed profile, into the history or, when it cannot take it, kept. */
static void set_verdict(struct uploader *u, const struct history_pending *p,
			enum history_push_state state, const char *msg, int64_t now)
{
	int ret = history_mark(u->hist, p->id, state, msg, now);

	if (ret && ret != -ENOENT) /* -ENOENT: the row went meanwhile, nothing to mark */
		keep_verdict(u, p, state, msg, now, ret);
}

/* Writes the kept verdicts, all in one transaction: 0 when none is left, else why not. */
static int write_kept(struct uploader *u)
{
	int ret;

	if (!u->n_kept)
		return 0;
	ret = history_mark_all(u->hist, u->kept, u->n_kept);
	if (ret)
		return ret;
	log_info("collector: %zu push verdicts kept in memory are written to %s", u->n_kept,
		 history_path(u->hist));
	u->n_kept = 0;
	u->kept_pauses = 0;
	count_kept(u);
	return 0;
}

/* --- verdicts --------------------------------------------------------------------- */

static void on_sent(struct uploader *u, const struct history_pending *p, int64_t now)
{
	set_verdict(u, p, HISTORY_SENT, NULL, now);
	collector_reachable(u, now);
	u->cs.last_success_ns = now;
	worker_lock(&u->worker);
	u->stats.sent++;
	u->stats.last_success_ns = now;
	worker_unlock(&u->worker);
	save_state(u);
}

/*
 * One line per rejection, except that a collector refusing everything (wrong
 * credentials) is not logged each interval: the same message again within
 * REJECT_LOG_NS is only counted, and the count goes with the next line.
 */
static void log_rejected(struct uploader *u, const struct history_pending *p, const char *msg,
			 int64_t now)
{
	char when[32], quiet[64] = "";

	if (!strcmp(msg, u->reject_msg) && now - u->reject_logged_ns < REJECT_LOG_NS) {
		u->reject_quiet++;
		return;
	}
	format_local_time(p->start_ns, when, sizeof(when));
	if (u->reject_quiet)
		snprintf(quiet, sizeof(quiet), " (and %llu more before, not logged)",
			 (unsigned long long)u->reject_quiet);
	log_warnx("collector %s rejected the %s profile of %s at %s: %s%s", u->log_url, p->type,
		  *p->app ? p->app : "the host", when, msg, quiet);
	snprintf(u->reject_msg, sizeof(u->reject_msg), "%s", msg);
	u->reject_logged_ns = now;
	u->reject_quiet = 0;
}

static void on_rejected(struct uploader *u, const struct history_pending *p, long status,
			const char *msg, int64_t now)
{
	set_verdict(u, p, HISTORY_REJECTED, msg, now);
	log_rejected(u, p, msg, now);
	if (status)
		collector_reachable(u, now);
	record_error(u, status, msg, now);
	worker_lock(&u->worker);
	u->stats.rejected++;
	worker_unlock(&u->worker);
	save_state(u);
}

static void on_retry(struct uploader *u, const struct history_pending *p, long status,
		     const char *msg, int64_t now)
{
	char since[32];

	history_mark_attempt(u->hist, p->id, msg, now);
	if (!u->cs.outage_since_ns) {
		u->cs.outage_since_ns = now;
		format_local_time(now, since, sizeof(since));
		log_warnx("collector %s unreachable since %s: %s", u->log_url, since, msg);
	}
	record_error(u, status, msg, now);
	worker_lock(&u->worker);
	u->stats.retries++;
	u->stats.outage = true;
	u->stats.outage_since_ns = u->cs.outage_since_ns;
	worker_unlock(&u->worker);
	save_state(u);
}

/* Pending profiles older than max_age: a default Pyroscope refuses them (ingestion window). */
static void expire_old(struct uploader *u)
{
	int64_t now = real_ns();
	uint64_t n = 0;
	int ret;

	/*
	 * Not while verdicts are kept (the history refused them just now): their
	 * rows are still pending there, and would be counted expired, then set to
	 * their verdict once written.
	 */
	if (u->cc.max_age_ns <= 0 || u->n_kept)
		return;
	ret = history_expire_pending(u->hist, now - u->cc.max_age_ns, now, &n);
	if (ret)
		log_warnx("collector: cannot expire old profiles: %s", strerror(-ret));
	if (!n)
		return;
	log_warnx("collector: %llu unsent profiles older than %lld s expired, kept locally only",
		  (unsigned long long)n, (long long)(u->cc.max_age_ns / NS_PER_SEC));
	worker_lock(&u->worker);
	u->stats.expired += n;
	worker_unlock(&u->worker);
}

/* --- pushing ----------------------------------------------------------------------- */

struct request {
	char *url;
	uint8_t *body;
	size_t len;
};

static void request_free(struct request *r)
{
	free(r->url);
	free(r->body);
}

static int build_request(struct uploader *u, const struct history_pending *p, const uint8_t *pprof,
			 size_t pprof_len, struct request *r)
{
	struct push_profile pp = {
		.type = p->type,
		.app = p->app,
		.labels = p->labels,
		.start_ns = p->start_ns,
		.end_ns = p->end_ns,
		.pprof = pprof,
		.pprof_len = pprof_len,
	};
	const struct config_label *ext = u->cc.external_labels;
	size_t n_ext = u->cc.n_external_labels;
	char *query = NULL;
	int ret;

	memset(r, 0, sizeof(*r));
	if (u->cc.protocol == COLLECTOR_INGEST) {
		ret = push_build_ingest(&pp, ext, n_ext, &query, &r->body, &r->len);
		if (!ret && asprintf(&r->url, "%s" INGEST_PATH "%s", u->base, query) < 0)
			ret = -ENOMEM;
		free(query);
	} else {
		ret = push_build_request(&pp, ext, n_ext, &r->body, &r->len);
		if (!ret && asprintf(&r->url, "%s" PUSH_PATH, u->base) < 0)
			ret = -ENOMEM;
	}
	if (ret) {
		request_free(r);
		memset(r, 0, sizeof(*r));
	}
	return ret;
}

/* The libcurl transport: one HTTP exchange on the kept-alive handle. */
static int curl_send(void *ctx, const char *url, const uint8_t *body, size_t len,
		     struct push_reply *r)
{
	struct uploader *u = ctx;
	CURLcode rc;

	u->reply.len = 0;
	u->errbuf[0] = '\0';
	curl_easy_setopt(u->curl, CURLOPT_URL, url);
	curl_easy_setopt(u->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(u->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	rc = curl_easy_perform(u->curl);
	if (rc != CURLE_OK && stopping(u))
		return -EINTR;
	r->status = 0;
	if (rc == CURLE_OK)
		curl_easy_getinfo(u->curl, CURLINFO_RESPONSE_CODE, &r->status);
	r->curl_code = (int)rc;
	r->curl_error = u->errbuf;
	r->body = u->reply.buf;
	r->body_len = u->reply.len;
	return 0;
}

/* One exchange and its verdict; -EINTR when the daemon stopped it. */
static int send_once(struct uploader *u, const struct request *rq, long *status, char *msg,
		     size_t msglen, enum push_verdict *v)
{
	struct push_reply r = {0};
	int ret = u->transport.send(u->transport.ctx, rq->url, rq->body, rq->len, &r);

	if (ret)
		return ret;
	*status = r.status;
	*v = push_classify(&r, msg, msglen);
	return 0;
}

static int64_t backoff_ns(struct uploader *u, unsigned int retry)
{
	if (u->transport.backoff_ns)
		return u->transport.backoff_ns(u->transport.ctx, retry);
	return push_backoff_ns(retry, next_random(u));
}

static bool too_old(const struct uploader *u, const struct history_pending *p, int64_t now)
{
	return u->cc.max_age_ns > 0 && p->start_ns < now - u->cc.max_age_ns;
}

/* Each dropped (label, reason) is logged once; every drop is counted. */
static void log_label_drops(struct uploader *u, const struct history_pending *p)
{
	struct push_profile pp = {.type = p->type, .app = p->app, .labels = p->labels};
	struct push_labels l;

	push_series_labels_for(&pp, u->cc.external_labels, u->cc.n_external_labels, u->cc.protocol,
			       &l);
	if (!l.dropped)
		return;
	worker_lock(&u->worker);
	u->stats.labels_dropped += l.dropped;
	worker_unlock(&u->worker);
	for (size_t i = 0; i < l.n_drops; i++) {
		const struct push_label_drop *d = &l.drops[i];
		bool seen = false;

		for (size_t j = 0; j < u->n_logged_drops && !seen; j++)
			seen = u->logged_drops[j].reason == d->reason &&
			       !strcmp(u->logged_drops[j].name, d->name);
		if (seen || u->n_logged_drops == MAX_LOGGED_DROPS)
			continue;
		u->logged_drops[u->n_logged_drops++] = *d;
		log_warnx("collector: label %s of %s is not pushed: %s (logged once; "
			  "`emberctl status` counts every drop)",
			  d->name, *p->app ? p->app : "the host", push_drop_reason_text(d->reason));
	}
}

/* Folds are summed, and logged with their figures at most once per FIT_LOG_NS. */
static void note_fit(struct uploader *u, const struct history_pending *p,
		     const struct pushfit_stats *st, int64_t now)
{
	struct fit_log *fl = &u->fit_log;
	size_t t = st->n_values ? st->n_values - 1 : 0;
	double share = st->total[t] > 0 ? (double)st->folded[t] / (double)st->total[t] : 0;

	worker_lock(&u->worker);
	u->stats.samples_merged += st->samples_merged;
	if (st->stacks_folded) {
		u->stats.profiles_folded++;
		u->stats.stacks_folded += st->stacks_folded;
	}
	worker_unlock(&u->worker);
	if (!st->stacks_folded)
		return;
	fl->profiles++;
	fl->stacks_in += st->samples_in - st->samples_merged;
	fl->stacks_folded += st->stacks_folded;
	if (share > fl->share)
		fl->share = share;
	if (fl->logged_ns && now - fl->logged_ns < FIT_LOG_NS)
		return;
	log_warnx(
		"collector: %llu profile(s) over max_samples = %llu or max_profile_bytes = "
		"%llu (the last: %s of %s, %zu bytes): %llu of %llu stacks folded into " PUSHFIT_TRUNCATED
		", at most %.1f%% of a profile's value",
		(unsigned long long)fl->profiles, (unsigned long long)u->limits.max_samples,
		(unsigned long long)u->limits.max_bytes, p->type, *p->app ? p->app : "the host",
		st->bytes_in, (unsigned long long)fl->stacks_folded,
		(unsigned long long)fl->stacks_in, fl->share * 100);
	*fl = (struct fit_log){.logged_ns = now};
}

/*
 * The profile as the collector may take it (labels out, within the limits),
 * into *out; false when it cannot be (then it is marked rejected).
 */
static bool fit_profile(struct uploader *u, const struct history_pending *p, uint8_t **out,
			size_t *out_len)
{
	struct pushfit_stats st;
	char err[160], msg[200];
	int ret;

	if (!p->pprof) {
		on_rejected(u, p, 0, "the stored profile is corrupt", real_ns());
		return false;
	}
	ret = pushfit(p->pprof, p->pprof_len, &u->limits, out, out_len, &st, err, sizeof(err));
	if (ret == -ENOMEM) {
		sleep_for(u, HISTORY_RETRY_NS); /* it stays pending */
		return false;
	}
	if (ret) {
		snprintf(msg, sizeof(msg), "cannot prepare the stored profile: %s", err);
		on_rejected(u, p, 0, msg, real_ns());
		return false;
	}
	note_fit(u, p, &st, real_ns());
	log_label_drops(u, p);
	return true;
}

/* Pushes one profile until it is sent, rejected or expired, or the daemon stops. */
static void push_one(struct uploader *u, const struct history_pending *p)
{
	char msg[256];
	struct request rq;
	enum push_verdict v;
	unsigned int retry = 0;
	uint8_t *fitted;
	size_t fitted_len;
	long status;
	int ret;

	if (!fit_profile(u, p, &fitted, &fitted_len))
		return;
	ret = build_request(u, p, fitted, fitted_len, &rq);
	free(fitted);
	if (ret) {
		if (ret == -ENOMEM)
			sleep_for(u, HISTORY_RETRY_NS);
		else
			on_rejected(u, p, 0, strerror(-ret), real_ns());
		return;
	}
	while (!stopping(u)) {
		if (too_old(u, p, real_ns())) {
			set_verdict(u, p, HISTORY_EXPIRED, EXPIRED_MSG, real_ns());
			worker_lock(&u->worker);
			u->stats.expired++;
			worker_unlock(&u->worker);
			break;
		}
		if (send_once(u, &rq, &status, msg, sizeof(msg), &v))
			break;
		if (v == PUSH_SENT) {
			on_sent(u, p, real_ns());
			break;
		}
		if (v == PUSH_REJECT) {
			on_rejected(u, p, status, msg, real_ns());
			break;
		}
		on_retry(u, p, status, msg, real_ns());
		if (!sleep_for(u, backoff_ns(u, ++retry)))
			break;
	}
	request_free(&rq);
}

/* Whether to take the newest pending profile next; alternates only on a long backlog. */
static bool take_newest(struct uploader *u)
{
	uint64_t pending;
	bool newest = u->newest_turn;

	worker_lock(&u->worker);
	pending = u->stats.pending;
	worker_unlock(&u->worker);
	u->newest_turn = pending > ALTERNATE_MIN_PENDING && !newest;
	return newest && pending > ALTERNATE_MIN_PENDING;
}

/*
 * The list of kept verdicts is full: no push until they are written, so that
 * memory stays bounded and no profile is pushed twice. The pause grows as a
 * push backoff does, up to KEPT_PAUSE_MAX_NS.
 */
static void pause_pushing(struct uploader *u, int err)
{
	int64_t d = backoff_ns(u, ++u->kept_pauses);

	if (u->kept_pauses == 1)
		log_warnx("collector: %d push verdicts wait to be written to %s (%s): pushing "
			  "paused until it takes them",
			  UPLOADER_UNMARKED_MAX, history_path(u->hist), strerror(-err));
	sleep_for(u, d < KEPT_PAUSE_MAX_NS ? d : KEPT_PAUSE_MAX_NS);
}

/* At a stop, verdicts still kept are lost: their profiles go again after a restart. */
static void write_kept_at_stop(struct uploader *u)
{
	size_t n = u->n_kept;
	int ret = write_kept(u);

	if (ret)
		log_warnx("collector: %zu push verdicts could not be written to %s (%s): after a "
			  "restart, their profiles are pushed again",
			  n, history_path(u->hist), strerror(-ret));
}

static void run(struct worker *w, void *arg)
{
	struct uploader *u = arg;
	struct history_pending p;
	int ret;

	while (!stopping(u)) {
		ret = write_kept(u);
		if (ret && u->n_kept == UPLOADER_UNMARKED_MAX) {
			pause_pushing(u, ret);
			continue;
		}
		expire_old(u);
		refresh_counts(u);
		ret = history_next_pending_except(u->hist, take_newest(u), u->kept, u->n_kept, &p);
		if (ret == -ENOENT) {
			wait_for_work(u);
			continue;
		}
		if (ret) {
			log_warnx("collector: cannot read pending profiles from %s: %s",
				  history_path(u->hist), strerror(-ret));
			sleep_for(u, HISTORY_RETRY_NS);
			continue;
		}
		push_one(u, &p);
		history_pending_free(&p);
	}
	write_kept_at_stop(u);
	refresh_counts(u);
	(void)w;
}

/* --- lifecycle --------------------------------------------------------------------- */

/* Stops the thread (an in-flight request is aborted) and frees the rest. */
static void free_uploader(struct uploader *u)
{
	worker_stop(&u->worker);
	for (struct curl_slist *l = u->headers; l; l = l->next)
		explicit_bzero(l->data, strlen(l->data)); /* the bearer token */
	curl_slist_free_all(u->headers);
	curl_easy_cleanup(u->curl);
	if (u->password) {
		explicit_bzero(u->password, strlen(u->password));
		free(u->password);
	}
	history_close(u->hist);
	free(u->base);
	free(u);
	curl_global_cleanup();
}

/* Last state from a previous run, kept if it was about the same collector. */
static void load_state(struct uploader *u)
{
	struct history_collector_state old;

	if (!history_collector_load(u->hist, &old) && !strcmp(old.url, u->log_url))
		u->cs = old;
	snprintf(u->cs.url, sizeof(u->cs.url), "%s", u->log_url);
	u->cs.outage_since_ns = 0; /* the first failure of this run starts a new one */
	u->stats.last_success_ns = u->cs.last_success_ns;
	u->stats.last_status = u->cs.last_status;
	snprintf(u->stats.last_error, sizeof(u->stats.last_error), "%s", u->cs.last_error);
	save_state(u);
}

static int setup(struct uploader *u, const char *data_dir, char *err, size_t errlen)
{
	const char *herr = NULL;
	int ret;

	if (!*u->cc.url) {
		snprintf(err, errlen, "collector: no url");
		return -EINVAL;
	}
	ret = check_url(u, err, errlen);
	if (!ret)
		ret = build_headers(u, err, errlen);
	if (ret)
		return ret;
	ret = u->transport.send ? 0 : setup_curl(u);
	if (ret) {
		snprintf(err, errlen, "collector: libcurl refused an option: %s", strerror(-ret));
		return ret;
	}
	u->hist = history_open(data_dir, false, &herr);
	if (!u->hist) {
		ret = -errno;
		snprintf(err, errlen, "collector: cannot open the history: %s", herr ? herr : "?");
		return ret;
	}
	load_state(u);
	if (getrandom(&u->rnd, sizeof(u->rnd), GRND_NONBLOCK) != sizeof(u->rnd) || !u->rnd)
		u->rnd = (uint64_t)mono_ns() | 1;
	return 0;
}

int uploader_start_with(const struct collector_config *cc, const char *data_dir,
			const struct uploader_transport *t, struct uploader **out, char *err,
			size_t errlen)
{
	struct uploader *u;
	int ret;

	*out = NULL;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, errlen, "collector: libcurl cannot initialize");
		return -ENOMEM;
	}
	u = calloc(1, sizeof(*u));
	if (!u || worker_init(&u->worker)) {
		free(u);
		curl_global_cleanup();
		snprintf(err, errlen, "collector: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	u->cc = *cc;
	u->limits.max_bytes = cc->max_profile_bytes;
	u->limits.max_samples = cc->max_samples;
	u->limits.server_symbolization = cc->server_symbolization;
	if (t)
		u->transport = *t;
	ret = setup(u, data_dir, err, errlen);
	if (!u->transport.send)
		u->transport = (struct uploader_transport){.send = curl_send, .ctx = u};
	if (!ret) {
		/* the thread blocks every signal: the daemon takes them through its signalfd */
		ret = worker_start(&u->worker, "ember-upload", run, u);
		if (ret)
			snprintf(err, errlen, "collector: no thread: %s", strerror(-ret));
	}
	if (ret) {
		free_uploader(u);
		return ret;
	}
	*out = u;
	return 0;
}

int uploader_start(const struct collector_config *cc, const char *data_dir, struct uploader **out,
		   char *err, size_t errlen)
{
	return uploader_start_with(cc, data_dir, NULL, out, err, errlen);
}

void uploader_wake(struct uploader *u)
{
	if (!u)
		return;
	worker_wake(&u->worker);
}

void uploader_stop(struct uploader *u)
{
	if (!u)
		return;
	free_uploader(u); /* stops the thread first */
}

void uploader_stats(struct uploader *u, struct uploader_stats *st)
{
	if (!u) {
		memset(st, 0, sizeof(*st));
		return;
	}
	worker_lock(&u->worker);
	*st = u->stats;
	worker_unlock(&u->worker);
}
