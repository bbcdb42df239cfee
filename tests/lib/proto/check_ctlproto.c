// SPDX-License-Identifier: MIT
/*
 * The control protocol: exact bytes of a request, round trips of every message,
 * and refusal of every malformed or out-of-range frame.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "ctlproto.h"
#include "suites.h"

static struct ctl_msg capture_pid(uint32_t pid, uint32_t hz, uint32_t ms)
{
	struct ctl_msg m = {.type = CTL_CAPTURE,
			    .target = CTL_TARGET_PID,
			    .pid = pid,
			    .hz = hz,
			    .duration_ms = ms};
	return m;
}

/* Encodes m, decodes it back into out; the decoder's return value. */
static int round_trip(const struct ctl_msg *m, struct ctl_msg *out, uint8_t **buf)
{
	char err[128];
	size_t len;

	ck_assert_int_eq(ctl_encode(m, buf, &len), 0);
	return ctl_decode(*buf, len, out, err, sizeof(err));
}

START_TEST(test_capture_pid_bytes)
{
	static const uint8_t want[] = {
		'E',
		'C',
		1,
		CTL_CAPTURE,
		13,
		0,
		0,
		0, /* header: 13 bytes of payload */
		CTL_TARGET_PID,
		0xf3,
		0x01,
		0,
		0, /* 499 Hz */
		0x88,
		0x13,
		0,
		0, /* 5000 ms */
		0xd2,
		0x04,
		0,
		0, /* pid 1234 */
	};
	struct ctl_msg m = capture_pid(1234, 499, 5000), back;
	uint8_t *buf;
	size_t len;
	char err[128];

	ck_assert_int_eq(ctl_encode(&m, &buf, &len), 0);
	ck_assert_uint_eq(len, sizeof(want));
	ck_assert_mem_eq(buf, want, sizeof(want));
	ck_assert_int_eq(ctl_decode(want, sizeof(want), &back, err, sizeof(err)), 0);
	ck_assert_int_eq(back.type, CTL_CAPTURE);
	ck_assert_int_eq(back.target, CTL_TARGET_PID);
	ck_assert_uint_eq(back.pid, 1234);
	ck_assert_uint_eq(back.hz, 499);
	ck_assert_uint_eq(back.duration_ms, 5000);
	free(buf);
}
END_TEST

START_TEST(test_round_trips)
{
	static const uint8_t gz[] = {0x1f, 0x8b, 8, 0, 1, 2, 3};
	struct ctl_msg app = {.type = CTL_CAPTURE,
			      .target = CTL_TARGET_APP,
			      .app = "checkout",
			      .hz = 999,
			      .duration_ms = 600000};
	struct ctl_msg acc = {.type = CTL_ACCEPTED,
			      .end_ns = 1795317240123456789LL,
			      .hz = 7,
			      .duration_ms = 1000};
	struct ctl_msg prog = {.type = CTL_PROGRESS, .elapsed_ms = 2500, .samples = 1ULL << 40};
	struct ctl_msg er = {.type = CTL_ERROR, .code = EBUSY, .text = "pid 7 is busy"};
	struct ctl_msg res = {.type = CTL_RESULT,
			      .elapsed_ms = 5001,
			      .samples = 2495,
			      .processes = 1,
			      .data = gz,
			      .data_len = sizeof(gz)};
	struct ctl_msg cancel = {.type = CTL_CANCEL}, b;
	uint8_t *buf;

	ck_assert_int_eq(round_trip(&app, &b, &buf), 0);
	ck_assert_str_eq(b.app, "checkout");
	ck_assert_int_eq(b.target, CTL_TARGET_APP);
	ck_assert_uint_eq(b.hz, 999);
	ck_assert_uint_eq(b.duration_ms, 600000);
	free(buf);
	ck_assert_int_eq(round_trip(&acc, &b, &buf), 0);
	ck_assert_int_eq(b.end_ns, 1795317240123456789LL);
	ck_assert_uint_eq(b.hz, 7);
	free(buf);
	ck_assert_int_eq(round_trip(&prog, &b, &buf), 0);
	ck_assert_uint_eq(b.elapsed_ms, 2500);
	ck_assert_uint_eq(b.samples, 1ULL << 40);
	free(buf);
	ck_assert_int_eq(round_trip(&er, &b, &buf), 0);
	ck_assert_int_eq(b.code, EBUSY);
	ck_assert_str_eq(b.text, "pid 7 is busy");
	free(buf);
	ck_assert_int_eq(round_trip(&res, &b, &buf), 0);
	ck_assert_uint_eq(b.samples, 2495);
	ck_assert_uint_eq(b.processes, 1);
	ck_assert_uint_eq(b.data_len, sizeof(gz));
	ck_assert_mem_eq(b.data, gz, sizeof(gz));
	free(buf);
	ck_assert_int_eq(round_trip(&cancel, &b, &buf), 0);
	ck_assert_int_eq(b.type, CTL_CANCEL);
	free(buf);
}
END_TEST

