/* SPDX-License-Identifier: MIT */
/* The loop's timerfds: armed in nanoseconds. */
#ifndef EMBER_TIMER_H
#define EMBER_TIMER_H

#include <stdint.h>

/* Fires first_ns from now, then every every_ns (0: once); first_ns 0 disarms. 0 or -errno. */
int timer_arm(int fd, int64_t first_ns, int64_t every_ns);

#endif
