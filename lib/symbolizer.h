/* SPDX-License-Identifier: MIT */
/*
 * Names addresses: kernel ones from kallsyms, user ones through the process's
 * mappings and the ELF file, with a cache keyed by file identity so that a
 * binary is parsed once, not once per process or interval.
 */
#ifndef EMBER_SYMBOLIZER_H
#define EMBER_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One resolved frame. Strings are owned by the symbolizer and stay valid until
 * symbolizer_end_interval(). */
struct sym_frame {
	const char *function;	/* NULL when unknown */
	const char *file;	/* mapping path, "[kernel.kallsyms]", or NULL when no mapping */
	const char *build_id;	/* hex GNU build-id or "" */
	uint64_t map_start, map_limit, map_offset; /* the mapping, when file != NULL */
	uint64_t address;	/* the runtime address */
	bool kernel;
};

struct symbolizer_stats {
	uint64_t frames, named, unnamed;
	uint64_t files_cached, file_cache_bytes;
	uint64_t maps_read, maps_failed;
};

struct symbolizer;

/* NULL with errno set. Kernel symbols are loaded once here (a warning, not a
 * failure, when /proc/kallsyms cannot be read). */
struct symbolizer *symbolizer_new(void);
void symbolizer_free(struct symbolizer *s);
/* Resolves addr of process pid (or of the kernel). Always fills out. */
void symbolizer_frame(struct symbolizer *s, pid_t pid, uint64_t addr, bool kernel,
		      struct sym_frame *out);
/* Forgets per-process mappings (re-read next interval) and per-interval strings. */
void symbolizer_end_interval(struct symbolizer *s);
void symbolizer_stats(const struct symbolizer *s, struct symbolizer_stats *st);

#endif
