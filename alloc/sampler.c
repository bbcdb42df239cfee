// SPDX-License-Identifier: MIT
/* When to sample: bytes allocated are a Poisson process of mean interval M, so each thread
 * counts down an exponentially distributed number of bytes (cheap per-thread PRNG, no lock,
 * no libc rand) and samples the allocation that crosses zero. */
#include <errno.h>
#include <math.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

#include "alloc_internal.h"

__thread struct sampler_thread sampler_tls __attribute__((tls_model("initial-exec")));

/* Set once at start-up (EMBER_ALLOC_SAMPLE_BYTES) before any profiler can be attached;
 * read at each draw, so a change would take effect at each thread's next sample. */
static uint64_t sample_mean = SAMPLE_MEAN_DEFAULT;
/* Seeds handed out: two threads seeding in the same nanosecond still differ. */
static uint64_t seed_count;

/* A decimal number of bytes in [1, SAMPLE_MEAN_MAX]: 0, -EINVAL or -ERANGE. */
int sampler_parse_mean(const char *s, uint64_t *mean)
{
	uint64_t v = 0;
	const char *c;

	if (!s || !*s)
		return -EINVAL;
	for (c = s; *c; c++) {
		if (*c < '0' || *c > '9')
			return -EINVAL;
		if (v > SAMPLE_MEAN_MAX)
			return -ERANGE; /* stop before a long string overflows v */
		v = v * 10 + (uint64_t)(*c - '0');
	}
	if (v < 1 || v > SAMPLE_MEAN_MAX)
		return -ERANGE;
	*mean = v;
	return 0;
}

void sampler_set_mean(uint64_t mean)
{
	__atomic_store_n(&sample_mean, mean, __ATOMIC_RELAXED);
}

uint64_t sampler_mean(void)
{
	return __atomic_load_n(&sample_mean, __ATOMIC_RELAXED);
}

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The kernel's 16 random bytes for this process (AT_RANDOM), the thread's own TLS address,
 * the pid (a forked child reseeds), the clock and a counter: nothing here can allocate. */
static void sampler_seed(struct sampler_thread *t)
{
	const uint64_t *at_random = (const uint64_t *)getauxval(AT_RANDOM);
	struct timespec ts = {0, 0};
	uint64_t x;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	x = splitmix64((uint64_t)(uintptr_t)t ^ (uint64_t)getpid() << 32);
	x = splitmix64(x ^ ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec));
	x = splitmix64(x ^ __atomic_fetch_add(&seed_count, 1, __ATOMIC_RELAXED));
	if (at_random)
		x = splitmix64(x ^ at_random[0]) ^ at_random[1];
	t->rng = x ? x : 0x2545f4914f6cdd1dull; /* xorshift's one forbidden state */
	t->seeded = 1;
}

/* xorshift64*: a few cycles, good enough to draw intervals, per thread so no lock. */
static uint64_t sampler_next(struct sampler_thread *t)
{
	uint64_t x = t->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* Bytes to the next sample, exponential of mean sample_mean: -M ln(1 - u), u uniform in
 * [0, 1) on 53 bits, so 1 - u >= 2^-53 and the draw is at most ~36.7 M. */
static int64_t sampler_draw(struct sampler_thread *t)
{
	double u = (double)(sampler_next(t) >> 11) * 0x1p-53;
	double d = -log1p(-u) * (double)sampler_mean();

	return d < 1.0 ? 1 : (int64_t)(d + 0.5);
}

/* The countdown has reached zero (or the thread is new): is this allocation the sample?
 * After a sample the interval restarts from the end of the sampled allocation with a fresh
 * draw: the exponential is memoryless, so dropping the rest of the crossed interval keeps
 * the process Poisson, and an allocation of s bytes is sampled with probability
 * 1 - exp(-s/M) whatever it follows (which sampler_weight undoes). */
bool sampler_slow(struct sampler_thread *t, size_t size)
{
	(void)size;
	if (!t->seeded) {
		sampler_seed(t);
		t->countdown += sampler_draw(t);
		if (t->countdown > 0)
			return false;
	}
	t->countdown = sampler_draw(t);
	return true;
}

/* The bytes a sample of size s stands for, the standard unbiasing (Go's runtime/pprof and
 * tcmalloc do the same): s is sampled with probability p = 1 - exp(-s/M), so s / p is an
 * unbiased estimate of the bytes allocated at that site (~M + s/2 for s << M, ~s for
 * s >> M). expm1 keeps p exact for small s/M. OpenTelemetry's memory-profiling design
 * counts the intervals crossed times M instead: also unbiased; the profiler takes the
 * weight as given either way. */
uint64_t sampler_weight(size_t size)
{
	double s = (double)size;
	double p = -expm1(-s / (double)sampler_mean());

	if (size == 0 || p <= 0.0)
		return 0;
	return (uint64_t)(s / p + 0.5);
}

/* After fork, in the child: its thread draws from a new seed rather than repeating the
 * parent's sequence. */
void sampler_forget_seed(void)
{
	sampler_tls.seeded = 0;
	sampler_tls.countdown = 0;
}
