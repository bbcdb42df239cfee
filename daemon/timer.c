// SPDX-License-Identifier: MIT
/* The loop's timerfds: armed in nanoseconds. */
#include <errno.h>
#include <sys/timerfd.h>

#include "timer.h"

int timer_arm(int fd, int64_t first_ns, int64_t every_ns)
{
	struct itimerspec its = {
		.it_value = { first_ns / 1000000000LL, first_ns % 1000000000LL },
		.it_interval = { every_ns / 1000000000LL, every_ns % 1000000000LL },
	};

	return timerfd_settime(fd, 0, &its, NULL) ? -errno : 0;
}
