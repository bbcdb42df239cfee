// SPDX-License-Identifier: MIT
/* Unit tests of libember_alloc.so, linked to it (so its malloc interposes as under
 * LD_PRELOAD): one test per argument, each registered with ctest. A profiler is simulated
 * by setting the probe semaphores, found by name; probe firings are read from the
 * library's counters (ember_alloc_read_stats). */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ember_alloc.h"

static const char *test_name = "alloc_test";

#define CHECK(cond, ...)                                    \
	do {                                                \
		if (!(cond))                                \
			fail(__LINE__, #cond, __VA_ARGS__); \
	} while (0)

__attribute__((format(printf, 3, 4), noreturn)) static void fail(int line, const char *cond,
								 const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL: %s: line %d: %s: ", test_name, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	_exit(1);
}

static unsigned short *sem_alloc, *sem_free;

/* Attach or detach the simulated profiler: the kernel adds and removes one likewise. */
static void profiler(bool on)
{
	__atomic_store_n(sem_alloc, on ? 1 : 0, __ATOMIC_RELAXED);
	__atomic_store_n(sem_free, on ? 1 : 0, __ATOMIC_RELAXED);
}

static struct ember_alloc_stats stats(void)
{
	struct ember_alloc_stats st;

	ember_alloc_read_stats(&st);
	return st;
}

/* The test's own PRNG for sizes (the library's is seeded at random). */
static uint64_t rng_state = 0x853c49e6748fea9bull;

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

/* An allocation the compiler cannot remove: written, and its first byte kept. */
static volatile unsigned char sink;

static void touch(void *p, size_t size)
{
	memset(p, 0x5a, size < 64 ? size : 64);
	sink = *(unsigned char *)p;
}

static bool within(double got, double want, double rel)
{
	return fabs(got - want) <= rel * want;
}

/* 10^6 allocations of 1..M/32 bytes (the expected number of samples computed from the very
 * sizes drawn): the number of samples, the mean interval and the sum of the weights all
 * within 5% of what sampling at mean M predicts: ~6 sigma of their noise (0.8% for ~15500).
 * expect_mean: the M the environment set (0: the default, 512 KiB). */
static void test_interval(uint64_t expect_mean)
{
	const long n = 1000000;
	struct ember_alloc_stats a, b;
	double expected = 0, bytes = 0, samples, M;
	size_t max_size;
	long i;

	a = stats();
	M = (double)a.sample_mean;
	/* At most M/32: then 1 - exp(-s/M) ~ s/M and the mean interval is M within ~1% (it
	 * is E[s] / E[1 - exp(-s/M)], M + E[s^2]/2E[s] for small s); ~15600 samples, whose
	 * count has a relative deviation of 0.8%. */
	max_size = a.sample_mean / 32;
	CHECK(a.sample_mean == (expect_mean ? expect_mean : 524288), "sample_mean %lu",
	      (unsigned long)a.sample_mean);
	profiler(true);
	for (i = 0; i < n; i++) {
		size_t s = 1 + rng() % max_size;
		void *p = malloc(s);

		CHECK(p, "malloc(%zu)", s);
		touch(p, s);
		free(p);
		bytes += (double)s;
		expected += -expm1(-(double)s / M);
	}
	profiler(false);
	b = stats();
	samples = (double)(b.alloc_probes - a.alloc_probes);
	printf("%s: M %.0f: %.0f samples (expected %.0f), mean interval %.0f (expected %.0f), "
	       "weights %.4f of the bytes\n",
	       test_name, M, samples, expected, bytes / samples, bytes / expected,
	       (double)(b.weight_bytes - a.weight_bytes) / bytes);
	CHECK(within(samples, expected, 0.05), "%.0f samples, expected %.0f", samples, expected);
	/* The sizes make the expected mean interval bytes / expected, 1.0104 M here: against M,
	 * 5% was only 4.7 sigma on the high side. It is judged against its expected value, which
	 * must itself be M within 2% (the sizes' doing, no chance in it). */
	CHECK(within(bytes / expected, M, 0.02), "expected mean interval %.0f, M %.0f",
	      bytes / expected, M);
	CHECK(within(bytes / samples, bytes / expected, 0.05), "mean interval %.0f, expected %.0f",
	      bytes / samples, bytes / expected);
	CHECK(within((double)(b.weight_bytes - a.weight_bytes), bytes, 0.05),
	      "weights %lu for %.0f bytes", (unsigned long)(b.weight_bytes - a.weight_bytes),
	      bytes);
	CHECK(b.free_probes - a.free_probes == b.alloc_probes - a.alloc_probes,
	      "%lu frees fired for %lu samples", (unsigned long)(b.free_probes - a.free_probes),
	      (unsigned long)(b.alloc_probes - a.alloc_probes));
	CHECK(b.live == a.live, "live %lu, was %lu", (unsigned long)b.live, (unsigned long)a.live);
}

static void fill(unsigned char *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 31 + seed);
}

