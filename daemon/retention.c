// SPDX-License-Identifier: MIT
/*
 * History retention for emberd: after each stored interval, profiles past
 * [daemon] retention or max_size are deleted (lib/store/history.c does the work);
 * this file decides what is protected and says what happened.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "retention.h"

#define NS_PER_SEC 1000000000LL

/*
 * What the last prune reported, so that a lasting condition is logged when it
 * starts and when it ends, not every interval. emberd prunes from one thread.
 */
static struct {
	bool over_size;		/* only unsent profiles left and still over max_size */
	int err;		/* the last prune's error */
} last;

/* "1.5 GiB", "812.0 MiB", "64.0 KiB", "900 bytes" */
static void fmt_bytes(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
	double v = (double)n / 1024;
	size_t i = 0;

	if (n < 1024) {
		snprintf(buf, len, "%" PRIu64 " bytes", n);
		return;
	}
	while (v >= 1024 && i + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		i++;
	}
	snprintf(buf, len, "%.1f %s", v, units[i]);
}

/* A duration in the largest unit that divides it: "7d", "12h", "90m", "45s". */
static void fmt_age(int64_t ns, char *buf, size_t len)
{
	static const struct {
		int64_t secs;
		char unit;
	} units[] = {{86400, 'd'}, {3600, 'h'}, {60, 'm'}, {1, 's'}};
	int64_t secs = ns / NS_PER_SEC;

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (secs % units[i].secs == 0 || units[i].secs == 1) {
			snprintf(buf, len, "%" PRId64 "%c", secs / units[i].secs, units[i].unit);
			return;
		}
	}
}

void retention_opened(struct history *h)
{
	const struct history_upgrade *u = history_upgrade_info(h);
	char before[32], after[32];

	if (u->err)
		log_warnx("%s: cannot switch to incremental vacuum (%s): deleted profiles' "
			  "space is reused but the file does not shrink; retried at the next start",
			  history_path(h), strerror(-u->err));
	if (!u->vacuumed)
		return;
	fmt_bytes(u->bytes_before, before, sizeof(before));
	fmt_bytes(u->bytes_after, after, sizeof(after));
	log_info("%s: compacted once for retention (VACUUM, %s -> %s in %.1fs)", history_path(h),
		 before, after, u->took_ns / 1e9);
}

/* "N profiles WHY (SIZE)", after ", " when the line has something already. */
static size_t append_deleted(char *line, size_t len, size_t off, uint64_t n, const char *why,
			     uint64_t bytes)
{
	char size[32];

	if (!n || off >= len)
		return off;
	fmt_bytes(bytes, size, sizeof(size));
	return off + (size_t)snprintf(line + off, len - off, "%s%" PRIu64 " %s %s (%s)",
				      off ? ", " : "", n, n == 1 ? "profile" : "profiles", why,
				      size);
}

static void report(const struct history_prune_result *r, const struct ember_config *cfg)
{
	char line[512], size[32], age[32], bound[32], why[64];
	size_t off = 0;

	fmt_bytes(r->file_bytes + r->wal_bytes, size, sizeof(size));
	fmt_age(cfg->retention_ns, age, sizeof(age));
	snprintf(why, sizeof(why), "older than %s", age);
	off = append_deleted(line, sizeof(line), off, r->aged, why, r->aged_bytes);
	fmt_bytes(cfg->max_size, bound, sizeof(bound));
	snprintf(why, sizeof(why), "over max_size %s", bound);
	off = append_deleted(line, sizeof(line), off, r->sized, why, r->sized_bytes);
	if (off)
		log_info("retention: deleted %s; history.db %s on disk%s", line, size,
			 r->more ? "; more at the next interval" : "");
}

/* Said once when it starts and once when it ends. */
static void report_over_size(const struct history_prune_result *r, const struct ember_config *cfg,
			     bool protect)
{
	char bound[32], size[32];

	if (r->over_size == last.over_size)
		return;
	last.over_size = r->over_size;
	fmt_bytes(cfg->max_size, bound, sizeof(bound));
	fmt_bytes(r->file_bytes + r->wal_bytes, size, sizeof(size));
	if (!r->over_size) {
		log_info("retention: profiles may be deleted again to keep history.db (%s) under "
			 "max_size %s", size, bound);
		return;
	}
	if (protect)
		log_warnx("retention: history.db (%s) is over max_size %s, but what is left is "
			  "%" PRIu64 " profiles not yet pushed to the collector: they are kept "
			  "until sent or older than [collector] max_age",
			  size, bound, r->pending);
	else
		log_warnx("retention: history.db (%s) is over max_size %s with no profile left to "
			  "delete",
			  size, bound);
}

void retention_prune(struct history *h, const struct ember_config *cfg)
{
	struct history_prune_result r;
	struct timespec ts;
	bool protect = cfg->collector.url[0] != '\0';
	int ret;

	clock_gettime(CLOCK_REALTIME, &ts);
	ret = history_prune(h, (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec, cfg->retention_ns,
			    cfg->max_size, protect, &r);
	if (ret) {
		if (ret != last.err)
			log_warnx("retention: cannot prune %s: %s", history_path(h),
				  strerror(-ret));
		last.err = ret;
		return;
	}
	if (last.err)
		log_info("retention: %s pruned again", history_path(h));
	last.err = 0;
	report(&r, cfg);
	report_over_size(&r, cfg, protect);
}
