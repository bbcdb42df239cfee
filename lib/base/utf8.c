// SPDX-License-Identifier: MIT
/* Valid UTF-8: validation, repair with U+FFFD and truncation on a character boundary. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/*
 * The length of the valid character at s[0..len), or the negated length of
 * its maximal invalid subpart (at least 1). The second byte's range depends
 * on the first (RFC 3629 table): E0 A0..BF and F0 90..BF refuse overlongs,
 * ED 80..9F refuses surrogates, F4 80..8F ends at U+10FFFF.
 */
static long char_len(const unsigned char *s, size_t len)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t need, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		need = 2;
	else if (c >= 0xe0 && c <= 0xef)
		need = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		need = 4;
	else
		return -1; /* a continuation byte, C0/C1 (overlong) or F5..FF */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	for (i = 1; i < need; i++) {
		if (i >= len || s[i] < lo || s[i] > hi)
			return -(long)i;
		lo = 0x80;
		hi = 0xbf;
	}
	return (long)need;
}

bool utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		long n;

		if (p[i] < 0x80) {
			i++;
			continue;
		}
		n = char_len(p + i, len - i);
		if (n < 0)
			return false;
		i += (size_t)n;
	}
	return true;
}

size_t utf8_sanitize(const char *in, size_t inlen, char *out, size_t outlen, unsigned int flags)
{
	const unsigned char *p = (const unsigned char *)in;
	size_t i = 0, o = 0;

	while (i < inlen) {
		long n = char_len(p + i, inlen - i);
		const char *src = in + i;
		size_t w = (size_t)n;

		if (n < 0) {
			/* a valid beginning cut by the end of the input */
			if ((flags & UTF8_CUT_TAIL) && i + (size_t)-n == inlen && p[i] >= 0xc2 &&
			    p[i] <= 0xf4)
				break;
			src = UTF8_REPLACEMENT;
			w = 3;
			n = -n;
		}
		if (o + w >= outlen)
			break;
		memcpy(out + o, src, w);
		o += w;
		i += (size_t)n;
	}
	out[o] = '\0';
	return o;
}

size_t utf8_cut(const char *s, size_t len, size_t max)
{
	if (len <= max)
		return len;
	while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	return max;
}

char *utf8_dup(const char *s)
{
	size_t len = strlen(s), cap;
	char *out;

	if (utf8_valid(s, len))
		return strdup(s);
	/* at worst every byte becomes a 3-byte U+FFFD */
	if (len > (SIZE_MAX - 1) / 3) {
		errno = ENOMEM;
		return NULL;
	}
	cap = len * 3 + 1;
	out = malloc(cap);
	if (!out)
		return NULL;
	utf8_sanitize(s, len, out, cap, 0);
	return out;
}
