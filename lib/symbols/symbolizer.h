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

#include "perfmap.h"

struct rt_fn;

/* One resolved frame. Strings are owned by the symbolizer: copy them before the
 * next call into it (a re-read of the process's mappings may free them). */
struct sym_frame {
	const char *function; /* NULL when unknown */
	const char *file;     /* mapping path, "[kernel.kallsyms]", or NULL when no mapping */
	const char *build_id; /* hex GNU build-id or "" */
	uint64_t map_start, map_limit, map_offset; /* the mapping, when file != NULL */
	uint64_t address;			   /* the runtime address */
	bool kernel;
	const char *system_name; /* the mangled, versioned or runtime's raw name, else NULL */
	const char *source_file; /* the function's source file when known (JIT code), else NULL */
	uint32_t line;	     /* the line in source_file (JIT code: its function's first), or 0 */
	uint32_t start_line; /* the function's first line, when line is another; else 0 */
	/* functions inlined into a runtime frame's code where it runs, innermost first (runtime.h) */
	const struct rt_fn *inlined;
	uint32_t n_inlined;
};

struct symbolizer_stats {
	uint64_t frames, named, unnamed;
	uint64_t files_cached, file_cache_bytes;
	uint64_t maps_read, maps_failed;
	uint64_t captured;		     /* processes captured on first sight or exec */
	uint64_t file_cache_bound;	     /* bytes the file cache may hold (LRU by binary) */
	uint64_t debug_build_id, debug_link; /* binaries named from a debug file found so */
	uint64_t demangled, demangle_bytes;  /* frames demangled; the demangle cache's bytes */
	uint64_t vdso_named;		     /* frames named from the vDSO image */
	uint64_t kernel_in_user;	     /* kernel addresses in user stacks, named as kernel */
	uint64_t demangle_bound;	     /* bytes the demangle cache may hold */
	uint64_t demangle_entries;	     /* names it holds */
	uint64_t pids_held;		     /* processes whose mappings are held */
	uint64_t pids_bytes;		     /* the heap their mappings hold */
	uint64_t file_cache_full;     /* binaries not parsed: the cache was full of ones in use */
	uint64_t files_too_big;	      /* binaries refused: symbols over a file's share */
	uint64_t files_over_share;    /* binaries refused: over their process's or user's share */
	uint64_t loader_waits_cut;    /* frames left unnamed: their binary was still being parsed */
	uint64_t names_read;	      /* function names read back from a binary (not cached) */
	uint64_t names_unread;	      /* frames left unnamed: their binary changed since loading */
	uint64_t kernel_asked;	      /* kernel addresses the kernel namer was asked for */
	uint64_t kernel_cached;	      /* kernel names held in the cache of the namer's answers */
	struct perfmap_stats perfmap; /* JIT frames from /tmp/perf-PID.map */
	uint64_t runtime_frames;      /* runtime frames (Python, JavaScript) named */
	uint64_t runtime_seen;	      /* runtime frames named moments after their sample */
	uint64_t runtime_seen_stacks; /* stacks announced with them (EMBER_PROC_RT_FRAMES) */
	uint64_t runtime_seen_unread; /* of them, those that could not be read then */
	uint64_t runtime_checked;     /* code objects named before, checked at a sample after */
	uint64_t runtime_reread;      /* of them, read anew: another there, or unreadable before */
	uint64_t runtime_unsupported; /* JIT frames of a runtime version without a layout */
	uint64_t runtime_shared;      /* code objects named from another process's read */
	uint64_t runtime_shared_bytes; /* held for that (runtime.h's struct rt_shared) */
};

struct symbolizer;
struct proc_snap;

/*
 * Descriptors the symbolizer may hold: one per cached binary and per debug
 * file found for one (names are read back from them), SYM_MAX_FILES of each.
 */
#define SYMBOLIZER_MAX_FDS (2 * 4096)

/* NULL with errno set. */
struct symbolizer *symbolizer_new(void);
/*
 * Names one kernel address into buf (len bytes, NUL-terminated): 1 named, 0
 * unknown to the kernel, or a negative errno when the namer itself failed.
 */
typedef int (*symbolizer_kernel_namer)(void *arg, uint64_t addr, char *buf, size_t len);
/*
 * Kernel frames are named by fn (asked once per address; answers are cached)
 * instead of a parsed /proc/kallsyms. Without a namer, or once it failed,
 * /proc/kallsyms is read on the first kernel frame (a warning, not a failure,
 * when it cannot be).
 */
void symbolizer_set_kernel_namer(struct symbolizer *s, symbolizer_kernel_namer fn, void *arg);
struct ember_rt_proc;
/*
 * The runtime of process pid as the stack walk reads it (its unwind entry's):
 * true with *out filled when it has one. A runtime frame of a stack
 * (include/ember/runtime.h) is named from pid's memory with it; without a
 * source, or for a process it knows nothing of, such frames are named as
 * unresolved.
 */
typedef bool (*symbolizer_runtime_fn)(void *arg, pid_t pid, struct ember_rt_proc *out);
void symbolizer_set_runtime(struct symbolizer *s, symbolizer_runtime_fn fn, void *arg);
/*
 * Names the runtime frames (include/ember/runtime.h) among the n words of a
 * user stack of pid sampled moments ago (at sampled_ns, mono_ns()'s clock),
 * into the process's cache: what the drain names them from when the process
 * is gone by then. A name read before the sample is checked against what
 * lies there now (rt_cache_check()).
 */
void symbolizer_runtime_seen(struct symbolizer *s, pid_t pid, const uint64_t *words, size_t n,
			     int64_t sampled_ns);