static bool filled(const unsigned char *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(i * 31 + seed))
			return false;
	return true;
}

/* Probe firings since a: *alloc and *free. */
static void delta(const struct ember_alloc_stats *a, long *alloc, long *freed)
{
	struct ember_alloc_stats b = stats();

	*alloc = (long)(b.alloc_probes - a->alloc_probes);
	*freed = (long)(b.free_probes - a->free_probes);
}

#define EXPECT_PROBES(a, want_alloc, want_free)                                                    \
	do {                                                                                       \
		long da, df;                                                                       \
		delta(&(a), &da, &df);                                                             \
		CHECK(da == (want_alloc) && df == (want_free),                                     \
		      "alloc probes %ld (want %d), free probes %ld (want %d)", da, want_alloc, df, \
		      want_free);                                                                  \
	} while (0)

/* Overflows n * size, hidden from the compiler's own check. */
static volatile size_t huge = SIZE_MAX / 2;

/* EMBER_ALLOC_SAMPLE_BYTES=1: every allocation of 48 bytes or more is sampled. */
static void test_realloc(void)
{
	struct ember_alloc_stats a;
	unsigned char *p, *q, *r, *x;
	void *u;

	profiler(true);
	p = malloc(100);
	CHECK(p && ember_alloc_is_live(p), "malloc(100) not sampled at M=1");
	fill(p, 100, 1);
	a = stats();
	q = realloc(p, 200000); /* past the mmap threshold: moves */
	CHECK(q && filled(q, 100, 1), "realloc to 200000 lost the contents");
	EXPECT_PROBES(a, 1, 1);
	CHECK(ember_alloc_is_live(q), "the moved block is not tracked");
	CHECK(q == p || !ember_alloc_is_live(p), "the old pointer is still tracked");
	fill(q, 200000, 2);
	a = stats();
	r = realloc(q, 50);
	CHECK(r && filled(r, 50, 2), "shrinking realloc lost the contents");
	EXPECT_PROBES(a, 1, 1);
	a = stats();
	x = realloc(NULL, 64);
	CHECK(x && ember_alloc_is_live(x), "realloc(NULL, 64) is an allocation");
	EXPECT_PROBES(a, 1, 0);
	a = stats();
	u = realloc(r, 0); /* glibc frees and returns NULL */
	CHECK(!ember_alloc_is_live(r) || u == r, "realloc(p, 0) left p tracked");
	EXPECT_PROBES(a, 0, 1);
	free(u);

	fill(x, 64, 3);
	a = stats();
	errno = 0;
	CHECK(!reallocarray(x, huge, 3) && errno == ENOMEM, "reallocarray overflow");
	CHECK(ember_alloc_is_live(x), "a failed reallocarray untracked its block");
	EXPECT_PROBES(a, 0, 0);
	p = reallocarray(x, 10, 100);
	CHECK(p && filled(p, 64, 3), "reallocarray lost the contents");
	EXPECT_PROBES(a, 1, 1);

	/* An unsampled block grown: no free fired, a new decision for the new size. */
	profiler(false);
	q = malloc(80);
	CHECK(q && !ember_alloc_is_live(q), "sampled with no profiler attached");
	profiler(true);
	a = stats();
	q = realloc(q, 1000);
	EXPECT_PROBES(a, 1, 0);
	/* A sampled block moved after the profiler left: its free still fires, nothing new. */
	profiler(false);
	a = stats();
	r = realloc(q, 300000);
	CHECK(r && !ember_alloc_is_live(q) && !ember_alloc_is_live(r), "tracking after detach");
	EXPECT_PROBES(a, 0, 1);
	free(r);
	free(p);

	profiler(true);
	a = stats();
	p = calloc(10, 100);
	CHECK(p && ember_alloc_is_live(p), "calloc not sampled");
	for (int i = 0; i < 1000; i++)
		CHECK(p[i] == 0, "calloc byte %d not zero", i);
	errno = 0;
	CHECK(!calloc(huge, 3), "calloc overflow returned memory");
	free(p);
	EXPECT_PROBES(a, 1, 1);
	profiler(false);
}

