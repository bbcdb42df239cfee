// SPDX-License-Identifier: MIT
/*
 * libFuzzer: a collector's reply, as classify sees it: the first two bytes pick
 * the HTTP status, the rest is the body (Connect JSON, a proxy's HTML, noise).
 */
#include <stdlib.h>
#include <string.h>

#include "push.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every message must be one terminated, printable line inside its buffer. */
static void check_line(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	if (n == cap)
		abort();
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct push_reply r = {0};
	char msg[256], small[8], code[32];
	enum push_verdict v;

	if (size < 2)
		return 0;
	r.status = (long)(data[0] | data[1] << 8) % 700;
	r.body = (const char *)data + 2;
	r.body_len = size - 2;
	v = push_classify(&r, msg, sizeof(msg));
	if (v != PUSH_SENT && v != PUSH_RETRY && v != PUSH_REJECT)
		abort();
	if ((v == PUSH_SENT) != (r.status >= 200 && r.status < 300))
		abort();
	check_line(msg, sizeof(msg));
	push_classify(&r, small, sizeof(small));
	check_line(small, sizeof(small));
	push_error_message(r.body, r.body_len, code, sizeof(code), msg, sizeof(msg));
	check_line(code, sizeof(code));
	check_line(msg, sizeof(msg));
	push_error_message(r.body, r.body_len, code, 1, msg, 1);
	return 0;
}
