// SPDX-License-Identifier: MIT
/*
 * libFuzzer: arbitrary bytes as an ELF image through the unwind table compiler; a table that
 * comes out must keep the ABI's promises (sorted, bounded, no equal neighbours, known kinds).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

		if (r->cfa_kind > EMBER_CFA_NONE || r->rbp_kind > EMBER_RBP_CFA)
			__builtin_trap();
		if (i && (r->pc <= r[-1].pc || !memcmp(&r->cfa_kind, &r[-1].cfa_kind, 8)))
			__builtin_trap();
		/* The last row (a gap from end on) is past what unwtab_find answers. */
		if (i + 1 < t->nrows && unwtab_find(t, t->base + r->pc) != r)
			__builtin_trap();
	}
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
	unwtab_strerror(why);
	unwtab_free(&t);
	free(img);
	return 0;
}
