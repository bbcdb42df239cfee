// SPDX-License-Identifier: MIT
/*
 * unwtab_dump FILE [-s] [ADDR...]: compiles FILE's unwind table and prints its stats and the
 * time taken, then every row (none with -s), or only the rows in force at the given addresses.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "unwtab.h"

static void print_row(const struct unwtab *t, const struct ember_unwind_row *r)
{
	printf("%016" PRIx64 " %-6s %6d", t->base + r->pc, unwtab_cfa_name(r->cfa_kind),
	       r->cfa_off);
	if (r->rbp_kind == EMBER_RBP_CFA)
		printf(" rbp=c%+d", r->rbp_off);
	if (r->rbx_kind == EMBER_RBP_CFA)
		printf(" rbx=c%+d", r->rbx_off);
	else if (r->rbx_kind == EMBER_RBP_LOST)
		printf(" rbx=?");
	printf("\n");
}

static void print_stats(const char *file, const struct unwtab *t, double secs)
{
	const struct unwtab_stats *s = &t->st;

	printf("# %s: base 0x%" PRIx64 " end 0x%" PRIx64 " segs %zu, %.3f s\n", file, t->base,
	       t->end, t->nsegs, secs);
	printf("# rows %u (%zu bytes) fdes %u dropped %u bad %u from_debug_frame %u%s\n", s->rows,
	       t->nrows * sizeof(*t->rows), s->fdes, s->fdes_dropped, s->fdes_bad,
	       s->from_debug_frame, s->debug_frame_unread ? " (.debug_frame unread)" : "");
	printf("# rows_fp %u rows_plt %u rows_end %u rows_signal %u gaps %u pads %u crt %u\n",
	       s->rows_fp, s->rows_plt, s->rows_end, s->rows_signal, s->gaps, s->pads, s->crt);
}

int main(int argc, char **argv)
{
	struct unwtab t;
	enum unwtab_err why;
	bool rows = true;
	double t0;
	int fd, rc, i, first = 2;
	size_t k;

	if (argc < 2) {
		fprintf(stderr, "usage: unwtab_dump FILE [-s] [ADDR...]\n");
		return 2;
	}
	if (argc > 2 && !strcmp(argv[2], "-s")) {
		rows = false;
		first = 3;
	}
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "unwtab_dump: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	t0 = (mono_ns() / 1e9);
	rc = unwtab_build_fd(fd, &t, &why);
	close(fd);
	if (rc) {
		fprintf(stderr, "unwtab_dump: %s: %s\n", argv[1], unwtab_strerror(why));
		return 1;
	}
	print_stats(argv[1], &t, (mono_ns() / 1e9) - t0);
	for (i = first; i < argc; i++) {
		const struct ember_unwind_row *r = unwtab_find(&t, strtoull(argv[i], NULL, 16));

		if (r)
			print_row(&t, r);
		else
			printf("%s: none\n", argv[i]);
	}
	for (k = 0; rows && first == argc && k < t.nrows; k++)
		print_row(&t, &t.rows[k]);
	unwtab_free(&t);
	return 0;
}
