// SPDX-License-Identifier: MIT
/*
 * Flame graph writer: lays a pre-order call tree out in C (so the file shows
 * the graph even where scripts do not run), then writes SVG or HTML with the
 * script of lib/profile/flamegraph.js (embedded at build time) for hover, zoom, search.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "flamegraph.h"
#include "flamegraph_js.h"

#define REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */
#define ELLIPSIS "..."

/* The style of both formats; no '<' or '&', so it needs no CDATA in SVG. */
static const char flame_css[] =
	"#flame text{font-family:Verdana,'DejaVu Sans',sans-serif;font-size:12px;fill:#000}\n"
	"#flame #title{font-size:17px;font-weight:bold}\n"
	"#flame #subtitle{fill:#555}\n"
	"#flame .button{fill:#2a5db0;cursor:pointer}\n"
	"#flame .f{cursor:pointer}\n"
	"#flame .f text{pointer-events:none}\n"
	"#flame .f text.l{fill:#fff}\n"
	"#flame .f:hover rect{stroke:#000;stroke-width:0.5}\n"
	"#flame .f.anc rect{opacity:0.55}\n";

/* The HTML page's own style, around the SVG. */
static const char page_css[] =
	"body{margin:0;background:#f8f8f8;font-family:Verdana,'DejaVu Sans',sans-serif}\n"
	"#bar{padding:6px 10px;font-size:13px}\n"
	"#search-box{width:24em}\n"
	"svg#flame{display:block;width:100%;height:auto}\n";

/* --- names --------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid; *cp gets it. */
static size_t utf8_seq(const unsigned char *s, uint32_t *cp)
{
	unsigned char c = s[0];
	size_t n;
	uint32_t v, min;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, v = c & 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, v = c & 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, v = c & 0x07, min = 0x10000;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) /* also stops at the NUL */
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return n;
}

/* Characters XML cannot hold or that would garble a label. */
static bool unwanted(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0xfffe || cp == 0xffff;
}

size_t flame_sanitize(const char *in, char *out, size_t cap)
{
	const unsigned char *s = (const unsigned char *)(in ? in : "");
	size_t len = 0, room = cap - sizeof(ELLIPSIS); /* keeps space to end in "..." */

	while (*s) {
		uint32_t cp;
		size_t n = utf8_seq(s, &cp);
		const char *put = (const char *)s;
		size_t put_len = n;

		if (!n || unwanted(cp)) {
			put = REPLACEMENT;
			put_len = sizeof(REPLACEMENT) - 1;
			n = n ? n : 1;
		}
		if (len + put_len > room) {
			memcpy(out + len, ELLIPSIS, sizeof(ELLIPSIS) - 1);
			len += sizeof(ELLIPSIS) - 1;
			break;
		}
		memcpy(out + len, put, put_len);
		len += put_len;
		s += n;
	}
	out[len] = '\0';
	return len;
}

/* The entity for a character XML or HTML may misread, in text or quoted attributes. */
static const char *entity(char c)
{
	switch (c) {
	case '&':
		return "&amp;";
	case '<':
		return "&lt;";
	case '>':
		return "&gt;";
	case '"':
		return "&quot;";
	case '\'':
		return "&#39;";
	}
	return NULL;
}

/* Writes valid UTF-8 escaped. */
static void put_escaped(FILE *f, const char *s)
{
	const char *run = s;

	for (; *s; s++) {
		const char *rep = entity(*s);

		if (!rep)
			continue;
		fwrite(run, 1, (size_t)(s - run), f);
		fputs(rep, f);
		run = s + 1;
	}
	fwrite(run, 1, (size_t)(s - run), f);
}

/* Sanitizes then escapes: for any string from outside. */
static void put_text(FILE *f, const char *s)
{
	char buf[FLAME_MAX_NAME];

	flame_sanitize(s, buf, sizeof(buf));
	put_escaped(f, buf);
}