/* Out-of-range requests are refused by the encoder and, forged, by the decoder. */
START_TEST(test_bounds)
{
	static const struct {
		uint32_t pid, hz, ms;
	} bad[] = {
		{1, 0, 5000},	  {1, 1000, 5000}, {1, 499, 999},
		{1, 499, 600001}, {0, 499, 5000},  {0x80000000u, 499, 5000},
	};
	struct ctl_msg m, b;
	uint8_t *buf;
	size_t len;
	char err[128];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m = capture_pid(bad[i].pid, bad[i].hz, bad[i].ms);
		ck_assert_int_eq(ctl_encode(&m, &buf, &len), -EINVAL);
		/* forge it: encode a valid one, then patch the field */
		m = capture_pid(1, 499, 5000);
		ck_assert_int_eq(ctl_encode(&m, &buf, &len), 0);
		memcpy(buf + 9, &bad[i].hz, 4); /* little-endian host, as CI runs */
		memcpy(buf + 13, &bad[i].ms, 4);
		memcpy(buf + 17, &bad[i].pid, 4);
		ck_assert_int_eq(ctl_decode(buf, len, &b, err, sizeof(err)), -EBADMSG);
		free(buf);
	}
	m = capture_pid(1, 1000, 5000);
	ck_assert_int_eq(ctl_encode(&m, &buf, &len), -EINVAL);
	m = capture_pid(1, 1, 1000);
	ck_assert_int_eq(ctl_encode(&m, &buf, &len), 0);
	free(buf);
}
END_TEST

START_TEST(test_hz_message)
{
	struct ctl_msg m = capture_pid(1, 499, 5000), b;
	uint32_t hz = 5000;
	uint8_t *buf;
	size_t len;
	char err[128];

	ck_assert_int_eq(ctl_encode(&m, &buf, &len), 0);
	memcpy(buf + 9, &hz, 4);
	ck_assert_int_eq(ctl_decode(buf, len, &b, err, sizeof(err)), -EBADMSG);
	ck_assert_str_eq(err, "hz 5000 is out of range 1..999");
	free(buf);
}
END_TEST

