// SPDX-License-Identifier: MIT
/* Small helpers the modules share: growing arrays, searching sorted ones, sizes, threads. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"

int array_grow(void **p, size_t *cap, size_t need, size_t elem, size_t first)
{
	size_t ncap = *cap ? *cap : first;
	void *np;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	np = reallocarray(*p, ncap, elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

size_t sorted_upper_bound(const void *base, size_t n, size_t stride, size_t off, uint64_t key)
{
	const char *b = base;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k;

		memcpy(&k, b + mid * stride + off, sizeof(k));
		if (k <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int parse_size(const char *s, uint64_t *out)
{
	static const struct {
		const char *unit;
		unsigned int shift;
	} units[] = {
		{"", 0},     {"B", 0},	 {"K", 10},   {"KB", 10},  {"KiB", 10},
		{"M", 20},   {"MB", 20}, {"MiB", 20}, {"G", 30},   {"GB", 30},
		{"GiB", 30}, {"T", 40},	 {"TB", 40},  {"TiB", 40},
	};
	unsigned long long n;
	char *end;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	while (*end == ' ')
		end++;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcasecmp(end, units[i].unit))
			continue;
		if (n > (UINT64_MAX >> units[i].shift))
			return -EINVAL;
		*out = (uint64_t)n << units[i].shift;
		return 0;
	}
	return -EINVAL;
}

void format_bytes(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
	double v = (double)n / 1024;
	size_t i = 0;

	if (n < 1024) {
		snprintf(buf, len, "%" PRIu64 " bytes", n);
		return;
	}
	while (v >= 1024 && i + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		i++;
	}
	snprintf(buf, len, "%.1f %s", v, units[i]);
}

int thread_start_blocked(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int ret;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -ret;
}