static bool aligned(const void *p, size_t align)
{
	return ((uintptr_t)p & (align - 1)) == 0;
}

/* Every aligned entry point keeps its alignment, is sampled and its free fires. */
static void test_aligned(void)
{
	static const size_t aligns[] = {16, 32, 64, 256, 4096, 65536};
	long page = sysconf(_SC_PAGESIZE);
	struct ember_alloc_stats a;
	void *p;
	size_t i;

	profiler(true);
	for (i = 0; i < sizeof(aligns) / sizeof(aligns[0]); i++) {
		size_t al = aligns[i];
		unsigned char *q;

		a = stats();
		CHECK(posix_memalign(&p, al, 1000) == 0 && aligned(p, al), "posix_memalign %zu",
		      al);
		CHECK(ember_alloc_is_live(p), "posix_memalign %zu not sampled", al);
		fill(p, 1000, 4);
		q = realloc(p, 5000);
		CHECK(q && filled(q, 1000, 4), "realloc of an aligned block lost the contents");
		free(q);
		p = aligned_alloc(al, al * 3);
		CHECK(p && aligned(p, al) && ember_alloc_is_live(p), "aligned_alloc %zu", al);
		touch(p, al * 3);
		free(p);
		p = memalign(al, 100);
		CHECK(p && aligned(p, al) && ember_alloc_is_live(p), "memalign %zu", al);
		touch(p, 100);
		free(p);
		EXPECT_PROBES(a, 4, 4);
	}
	a = stats();
	p = valloc(100);
	CHECK(p && aligned(p, (size_t)page) && ember_alloc_is_live(p), "valloc");
	free(p);
	p = pvalloc(100);
	CHECK(p && aligned(p, (size_t)page) && malloc_usable_size(p) >= (size_t)page,
	      "pvalloc: not a whole page");
	CHECK(ember_alloc_is_live(p), "pvalloc not sampled");
	free(p);
	EXPECT_PROBES(a, 2, 2);
	a = stats();
	p = NULL;
	CHECK(posix_memalign(&p, 3, 10) == EINVAL && !p, "posix_memalign(3) accepted");
	CHECK(posix_memalign(&p, 24, 10) == EINVAL && !p, "posix_memalign(24) accepted");
	EXPECT_PROBES(a, 0, 0);
	profiler(false);
}

/* With sampled pointers live (so every free looks), frees of unsampled ones fire nothing. */
static void test_unsampled_free(void)
{
	enum { SAMPLED = 16, UNSAMPLED = 10000 };
	static void *s[SAMPLED], *u[UNSAMPLED];
	struct ember_alloc_stats a;
	int i;

	profiler(true);
	for (i = 0; i < SAMPLED; i++) {
		s[i] = malloc(64);
		CHECK(s[i] && ember_alloc_is_live(s[i]), "malloc(64) not sampled at M=1");
	}
	profiler(false);
	for (i = 0; i < UNSAMPLED; i++) {
		u[i] = malloc(16 + (size_t)i % 2000);
		CHECK(u[i] && !ember_alloc_is_live(u[i]), "sampled with no profiler attached");
	}
	profiler(true);
	a = stats();
	CHECK(a.live >= SAMPLED, "live %lu", (unsigned long)a.live);
	for (i = 0; i < UNSAMPLED; i++)
		free(u[i]);
	EXPECT_PROBES(a, 0, 0);
	for (i = 0; i < SAMPLED; i++)
		free(s[i]);
	EXPECT_PROBES(a, 0, SAMPLED);
	CHECK(stats().live == a.live - SAMPLED, "live %lu", (unsigned long)stats().live);
	profiler(false);
}

/* --- threads and fork -------------------------------------------------------------------- */

enum { THREADS = 8, HELD = 64, ROUNDS = 100, CHURN = 50000 };

static pthread_barrier_t barrier;
static long churned[THREADS];

/* ROUNDS times: hold HELD sampled blocks (main checks the set at the barrier), free them;
 * then CHURN malloc/free pairs with no barrier. */