/* Code points in valid UTF-8. */
static size_t utf8_count(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* Byte offset of code point i (valid UTF-8 with at least i of them). */
static size_t utf8_offset(const char *s, size_t i)
{
	size_t off = 0;

	for (; s[off]; off++) {
		if (((unsigned char)s[off] & 0xc0) != 0x80 && i-- == 0)
			break;
	}
	return off;
}

/*
 * The label that fits width units: the name, or its first characters and
 * ".." (as flamegraph.js's fit()), or nothing under 3 characters.
 */
static void put_label(FILE *f, char *name, double width)
{
	double fit = floor((width - 6) / (FLAME_FONT * FLAME_FONT_W));
	size_t chars = fit > 0 ? (size_t)fit : 0, off;
	char saved;

	if (chars < 3)
		return;
	if (utf8_count(name) <= chars) {
		put_escaped(f, name);
		return;
	}
	off = utf8_offset(name, chars - 2);
	saved = name[off];
	name[off] = '\0';
	put_escaped(f, name);
	name[off] = saved;
	fputs("..", f);
}

/* --- colours ------------------------------------------------------------------- */

/* FNV-1a, 32 bits: a stable hash for colours. */
static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

void flame_hot_color(const char *name, uint8_t rgb[3])
{
	uint32_t h = fnv1a(name ? name : "");

	/* flamegraph.pl's "hot": red high, green spread, a little blue. */
	rgb[0] = (uint8_t)(205 + 50 * (h & 0xff) / 255);
	rgb[1] = (uint8_t)(230 * ((h >> 8) & 0xff) / 255);
	rgb[2] = (uint8_t)(55 * ((h >> 16) & 0xff) / 255);
}

static uint8_t mix(double from, double to, double t)
{
	return (uint8_t)lround(from + (to - from) * t);
}

void flame_diff_color(double delta, double max_abs, uint8_t rgb[3])
{
	static const double grey = 222, grew[3] = {222, 40, 40}, shrank[3] = {50, 100, 225};
	double t = max_abs > 0 ? fabs(delta) / max_abs : 0;
	const double *to = delta > 0 ? grew : shrank;

	if (t > 1)
		t = 1;
	if (delta == 0 || isnan(t))
		t = 0;
	for (int i = 0; i < 3; i++)
		rgb[i] = mix(grey, to[i], t);
}

/* Dark fills get white labels. */
static bool dark(const uint8_t rgb[3])
{
	return 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] < 128;
}

/* --- layout -------------------------------------------------------------------- */

/* A frame on the path from a root to the current one, while laying out. */
struct open_frame {
	double end;    /* where its span ends, in weight units */
	double cursor; /* where its next child starts */
};

static int64_t clamp0(int64_t v)
{
	return v > 0 ? v : 0;
}

static double share(int64_t v, int64_t total)
{
	return total > 0 ? (double)clamp0(v) / (double)total : 0;
}

static double weight_of(const struct flame_doc *doc, const struct flame_frame *fr,
			const struct flame_layout *l)
{
	if (!doc->diff)
		return (double)clamp0(fr->value);
	if (l->total > 0 && l->base_total > 0)
		return (share(fr->value, l->total) + share(fr->base, l->base_total)) / 2;
	return share(fr->value, l->total) + share(fr->base, l->base_total);
}

