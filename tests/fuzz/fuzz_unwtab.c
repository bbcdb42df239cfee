// SPDX-License-Identifier: MIT
/*
 * libFuzzer: arbitrary bytes as an ELF image through the unwind table compiler; a table that
 * comes out must keep the ABI's promises (sorted, bounded, no equal neighbours, known kinds).
 * The same bytes as a file (a memfd, read as emberd reads files) must give the same outcome
 * and the same rows.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "unwtab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct unwtab *t)
{
	size_t i;

	if (!t->nrows || t->nrows > EMBER_UNWIND_ROWS_PER_TABLE_MAX || t->rows[0].pc != 0 ||
	    t->end < t->base || t->end - t->base > UINT32_MAX ||
	    t->rows[t->nrows - 1].cfa_kind != EMBER_CFA_NONE || t->st.rows != t->nrows)
		__builtin_trap();
	for (i = 0; i < t->nrows; i++) {
		const struct ember_unwind_row *r = &t->rows[i];

		if (r->cfa_kind > EMBER_CFA_RBX || r->rbp_kind > EMBER_RBP_CFA ||
		    r->rbx_kind > EMBER_RBP_LOST || r->pad)
			__builtin_trap();
		/* equal neighbours: every byte of the rule alike (the struct has no hole) */
		if (i && (r->pc <= r[-1].pc ||
			  !memcmp(&r->cfa_kind, &r[-1].cfa_kind,
				  sizeof(*r) - offsetof(struct ember_unwind_row, cfa_kind))))
			__builtin_trap();
		/* The last row (a gap from end on) is past what unwtab_find answers. */
		if (i + 1 < t->nrows && unwtab_find(t, t->base + r->pc) != r)
			__builtin_trap();
	}
}

/* The table of the bytes as a file (a memfd made once): its outcome must be the image's. */
static void as_file(const uint8_t *data, size_t size, const struct unwtab *mem,
		    enum unwtab_err mem_why)
{
	static int fd = -1;
	enum unwtab_err why = UNWTAB_E_NR;
	struct unwtab t;

	if (fd < 0 && (fd = memfd_create("fuzz_unwtab", MFD_CLOEXEC)) < 0)
		return;
	if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		return;
	unwtab_build_fd(fd, &t, &why);
	if (why != mem_why || t.nrows != mem->nrows ||
	    (t.nrows && memcmp(t.rows, mem->rows, t.nrows * sizeof(*t.rows))))
		__builtin_trap();
	unwtab_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum unwtab_err why = UNWTAB_E_NR;
	struct unwtab t;
	/* A private copy: libelf may convert an image in place. */
	void *img = malloc(size ? size : 1);

	if (!img)
		return 0;
	memcpy(img, data, size);
	if (unwtab_build_mem(img, size, &t, &why) == 0) {
		if (why != UNWTAB_OK)
			__builtin_trap();
		check(&t);
	} else if (why == UNWTAB_OK || why >= UNWTAB_E_NR || t.rows || t.nrows) {
		__builtin_trap();
	}
	if (unwtab_find(&t, t.end) || unwtab_find(&t, t.base - 1))
		__builtin_trap();
	as_file(data, size, &t, why);
	unwtab_strerror(why);
	unwtab_free(&t);
	free(img);
	return 0;
}
