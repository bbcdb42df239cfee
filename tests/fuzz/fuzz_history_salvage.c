// SPDX-License-Identifier: MIT
/*
 * libFuzzer: arbitrary bytes as <data-dir>/history.db (after a first byte of options), read
 * as emberctl reads it (on by id past damaged pages), then opened as emberd's writer opens
 * it: a damaged file is moved aside and what reads is salvaged into a fresh history, which
 * must then be sound, read whole, hold no more rows than were salvaged and take new ones.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "compress.h"
#include "history.h"

/* The first byte's options; its other bits are left for more. */
#define OPT_BLOB (1u << 0)    /* the reader decompresses every row's profile */
#define OPT_ROLLUPS (1u << 1) /* ... and reads rollups in place of whole periods */
#define OPT_LABEL (1u << 2)   /* ... only rows with one label (labels_parse on every row) */
#define OPT_TYPE (1u << 3)    /* ... only cpu rows */
#define OPT_RECOVER (1u << 4) /* the writer moves the file aside even when its check passed */
#define OPT_SLOW (1u << 7)    /* files whose largest id does not read are run too (see below) */

/* Larger files only take longer: the code's bounds do not depend on the file's size. */
#define MAX_FILE (256u << 10)
/* The checks this target runs itself (a writer's open runs HISTORY_CHECK_BUDGET_NS). */
#define CHECK_NS (250LL * 1000000LL)
/* Ids kept to see that a fresh history gives each row once. */
#define MAX_IDS 65536

struct reading {
	bool with_blob, rollups;
	uint64_t rows;
	int64_t *ids; /* NULL: not kept */
	size_t n_ids, cap;
};

