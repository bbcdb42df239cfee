/* SPDX-License-Identifier: MIT */
/*
 * Flame graphs: a flattened call tree in, a self-contained interactive SVG or
 * HTML page out (hover, click to zoom, search), plain or differential. Pure:
 * writes to a FILE * (open_memstream for a buffer) and reads nothing else.
 */
#ifndef EMBER_FLAMEGRAPH_H
#define EMBER_FLAMEGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * The geometry, in SVG user units (pixels at 100%). The root is at the bottom
 * (a "flame", as flamegraph.pl draws it): depth d has its top at
 * height - FLAME_BOTTOM - (d + 1) * FLAME_FRAME_H.
 */
#define FLAME_WIDTH 1200
#define FLAME_XPAD 10 /* left and right margins */
#define FLAME_FRAMES_W (FLAME_WIDTH - 2 * FLAME_XPAD)
#define FLAME_FRAME_H 16  /* a frame's rect is 1 less: a gap between rows */
#define FLAME_TOP 60	  /* title, subtitle, buttons */
#define FLAME_BOTTOM 30	  /* the details line */
#define FLAME_FONT 12	  /* font size of frame labels */
#define FLAME_FONT_W 0.59 /* average glyph width per font size unit */
/* Frames narrower than this are not drawn, nor their callees (never wider). */
#define FLAME_MIN_PX 0.1
/* At most this many frames are drawn: past it the narrowest are left out. */
#define FLAME_MAX_RECTS 50000
/* Names are cut at this many bytes (then end with "..."): a bound on file size. */
#define FLAME_MAX_NAME 1024
/* A diff's full colour is for the biggest change, but never under 1 point: noise stays pale. */
#define FLAME_DIFF_FULL 0.01
/* Deeper trees are refused: stacks are cut well before (STACKSET_MAX_DEPTH). */
#define FLAME_MAX_DEPTH 4096

/* One node of a call tree; a document holds them in pre-order. */
struct flame_frame {
	const char *name; /* any bytes: sanitized and escaped on output */
	uint32_t depth;	  /* 0 for a root; at most one more than the previous frame's */
	int64_t value;	  /* samples of this node and its callees in the window */
	int64_t base;	  /* the same in the base window (diffs only) */
};

/*
 * A flame graph to draw. Frames are in pre-order with siblings already in the
 * order they are drawn (alphabetical, by the producer): a frame starts where
 * its previous sibling ends, the first child where its parent starts.
 */
struct flame_doc {
	const char *title;
	const char *subtitle; /* app, type, window and total, as the producer words them */
	const char *unit;     /* what values count: "samples" */
	bool diff;	      /* differential: base is the earlier window */
	const struct flame_frame *frames;
	size_t n_frames;
};

enum flame_format {
	FLAME_SVG,  /* a standalone SVG document with its script inside */
	FLAME_HTML, /* an HTML page holding the SVG, with a search box */
};

/* Where one drawn frame lands and how it is painted. */
struct flame_rect {
	size_t frame;	   /* index into doc->frames */
	double x, y, w;	   /* left, top and width in user units; height FLAME_FRAME_H - 1 */
	double at, weight; /* offset and width in weight units (data-x, data-w) */
	uint8_t rgb[3];
	double delta; /* diffs: share of the window minus share of the base */
};

/* A document laid out: what flame_write draws. */
struct flame_layout {
	struct flame_rect *rects; /* drawn frames, in pre-order */
	size_t n_rects;
	size_t dropped;		   /* frames left out: too narrow, or past FLAME_MAX_RECTS */
	int64_t total, base_total; /* sums over the roots */
	double total_weight;	   /* the width of the whole graph in weight units */
	uint32_t max_depth;	   /* deepest drawn frame */
	double height;
};

/*
 * Lays doc out. A frame's weight is its value (a diff: the mean of its shares
 * of the two windows, so that code that vanished stays visible); a frame
 * wider than what its parent has left is cut to fit. 0, -EINVAL when the
 * depths are not a pre-order (first not 0, a jump of more than one, deeper
 * than FLAME_MAX_DEPTH), -ENOMEM.
 */
int flame_layout(const struct flame_doc *doc, struct flame_layout *out);
void flame_layout_free(struct flame_layout *l);

/* Writes doc in fmt. 0, -EINVAL (see flame_layout), -ENOMEM, or -EIO on a write error. */
int flame_write(FILE *f, const struct flame_doc *doc, enum flame_format fmt);
/* The same into a malloc'd buffer (*out, *len; NUL-terminated). */
int flame_render(const struct flame_doc *doc, enum flame_format fmt, char **out, size_t *len);

/* The format a path's extension names (.svg, .html, .htm, any case); -1 for others. */
int flame_format_of(const char *path);

/*
 * Copies in as valid UTF-8 into out (cap > 4 bytes, always NUL-terminated):
 * invalid sequences, control characters (C0, DEL, C1) and U+FFFE/U+FFFF
 * become U+FFFD; past cap - 1 bytes it ends in "...". Returns the length.
 */
size_t flame_sanitize(const char *in, char *out, size_t cap);

/* The warm colour of a name: stable, from a hash of its bytes. */
void flame_hot_color(const char *name, uint8_t rgb[3]);
/*
 * The colour of a change of share: red grew, blue shrank, grey unchanged;
 * the intensity is |delta| / max_abs (clamped to 1).
 */
void flame_diff_color(double delta, double max_abs, uint8_t rgb[3]);

#endif
