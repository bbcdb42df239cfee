/* SPDX-License-Identifier: MIT */
/*
 * When a dead process's last samples are drained. The profile buffers flip,
 * then the interval reads the process events and drains the old buffers: a
 * process noted dead (exited, exec'd away from an image, gone when read)
 * before the flip has its last samples in this drain; one noted after it may
 * have some in the new buffers, drained at the next interval. Shared by the
 * process table and the symbolizer, which keep such processes until then.
 */
#ifndef EMBER_FLIPS_H
#define EMBER_FLIPS_H

#include <stdbool.h>
#include <stdint.h>

struct flips {
	uint64_t n; /* flips noted, and intervals ended without one: a death's stamp */
	bool noted; /* this interval's flip was noted */
};

/* The buffers were just flipped. */
static inline void flips_note(struct flips *f)
{
	f->n++;
	f->noted = true;
}

/*
 * At an interval's end, before flips_drained(): with no flip noted (a caller
 * without buffers), every death so far counts as before one.
 */
static inline void flips_end_interval(struct flips *f)
{
	if (!f->noted)
		f->n++;
	f->noted = false;
}

/* Whether the samples of a death stamped at (f->n then) are all drained now. */
static inline bool flips_drained(const struct flips *f, uint64_t at)
{
	return at < f->n;
}

#endif
