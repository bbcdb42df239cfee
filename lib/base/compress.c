// SPDX-License-Identifier: MIT
/*
 * In-memory gzip (zlib) and zstd (libzstd). Decompression grows its output
 * geometrically and stops at max_out whatever the headers claim.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "compress.h"

/* A decompression output that may grow up to limit = max_out + 1 bytes:
 * reaching limit proves the data is larger than max_out. */
struct outbuf {
	uint8_t *p;
	size_t len, cap, limit, max;
};

static int outbuf_init(struct outbuf *o, size_t in_len, size_t max_out)
{
	o->max = max_out;
	o->limit = max_out < SIZE_MAX ? max_out + 1 : SIZE_MAX;
	/* A first guess at 4x the input, but never trusting it past the limit. */
	o->cap = in_len < SIZE_MAX / 4 ? in_len * 4 : SIZE_MAX;
	if (o->cap < 4096)
		o->cap = 4096;
	if (o->cap > o->limit)
		o->cap = o->limit;
	o->len = 0;
	o->p = malloc(o->cap);
	return o->p ? 0 : -ENOMEM;
}

/* Makes room once the buffer is full; -EFBIG when it is already at the limit. */
static int outbuf_grow(struct outbuf *o)
{
	size_t cap = o->cap;
	uint8_t *p;

	if (o->len < cap)
		return 0;
	if (cap >= o->limit)
		return -EFBIG;
	cap = cap < o->limit / 2 ? cap * 2 : o->limit;
	p = realloc(o->p, cap);
	if (!p)
		return -ENOMEM;
	o->p = p;
	o->cap = cap;
	return 0;
}

static int outbuf_finish(struct outbuf *o, int err, uint8_t **out, size_t *out_len)
{
	if (!err && o->len > o->max)
		err = -EFBIG;
	if (err) {
		free(o->p);
		return err;
	}
	*out = o->p;
	*out_len = o->len;
	return 0;
}

bool is_gzip(const uint8_t *buf, size_t len)
{
	return len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b;
}

