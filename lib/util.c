// SPDX-License-Identifier: MIT
/* Small helpers the pure modules share: growing arrays and searching sorted ones. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
