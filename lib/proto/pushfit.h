/* SPDX-License-Identifier: MIT */
/*
 * A stored profile made into what a collector takes: sample labels left out
 * (one series per service), samples that became identical merged, every frame
 * without a name given a Line named as emberctl names it (unless the server
 * symbolizes), and, past the limits, the least significant stacks folded into
 * one "[truncated]" frame whose values are the sum of what it replaced. Pure.
 */
#ifndef EMBER_PUSHFIT_H
#define EMBER_PUSHFIT_H

#include <stddef.h>
#include <stdint.h>

#include "pprof.h"

/* The function name that stands for the stacks folded away. */
#define PUSHFIT_TRUNCATED "[truncated]"

struct pushfit_limits {
	uint64_t max_bytes; /* uncompressed profile.proto */
	uint64_t max_samples;
	/*
	 * [collector] server_symbolization: frames without a name are sent without a Line,
	 * for a server that names them from their build-id. Otherwise each gets a Line of
	 * pprof_unnamed_frame()'s name: Pyroscope draws Lines only, and without one the
	 * frame vanishes and its time goes to its caller.
	 */
	bool server_symbolization;
};

/* What fitting did, for the log and `emberctl status`. */
struct pushfit_stats {
	uint64_t samples_in;			/* as stored (with their labels) */
	uint64_t samples_merged;		/* gone into another that differed only by labels */
	uint64_t stacks_folded;			/* gone into the [truncated] frame */
	size_t n_values;			/* sample types of the profile */
	int64_t total[PPROF_MAX_SAMPLE_TYPES];	/* each type's sum, unchanged by fitting */
	int64_t folded[PPROF_MAX_SAMPLE_TYPES]; /* the [truncated] frame's values */
	size_t bytes_in, bytes_out;		/* uncompressed */
};

/*
 * Fits the uncompressed profile in[0..len) to lim into a new buffer *out
 * (malloc'd). 0, or a negative errno with a one-line reason in err: a profile
 * that does not decode, or whose sample types are more than a builder takes.
 */
int pushfit(const uint8_t *in, size_t len, const struct pushfit_limits *lim, uint8_t **out,
	    size_t *out_len, struct pushfit_stats *st, char *err, size_t errlen);

#endif
