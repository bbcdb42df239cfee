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
#include <sys/statvfs.h>
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
	bool reserved;	/* the reserve is whole */
} last;

/*
 * The reserve (history_reserve()): room for a prune on a full disk to write
 * its deletes and vacuum to the WAL before the checkpoint gives the pages
 * back: max_size / 8 within these bounds (1 MiB at the default max_size).
 * Taken at the first prune, given back to make room, taken again at the next
 * prune that can.
 */
#define RESERVE_MIN (128ULL << 10)
#define RESERVE_MAX (1ULL << 20)

static uint64_t reserve_bytes(const struct ember_config *cfg)
{
	uint64_t r = cfg->max_size / 8;

	return r < RESERVE_MIN ? RESERVE_MIN : r > RESERVE_MAX ? RESERVE_MAX : r;
}

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

	if (!last.reserved)
		last.reserved = !history_reserve(h, reserve_bytes(cfg));
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

uint64_t retention_free_bytes(const struct ember_config *cfg)
{
	struct statvfs v;

	if (statvfs(cfg->data_dir, &v))
		return UINT64_MAX; /* unknown: the stores will say */
	return (uint64_t)v.f_bavail * v.f_frsize;
}

uint64_t retention_headroom(const struct ember_config *cfg)
{
	return reserve_bytes(cfg) / 2;
}

uint64_t retention_keep_free(const struct ember_config *cfg)
{
	return retention_headroom(cfg) + (last.reserved ? 0 : reserve_bytes(cfg));
}

/*
 * Making room on a full disk. The WAL first: it holds every commit's pages
 * since the last checkpoint, often far more than the pages it changed. Then,
 * with a collector, what may go is what is not waiting to be pushed (sent,
 * rejected, expired), oldest first; without one, only what is past
 * retention: a profile within retention is never deleted for room, the
 * backlog keeps the newest until the disk has space again. The reserve is
 * given back first, so that the deletes and the vacuum can reach the WAL
 * (the vacuum writes about as much as it frees, until the checkpoint), and
 * half of it is freed: the stores have that half, and the next prune takes
 * the reserve again. When nothing may go, the reserve is given back too: the
 * uploader's marks need room to make profiles sent; stores wait until it
 * can be taken again (retention_keep_free()).
 */
int retention_make_room(struct history *h, const struct ember_config *cfg, uint64_t need,
			struct room_made *out)
{
	bool protect = cfg->collector.url[0] != '\0', any;
	int64_t now = real_ns(), oldest;
	struct history_prune_result r = {0};
	struct history_size sz;
	uint64_t used, target = UINT64_MAX, want = reserve_bytes(cfg) / 2;
	uint64_t enough;
	char freed[32];
	int ret;

	memset(out, 0, sizeof(*out));
	history_checkpoint(h); /* may fail on a full disk: the prune checkpoints too */
	if (retention_free_bytes(cfg) >= retention_keep_free(cfg) + need + want)
		return 0;
	ret = history_prunable(h, protect, now - cfg->retention_ns, &any);
	if (!ret && !any) {
		/* for the uploader: its marks make profiles sent, which may go */
		if (!history_unreserve(h))
			last.reserved = false;
		if (protect)
			history_pending_count(h, &out->pending, &oldest);
		return -ENOSPC;
	}
	if (!ret)
		ret = history_size(h, &sz);
	if (ret)
		return ret;
	if (protect) {
		used = sz.db_bytes > sz.free_bytes ? sz.db_bytes - sz.free_bytes : 0;
		target = used > want ? used - want : 1;
	}
	if (!history_unreserve(h))
		last.reserved = false;
	ret = history_prune(h, now, cfg->retention_ns, target, protect, &r);
	out->profiles = r.aged + r.sized;
	out->bytes = r.aged_bytes + r.sized_bytes;
	if (ret)
		return ret;
	if (out->profiles) {
		format_bytes(out->bytes, freed, sizeof(freed));
		log_info("retention: deleted the %" PRIu64 " oldest profiles that may go (%s) to "
			 "make room on a full disk",
			 out->profiles, freed);
	}
	enough = retention_keep_free(cfg) + need;
	return out->profiles || retention_free_bytes(cfg) >= enough ? 0 : -ENOSPC;
}