/* What check_row read of each profile, so that reading it is not optimized away. */
static volatile uint8_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every row a query gives, damaged file or not, is whole: its strings, its profile's bounds. */
static int check_row(const struct history_row *row, void *arg)
{
	struct reading *r = arg;
	int64_t *ids;

	if (!row->meta.type || !row->meta.app || !row->meta.labels)
		__builtin_trap();
	if (row->meta.samples > INT64_MAX || row->profiles < 1)
		__builtin_trap();
	if (!row->pprof != !row->pprof_len || row->pprof_len > EMBER_MAX_PROFILE_BYTES)
		__builtin_trap();
	if (row->pprof && !r->with_blob)
		__builtin_trap();
	if (!r->rollups && (row->rollup || row->profiles != 1))
		__builtin_trap();
	if (row->pprof_len) /* the bytes are there to read */
		sink ^= row->pprof[0] ^ row->pprof[row->pprof_len - 1];
	r->rows++;
	if (!r->ids || r->rollups)
		return 0;
	if (r->n_ids == r->cap) {
		if (r->cap >= MAX_IDS) {
			free(r->ids);
			r->ids = NULL;
			return 0;
		}
		r->cap = r->cap ? r->cap * 2 : 64;
		ids = realloc(r->ids, r->cap * sizeof(*ids));
		if (!ids)
			return -ENOMEM;
		r->ids = ids;
	}
	r->ids[r->n_ids++] = row->id;
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* A quick check, bounded: sound, damaged (said on one line) or could not run. */
static int check_file(struct history *h)
{
	char why[128];
	bool complete;
	int ret;

	memset(why, 'x', sizeof(why));
	why[0] = '\0';
	ret = history_check(h, CHECK_NS, &complete, why, sizeof(why));
	if (!memchr(why, '\0', sizeof(why)))
		__builtin_trap();
	for (const char *c = why; ret == -EBADMSG && *c; c++)
		if ((unsigned char)*c < 0x20)
			__builtin_trap();
	if (ret && !complete)
		__builtin_trap(); /* out of time is not an answer */
	return ret;
}

/* emberctl: everything a reader reads, past what is damaged; nothing it says is wrong. */
static void read_as_emberctl(const char *dir, unsigned opt)
{
	static const char *const label[] = {"service_name=checkout"};
	struct history_query q = {
		.since_ns = INT64_MIN,
		.until_ns = INT64_MAX,
		.type = opt & OPT_TYPE ? "cpu" : NULL,
		.labels = label,
		.n_labels = opt & OPT_LABEL ? 1 : 0,
		.use_rollups = opt & OPT_ROLLUPS,
	};
	struct reading r = {.with_blob = opt & OPT_BLOB, .rollups = opt & OPT_ROLLUPS};
	struct history_push_counts pc;
	struct history_pending p;
	struct history_damage d;
	struct history *h;
	char types[256];
	size_t n;
	int ret;

	h = history_open(dir, true, NULL);
	if (!h)
		return;
	history_types(h, types, sizeof(types), &n);
	ret = history_query(h, &q, r.with_blob, check_row, &r);
	/* -EBADMSG only when no row at all could be read */
	if (ret == -EBADMSG && r.rows)
		__builtin_trap();
	history_damage_info(h, &d);
	if (!d.damaged && (d.rows_read || d.unreadable))
		__builtin_trap();
	if (!memchr(d.first_error, '\0', sizeof(d.first_error)))
		__builtin_trap();
	history_push_counts(h, &pc);
	if (history_next_pending(h, false, &p) == 0)
		history_pending_free(&p);
	check_file(h);
	history_close(h);
}

/* A fresh history after a move: sound, read whole, no more rows than were salvaged. */
static void check_fresh(struct history *h)
{
	struct history_query q = {.since_ns = INT64_MIN, .until_ns = INT64_MAX};
	struct reading r = {.with_blob = true};
	struct history_recovery rec;
	struct history_damage d;
	uint64_t rollups = 0, bytes;
	struct stat st;
	char moved[sizeof(rec.moved_to) + 16];
	int ret;

	history_recovery_info(h, &rec);
	if (!rec.moved || rec.err)
		__builtin_trap();
	snprintf(moved, sizeof(moved), "%s/history.db", rec.moved_to);
	if (stat(moved, &st) || !S_ISREG(st.st_mode))
		__builtin_trap(); /* the damaged file is kept for emberctl --data-dir */
	if (check_file(h))
		__builtin_trap();
	r.ids = malloc(64 * sizeof(*r.ids));
	r.cap = r.ids ? 64 : 0;
	ret = history_query(h, &q, true, check_row, &r);
	if (ret == -ENOMEM)
		goto out;
	history_damage_info(h, &d);
	if (ret || d.damaged)
		__builtin_trap();
	if (history_rollup_count(h, &rollups, &bytes))
		__builtin_trap();
	/* rows a constraint turned away are salvaged ids without a row */
	if (r.rows + rollups > rec.salvaged)
		__builtin_trap();
	if (r.ids) {
		qsort(r.ids, r.n_ids, sizeof(*r.ids), cmp_id);
		for (size_t i = 1; i < r.n_ids; i++)
			if (r.ids[i] == r.ids[i - 1])
				__builtin_trap();
	}
out:
	free(r.ids);
}

/* emberd: the writer's open (its check, the move), a store, and a move if the store says so. */
static void write_as_emberd(const char *dir, unsigned opt)
{
	static const uint8_t pprof[] = "a profile; only its bytes matter here";
	struct history_meta m = {
		.start_ns = 1, .end_ns = 2, .type = "cpu", .app = "", .labels = ""};
	struct history_recovery rec;
	struct history *h;
	bool fresh;
	int ret;

	h = history_open(dir, false, NULL);
	if (!h)
		return; /* a sound file of a newer ember, or of another program */
	history_recovery_info(h, &rec);
	if (!rec.moved && opt & OPT_RECOVER && history_recover(h, "fuzz"))
		__builtin_trap();
	history_recovery_info(h, &rec);
	fresh = rec.moved;
	if (fresh)
		check_fresh(h);
	ret = history_put(h, &m, pprof, sizeof(pprof), NULL);
	if (ret == -EBADMSG && !fresh) {
		/* what emberd's store does */
		if (history_recover(h, "the store failed"))
			__builtin_trap();
		fresh = true;
		check_fresh(h);
		ret = history_put(h, &m, pprof, sizeof(pprof), NULL);
	}
	if (ret && fresh)
		__builtin_trap(); /* a fresh history takes what comes */
	history_close(h);
}

/* Whether the statement prepares (the schema reads), and then yields a row (a NULL too). */
static bool runs(sqlite3 *db, const char *sql, bool step)
{
	sqlite3_stmt *st;
	bool ok;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return false;
	ok = !step || sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return ok;
}

/*
 * Whether reading on by id would try ids one by one up to its bound (2^20, ~4 s a query
 * and as long again for the salvage): the table can be read by id but its largest id reads
 * neither from the table nor from its index. A bound of the code, reached again by most
 * mutations of such a file: they run only with OPT_SLOW, so that the rest runs often.
 */
static bool scans_to_bound(const char *path)
{
	char uri[96];
	sqlite3 *db;
	bool slow;

	/* immutable: no -shm or -wal made beside the file the code under test opens */
	snprintf(uri, sizeof(uri), "file:%s?immutable=1", path);
	if (sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) != SQLITE_OK) {
		sqlite3_close(db);
		return false;
	}
	slow = runs(db, "SELECT id FROM profiles WHERE id >= 1 ORDER BY id LIMIT 1", false) &&
	       !runs(db, "SELECT max(id) FROM profiles", true) &&
	       !runs(db, "SELECT max(id) FROM profiles INDEXED BY profiles_type_start", true);
	sqlite3_close(db);
	return slow;
}

/* The data directory and the damaged-* directories inside it. */
static void remove_tree(const char *path)
{
	char sub[4096];
	struct dirent *e;
	DIR *d = opendir(path);

	if (d) {
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
			if (unlink(sub) < 0 && errno == EISDIR)
				remove_tree(sub);
		}
		closedir(d);
	}
	rmdir(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char dir[] = "/tmp/ember-fuzz-salvage-XXXXXX", path[64];
	unsigned opt;
	ssize_t n;
	int fd;

	if (size < 1 || size - 1 > MAX_FILE)
		return 0;
	opt = data[0];
	if (!mkdtemp(dir))
		return 0;
	snprintf(path, sizeof(path), "%s/history.db", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		goto out;
	n = write(fd, data + 1, size - 1);
	close(fd);
	if (n != (ssize_t)(size - 1) || (!(opt & OPT_SLOW) && scans_to_bound(path)))
		goto out;
	read_as_emberctl(dir, opt);
	write_as_emberd(dir, opt);
out:
	remove_tree(dir);
	return 0;
}
