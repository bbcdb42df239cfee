// SPDX-License-Identifier: MIT
/* gzip and zstd round trips, and bounded decompression of oversized, corrupt and
 * truncated input. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <zstd.h>

#include "compress.h"
#include "suites.h"

#define TEXT_LEN 100000

/* Compressible but not trivial: a counter spelled out in decimal. */
static uint8_t *text(size_t len)
{
	uint8_t *t = malloc(len);
	size_t i;

	ck_assert_ptr_nonnull(t);
	for (i = 0; i < len; i++)
		t[i] = '0' + (i / 7 + i % 13) % 10;
	return t;
}

START_TEST(test_gzip_round_trip)
{
	uint8_t *in = text(TEXT_LEN), *z, *out;
	size_t zlen, olen;

	ck_assert_int_eq(gzip_compress(in, TEXT_LEN, &z, &zlen), 0);
	ck_assert(is_gzip(z, zlen));
	ck_assert_uint_lt(zlen, TEXT_LEN / 4);
	ck_assert_int_eq(gzip_decompress(z, zlen, TEXT_LEN, &out, &olen), 0);
	ck_assert_uint_eq(olen, TEXT_LEN);
	ck_assert(!memcmp(in, out, TEXT_LEN));
	free(out);
	/* One byte short of the real size is too big. */
	ck_assert_int_eq(gzip_decompress(z, zlen, TEXT_LEN - 1, &out, &olen), -EFBIG);
	free(z);
	free(in);
}
END_TEST

START_TEST(test_gzip_empty)
{
	uint8_t *z, *out;
	size_t zlen, olen = 1;

	ck_assert_int_eq(gzip_compress((const uint8_t *)"", 0, &z, &zlen), 0);
	ck_assert_int_eq(gzip_decompress(z, zlen, 0, &out, &olen), 0);
	ck_assert_uint_eq(olen, 0);
	free(out);
	free(z);
}
END_TEST

START_TEST(test_is_gzip)
{
	static const uint8_t gz[] = {0x1f, 0x8b}, raw[] = {0x0a, 0x04};

	ck_assert(is_gzip(gz, 2));
	ck_assert(!is_gzip(gz, 1));
	ck_assert(!is_gzip(raw, 2));
	ck_assert(!is_gzip(NULL, 0));
}
END_TEST

START_TEST(test_gzip_members)
{
	uint8_t *z, *two, *out;
	size_t zlen, olen;

	ck_assert_int_eq(gzip_compress((const uint8_t *)"abc", 3, &z, &zlen), 0);
	two = malloc(2 * zlen);
	memcpy(two, z, zlen);
	memcpy(two + zlen, z, zlen);
	ck_assert_int_eq(gzip_decompress(two, 2 * zlen, 100, &out, &olen), 0);
	ck_assert_uint_eq(olen, 6);
	ck_assert(!memcmp(out, "abcabc", 6));
	free(out);
	free(two);
	free(z);
}
END_TEST

START_TEST(test_gzip_corrupt)
{
	uint8_t *in = text(TEXT_LEN), *z, *out = NULL;
	size_t zlen, olen, cut;

	ck_assert_int_eq(gzip_compress(in, TEXT_LEN, &z, &zlen), 0);
	/* Truncated anywhere: never a success, never past the bound. */
	for (cut = 0; cut < zlen; cut += 1 + cut / 8)
		ck_assert_int_eq(gzip_decompress(z, cut, TEXT_LEN, &out, &olen), -EBADMSG);
	/* A flipped bit in the deflate data or the CRC. */
	z[zlen / 2] ^= 0x10;
	ck_assert_int_eq(gzip_decompress(z, zlen, TEXT_LEN, &out, &olen), -EBADMSG);
	z[zlen / 2] ^= 0x10;
	z[zlen - 6] ^= 0x01;
	ck_assert_int_eq(gzip_decompress(z, zlen, TEXT_LEN, &out, &olen), -EBADMSG);
	ck_assert_int_eq(gzip_decompress((const uint8_t *)"hello", 5, 100, &out, &olen), -EBADMSG);
	ck_assert_ptr_null(out);
	free(z);
	free(in);
}
END_TEST

/* 64 MiB of zeros in ~64 KiB of gzip must stop at the bound, not allocate it all. */
START_TEST(test_gzip_bomb)
{
	size_t len = 64u << 20, zlen, olen;
	uint8_t *zeros = calloc(1, len), *z, *out;

	ck_assert_int_eq(gzip_compress(zeros, len, &z, &zlen), 0);
	free(zeros);
	ck_assert_uint_lt(zlen, len / 200);
	ck_assert_int_eq(gzip_decompress(z, zlen, 1u << 20, &out, &olen), -EFBIG);
	free(z);
}
END_TEST