static void *thread_main(void *arg)
{
	long id = (long)arg;
	void *held[HELD];
	int r, i;

	pthread_barrier_wait(&barrier); /* main attaches the profiler */
	for (r = 0; r < ROUNDS; r++) {
		for (i = 0; i < HELD; i++) {
			held[i] = malloc(48 + (size_t)(i * 7 + id) % 500);
			CHECK(held[i], "malloc");
		}
		for (i = 0; i < HELD; i++)
			CHECK(ember_alloc_is_live(held[i]), "thread %ld lost a sampled pointer",
			      id);
		pthread_barrier_wait(&barrier); /* main counts */
		pthread_barrier_wait(&barrier);
		for (i = 0; i < HELD; i++)
			free(held[i]);
	}
	for (i = 0; i < CHURN; i++) {
		void *p = malloc(48 + (size_t)i % 1000);

		CHECK(p && ember_alloc_is_live(p), "churn: not tracked");
		touch(p, 48);
		free(p);
		churned[id]++;
	}
	pthread_barrier_wait(&barrier);
	return NULL;
}

/* 8 threads allocating and freeing at once: at each barrier the set holds exactly the
 * 8 x 64 blocks they hold, each probe fires once per block, nothing overflows. */
static void test_threads(void)
{
	pthread_t t[THREADS];
	struct ember_alloc_stats a, b;
	long i, r, total = 0;

	CHECK(pthread_barrier_init(&barrier, NULL, THREADS + 1) == 0, "barrier");
	for (i = 0; i < THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, thread_main, (void *)i) == 0, "pthread_create");
	profiler(true);
	a = stats();
	pthread_barrier_wait(&barrier);
	for (r = 0; r < ROUNDS; r++) {
		pthread_barrier_wait(&barrier);
		b = stats();
		CHECK(b.live - a.live == THREADS * HELD, "round %ld: %ld live, %d held", r,
		      (long)(b.live - a.live), THREADS * HELD);
		pthread_barrier_wait(&barrier);
	}
	pthread_barrier_wait(&barrier);
	b = stats();
	profiler(false);
	for (i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		total += churned[i];
	}
	total += (long)THREADS * HELD * ROUNDS;
	CHECK((long)(b.alloc_probes - a.alloc_probes) == total, "%ld allocs fired, %ld made",
	      (long)(b.alloc_probes - a.alloc_probes), total);
	CHECK((long)(b.free_probes - a.free_probes) == total, "%ld frees fired, %ld made",
	      (long)(b.free_probes - a.free_probes), total);
	CHECK(b.live == a.live, "live %lu after, %lu before", (unsigned long)b.live,
	      (unsigned long)a.live);
	CHECK(b.overflow == a.overflow, "overflow %lu", (unsigned long)b.overflow);
	printf("%s: %d threads, %ld sampled allocations and frees, none lost\n", test_name, THREADS,
	       total);
}

static volatile int churn_stop;

static void *churn_main(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&churn_stop, __ATOMIC_RELAXED)) {
		void *p = malloc(64);

		touch(p, 64);
		free(p);
	}
	return NULL;
}

/* The child of a fork (made while 4 threads churn): allocates and frees fine, frees what
 * it inherited, each once. alarm: a deadlock fails instead of hanging. */
static void fork_child(void **inherited, int n)
{
	struct ember_alloc_stats a;
	int i;

	alarm(30);
	for (i = 0; i < n; i++)
		CHECK(ember_alloc_is_live(inherited[i]), "child: inherited pointer not live");
	a = stats();
	for (i = 0; i < 10000; i++) {
		void *p = malloc(64 + (size_t)i % 300);

		CHECK(p && ember_alloc_is_live(p), "child: not sampled");
		touch(p, 64);
		free(p);
	}
	for (i = 0; i < n; i++)
		free(inherited[i]);
	EXPECT_PROBES(a, 10000, 10000 + n);
	_exit(0);
}