static int64_t add_sat(int64_t a, int64_t b)
{
	int64_t r;

	return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

/* Checks the depths and sums the roots. */
static int check_frames(const struct flame_doc *doc, struct flame_layout *l)
{
	for (size_t i = 0; i < doc->n_frames; i++) {
		const struct flame_frame *fr = &doc->frames[i];
		uint32_t prev = i ? doc->frames[i - 1].depth : 0;

		if (fr->depth >= FLAME_MAX_DEPTH || (i ? fr->depth > prev + 1 : fr->depth != 0))
			return -EINVAL;
		if (fr->depth == 0) {
			l->total = add_sat(l->total, clamp0(fr->value));
			l->base_total = add_sat(l->base_total, clamp0(fr->base));
		}
	}
	return 0;
}

/* Places every frame: its offset and width in weight units, cut to what its parent has left. */
static int place(const struct flame_doc *doc, struct flame_layout *l, double *at, double *w)
{
	struct open_frame *path = malloc(FLAME_MAX_DEPTH * sizeof(*path));
	double roots = 0;

	if (!path)
		return -ENOMEM;
	for (size_t i = 0; i < doc->n_frames; i++) {
		uint32_t d = doc->frames[i].depth;
		double *cursor = d ? &path[d - 1].cursor : &roots;
		double left = d ? path[d - 1].end - *cursor : INFINITY;

		at[i] = *cursor;
		w[i] = weight_of(doc, &doc->frames[i], l);
		if (w[i] > left)
			w[i] = left > 0 ? left : 0;
		*cursor += w[i];
		path[d] = (struct open_frame){at[i] + w[i], at[i]};
	}
	l->total_weight = roots;
	free(path);
	return 0;
}

/*
 * Which frames are drawn: those under a drawn parent at least FLAME_MIN_PX
 * wide and wider than thr pixels, and, in pre-order, up to ties of those
 * exactly thr wide. Returns how many.
 */
static size_t choose(const struct flame_doc *doc, const double *w, double scale, double thr,
		     size_t ties, bool *ok)
{
	bool drawn[FLAME_MAX_DEPTH];
	size_t n = 0;

	for (size_t i = 0; i < doc->n_frames; i++) {
		uint32_t d = doc->frames[i].depth;
		double px = w[i] * scale;

		ok[i] = (!d || drawn[d - 1]) && px >= FLAME_MIN_PX &&
			(px > thr || (px == thr && ties > 0));
		if (ok[i] && px == thr)
			ties--;
		drawn[d] = ok[i];
		n += ok[i];
	}
	return n;
}

static int cmp_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x < y) - (x > y);
}

/*
 * Draws at most FLAME_MAX_RECTS frames: past that, only those wider than the
 * (MAX + 1)-th widest, and as many as fit of those exactly that wide. A
 * callee is never wider than its caller, so what is drawn stays a tree.
 */
static int choose_capped(const struct flame_doc *doc, const double *w, double scale, bool *ok)
{
	size_t k = choose(doc, w, scale, -1, 0, ok), greater;
	double *px, thr;

	if (k <= FLAME_MAX_RECTS)
		return 0;
	px = malloc(k * sizeof(*px));
	if (!px)
		return -ENOMEM;
	k = 0;
	for (size_t i = 0; i < doc->n_frames; i++) {
		if (ok[i])
			px[k++] = w[i] * scale;
	}
	qsort(px, k, sizeof(*px), cmp_desc);
	thr = px[FLAME_MAX_RECTS];
	for (greater = 0; px[greater] > thr; greater++)
		;
	free(px);
	choose(doc, w, scale, thr, FLAME_MAX_RECTS - greater, ok);
	return 0;
}

/* Fills the rects of the drawn frames, with their colours. */
static void paint(const struct flame_doc *doc, struct flame_layout *l, const double *at,
		  const double *w, const bool *ok)
{
	double scale = l->total_weight > 0 ? FLAME_FRAMES_W / l->total_weight : 0;
	double max_abs = FLAME_DIFF_FULL;

	for (size_t i = 0; i < doc->n_frames; i++) {
		const struct flame_frame *fr = &doc->frames[i];
		struct flame_rect *r;

		if (!ok[i]) {
			l->dropped++;
			continue;
		}
		r = &l->rects[l->n_rects++];
		*r = (struct flame_rect){.frame = i, .at = at[i], .weight = w[i]};
		r->x = FLAME_XPAD + at[i] * scale;
		r->w = w[i] * scale;
		if (fr->depth > l->max_depth)
			l->max_depth = fr->depth;
		r->delta = share(fr->value, l->total) - share(fr->base, l->base_total);
		if (fabs(r->delta) > max_abs)
			max_abs = fabs(r->delta);
	}
	l->height = FLAME_TOP + (l->max_depth + 1) * FLAME_FRAME_H + FLAME_BOTTOM;
	for (size_t i = 0; i < l->n_rects; i++) {
		struct flame_rect *r = &l->rects[i];

		r->y = l->height - FLAME_BOTTOM - (doc->frames[r->frame].depth + 1) * FLAME_FRAME_H;
		if (doc->diff)
			flame_diff_color(r->delta, max_abs, r->rgb);
		else
			flame_hot_color(doc->frames[r->frame].name, r->rgb);
	}
}

