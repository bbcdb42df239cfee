/* SPDX-License-Identifier: MIT */
/*
 * Valid UTF-8 for every string ember writes: validation, repair (invalid bytes
 * become U+FFFD) and truncation on a character boundary. Pure.
 */
#ifndef EMBER_UTF8_H
#define EMBER_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* U+FFFD REPLACEMENT CHARACTER, encoded. */
#define UTF8_REPLACEMENT "\xef\xbf\xbd"

/* Flags of utf8_sanitize(). */
enum {
	/*
	 * An incomplete character at the very end of the input is dropped, not
	 * replaced: the input was cut by someone else (the kernel cuts a thread
	 * name at 15 bytes, inside a character if it must).
	 */
	UTF8_CUT_TAIL = 1,
};

/* Whether s[0..len) is valid UTF-8 (RFC 3629: no overlongs, no surrogates, <= U+10FFFF). */
bool utf8_valid(const char *s, size_t len);

/*
 * Copies in[0..inlen) into out as valid UTF-8, terminated: every maximal
 * invalid subpart (Unicode's "substitution of maximal subparts") becomes one
 * U+FFFD, and when out is too small the copy ends on a character boundary.
 * Returns the length written (< outlen); outlen must be >= 1.
 */
size_t utf8_sanitize(const char *in, size_t inlen, char *out, size_t outlen, unsigned int flags);

/*
 * The largest n <= max such that s[0..n) does not end inside a character of
 * the valid UTF-8 string s (len bytes): where to truncate it.
 */
size_t utf8_cut(const char *s, size_t len, size_t max);

/* A malloc'd, valid UTF-8 copy of the string s (NULL with errno ENOMEM). */
char *utf8_dup(const char *s);

#endif