START_TEST(test_zstd_round_trip)
{
	uint8_t *in = text(TEXT_LEN), *z, *out;
	size_t zlen, olen;

	ck_assert_int_eq(zstd_compress_buf(in, TEXT_LEN, 3, &z, &zlen), 0);
	ck_assert_uint_lt(zlen, TEXT_LEN / 4);
	ck_assert_int_eq(zstd_decompress_buf(z, zlen, TEXT_LEN, &out, &olen), 0);
	ck_assert_uint_eq(olen, TEXT_LEN);
	ck_assert(!memcmp(in, out, TEXT_LEN));
	free(out);
	ck_assert_int_eq(zstd_decompress_buf(z, zlen, TEXT_LEN - 1, &out, &olen), -EFBIG);
	free(z);
	free(in);
}
END_TEST

START_TEST(test_zstd_empty)
{
	uint8_t *z, *out = NULL;
	size_t zlen, olen = 1;

	ck_assert_int_eq(zstd_compress_buf((const uint8_t *)"", 0, 1, &z, &zlen), 0);
	ck_assert_int_eq(zstd_decompress_buf(z, zlen, 0, &out, &olen), 0);
	ck_assert_uint_eq(olen, 0);
	free(out);
	free(z);
	ck_assert_int_eq(zstd_decompress_buf(NULL, 0, 100, &out, &olen), -EBADMSG);
}
END_TEST

START_TEST(test_zstd_corrupt)
{
	uint8_t *in = text(TEXT_LEN), *z, *out = NULL;
	size_t zlen, olen, cut;

	ck_assert_int_eq(zstd_compress_buf(in, TEXT_LEN, 3, &z, &zlen), 0);
	for (cut = 0; cut < zlen; cut += 1 + cut / 8)
		ck_assert_int_eq(zstd_decompress_buf(z, cut, TEXT_LEN, &out, &olen), -EBADMSG);
	ck_assert_int_eq(zstd_decompress_buf((const uint8_t *)"hello", 5, 100, &out, &olen),
			 -EBADMSG);
	/* Trailing garbage after a complete frame. */
	z = realloc(z, zlen + 8);
	memcpy(z + zlen, "garbage!", 8);
	ck_assert_int_eq(zstd_decompress_buf(z, zlen + 8, TEXT_LEN, &out, &olen), -EBADMSG);
	ck_assert_ptr_null(out);
	free(z);
	free(in);
}
END_TEST

/* A streamed frame does not state its size: the bound is found while decoding. */
START_TEST(test_zstd_bomb_unsized)
{
	size_t len = 64u << 20, cap = ZSTD_compressBound(len), olen;
	uint8_t *zeros = calloc(1, len), *z = malloc(cap), *out;
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	ZSTD_outBuffer ob = {z, cap, 0};
	ZSTD_inBuffer ib = {zeros, len, 0};

	ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
	ck_assert_uint_eq(ZSTD_compressStream2(cctx, &ob, &ib, ZSTD_e_end), 0);
	ZSTD_freeCCtx(cctx);
	free(zeros);
	ck_assert_uint_eq(ZSTD_getFrameContentSize(z, ob.pos), ZSTD_CONTENTSIZE_UNKNOWN);
	ck_assert_int_eq(zstd_decompress_buf(z, ob.pos, 1u << 20, &out, &olen), -EFBIG);
	free(z);
}
END_TEST

/* A frame whose header states a size past the bound is refused up front. */
START_TEST(test_zstd_bomb_sized)
{
	size_t len = 8u << 20, zlen, olen;
	uint8_t *zeros = calloc(1, len), *z, *out;

	ck_assert_int_eq(zstd_compress_buf(zeros, len, 1, &z, &zlen), 0);
	free(zeros);
	ck_assert_uint_eq(ZSTD_getFrameContentSize(z, zlen), len);
	ck_assert_int_eq(zstd_decompress_buf(z, zlen, len - 1, &out, &olen), -EFBIG);
	ck_assert_int_eq(zstd_decompress_buf(z, zlen, len, &out, &olen), 0);
	ck_assert_uint_eq(olen, len);
	free(out);
	free(z);
}
END_TEST

Suite *compress_suite(void)
{
	Suite *s = suite_create("compress");
	TCase *gz = tcase_create("gzip"), *zs = tcase_create("zstd");

	tcase_set_timeout(gz, 30);
	tcase_set_timeout(zs, 30);
	tcase_add_test(gz, test_gzip_round_trip);
	tcase_add_test(gz, test_gzip_empty);
	tcase_add_test(gz, test_is_gzip);
	tcase_add_test(gz, test_gzip_members);
	tcase_add_test(gz, test_gzip_corrupt);
	tcase_add_test(gz, test_gzip_bomb);
	tcase_add_test(zs, test_zstd_round_trip);
	tcase_add_test(zs, test_zstd_empty);
	tcase_add_test(zs, test_zstd_corrupt);
	tcase_add_test(zs, test_zstd_bomb_unsized);
	tcase_add_test(zs, test_zstd_bomb_sized);
	suite_add_tcase(s, gz);
	suite_add_tcase(s, zs);
	return s;
}
