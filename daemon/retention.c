// SPDX-License-Identifier: MIT
/*
 * History retention for emberd: after each stored interval, profiles past
 * [daemon] retention or max_size are deleted (lib/store/history.c does the work);
 * this file decides what is protected and says what happened.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "retention.h"
#include "util.h"

/*
 * What the last prune reported, so that a lasting condition is logged when it
 * starts and when it ends, not every interval. emberd prunes from one thread.
 */
static struct {
	bool over_size; /* only unsent profiles left and still over max_size */
	int err;	/* the last prune's error */
} last;

void retention_opened(struct history *h)
{
	const struct history_upgrade *u = history_upgrade_info(h);
	char before[32], after[32];
	struct history_recovery r;

	history_recovery_info(h, &r);
	if (r.moved)
		log_err("%s was damaged (%s): moved to %s/ with its -wal and -shm; %" PRIu64
			" profiles that still read were copied into a fresh history, %" PRIu64
			" could not be read%s",
			history_path(h), r.why, r.moved_to, r.salvaged, r.unreadable,
			r.salvage_cut ? " (copying ran out of time: emberctl --data-dir reads "
					"the rest there)" :
					"");

	if (u->err)
		log_warnx("%s: cannot switch to incremental vacuum (%s): deleted profiles' "
			  "space is reused but the file does not shrink; retried at the next start",
			  history_path(h), strerror(-u->err));
	if (!u->vacuumed)
		return;
	format_bytes(u->bytes_before, before, sizeof(before));
	format_bytes(u->bytes_after, after, sizeof(after));
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
	format_bytes(bytes, size, sizeof(size));
	return off + (size_t)snprintf(line + off, len - off, "%s%" PRIu64 " %s %s (%s)",
				      off ? ", " : "", n, n == 1 ? "profile" : "profiles", why,
				      size);
}

static void report(const struct history_prune_result *r, const struct ember_config *cfg)
{
	char line[512], size[32], age[32], bound[32], why[64];
	size_t off = 0;

	format_bytes(r->file_bytes + r->wal_bytes, size, sizeof(size));
	format_duration(cfg->retention_ns, age, sizeof(age));
	snprintf(why, sizeof(why), "older than %s", age);
	off = append_deleted(line, sizeof(line), off, r->aged, why, r->aged_bytes);
	format_bytes(cfg->max_size, bound, sizeof(bound));
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
	format_bytes(cfg->max_size, bound, sizeof(bound));
	format_bytes(r->file_bytes + r->wal_bytes, size, sizeof(size));
	if (!r->over_size) {
		log_info("retention: profiles may be deleted again to keep history.db (%s) under "
			 "max_size %s",
			 size, bound);
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

int retention_prune(struct history *h, const struct ember_config *cfg)
{
	struct history_prune_result r;
	bool protect = cfg->collector.url[0] != '\0';
	int ret;

	ret = history_prune(h, real_ns(), cfg->retention_ns, cfg->max_size, protect, &r);
	if (ret) {
		if (ret != last.err)
			log_warnx("retention: cannot prune %s: %s", history_path(h),
				  strerror(-ret));
		last.err = ret;
		return ret;
	}
	if (last.err)
		log_info("retention: %s pruned again", history_path(h));
	last.err = 0;
	report(&r, cfg);
	report_over_size(&r, cfg, protect);
	return 0;
}

int retention_make_room(struct history *h, const struct ember_config *cfg, uint64_t need)
{
	struct history_prune_result r;
	struct history_size sz;
	uint64_t used, target;
	char freed[32];
	int ret;

	ret = history_size(h, &sz);
	if (ret)
		return ret;
	used = sz.db_bytes > sz.free_bytes ? sz.db_bytes - sz.free_bytes : 0;
	target = used > 2 * need ? used - 2 * need : 1;
	if (target > cfg->max_size)
		target = cfg->max_size;
	ret = history_prune(h, real_ns(), cfg->retention_ns, target, cfg->collector.url[0] != '\0',
			    &r);
	if (ret)
		return ret;
	if (!r.aged && !r.sized)
		return -ENOSPC;
	format_bytes(r.aged_bytes + r.sized_bytes, freed, sizeof(freed));
	log_info("retention: deleted the %" PRIu64 " oldest profiles that may go (%s) to make "
		 "room for a store that failed",
		 r.aged + r.sized, freed);
	return 0;
}