/* A malloc capture: the CPU request's bytes and one kind byte; pid only, 60 s at most. */
START_TEST(test_malloc_kind)
{
	struct ctl_msg m = capture_pid(1234, 499, 10000), b;
	uint8_t *buf, *cpu;
	size_t len, cpu_len;
	char err[128];

	ck_assert_int_eq(ctl_encode(&m, &cpu, &cpu_len), 0);
	m.kind = CTL_KIND_MALLOC;
	ck_assert_int_eq(ctl_encode(&m, &buf, &len), 0);
	ck_assert_uint_eq(len, cpu_len + 1);
	ck_assert_mem_eq(buf + CTL_HDR_LEN, cpu + CTL_HDR_LEN, cpu_len - CTL_HDR_LEN);
	ck_assert_uint_eq(buf[len - 1], CTL_KIND_MALLOC);
	ck_assert_uint_eq(buf[4], 14);
	ck_assert_int_eq(ctl_decode(buf, len, &b, err, sizeof(err)), 0);
	ck_assert_int_eq(b.kind, CTL_KIND_MALLOC);
	ck_assert_uint_eq(b.pid, 1234);
	ck_assert_int_eq(ctl_decode(cpu, cpu_len, &b, err, sizeof(err)), 0);
	ck_assert_int_eq(b.kind, CTL_KIND_CPU);
	/* the CPU kind is implied: written out, it is not the one encoding */
	buf[len - 1] = CTL_KIND_CPU;
	ck_assert_int_eq(ctl_decode(buf, len, &b, err, sizeof(err)), -EBADMSG);
	ck_assert_str_eq(err, "unknown capture type 2");
	buf[len - 1] = 77;
	ck_assert_int_eq(ctl_decode(buf, len, &b, err, sizeof(err)), -EBADMSG);
	/* over the malloc cap, refused both ways; 60 s itself is fine */
	buf[len - 1] = CTL_KIND_MALLOC;
	buf[13] = 0x61; /* 60001 ms = 0xea61 */
	buf[14] = 0xea;
	ck_assert_int_eq(ctl_decode(buf, len, &b, err, sizeof(err)), -EBADMSG);
	ck_assert_str_eq(err, "duration 60001 ms is over the malloc capture's cap of 60 s");
	free(buf);
	m.duration_ms = CTL_MALLOC_DURATION_MAX_MS + 1;
	ck_assert_int_eq(ctl_encode(&m, &buf, &len), -EINVAL);
	m.duration_ms = CTL_MALLOC_DURATION_MAX_MS;
	ck_assert_int_eq(ctl_encode(&m, &buf, &len), 0);
	free(buf);
	/* an app is refused: the probes are per process */
	m.target = CTL_TARGET_APP;
	strcpy(m.app, "web");
	ck_assert_int_eq(ctl_encode(&m, &buf, &len), -EINVAL);
	m.kind = 9;
	ck_assert_int_eq(ctl_encode(&m, &buf, &len), -EINVAL);
	ck_assert_str_eq(ctl_kind_name(CTL_KIND_MALLOC), "malloc");
	ck_assert_str_eq(ctl_kind_name(CTL_KIND_CPU), "cpu");
	free(cpu);
}
END_TEST

START_TEST(test_app_names)
{
	struct ctl_msg m = {.type = CTL_CAPTURE,
			    .target = CTL_TARGET_APP,
			    .hz = 99,
			    .duration_ms = 1000},
		       b;
	uint8_t *buf;
	size_t len;
	char err[128];

	ck_assert_int_eq(ctl_encode(&m, &buf, &len), -EINVAL); /* empty */
	strcpy(m.app, "a\tb");
	ck_assert_int_eq(ctl_encode(&m, &buf, &len), -EINVAL);
	memset(m.app, 'x', sizeof(m.app) - 1);
	m.app[sizeof(m.app) - 1] = '\0';
	ck_assert_int_eq(ctl_encode(&m, &buf, &len), 0); /* the longest name fits */
	ck_assert_int_eq(ctl_decode(buf, len, &b, err, sizeof(err)), 0);
	ck_assert_uint_eq(strlen(b.app), sizeof(m.app) - 1);
	free(buf);
	strcpy(m.app, "ab");
	ck_assert_int_eq(ctl_encode(&m, &buf, &len), 0);
	buf[len - 1] = '\n'; /* a control character smuggled in */
	ck_assert_int_eq(ctl_decode(buf, len, &b, err, sizeof(err)), -EBADMSG);
	buf[len - 1] = 'b';
	buf[17] = 3; /* the string claims 3 bytes: truncated */
	ck_assert_int_eq(ctl_decode(buf, len, &b, err, sizeof(err)), -EBADMSG);
	free(buf);
}
END_TEST

