// SPDX-License-Identifier: MIT
/*
 * The control socket's frames: encoding and a decoder that trusts nothing
 * (lengths, ranges, strings) since either end may be hostile or broken.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctlproto.h"

#define MAGIC0 'E'
#define MAGIC1 'C'
/* errno values fit here; anything else is not one. */
#define CODE_MAX 4095

/* A bounded writer: ok turns false on overflow and stays so. */
struct wr {
	uint8_t *p;
	size_t n, cap;
	bool ok;
};

/* A bounded reader: ok turns false on underflow and stays so. */
struct rd {
	const uint8_t *p;
	size_t n, off;
	bool ok;
};

static void put(struct wr *w, const void *v, size_t len)
{
	if (!w->ok || len > w->cap - w->n) {
		w->ok = false;
		return;
	}
	memcpy(w->p + w->n, v, len);
	w->n += len;
}

static void put_u8(struct wr *w, uint8_t v)
{
	put(w, &v, 1);
}

static void put_u32(struct wr *w, uint32_t v)
{
	uint8_t b[4] = {v, v >> 8, v >> 16, v >> 24};

	put(w, b, 4);
}

static void put_u64(struct wr *w, uint64_t v)
{
	put_u32(w, (uint32_t)v);
	put_u32(w, (uint32_t)(v >> 32));
}

static void put_str(struct wr *w, const char *s)
{
	size_t len = strlen(s);
	uint8_t b[2] = {len, len >> 8};

	put(w, b, 2);
	put(w, s, len);
}

static const uint8_t *get(struct rd *r, size_t len)
{
	const uint8_t *v;

	if (!r->ok || len > r->n - r->off) {
		r->ok = false;
		return NULL;
	}
	v = r->p + r->off;
	r->off += len;
	return v;
}

static uint8_t get_u8(struct rd *r)
{
	const uint8_t *b = get(r, 1);

	return b ? b[0] : 0;
}