int flame_layout(const struct flame_doc *doc, struct flame_layout *l)
{
	size_t n = doc->n_frames;
	double *at = NULL, *w = NULL;
	bool *ok = NULL;
	int ret;

	*l = (struct flame_layout){0};
	ret = check_frames(doc, l);
	if (ret)
		return ret;
	at = malloc((n + 1) * sizeof(*at));
	w = malloc((n + 1) * sizeof(*w));
	ok = malloc(n + 1);
	l->rects = calloc(n + 1, sizeof(*l->rects));
	ret = -ENOMEM;
	if (!at || !w || !ok || !l->rects)
		goto out;
	ret = place(doc, l, at, w);
	if (!ret)
		ret = choose_capped(doc, w,
				    l->total_weight > 0 ? FLAME_FRAMES_W / l->total_weight : 0, ok);
	if (!ret)
		paint(doc, l, at, w, ok);
out:
	free(at);
	free(w);
	free(ok);
	if (ret)
		flame_layout_free(l);
	return ret;
}

void flame_layout_free(struct flame_layout *l)
{
	if (!l)
		return;
	free(l->rects);
	l->rects = NULL;
	l->n_rects = 0;
}

/* --- writing ------------------------------------------------------------------- */

/* Weight units as the script reads them back: integers exactly, shares finely. */
static void put_weight(FILE *f, const char *attr, double v, bool diff)
{
	fprintf(f, diff ? " %s=\"%.12g\"" : " %s=\"%.0f\"", attr, v);
}

static void put_frame(FILE *f, const struct flame_doc *doc, const struct flame_rect *r)
{
	const struct flame_frame *fr = &doc->frames[r->frame];
	char name[FLAME_MAX_NAME];

	flame_sanitize(fr->name, name, sizeof(name));
	fputs("<g class=\"f\" data-name=\"", f);
	put_escaped(f, name);
	fprintf(f, "\" data-d=\"%" PRIu32 "\"", fr->depth);
	put_weight(f, "data-x", r->at, doc->diff);
	put_weight(f, "data-w", r->weight, doc->diff);
	fprintf(f, " data-v=\"%" PRId64 "\"", clamp0(fr->value));
	if (doc->diff)
		fprintf(f, " data-b=\"%" PRId64 "\"", clamp0(fr->base));
	fprintf(f,
		"><rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%d\" fill=\"rgb(%u,%u,%u)\"/>",
		r->x, r->y, r->w, FLAME_FRAME_H - 1, r->rgb[0], r->rgb[1], r->rgb[2]);
	fprintf(f, "<text x=\"%.2f\" y=\"%.1f\"%s>", r->x + 3, r->y + FLAME_FRAME_H - 4.5,
		dark(r->rgb) ? " class=\"l\"" : "");
	put_label(f, name, r->w);
	fputs("</text></g>\n", f);
}

