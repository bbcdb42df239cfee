// SPDX-License-Identifier: MIT
/*
 * Logging: to the journal when stderr is connected to it (JOURNAL_STREAM names
 * stderr's device and inode, as systemd.exec(5) documents), to stderr
 * otherwise; repeats of one message are rate-limited and summarized.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* the CODE_ fields are the caller's, which log_emit() passes, not this file's */
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include "clock.h"
#include "log.h"

/* syslog priorities of the levels: err 3, warning 4, info 6, debug 7 */
static const int level_prio[] = {3, 4, 6, 7};
static const char *const level_tag[] = {"error: ", "warning: ", "", "debug: "};

static const char *log_ident = "ember";
static int log_level = LOG_LVL_INFO;
static int log_journal = -1; /* unknown until first use */
/* The daemon's limiter; the uploader and loader threads log too. */
static struct log_limiter limiter = {.window_ns = LOG_LIMIT_WINDOW_NS, .burst = LOG_LIMIT_BURST};
static pthread_mutex_t limiter_lock = PTHREAD_MUTEX_INITIALIZER;

/* JOURNAL_STREAM is "DEV:INODE" of the stream journald gave us; stderr may have been redirected. */
static bool stderr_is_journal(void)
{
	const char *env = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char end;

	if (!env || sscanf(env, "%llu:%llu%c", &dev, &ino, &end) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st))
		return false;
	return st.st_dev == (dev_t)dev && st.st_ino == (ino_t)ino;
}

void log_init(const char *ident, int level)
{
	log_ident = ident;
	log_level = level;
	log_journal = stderr_is_journal();
}

void log_set_level(int level)
{
	log_level = level;
}

bool log_enabled(int level)
{
	return level <= log_level;
}

/* Where the caller was, for the journal's CODE_ fields. */
struct log_site {
	const char *file, *func;
	int line;
};

/* One entry to the journal; sd_journal_sendv() so that only the caller's CODE_ fields go. */
static int journal_write(int level, const char *msg, const char *suffix, uint32_t repeated,
			 const struct log_site *at)
{
	char f[7][LOG_LINE_MAX + 64];
	struct iovec iov[7];
	int n = 0;

	snprintf(f[n++], sizeof(f[0]), "MESSAGE=%s%s", msg, suffix);
	snprintf(f[n++], sizeof(f[0]), "PRIORITY=%d", level_prio[level]);
	snprintf(f[n++], sizeof(f[0]), "SYSLOG_IDENTIFIER=%s", log_ident);
	if (at) {
		snprintf(f[n++], sizeof(f[0]), "CODE_FILE=%s", at->file);
		snprintf(f[n++], sizeof(f[0]), "CODE_LINE=%d", at->line);
		snprintf(f[n++], sizeof(f[0]), "CODE_FUNC=%s", at->func);
	}
	if (repeated) /* a summary: how many were suppressed, for journalctl EMBER_REPEATED= */
		snprintf(f[n++], sizeof(f[0]), "EMBER_REPEATED=%" PRIu32, repeated);
	for (int i = 0; i < n; i++) {
		iov[i].iov_base = f[i];
		iov[i].iov_len = strlen(f[i]);
	}
	return sd_journal_sendv(iov, n);
}

/* One finished line to the journal (falling back to stderr) or to stderr. */
static void log_write(int level, const char *msg, uint32_t repeated, const struct log_site *at)
{
	char suffix[48] = "";

	if (repeated)
		snprintf(suffix, sizeof(suffix), " (repeated %" PRIu32 " times)", repeated);
	if (log_journal < 0)
		log_journal = stderr_is_journal();
	/* the journal carries the level as PRIORITY=: no "warning: " tag in the text */
	if (log_journal && journal_write(level, msg, suffix, repeated, at) == 0)
		return;
	if (log_journal) /* journald reads a "<N>" prefix on its stream as the priority */
		fprintf(stderr, "<%d>%s%s%s\n", level_prio[level], level_tag[level], msg, suffix);
	else
		fprintf(stderr, "%s: %s%s%s\n", log_ident, level_tag[level], msg, suffix);
}

static void write_summary(int level, const char *last, uint32_t repeats, void *arg)
{
	(void)arg;
	log_write(level, last, repeats, NULL);
}