static uint32_t get_u32(struct rd *r)
{
	const uint8_t *b = get(r, 4);

	return b ? (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
			       (uint32_t)b[3] << 24 :
		   0;
}

static uint64_t get_u64(struct rd *r)
{
	uint64_t lo = get_u32(r);

	return lo | (uint64_t)get_u32(r) << 32;
}

/* A string of at most size - 1 printable ASCII bytes into out; false otherwise. */
static bool get_str(struct rd *r, char *out, size_t size)
{
	const uint8_t *b = get(r, 2), *s;
	size_t len = b ? (size_t)b[0] | (size_t)b[1] << 8 : 0;

	s = get(r, len);
	if (!r->ok || len >= size)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	memcpy(out, s, len);
	out[len] = '\0';
	return true;
}

static bool printable(const char *s, size_t size)
{
	size_t len = strnlen(s, size);

	if (len == size)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* The checks a capture request must pass, shared by both directions. */
static int check_capture(const struct ctl_msg *m, char *err, size_t errlen)
{
	if (m->hz < EMBER_HZ_MIN || m->hz > EMBER_HZ_MAX)
		return fail(err, errlen, -ERANGE, "hz %u is out of range %d..%d", m->hz,
			    EMBER_HZ_MIN, EMBER_HZ_MAX);
	if (m->duration_ms < CTL_DURATION_MIN_MS || m->duration_ms > CTL_DURATION_MAX_MS)
		return fail(err, errlen, -ERANGE, "duration %u ms is out of range 1s..10m",
			    m->duration_ms);
	if (m->target == CTL_TARGET_PID && (m->pid == 0 || m->pid > INT32_MAX))
		return fail(err, errlen, -EINVAL, "pid %u is not a process id", m->pid);
	if (m->target == CTL_TARGET_APP && (!m->app[0] || !printable(m->app, sizeof(m->app))))
		return fail(err, errlen, -EINVAL, "the app name is empty or not printable");
	if (m->target != CTL_TARGET_PID && m->target != CTL_TARGET_APP)
		return fail(err, errlen, -EINVAL, "unknown capture target %d", (int)m->target);
	if ((unsigned int)m->kind >= CTL_KIND_NR)
		return fail(err, errlen, -EINVAL, "unknown capture type %d", (int)m->kind);
	if (m->kind == CTL_KIND_MALLOC && m->target != CTL_TARGET_PID)
		return fail(err, errlen, -EINVAL, "a malloc capture takes one pid, not an app");
	if (m->kind == CTL_KIND_MALLOC && m->duration_ms > CTL_MALLOC_DURATION_MAX_MS)
		return fail(err, errlen, -ERANGE,
			    "duration %u ms is over the malloc capture's cap of %d s",
			    m->duration_ms, CTL_MALLOC_DURATION_MAX_MS / 1000);
	return 0;
}

static int check(const struct ctl_msg *m, char *err, size_t errlen)
{
	switch (m->type) {
	case CTL_CAPTURE:
		return check_capture(m, err, errlen);
	case CTL_CANCEL:
	case CTL_ACCEPTED:
	case CTL_PROGRESS:
		return 0;
	case CTL_ERROR:
		if (m->code <= 0 || m->code > CODE_MAX)
			return fail(err, errlen, -EINVAL, "error code %d is not an errno",
				    (int)m->code);
		if (!printable(m->text, sizeof(m->text)))
			return fail(err, errlen, -EINVAL, "error text not printable");
		return 0;
	case CTL_RESULT:
		if (m->data_len > EMBER_MAX_PROFILE_BYTES || (m->data_len && !m->data))
			return fail(err, errlen, -EMSGSIZE, "profile of %zu bytes is too large",
				    m->data_len);
		if (!is_gzip(m->data, m->data_len))
			return fail(err, errlen, -EINVAL, "the profile is not gzipped");
		return 0;
	}
	return fail(err, errlen, -EINVAL, "unknown message type %d", (int)m->type);
}

static void payload(struct wr *w, const struct ctl_msg *m)
{
	switch (m->type) {
	case CTL_CAPTURE:
		put_u8(w, m->target);
		put_u32(w, m->hz);
		put_u32(w, m->duration_ms);
		if (m->target == CTL_TARGET_PID)
			put_u32(w, m->pid);
		else
			put_str(w, m->app);
		if (m->kind != CTL_KIND_CPU)
			put_u8(w, m->kind);
		break;
	case CTL_CANCEL:
		break;
	case CTL_ACCEPTED:
		put_u64(w, (uint64_t)m->end_ns);
		put_u32(w, m->hz);
		put_u32(w, m->duration_ms);
		break;
	case CTL_PROGRESS:
		put_u32(w, m->elapsed_ms);
		put_u64(w, m->samples);
		break;
	case CTL_ERROR:
		put_u32(w, (uint32_t)m->code);
		put_str(w, m->text);
		break;
	case CTL_RESULT:
		put_u32(w, m->elapsed_ms);
		put_u64(w, m->samples);
		put_u32(w, m->processes);
		put_u32(w, (uint32_t)m->data_len);
		put(w, m->data, m->data_len);
		break;
	}
}

int ctl_encode(const struct ctl_msg *m, uint8_t **out, size_t *out_len)
{
	size_t cap = CTL_HDR_LEN + 64 + CTL_TEXT_MAX + sizeof(m->app) +
		     (m->type == CTL_RESULT ? m->data_len : 0);
	struct wr w = {.cap = cap, .ok = true};
	size_t len;

	if (check(m, NULL, 0))
		return -EINVAL;
	w.p = malloc(cap);
	if (!w.p)
		return -ENOMEM;
	w.n = CTL_HDR_LEN;
	payload(&w, m);
	if (!w.ok) {
		free(w.p);
		return -EINVAL;
	}
	len = w.n - CTL_HDR_LEN;
	w.p[0] = MAGIC0;
	w.p[1] = MAGIC1;
	w.p[2] = CTL_VERSION;
	w.p[3] = m->type;
	w.p[4] = len;
	w.p[5] = len >> 8;
	w.p[6] = len >> 16;
	w.p[7] = len >> 24;
	*out = w.p;
	*out_len = w.n;
	return 0;
}

long ctl_frame_len(const uint8_t *buf, size_t len, size_t max, size_t *need)
{
	uint64_t total;

	*need = CTL_HDR_LEN;
	if (len >= 1 && buf[0] != MAGIC0)
		return -EBADMSG;
	if (len >= 2 && buf[1] != MAGIC1)
		return -EBADMSG;
	if (len >= 3 && buf[2] != CTL_VERSION)
		return -EPROTO;
	if (len < CTL_HDR_LEN)
		return 0;
	total = CTL_HDR_LEN + ((uint64_t)buf[4] | (uint64_t)buf[5] << 8 | (uint64_t)buf[6] << 16 |
			       (uint64_t)buf[7] << 24);
	if (total > max)
		return -EMSGSIZE;
	*need = total;
	return len >= total ? (long)total : 0;
}

static void decode_payload(struct rd *r, struct ctl_msg *m, char *err, size_t errlen, bool *bad_str)
{
	const char *what = NULL;

	switch (m->type) {
	case CTL_CAPTURE:
		m->target = get_u8(r);
		m->hz = get_u32(r);
		m->duration_ms = get_u32(r);
		if (m->target == CTL_TARGET_PID)
			m->pid = get_u32(r);
		else if (m->target == CTL_TARGET_APP && !get_str(r, m->app, sizeof(m->app)))
			what = "app name";
		m->kind = CTL_KIND_CPU; /* no kind byte: a CPU capture */
		if (r->ok && r->off < r->n) {
			m->kind = get_u8(r);
			if (m->kind == CTL_KIND_CPU) /* implied, never written */
				m->kind = CTL_KIND_NR;
		}
		break;
	case CTL_CANCEL:
		break;
	case CTL_ACCEPTED:
		m->end_ns = (int64_t)get_u64(r);
		m->hz = get_u32(r);
		m->duration_ms = get_u32(r);
		break;
	case CTL_PROGRESS:
		m->elapsed_ms = get_u32(r);
		m->samples = get_u64(r);
		break;
	case CTL_ERROR:
		m->code = (int32_t)get_u32(r);
		if (!get_str(r, m->text, sizeof(m->text)))
			what = "error text";
		break;
	case CTL_RESULT:
		m->elapsed_ms = get_u32(r);
		m->samples = get_u64(r);
		m->processes = get_u32(r);
		m->data_len = get_u32(r);
		m->data = get(r, m->data_len);
		break;
	}
	if (what && r->ok) {
		*bad_str = true;
		snprintf(err, errlen, "%s too long or not printable", what);
	}
}

int ctl_decode(const uint8_t *buf, size_t len, struct ctl_msg *m, char *err, size_t errlen)
{
	struct rd r = {.p = buf, .n = len, .off = CTL_HDR_LEN, .ok = true};
	bool bad_str = false;
	size_t need;
	long flen = ctl_frame_len(buf, len, len, &need);

	memset(m, 0, sizeof(*m));
	if (flen < 0 || (size_t)flen != len)
		return fail(err, errlen, -EBADMSG, "not a control frame (bad header or length)");
	m->type = buf[3];
	if (m->type != CTL_CAPTURE && m->type != CTL_CANCEL && m->type != CTL_ACCEPTED &&
	    m->type != CTL_PROGRESS && m->type != CTL_ERROR && m->type != CTL_RESULT)
		return fail(err, errlen, -EBADMSG, "unknown message type %u", buf[3]);
	decode_payload(&r, m, err, errlen, &bad_str);
	if (bad_str)
		return -EBADMSG;
	if (!r.ok)
		return fail(err, errlen, -EBADMSG, "message type %u is truncated", buf[3]);
	if (r.off != len)
		return fail(err, errlen, -EBADMSG, "message type %u has %zu trailing bytes", buf[3],
			    len - r.off);
	return check(m, err, errlen) ? -EBADMSG : 0;
}

const char *ctl_kind_name(enum ctl_kind kind)
{
	return kind == CTL_KIND_MALLOC ? "malloc" : kind == CTL_KIND_CPU ? "cpu" : "?";
}

void ctl_target_name(const struct ctl_msg *m, char *buf, size_t len)
{
	if (m->target == CTL_TARGET_PID)
		snprintf(buf, len, "pid %u", m->pid);
	else
		snprintf(buf, len, "app %s", m->app);
}