static void test_fork(void)
{
	enum { KEEP = 100, FORKS = 20, CHURNERS = 4 };
	static void *keep[KEEP];
	struct ember_alloc_stats a, b;
	pthread_t t[CHURNERS];
	int i, status;

	profiler(true);
	for (i = 0; i < KEEP; i++) {
		keep[i] = malloc(128);
		CHECK(keep[i] && ember_alloc_is_live(keep[i]), "not sampled");
	}
	for (i = 0; i < CHURNERS; i++)
		CHECK(pthread_create(&t[i], NULL, churn_main, NULL) == 0, "pthread_create");
	for (i = 0; i < FORKS; i++) {
		pid_t pid = fork();

		CHECK(pid >= 0, "fork: %s", strerror(errno));
		if (pid == 0)
			fork_child(keep, KEEP);
		CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d: status 0x%x", i,
		      status);
	}
	__atomic_store_n(&churn_stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < CHURNERS; i++)
		pthread_join(t[i], NULL);
	a = stats();
	for (i = 0; i < KEEP; i++)
		CHECK(ember_alloc_is_live(keep[i]), "parent: a kept pointer is no longer live");
	for (i = 0; i < KEEP; i++)
		free(keep[i]);
	b = stats();
	CHECK(b.free_probes - a.free_probes == KEEP && a.live - b.live == KEEP,
	      "parent: %lu frees fired for %d", (unsigned long)(b.free_probes - a.free_probes),
	      KEEP);
	profiler(false);
	printf("%s: %d forks while %d threads allocate: children and parent intact\n", test_name,
	       FORKS, CHURNERS);
}

/* Under a real profiler (usdt.sh): wait (bounded) until the kernel has raised the
 * semaphore, allocate 1 GiB in 4 KiB blocks (four passes of 256 MiB allocated, then
 * freed), print the probe counts and the bytes for the script to compare with what the
 * profiler saw. "off": no wait, expect no probe. Four passes make ~2048 samples at the
 * 512 KiB mean: the weights' sum is then within 2.2% (one sigma) of the bytes, and the
 * script's 15% band is 6.8 sigma, where 512 samples made it 3.4 (a CI run drew 433). */
static void test_workload(bool attached)
{
	enum { BLOCKS = 65536, PASSES = 4, BLOCK = 4096 };
	static void *b[BLOCKS];
	static char out[BUFSIZ];
	struct ember_alloc_stats a, z;
	int i, r;

	for (i = 0; attached && !__atomic_load_n(sem_alloc, __ATOMIC_RELAXED); i++) {
		CHECK(i < 3000, "the alloc semaphore stayed 0 for 30 s: no profiler attached");
		usleep(10000);
	}
	/* stdio's own buffer is one more 4 KiB malloc, after the count: the profiler would
	 * see it sampled once in 128 runs, and the library not count it. */
	setvbuf(stdout, out, _IOFBF, sizeof out);
	a = stats();
	for (r = 0; r < PASSES; r++) {
		for (i = 0; i < BLOCKS; i++) {
			b[i] = malloc(BLOCK);
			CHECK(b[i], "malloc");
			touch(b[i], BLOCK);
		}
		for (i = 0; i < BLOCKS; i++)
			free(b[i]);
	}
	z = stats();
	printf("alloc_probes %lu free_probes %lu bytes %lu\n",
	       (unsigned long)(z.alloc_probes - a.alloc_probes),
	       (unsigned long)(z.free_probes - a.free_probes),
	       (unsigned long)PASSES * BLOCKS * BLOCK);
	if (!attached)
		CHECK(z.alloc_probes == a.alloc_probes, "sampled with the semaphore at 0");
	else
		CHECK(z.alloc_probes > a.alloc_probes, "no sample in 1 GiB");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr,
			"usage: %s interval [MEAN]|realloc|aligned|unsampled|threads|fork|workload [attached]\n",
			argv[0]);
		return 2;
	}
	test_name = argv[1];
	sem_alloc = dlsym(RTLD_DEFAULT, "otel_memory_alloc_semaphore");
	sem_free = dlsym(RTLD_DEFAULT, "otel_memory_free_semaphore");
	CHECK(sem_alloc && sem_free, "the probe semaphores are not exported");
	if (!strcmp(argv[1], "interval"))
		test_interval(argc > 2 ? strtoull(argv[2], NULL, 10) : 0);
	else if (!strcmp(argv[1], "realloc"))
		test_realloc();
	else if (!strcmp(argv[1], "aligned"))
		test_aligned();
	else if (!strcmp(argv[1], "unsampled"))
		test_unsampled_free();
	else if (!strcmp(argv[1], "threads"))
		test_threads();
	else if (!strcmp(argv[1], "fork"))
		test_fork();
	else if (!strcmp(argv[1], "workload"))
		test_workload(argc > 2 && !strcmp(argv[2], "attached"));
	else
		CHECK(0, "unknown test %s", argv[1]);
	printf("ok: %s\n", test_name);
	return 0;
}