void symbolizer_free(struct symbolizer *s);
/* Resolves addr of process pid (or of the kernel). Always fills out. */
void symbolizer_frame(struct symbolizer *s, pid_t pid, uint64_t addr, bool kernel,
		      struct sym_frame *out);
/*
 * Reads pid's mappings and opens its executable files now, while it lives (first
 * sight of the process in a sample, or after exec), so that its frames can be
 * named after it exited. 0 or negative errno (-ENOENT: already gone).
 */
int symbolizer_capture(struct symbolizer *s, pid_t pid);
/* The same from a read of the process just made (procsnap.h), not read again. */
int symbolizer_capture_snap(struct symbolizer *s, const struct proc_snap *snap);
/* Whether pid's mappings are held, read (from /proc or its exit) and not marked stale since. */
bool symbolizer_has_maps(struct symbolizer *s, pid_t pid);
/*
 * Notes that pid runs code outside the mappings read (the stack walk said so:
 * a library loaded since): they are read again now, and the binaries mapped
 * since queued for the loader, so that they are parsed before the drain (which
 * waits for none); the next address outside them still reads them once more,
 * even in the interval they were read in.
 */
void symbolizer_maps_stale(struct symbolizer *s, pid_t pid);
/*
 * Keeps pid's mappings, when read, past this interval's end however idle it
 * is: a later drain names frames it took now (a thread asleep since).
 */
void symbolizer_keep(struct symbolizer *s, pid_t pid);
/*
 * Notes that pid exited: its snapshot serves the drain of its last samples
 * (the next one; with the exit noted after symbolizer_flipped(), the one after).
 */
void symbolizer_exited(struct symbolizer *s, pid_t pid);
/*
 * Notes that pid exec'd (exec_id: the caller's nonzero id of this exec): the
 * mappings read before are its old image's, kept to name its samples from
 * before the exec until they are drained (as an exit's); an address outside
 * the new image and inside the old is named by it. Several execs before one
 * drain keep each image read (SYMBOLIZER_EXECS_MAX at most), the newest first.
 */
void symbolizer_exec(struct symbolizer *s, pid_t pid, uint64_t exec_id);
#define SYMBOLIZER_EXECS_MAX 8
/*
 * Whether addr, in a sample of pid, is from before an exec: inside an old
 * image symbolizer_exec() kept (the newest holding it) and outside the new
 * one (read if it must be). The id of the exec that ended that image, or 0.
 */
uint64_t symbolizer_before_exec(struct symbolizer *s, pid_t pid, uint64_t addr);
/*
 * The profile buffers were just flipped: a process whose exit is noted from
 * now on may have samples in the new ones, drained at the next interval.
 */
void symbolizer_flipped(struct symbolizer *s);
/*
 * How long the loop may hold back an interval's drain, or a capture's end, for
 * the loader still parsing binaries that name its frames: a frame left an
 * address once is better than an interval stored late by a slow or hostile file.
 */
#define SYMBOLIZER_WAIT_NS (1000ll * 1000 * 1000)
/*
 * The loader's eventfd, readable when every binary queued is parsed; -1 when
 * binaries are parsed inline (no loader thread: nothing is ever pending).
 */
int symbolizer_loader_fd(const struct symbolizer *s);
/*
 * Whether binaries are queued or being parsed: frames in them would stay
 * addresses if drained now (counted).
 */
bool symbolizer_loading(struct symbolizer *s);
/* The loader's eventfd was readable: clears it; true when the loader is idle still. */
bool symbolizer_loader_woke(struct symbolizer *s);
/*
 * Waits, until until_ns (mono_ns()), for the loader to parse every binary
 * queued: only where waiting is right (emberd's stop, tests). True when idle.
 */
bool symbolizer_settle_until(struct symbolizer *s, int64_t until_ns);
/*
 * Tests only (emberd's EMBER_TEST_SLOW_BINARY=PART:MS): the loader waits ns
 * before parsing each binary whose path contains path_part, standing for a
 * huge or slow file, so that a test can see the loop go on meanwhile.
 */
void symbolizer_slow_loads(struct symbolizer *s, const char *path_part, int64_t ns);
/*
 * Called after each drain: drops processes that exited or went idle, and lets
 * live ones be re-read on next use. Strings handed out stay valid until here.
 */
void symbolizer_end_interval(struct symbolizer *s);
void symbolizer_stats(const struct symbolizer *s, struct symbolizer_stats *st);

/* Bytes each cache may hold (heap: parsed symbols and names, not mapped files). */
struct symbolizer_caps {
	uint64_t files;	   /* parsed ELF symbol tables (default 1 GiB) */
	uint64_t perfmaps; /* parsed perf maps (default 256 MiB) */
	uint64_t names;	   /* demangled names (default 16 MiB) */
};

/*
 * The split of emberd's memory_limit: 3/8 to binaries, 1/8 to perf maps, 1/32
 * to demangled names; the rest (~15/32) is for what is not a cache (libraries,
 * kernel symbols, SQLite, libbpf, the drain). 64 MiB gives 24, 8 and 2 MiB.
 */
void symbolizer_caps_for_limit(uint64_t memory_limit, struct symbolizer_caps *c);
/* New caps (0 keeps one); entries held stay until evicted or shrunk. */
void symbolizer_set_caps(struct symbolizer *s, const struct symbolizer_caps *c);
/*
 * Frees cached data until the caches hold at most target bytes, or nothing
 * more can go: demangled names first, then perf maps and binaries, least
 * recently used first. Binaries of processes kept for the next interval stay.
 * Call after symbolizer_end_interval(), when no string is held. Then returns
 * freed heap to the system (malloc_trim). The cache bytes freed.
 */
uint64_t symbolizer_shrink(struct symbolizer *s, uint64_t target);

#endif