START_TEST(test_frames)
{
	struct ctl_msg m = capture_pid(42, 99, 2000), b;
	uint8_t *buf, *big;
	size_t len, need;
	char err[128];

	ck_assert_int_eq(ctl_encode(&m, &buf, &len), 0);
	/* byte by byte: nothing until the whole frame is in */
	for (size_t i = 0; i < len; i++) {
		ck_assert_int_eq(ctl_frame_len(buf, i, CTL_MAX_REQUEST, &need), 0);
		if (i >= CTL_HDR_LEN)
			ck_assert_uint_eq(need, len);
	}
	ck_assert_int_eq(ctl_frame_len(buf, len, CTL_MAX_REQUEST, &need), (long)len);
	ck_assert_int_eq(ctl_frame_len(buf, len, len - 1, &need), -EMSGSIZE);
	/* a trailing byte, a missing one */
	big = malloc(len + 1);
	memcpy(big, buf, len);
	big[len] = 0;
	big[4]++;
	ck_assert_int_eq(ctl_decode(big, len + 1, &b, err, sizeof(err)), -EBADMSG);
	ck_assert_int_eq(ctl_decode(buf, len - 1, &b, err, sizeof(err)), -EBADMSG);
	free(big);
	/* bad magic, version and type */
	buf[0] = 'X';
	ck_assert_int_eq(ctl_frame_len(buf, 1, CTL_MAX_REQUEST, &need), -EBADMSG);
	buf[0] = 'E';
	buf[2] = 2;
	ck_assert_int_eq(ctl_frame_len(buf, len, CTL_MAX_REQUEST, &need), -EPROTO);
	buf[2] = 1;
	buf[3] = 99;
	ck_assert_int_eq(ctl_decode(buf, len, &b, err, sizeof(err)), -EBADMSG);
	ck_assert_str_eq(err, "unknown message type 99");
	free(buf);
	/* a length of 4 GiB is refused from its header alone */
	{
		const uint8_t huge[] = {'E', 'C', 1, CTL_RESULT, 0xff, 0xff, 0xff, 0xff};

		ck_assert_int_eq(ctl_frame_len(huge, sizeof(huge), CTL_MAX_REPLY, &need),
				 -EMSGSIZE);
	}
}
END_TEST

START_TEST(test_replies_checked)
{
	static const uint8_t notgz[] = {'P', 'K', 3, 4};
	struct ctl_msg res = {.type = CTL_RESULT, .data = notgz, .data_len = sizeof(notgz)};
	struct ctl_msg er = {.type = CTL_ERROR, .code = 0, .text = "x"};
	uint8_t *buf;
	size_t len;

	ck_assert_int_eq(ctl_encode(&res, &buf, &len), -EINVAL);
	ck_assert_int_eq(ctl_encode(&er, &buf, &len), -EINVAL);
	er.code = EPERM;
	strcpy(er.text, "line\nbreak");
	ck_assert_int_eq(ctl_encode(&er, &buf, &len), -EINVAL);
}
END_TEST

START_TEST(test_target_name)
{
	struct ctl_msg m = capture_pid(77, 99, 1000);
	char s[64];

	ctl_target_name(&m, s, sizeof(s));
	ck_assert_str_eq(s, "pid 77");
	m.target = CTL_TARGET_APP;
	strcpy(m.app, "web");
	ctl_target_name(&m, s, sizeof(s));
	ck_assert_str_eq(s, "app web");
}
END_TEST

Suite *ctlproto_suite(void)
{
	Suite *s = suite_create("ctlproto");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_capture_pid_bytes);
	tcase_add_test(tc, test_round_trips);
	tcase_add_test(tc, test_bounds);
	tcase_add_test(tc, test_hz_message);
	tcase_add_test(tc, test_malloc_kind);
	tcase_add_test(tc, test_app_names);
	tcase_add_test(tc, test_frames);
	tcase_add_test(tc, test_replies_checked);
	tcase_add_test(tc, test_target_name);
	suite_add_tcase(s, tc);
	return s;
}
