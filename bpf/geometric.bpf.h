/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Sampling 1 event in p without a random number per event: the events to
 * pass before the next sampled one, drawn once per sampled event. Their law
 * is that of independent 1-in-p choices (geometric: P(n) = (1 - 1/p)^n / p),
 * which is memoryless, so a period that changes within a gap may draw the
 * rest of it again. By inversion, n = floor(-ln u / -ln(1 - 1/p)) for u
 * uniform in (0, 1), in fixed point from one 32-bit random number. Pure
 * integer arithmetic: the BPF programs and the unit tests include it (the
 * includer provides __u32 and __u64).
 */
#ifndef EMBER_GEOMETRIC_BPF_H
#define EMBER_GEOMETRIC_BPF_H

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* log2(1 + i / 64), i = 0..64, in 16-bit fixed point (interpolated between). */
static const __u32 geom_log2_tab[65] = {
	0,     1466,  2909,  4331,  5732,  7112,  8473,	 9814,	11136, 12440, 13727, 14996, 16248,
	17484, 18704, 19909, 21098, 22272, 23433, 24579, 25711, 26830, 27936, 29029, 30109, 31178,
	32234, 33279, 34312, 35334, 36346, 37346, 38336, 39316, 40286, 41246, 42196, 43137, 44068,
	44990, 45904, 46809, 47705, 48593, 49472, 50344, 51207, 52063, 52911, 53751, 54584, 55410,
	56229, 57040, 57845, 58643, 59434, 60219, 60997, 61769, 62534, 63294, 64047, 64794, 65536,
};

/* -log2(u) in 16-bit fixed point, u = (r | 1) / 2^32: uniform in (0, 1). */
static __always_inline __u64 geom_neg_log2(__u32 r)
{
	__u32 v = r | 1, k = 0, lo, hi;
	__u64 x;

	/* k = floor(log2 v), by halves (unrolled) */
	for (__u32 h = 16; h; h >>= 1) {
		if (v >= 1U << h) {
			k += h;
			v >>= h;
		}
	}
	/* the mantissa's fraction in 31 bits: the table's index is its top 6, the rest interpolates */
	x = ((__u64)(r | 1) << (31 - k)) - (1ULL << 31);
	lo = geom_log2_tab[(x >> 25) & 63];
	hi = geom_log2_tab[((x >> 25) & 63) + 1];
	return (32ULL << 16) -
	       (((__u64)k << 16) + lo + (((hi - lo) * (x & ((1U << 25) - 1))) >> 25));
}

/* ln 2 / -ln(1 - 1/p) for p = 2..15 in 16-bit fixed point (0 and 1 unused). */
static const __u32 geom_scale_tab[16] = {
	0,	0,	65536,	112035, 157904, 203573, 249154, 294686,
	340190, 385676, 431149, 476613, 522071, 567523, 612972, 658417,
};

/*
 * What turns -log2(u) into a gap at period p (at least 2): ln 2 / -ln(1 - 1/p),
 * in 16-bit fixed point. From p = 16, -1 / ln(1 - 1/p) = p - 1/2 - 1/(12 p) -
 * 1/(24 p^2) - ..., whose next term is under 10^-6 of it; below, the table.
 */
static __always_inline __u64 geom_scale(__u32 p)
{
	__u64 c;

	if (p < 16)
		return geom_scale_tab[p & 15];
	c = ((__u64)p << 16) - (1U << 15) - 65536 / (12ULL * p) - 65536 / (24ULL * p * p);
	return (c * 2977044472ULL) >> 32; /* ln 2 in 32-bit fixed point */
}

/* The events to pass before the next sampled one at period p, from random r. */
static __always_inline __u32 geom_gap(__u32 r, __u32 p)
{
	__u64 n;

	if (p < 2)
		return 0;
	n = (geom_scale(p) * geom_neg_log2(r)) >> 32;
	return n > 0xffffffffULL ? 0xffffffffU : (__u32)n;
}

#endif /* EMBER_GEOMETRIC_BPF_H */
