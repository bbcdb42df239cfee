/* SPDX-License-Identifier: MIT */
/*
 * Perf map files (/tmp/perf-PID.map, "START SIZE name" per line) written by JITs:
 * a pure incremental parser with lookup, and a cache that reads them safely.
 */
#ifndef EMBER_PERFMAP_H
#define EMBER_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Bounds on what a process's perf map may make us read and hold. */
#define PERFMAP_MAX_FILE (64u << 20)
#define PERFMAP_MAX_LINE 4096
#define PERFMAP_MAX_ENTRIES (2u << 20)

/*
 * How a runtime's name splits into a function, its file and line (offsets into
 * the name). Node.js (V8) writes "JS:*fib /srv/app.js:2:13": a tag, a tier
 * marker (* ~ ^ +), the function (empty when anonymous), a space, the script
 * (a path, a URL such as file:///x.mjs, node:internal/x, or any name given to
 * vm) and the line and column the function starts at. Python 3.12's -X perf
 * writes "py::qualname:/path/file.py".
 */
struct perfmap_split {
	size_t func_off, func_len; /* func_len 0: an anonymous function */
	size_t file_off, file_len; /* file_len 0: no file given */
	uint32_t line;		   /* the function's first line; 0: unknown */
};

/*
 * Pure: splits name[0..len) when it has one of the forms above. False for any
 * other form (V8's Builtin:, RegExp:, BytecodeHandler:, Java's names): the
 * whole text is then the function.
 */
bool perfmap_split_name(const char *name, size_t len, struct perfmap_split *out);

/* What an entry names: the runtime's text, and the parts split from it. */
struct perfmap_name {
	const char *raw;      /* the line's name, as the runtime wrote it */
	const char *function; /* raw when it did not split; "(anonymous)" when empty */
	const char *file;     /* "" when none */
	uint32_t line;	      /* 0 when unknown */
};

/* The function name given to anonymous JS functions (as browsers' profilers show them). */
#define PERFMAP_ANONYMOUS "(anonymous)"

/* One file's symbols; names never move once parsed (lookups may hand them out). */
struct perf_map;

/* NULL with errno set. */
struct perf_map *perfmap_new(void);
void perfmap_free(struct perf_map *m);
/*
 * Pure: parses the complete lines of text[0..len) into m, after what earlier
 * calls parsed. *used is set to the bytes consumed: an unfinished last line is
 * left for the next call (whose text must start there). Malformed lines are
 * skipped and counted. 0, -ENOMEM, or -ENOSPC when the map reached its limit
 * (*used then stops before the line that did not fit).
 */
int perfmap_parse(struct perf_map *m, const char *text, size_t len, size_t *used);
/* Names addr from the symbol containing it (the latest one at its start); false when none. */
bool perfmap_lookup(struct perf_map *m, uint64_t addr, struct perfmap_name *out);
size_t perfmap_count(struct perf_map *m);
uint64_t perfmap_bad_lines(const struct perf_map *m);
/* Bounds what m holds (perfmap_memory) from now on; 0: no bound. */
void perfmap_set_limit(struct perf_map *m, size_t bytes);
/* Heap bytes held: the entries' array as allocated and every chunk of names. */
size_t perfmap_memory(const struct perf_map *m);

/* What reading the perf maps of live processes did and refused, since the start. */
struct perfmap_stats {
	uint64_t reads; /* files (re-)read, in full or their appended tail */
	uint64_t bytes_read;
	uint64_t refused_symlink; /* the path was, or went through, a symlink */
	uint64_t refused_owner;	  /* not owned by the process's user */
	uint64_t refused_size;	  /* over PERFMAP_MAX_FILE */
	uint64_t refused_type;	  /* not a regular file (fifo, device, directory) */
	uint64_t bad_lines;	  /* malformed lines skipped */
	uint64_t named;		  /* frames named from a perf map */
	uint64_t maps, memory;	  /* processes whose map is held, and its bytes */
	uint64_t max_bytes;	  /* the cache's bound on memory */
	uint64_t cache_full;	  /* reads skipped: the cache was at its bound */
	uint64_t over_share;	  /* maps cut short at their process's or user's share */
};

/* The perf maps of the processes seen, by pid, with a bound on their total bytes. */
struct perfmap_cache;

struct perfmap_cache *perfmap_cache_new(size_t max_bytes);
void perfmap_cache_free(struct perfmap_cache *c);
/*
 * Names addr of process pid from its perf map, reading the file on first use
 * and again on a miss (at most once a second per process). interval is the
 * caller's interval number: names stay valid until it changes, and maps
 * unused for a few intervals are forgotten then.
 */
bool perfmap_cache_lookup(struct perfmap_cache *c, pid_t pid, uint64_t addr, uint64_t interval,
			  struct perfmap_name *out);
/* The process exited: its map is dropped at the next interval, so that a new
 * process reusing the pid starts afresh. */
void perfmap_cache_forget(struct perfmap_cache *c, pid_t pid);
void perfmap_cache_stats(const struct perfmap_cache *c, struct perfmap_stats *st);
/* A new bound; what is held already stays until a shrink or the processes go. */
void perfmap_cache_set_max(struct perfmap_cache *c, size_t max_bytes);
/*
 * Frees parsed maps, least recently used process first, until at most target
 * bytes are held; call only when no name is held. A process's map is read
 * again on its next miss. The bytes freed.
 */
size_t perfmap_cache_shrink(struct perfmap_cache *c, size_t target);

#endif