void log_flush(bool all)
{
	pthread_mutex_lock(&limiter_lock);
	log_limiter_flush(&limiter, mono_ns(), all, write_summary, NULL);
	pthread_mutex_unlock(&limiter_lock);
}

void log_emit(int level, bool with_errno, const char *file, int line, const char *func,
	      const char *fmt, ...)
{
	const struct log_site at = {.file = file, .func = func, .line = line};
	int saved = errno, off;
	char msg[LOG_LINE_MAX];
	bool allowed = true;
	va_list ap;

	if (level < LOG_LVL_ERR || level > LOG_LVL_DEBUG || !log_enabled(level))
		return;
	va_start(ap, fmt);
	off = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (with_errno && off >= 0 && (size_t)off < sizeof(msg))
		snprintf(msg + off, sizeof(msg) - off, ": %s", strerror(saved));
	pthread_mutex_lock(&limiter_lock);
	log_limiter_flush(&limiter, mono_ns(), false, write_summary, NULL);
	/* debug lines are asked for (-v): every one is written */
	if (level != LOG_LVL_DEBUG)
		allowed =
			log_limiter_allow(&limiter, log_limit_key(fmt, msg), level, msg, mono_ns());
	if (allowed)
		log_write(level, msg, 0, &at);
	pthread_mutex_unlock(&limiter_lock);
	errno = saved;
}

/* --- the rate limiter ------------------------------------------------------- */

void log_limiter_init(struct log_limiter *l, int64_t window_ns, uint32_t burst)
{
	memset(l, 0, sizeof(*l));
	l->window_ns = window_ns > 0 ? window_ns : 1;
	l->burst = burst ? burst : 1;
}

/* FNV-1a, 64 bits: a key needs only to tell messages apart, not resist anyone. */
static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

uint64_t log_limit_key(const char *fmt, const char *text)
{
	size_t literal = 0;
	uint64_t h;

	for (const char *p = fmt; *p; p++) {
		if (*p != '%') {
			literal++;
			continue;
		}
		/* skip a conversion: flags, width, precision, length, then its letter */
		while (p[1] && strchr("#0- +'.*123456789hljztL", p[1]))
			p++;
		if (p[1])
			p++;
	}
	h = fnv1a(literal < 4 ? text : fmt);
	return h ? h : 1;
}

static struct log_limit_slot *slot_find(struct log_limiter *l, uint64_t key)
{
	for (size_t i = 0; i < LOG_LIMIT_SLOTS; i++)
		if (l->slot[i].key == key)
			return &l->slot[i];
	return NULL;
}

/* A free slot, else the oldest one with nothing waiting to be summarized. */
static struct log_limit_slot *slot_take(struct log_limiter *l)
{
	struct log_limit_slot *best = NULL;

	for (size_t i = 0; i < LOG_LIMIT_SLOTS; i++) {
		struct log_limit_slot *s = &l->slot[i];

		if (!s->key)
			return s;
		if (!s->suppressed && (!best || s->start_ns < best->start_ns))
			best = s;
	}
	return best;
}

bool log_limiter_allow(struct log_limiter *l, uint64_t key, int level, const char *text,
		       int64_t now_ns)
{
	struct log_limit_slot *s = slot_find(l, key);

	if (!s) {
		s = slot_take(l);
		if (!s)
			return true; /* every slot holds a pending summary: do not lose this one */
		s->key = key;
		s->start_ns = now_ns;
		s->seen = 0;
		s->suppressed = 0;
	} else if (now_ns - s->start_ns >= l->window_ns) {
		s->start_ns = now_ns;
		s->seen = 0;
	}
	if (++s->seen <= l->burst)
		return true;
	s->suppressed++;
	s->level = level;
	snprintf(s->last, sizeof(s->last), "%s", text);
	return false;
}

size_t log_limiter_flush(struct log_limiter *l, int64_t now_ns, bool all, log_summary_fn fn,
			 void *arg)
{
	size_t n = 0;

	for (size_t i = 0; i < LOG_LIMIT_SLOTS; i++) {
		struct log_limit_slot *s = &l->slot[i];

		if (!s->key || !s->suppressed || (!all && now_ns - s->start_ns < l->window_ns))
			continue;
		fn(s->level, s->last, s->suppressed, arg);
		s->suppressed = 0;
		n++;
	}
	return n;
}
