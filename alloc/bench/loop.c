// SPDX-License-Identifier: MIT
/* bench/alloc.sh's workload: T threads each doing N malloc(S)/free pairs, next to a
 * resident heap of R MiB in 64 KiB blocks (so that, with sampling on, the live set is not
 * empty and every free looks in it). Prints the mean cost of one pair in thread CPU time
 * (robust on a shared machine) and in wall time. Not linked to libember_alloc.so: the
 * script preloads it or not. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long iters = 20000000;
static size_t size = 64;
static double cpu_ns[64];

static double ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *worker(void *arg)
{
	long id = (long)arg;
	double t0 = ns(CLOCK_THREAD_CPUTIME_ID);

	for (long i = 0; i < iters; i++) {
		volatile char *p = malloc(size);

		*p = (char)i;
		free((void *)p);
	}
	cpu_ns[id] = ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = argc > 1 ? atol(argv[1]) : 4;
	long resident_mib = argc > 4 ? atol(argv[4]) : 64;
	pthread_t t[64];
	double w0, wall, cpu = 0;
	long i;

	if (argc > 2)
		iters = atol(argv[2]);
	if (argc > 3)
		size = (size_t)atol(argv[3]);
	if (threads < 1 || threads > 64 || iters < 1 || resident_mib < 0) {
		fprintf(stderr, "usage: loop [THREADS<=64] [PAIRS] [SIZE] [RESIDENT_MIB]\n");
		return 2;
	}
	for (i = 0; i < resident_mib * 16; i++) {
		volatile char *p = malloc(64 * 1024);

		*p = 1; /* kept: the resident heap */
	}
	w0 = ns(CLOCK_MONOTONIC);
	for (i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	wall = ns(CLOCK_MONOTONIC) - w0;
	for (i = 0; i < threads; i++)
		cpu += cpu_ns[i];
	/* ns of thread CPU per pair, ns of wall time per pair per thread */
	printf("%.3f %.3f\n", cpu / ((double)threads * (double)iters), wall / (double)iters);
	return 0;
}
