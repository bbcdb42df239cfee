// SPDX-License-Identifier: MIT
/*
 * sd_notify(3) for emberd: readiness, status, reload and stop, and the
 * watchdog. libsystemd does nothing when NOTIFY_SOCKET is unset.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "clock.h"
#include "log.h"
#include "notify.h"

/* STATUS= lines longer than this are cut: systemctl status shows one line. */
#define NOTIFY_STATUS_MAX 256

/* The watchdog timerfd, -1 without a watchdog. One per process, like the socket. */
static int watchdog_fd = -1;
/* Its period: half WATCHDOG_USEC. */
static struct itimerspec watchdog_its;

int notify_watchdog_open(int *fd)
{
	struct itimerspec its = {};
	uint64_t usec = 0;
	int rc;

	*fd = -1;
	rc = sd_watchdog_enabled(0, &usec);
	if (rc < 0)
		log_warnx("WATCHDOG_USEC is not a number of microseconds: watchdog off");
	if (rc <= 0 || usec == 0)
		return 0;
	/* Half the timeout, as sd_watchdog_enabled(3) advises: one late pet is tolerated. */
	usec /= 2;
	its.it_value.tv_sec = usec / 1000000;
	its.it_value.tv_nsec = (usec % 1000000) * 1000;
	if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
		its.it_value.tv_nsec = 1000;
	its.it_interval = its.it_value;
	watchdog_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (watchdog_fd < 0 || timerfd_settime(watchdog_fd, 0, &its, NULL)) {
		rc = -errno;
		notify_close();
		return rc;
	}
	watchdog_its = its;
	log_debug("watchdog: petting every %.3gs", usec / 1e6);
	*fd = watchdog_fd;
	return 0;
}

void notify_watchdog_pet(void)
{
	uint64_t ticks;

	if (read(watchdog_fd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		return;
	sd_notify(0, "WATCHDOG=1");
}

/* Sends "PREFIX" followed by STATUS=<formatted text>. */
static void notify_vstatus(const char *prefix, const char *fmt, va_list ap)
{
	char status[NOTIFY_STATUS_MAX];

	vsnprintf(status, sizeof(status), fmt, ap);
	sd_notifyf(0, "%sSTATUS=%s", prefix, status);
}

void notify_ready(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	notify_vstatus("READY=1\n", fmt, ap);
	va_end(ap);
}

void notify_status(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	notify_vstatus("", fmt, ap);
	va_end(ap);
}

/* Sends PREFIX and STATUS=<formatted text>. */
static void __attribute__((format(printf, 2, 3)))
notify_status_prefix(const char *prefix, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	notify_vstatus(prefix, fmt, ap);
	va_end(ap);
}

void notify_report(const struct interval_report *r)
{
	const struct status_store *s = &r->st.store;
	const char *pet = "";

	/*
	 * An interval's end shows the loop alive as well as the timer does: the
	 * report pets the watchdog and pushes the timer back, which then never
	 * fires while the interval is shorter than half WatchdogSec (the unit's
	 * 10 s against 15 s): an idle emberd's every wakeup is most of its cost.
	 */
	if (watchdog_fd >= 0 && !timerfd_settime(watchdog_fd, 0, &watchdog_its, NULL))
		pet = "WATCHDOG=1\n";
	if (s->failing) {
		notify_status_prefix(pet,
				     "storing fails (%s): %" PRIu64
				     " profiles kept in memory, %" PRIu64 " dropped; %" PRIu64
				     " profiles stored",
				     s->last_error, s->backlog, s->dropped, r->st.profiles.total);
		return;
	}
	notify_status_prefix(pet,
			     "last interval: %lu samples of %u processes in %" PRIu64
			     " apps; %" PRIu64 " profiles stored",
			     r->drained.samples, r->drained.processes, r->st.apps,
			     r->st.profiles.total);
}

void notify_reloading(void)
{
	/* MONOTONIC_USEC= is what systemd >= 253 wants with RELOADING=1; older ones ignore it. */
	sd_notifyf(0, "RELOADING=1\nSTATUS=reloading the configuration\nMONOTONIC_USEC=%lld",
		   (long long)(mono_ns() / NS_PER_US));
}

void notify_stopping(void)
{
	sd_notify(0, "STOPPING=1\nSTATUS=stopping: storing the last interval");
}

void notify_close(void)
{
	if (watchdog_fd >= 0)
		close(watchdog_fd);
	watchdog_fd = -1;
}
