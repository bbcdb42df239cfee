/* SPDX-License-Identifier: MIT */
/*
 * The control socket's wire protocol between emberctl and emberd: framed,
 * bounded, validated messages. Pure: bytes in, struct out, no I/O.
 */
#ifndef EMBER_CTLPROTO_H
#define EMBER_CTLPROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compress.h"
#include "config.h"

/*
 * A frame: 'E' 'C', version, type, then the payload's length (u32, little
 * endian) and the payload. Integers are little endian; a string is a u16
 * length and that many bytes, no NUL.
 */
#define CTL_HDR_LEN 8
#define CTL_VERSION 1
/* Largest request (a capture names at most one app): small, so that a peer cannot make us buffer. */
#define CTL_MAX_REQUEST 512
/* Largest reply: a gzipped profile is smaller than the decompressed bound. */
#define CTL_MAX_REPLY (EMBER_MAX_PROFILE_BYTES + 4096)
/* Longest error text carried: a refused BPF program's, with its verifier's last lines. */
#define CTL_TEXT_MAX 768

/* Bounds of a capture, checked on both sides. */
#define CTL_DURATION_MIN_MS 1000
#define CTL_DURATION_MAX_MS (10 * 60 * 1000)
/* A malloc capture slows every allocation of its process: a much shorter cap. */
#define CTL_MALLOC_DURATION_MAX_MS (60 * 1000)

/* Message types: requests from emberctl, replies from emberd. */
enum ctl_type {
	CTL_CAPTURE = 1,   /* request: sample a target at hz for duration_ms */
	CTL_CANCEL = 2,	   /* request: stop the running capture, write nothing */
	CTL_ACCEPTED = 16, /* reply: the capture runs until end_ns */
	CTL_PROGRESS = 17, /* reply: elapsed_ms so far, samples counted */
	CTL_ERROR = 18,	   /* reply: refused or failed; code (errno) and text */
	CTL_RESULT = 19,   /* reply: the gzipped pprof profile, then the connection ends */
};

/* What a capture samples: one process, or every process of one application. */
enum ctl_target {
	CTL_TARGET_PID = 1,
	CTL_TARGET_APP = 2,
};

/*
 * What a capture records. On the wire, a u8 after the target for any kind but
 * CPU, which has none: a CPU request is the same bytes as before kinds existed
 * (either emberctl works with either emberd), and every message has one encoding.
 */
enum ctl_kind {
	CTL_KIND_CPU = 0,    /* on-CPU stacks sampled at hz */
	CTL_KIND_MALLOC = 1, /* every malloc/calloc/realloc of one pid, by uprobes */
	CTL_KIND_NR,	     /* not a kind: what an unknown or redundant kind byte decodes to */
};

/* One decoded message; which fields matter depends on type. */
struct ctl_msg {
	enum ctl_type type;
	/* CTL_CAPTURE */
	enum ctl_target target;
	uint32_t pid;		   /* CTL_TARGET_PID: a process id > 0 */
	char app[CONFIG_NAME_MAX]; /* CTL_TARGET_APP: a service name, non-empty, printable */
	uint32_t hz;		   /* EMBER_HZ_MIN..EMBER_HZ_MAX */
	uint32_t duration_ms;	   /* CTL_DURATION_MIN_MS..CTL_DURATION_MAX_MS */
	enum ctl_kind kind;	   /* CTL_KIND_MALLOC: a pid, at most CTL_MALLOC_DURATION_MAX_MS */
	/* CTL_ACCEPTED */
	int64_t end_ns; /* CLOCK_REALTIME when the capture ends by itself */
	/* CTL_PROGRESS, CTL_RESULT */
	uint32_t elapsed_ms;
	uint64_t samples;
	/* CTL_RESULT */
	uint32_t processes;
	const uint8_t *data; /* the gzipped profile: points into the decoded buffer */
	size_t data_len;
	/* CTL_ERROR */
	int32_t code;		 /* a positive errno: EBUSY, ESRCH, EPERM, ... */
	char text[CTL_TEXT_MAX]; /* one line, printable */
};

/*
 * Measures the frame at the start of buf: 0 while more bytes are needed, its
 * length (header included) once buf holds all of it, or a negative errno:
 * -EBADMSG (not a frame of ours), -EMSGSIZE (longer than max). Once the header
 * is in, *need is the whole frame's length, so the reader can make room.
 */
long ctl_frame_len(const uint8_t *buf, size_t len, size_t max, size_t *need);

/*
 * Encodes m into a malloc'd frame. 0, or -EINVAL when m is not valid (the same
 * checks as the decoder), -ENOMEM.
 */
int ctl_encode(const struct ctl_msg *m, uint8_t **out, size_t *out_len);

/*
 * Decodes one whole frame (as ctl_frame_len measured it) and validates it.
 * 0, or a negative errno with a one-line reason in err. m->data points into buf.
 */
int ctl_decode(const uint8_t *buf, size_t len, struct ctl_msg *m, char *err, size_t errlen);

/* "cpu" or "malloc": the kind's name, as emberctl capture --type takes it. */
const char *ctl_kind_name(enum ctl_kind kind);

/* "pid 1234" or "app checkout": what a capture request targets. */
void ctl_target_name(const struct ctl_msg *m, char *buf, size_t len);

#endif