/* The <svg> element and everything in it but the script. */
static void put_svg(FILE *f, const struct flame_doc *doc, const struct flame_layout *l)
{
	fprintf(f,
		"<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" id=\"flame\" "
		"width=\"%d\" height=\"%.0f\" viewBox=\"0 0 %d %.0f\" data-fw=\"%d\" "
		"data-xpad=\"%d\" data-font=\"%d\" data-fontw=\"%g\" data-diff=\"%d\" "
		"data-total=\"%" PRId64 "\" data-btotal=\"%" PRId64 "\"",
		FLAME_WIDTH, l->height, FLAME_WIDTH, l->height, FLAME_FRAMES_W, FLAME_XPAD,
		FLAME_FONT, FLAME_FONT_W, doc->diff, l->total, l->base_total);
	put_weight(f, "data-tw", l->total_weight, doc->diff);
	fputs(" data-unit=\"", f);
	put_text(f, doc->unit ? doc->unit : "samples");
	fputs("\">\n<title>", f);
	put_text(f, doc->title);
	fprintf(f, "</title>\n<style>\n%s</style>\n", flame_css);
	fputs("<rect width=\"100%\" height=\"100%\" fill=\"#f8f8f8\"/>\n", f);
	fprintf(f, "<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">", FLAME_WIDTH / 2);
	put_text(f, doc->title);
	fprintf(f, "</text>\n<text id=\"subtitle\" x=\"%d\" y=\"44\" text-anchor=\"middle\">",
		FLAME_WIDTH / 2);
	put_text(f, doc->subtitle);
	if (l->dropped)
		fprintf(f, " (%zu frame%s too narrow to draw)", l->dropped,
			l->dropped == 1 ? "" : "s");
	fprintf(f,
		"</text>\n<text id=\"reset\" class=\"button\" x=\"%d\" y=\"24\" "
		"visibility=\"hidden\">Reset Zoom</text>\n"
		"<text id=\"search\" class=\"button\" x=\"%d\" y=\"24\" "
		"text-anchor=\"end\">Search</text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%.0f\"> </text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%.0f\" text-anchor=\"end\"> </text>\n"
		"<g id=\"frames\">\n",
		FLAME_XPAD, FLAME_WIDTH - FLAME_XPAD, FLAME_XPAD, l->height - 10,
		FLAME_WIDTH - FLAME_XPAD, l->height - 10);
	for (size_t i = 0; i < l->n_rects; i++)
		put_frame(f, doc, &l->rects[i]);
	fputs("</g>\n", f);
}

static void write_svg(FILE *f, const struct flame_doc *doc, const struct flame_layout *l)
{
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n", f);
	put_svg(f, doc, l);
	fprintf(f, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n</svg>\n",
		flamegraph_js);
}

static void write_html(FILE *f, const struct flame_doc *doc, const struct flame_layout *l)
{
	/* The policy keeps the page off the network whatever ends up in it. */
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
	      f);
	put_text(f, doc->title);
	fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n", page_css);
	fputs("<div id=\"bar\"><input id=\"search-box\" type=\"search\" "
	      "placeholder=\"Search: a regular expression, or text\" aria-label=\"search\">"
	      " click a frame to zoom, click the bottom frame or Reset Zoom to go back</div>\n",
	      f);
	put_svg(f, doc, l);
	fprintf(f, "</svg>\n<script>\n%s</script>\n</body>\n</html>\n", flamegraph_js);
}

int flame_write(FILE *f, const struct flame_doc *doc, enum flame_format fmt)
{
	struct flame_layout l;
	int ret = flame_layout(doc, &l);

	if (ret)
		return ret;
	if (fmt == FLAME_HTML)
		write_html(f, doc, &l);
	else
		write_svg(f, doc, &l);
	flame_layout_free(&l);
	return fflush(f) || ferror(f) ? -EIO : 0;
}

int flame_render(const struct flame_doc *doc, enum flame_format fmt, char **out, size_t *len)
{
	FILE *f = open_memstream(out, len);
	int ret;

	if (!f)
		return -ENOMEM;
	ret = flame_write(f, doc, fmt);
	if (fclose(f) && !ret)
		ret = -ENOMEM;
	if (ret) {
		free(*out);
		*out = NULL;
		*len = 0;
	}
	return ret;
}

int flame_format_of(const char *path)
{
	const char *dot = strrchr(path, '.');

	if (!dot || strchr(dot, '/'))
		return -1;
	if (!strcasecmp(dot, ".svg"))
		return FLAME_SVG;
	if (!strcasecmp(dot, ".html") || !strcasecmp(dot, ".htm"))
		return FLAME_HTML;
	return -1;
}
