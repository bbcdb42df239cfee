/* SPDX-License-Identifier: MIT */
/* gzip (pprof files, pushes) and zstd (local history) in memory, with bounds. */
#ifndef EMBER_COMPRESS_H
#define EMBER_COMPRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest decompressed pprof we accept from anywhere (files, history, network). */
#define EMBER_MAX_PROFILE_BYTES (256u << 20)

bool is_gzip(const uint8_t *buf, size_t len);

/* Each returns 0 and a malloc'd *out of *out_len bytes, or a negative errno
 * (-EFBIG when the output would exceed max_out, -EBADMSG on corrupt input). */
int gzip_compress(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len);
int gzip_decompress(const uint8_t *in, size_t len, size_t max_out, uint8_t **out, size_t *out_len);
int zstd_compress_buf(const uint8_t *in, size_t len, int level, uint8_t **out, size_t *out_len);
int zstd_decompress_buf(const uint8_t *in, size_t len, size_t max_out, uint8_t **out,
			size_t *out_len);

/*
 * A zstd compression context kept across calls: zstd_compress_buf() sets one
 * up per call, which costs about as much as compressing a small profile.
 */
struct zstd_cctx;
/* NULL on ENOMEM. */
struct zstd_cctx *zstd_cctx_new(void);
/* Accepts NULL. */
void zstd_cctx_free(struct zstd_cctx *c);
/* zstd_compress_buf() with c. */
int zstd_compress_with(struct zstd_cctx *c, const uint8_t *in, size_t len, int level, uint8_t **out,
		       size_t *out_len);

#endif
