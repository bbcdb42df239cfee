// SPDX-License-Identifier: MIT
/* The loop's timerfds: armed in nanoseconds. */
#include <errno.h>
#include <sys/timerfd.h>

#include "clock.h"
#include "timer.h"

int timer_arm(int fd, int64_t first_ns, int64_t every_ns)
{
	struct itimerspec its = {
		.it_value = ns_to_timespec(first_ns),
		.it_interval = ns_to_timespec(every_ns),
	};

	return timerfd_settime(fd, 0, &its, NULL) ? -errno : 0;
}