int gzip_compress(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len)
{
	z_stream zs = {0};
	uLong bound;
	uint8_t *buf;
	int ret;

	if (len > UINT_MAX / 2)
		return -EFBIG;
	/* 15 + 16: a gzip wrapper, as pprof wants on disk; best speed like Go's runtime. */
	if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	bound = deflateBound(&zs, len);
	buf = malloc(bound);
	if (!buf) {
		deflateEnd(&zs);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = len;
	zs.next_out = buf;
	zs.avail_out = bound;
	ret = deflate(&zs, Z_FINISH);
	deflateEnd(&zs);
	if (ret != Z_STREAM_END) {
		free(buf);
		return -EIO;
	}
	*out = buf;
	*out_len = zs.total_out;
	return 0;
}

/* One inflate step; 1 when all input is consumed at the end of a member. */
static int gzip_step(z_stream *zs, struct outbuf *o)
{
	uInt room;
	int ret;

	ret = outbuf_grow(o);
	if (ret)
		return ret;
	room = o->cap - o->len < UINT_MAX ? o->cap - o->len : UINT_MAX;
	zs->next_out = o->p + o->len;
	zs->avail_out = room;
	ret = inflate(zs, Z_NO_FLUSH);
	o->len += room - zs->avail_out;
	switch (ret) {
	case Z_STREAM_END:
		/* Concatenated members are one gzip file (RFC 1952 2.2). */
		if (!zs->avail_in)
			return 1;
		return inflateReset(zs) == Z_OK ? 0 : -EBADMSG;
	case Z_OK:
		return 0;
	case Z_BUF_ERROR:
		/* No progress: a full output grows next step, no more input is truncation. */
		return zs->avail_out ? -EBADMSG : 0;
	case Z_MEM_ERROR:
		return -ENOMEM;
	default:
		return -EBADMSG;
	}
}

int gzip_decompress(const uint8_t *in, size_t len, size_t max_out, uint8_t **out, size_t *out_len)
{
	z_stream zs = {0};
	struct outbuf o;
	int ret;

	if (len > UINT_MAX)
		return -EFBIG;
	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return -ENOMEM;
	ret = outbuf_init(&o, len, max_out);
	if (ret) {
		inflateEnd(&zs);
		return ret;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = len;
	do
		ret = gzip_step(&zs, &o);
	while (!ret);
	inflateEnd(&zs);
	return outbuf_finish(&o, ret < 0 ? ret : 0, out, out_len);
}

/* Compresses into a malloc'd buffer with cctx, or a context of its own when NULL. */
static int zstd_compress_into(ZSTD_CCtx *cctx, const uint8_t *in, size_t len, int level,
			      uint8_t **out, size_t *out_len)
{
	size_t bound = ZSTD_compressBound(len), n;
	uint8_t *buf;

	if (ZSTD_isError(bound))
		return -EFBIG;
	buf = malloc(bound);
	if (!buf)
		return -ENOMEM;
	n = cctx ? ZSTD_compressCCtx(cctx, buf, bound, in, len, level) :
		   ZSTD_compress(buf, bound, in, len, level);
	if (ZSTD_isError(n)) {
		free(buf);
		return -EIO;
	}
	*out = buf;
	*out_len = n;
	return 0;
}

int zstd_compress_buf(const uint8_t *in, size_t len, int level, uint8_t **out, size_t *out_len)
{
	return zstd_compress_into(NULL, in, len, level, out, out_len);
}

struct zstd_cctx *zstd_cctx_new(void)
{
	return (struct zstd_cctx *)ZSTD_createCCtx();
}

void zstd_cctx_free(struct zstd_cctx *c)
{
	ZSTD_freeCCtx((ZSTD_CCtx *)c);
}

int zstd_compress_with(struct zstd_cctx *c, const uint8_t *in, size_t len, int level, uint8_t **out,
		       size_t *out_len)
{
	return zstd_compress_into((ZSTD_CCtx *)c, in, len, level, out, out_len);
}

static int zstd_errno(size_t r)
{
	switch (ZSTD_getErrorCode(r)) {
	case ZSTD_error_memory_allocation:
		return -ENOMEM;
	case ZSTD_error_frameParameter_windowTooLarge:
		return -EFBIG;
	default:
		return -EBADMSG;
	}
}

/* One streaming step; 1 when every frame is complete and all input consumed. */
static int zstd_step(ZSTD_DCtx *dctx, ZSTD_inBuffer *ib, struct outbuf *o)
{
	size_t in_pos = ib->pos, out_pos = o->len, r;
	ZSTD_outBuffer ob;
	int ret;

	ret = outbuf_grow(o);
	if (ret)
		return ret;
	ob = (ZSTD_outBuffer){.dst = o->p, .size = o->cap, .pos = o->len};
	r = ZSTD_decompressStream(dctx, &ob, ib);
	o->len = ob.pos;
	if (ZSTD_isError(r))
		return zstd_errno(r);
	if (ib->pos == ib->size) {
		if (r == 0)
			return 1;
		/* Input gone mid-frame: truncated, unless a full output holds more. */
		if (ob.pos < ob.size)
			return -EBADMSG;
	}
	/* Never spin: a step that moved nothing with room left is corrupt input. */
	if (ib->pos == in_pos && ob.pos == out_pos && ob.pos < ob.size)
		return -EBADMSG;
	return 0;
}

int zstd_decompress_buf(const uint8_t *in, size_t len, size_t max_out, uint8_t **out,
			size_t *out_len)
{
	ZSTD_inBuffer ib = {.src = in, .size = len, .pos = 0};
	unsigned long long claimed = ZSTD_getFrameContentSize(in, len);
	struct outbuf o;
	ZSTD_DCtx *dctx;
	int ret;

	/* The header's size is only believed when it says no: past the bound is an error. */
	if (claimed != ZSTD_CONTENTSIZE_UNKNOWN && claimed != ZSTD_CONTENTSIZE_ERROR &&
	    claimed > max_out)
		return -EFBIG;
	dctx = ZSTD_createDCtx();
	if (!dctx)
		return -ENOMEM;
	ret = outbuf_init(&o, len, max_out);
	if (ret) {
		ZSTD_freeDCtx(dctx);
		return ret;
	}
	do
		ret = zstd_step(dctx, &ib, &o);
	while (!ret);
	ZSTD_freeDCtx(dctx);
	return outbuf_finish(&o, ret < 0 ? ret : 0, out, out_len);
}
