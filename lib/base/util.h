/* SPDX-License-Identifier: MIT */
/* Small helpers the modules share: growing arrays, searching sorted ones, sizes, threads. */
#ifndef EMBER_UTIL_H
#define EMBER_UTIL_H

#include <stddef.h>
#include <pthread.h>
#include <stdint.h>

/*
 * Grows *p, an array of elem-byte items with *cap slots, to hold need items,
 * doubling from first. 0 or -ENOMEM (then *p is unchanged).
 */
int array_grow(void **p, size_t *cap, size_t need, size_t elem, size_t first);

/*
 * In n items of stride bytes sorted by the uint64_t at byte offset off, the
 * number of items whose key is <= key: the item that may contain key (the last
 * one starting at or before it) is at index result - 1, none when 0.
 */
size_t sorted_upper_bound(const void *base, size_t n, size_t stride, size_t off, uint64_t key);

/*
 * Parses a byte size: a whole number with an optional unit, binary (KiB, MiB,
 * GiB, TiB; K, M, G, T and KB, MB, GB, TB taken as the same powers of 1024) or
 * bytes ("B" or none). 0, or -EINVAL (also on overflow, fractions, negatives).
 */
int parse_size(const char *s, uint64_t *out);

/* Writes a byte size for people: "900 bytes", "64.0 KiB", "1.5 GiB". */
void format_bytes(uint64_t n, char *buf, size_t len);

/*
 * pthread_create() with every signal blocked in the new thread, so that the
 * signals emberd reads from its signalfd (TERM, INT, HUP) can never be
 * delivered to a worker. 0 or a negative errno.
 */
int thread_start_blocked(pthread_t *t, void *(*fn)(void *), void *arg);

#endif
