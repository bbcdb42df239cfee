/* SPDX-License-Identifier: MIT */
/*
 * What the symbolizer's files share (symbolizer.c: the file cache, its loader
 * thread and the frames; symbolizer_proc.c: processes; symbolizer_kernel.c:
 * kernel names): bounds, the cache entries and the symbolizer itself.
 */
#ifndef EMBER_SYMBOLIZER_INT_H
#define EMBER_SYMBOLIZER_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "debugfile.h"
#include "demangle.h"
#include "elfsym.h"
#include "flips.h"
#include "ksyms.h"
#include "mapfile.h"
#include "perfmap.h"
#include "procmaps.h"
#include "procsnap.h"
#include "runtime.h"
#include "symbolizer.h"
#include "symshare.h"
#include "worker.h"

/* Binaries whose symbols are kept, and the bytes they may hold together by default. */
#define SYM_MAX_FILES 4096
_Static_assert(SYMBOLIZER_MAX_FDS == 2 * SYM_MAX_FILES, "a binary and its debug file");
#define SYM_MAX_CACHE_BYTES (1ull << 30)
/*
 * A binary, the binaries loaded for one process and those of one user's
 * processes each hold at most a share of the file cache (symshare.h): a file
 * over what its shares have left is refused (counted), so that no one process
 * or user, keeping its binaries busy, leaves every other binary on the host
 * unnamed.
 */
/* Processes whose mappings are held during one interval. */
#define SYM_MAX_PIDS 16384
/*
 * Kernel names cached from the namer's answers (kernel text is a few hundred
 * thousand addresses at most; a real host's stacks touch a few thousand). Past
 * either bound the cache starts over.
 */
#define SYM_MAX_KNAMES 65536
#define SYM_MAX_KNAME_BYTES (8u << 20)
/* KSYM_NAME_LEN of the kernel, and room for " [module]" after it. */
#define SYM_KNAME_MAX 640
/* Bytes of parsed perf maps, and of demangled names, kept together. */
#define SYM_MAX_PERFMAP_BYTES (256u << 20)
#define SYM_MAX_DEMANGLE_BYTES (16u << 20)
/*
 * No user address is this high on any 64-bit Linux (x86-64 with 5-level
 * paging ends user space at 2^56, kernel space starts at 0xff00...): such an
 * address in a user stack is a kernel one and is named as such.
 */
#define SYM_USER_LIMIT (1ull << 56)

static const char kernel_file[] = "[kernel.kallsyms]";

/* One binary, parsed once. syms NULL is a negative entry: it did not parse. */
struct file_entry {
	struct file_key key;
	struct elf_syms *syms;
	struct elf_syms *dbg; /* the .symtab of its separate debug file, if found */
	enum debugfile_via dbg_via;
	bool loading;	/* queued or being parsed by the loader (under the loader's lock) */
	bool settled;	/* its size and debug file were accounted for */
	int load_fd;	/* for the loader: the file, opened while reachable */
	pid_t load_pid; /* for the loader: whose root holds its debug file */
	char *load_path;
	uid_t load_uid;	     /* the real user of load_pid, charged with the file (symshare.h) */
	uint64_t load_cap;   /* for the loader: the file cache's bound when it was queued */
	size_t load_max;     /* the room its shares left it (by the loader, at its turn) */
	enum symshare_by by; /* which share set load_max */
	bool too_big;	     /* its symbols were over load_max: refused */
	bool charged;	     /* its bytes are charged to load_uid and load_pid */
	struct file_entry *next_job; /* the loader's queue */
	size_t bytes;
	uint64_t used;			/* interval in which it was last used */
	struct file_entry *prev, *next; /* LRU list, most recently used first */
};

/*
 * One process's mappings and the file each resolved to. Kept across intervals:
 * re-read once per interval while the process lives, kept as last seen once it
 * exited, until the drain that follows its exit has used them.
 */
struct pid_entry {
	pid_t pid;
	int err; /* reading the maps failed: do not retry */
	struct proc_maps maps;
	struct file_entry **files; /* per mapping: NULL untried, no_file, or cached */
	size_t maps_bytes;	   /* heap held by maps and files (the memory bound's) */
	uint64_t read_interval;	   /* interval in which maps were read */
	uint64_t used_interval;	   /* last interval a frame or capture used it */
	bool exited;		   /* its exit was noted: never re-read, drop after the drain */
	uint64_t exit_flip;	   /* its stamp (flips.h) when its exit was noted */
	bool maps_stale; /* the walk saw code outside its maps: re-read this interval too */
	/* its image before its last exec (and that one's before, ...), until their samples drained */
	struct pid_entry *before_exec;
	uint64_t exec_flip; /* its stamp (flips.h) when the exec that ended before_exec was noted */
	uint64_t exec_id;   /* that exec's id (symbolizer_exec()) */
	/* its runtime (symbolizer_set_runtime()), asked once, and the names of its frames */
	uid_t uid;	       /* its real user, when uid_interval is this interval + 1 */
	uint64_t uid_interval; /* when uid was read (+ 1), so once per interval at most */
	bool rt_asked;
	struct ember_rt_proc rt;
	struct rt_cache *rt_names;
	bool rt_img_set; /* rt_img found: its names shared (runtime.h's struct rt_image) */
	struct rt_image rt_img;
};

/* One cached answer of the kernel namer; addr 0 is a free slot. */
struct kname {
	uint64_t addr;
	uint32_t name; /* offset in the arena, KNAME_UNKNOWN when unnamed */
};
#define KNAME_UNKNOWN UINT32_MAX

/* The kernel namer's answers by address: open addressing, at most half full. */
struct kname_cache {
	struct kname *v;
	size_t n, cap;
	char *arena;
	size_t arena_len, arena_cap;
};

struct symbolizer {
	struct ksyms *ksyms;
	bool ksyms_tried;	       /* /proc/kallsyms was read (or failed): never again */
	symbolizer_kernel_namer namer; /* names kernel addresses instead of ksyms, or NULL */
	void *namer_arg;
	struct kname_cache knames;
	void *files; /* tsearch tree of struct file_entry, by key */
	struct file_entry *lru_head, *lru_tail;
	size_t n_files, file_bytes;
	size_t file_cap; /* bytes the file cache may hold (symbolizer_set_caps) */
	void *pids;	 /* tsearch tree of struct pid_entry, by pid */
	size_t n_pids;
	struct pid_entry *last_pid; /* consecutive frames come from one stack */
	uint64_t interval;
	struct flips flips; /* when the dead's last samples are drained */
	struct symbolizer_stats st;
	struct perfmap_cache *perfmaps; /* JIT code of each process */
	struct demangle_cache *demangle;
	uint64_t demangle_interval; /* interval in which the demangle cache was last trimmed */
	struct elf_syms *vdso;	    /* our own vDSO image: every process maps the same */
	uint64_t vdso_size;
	/*
	 * The loader thread parses new binaries (and finds their debug files) so
	 * that a cold 200 MB binary never blocks the event loop, which starts an
	 * interval's drain once the loader is idle (its eventfd) or after a
	 * deadline; the drain itself never waits.
	 */
	struct worker loader; /* its lock guards the queue and every entry's loading */
	bool loader_running;
	struct file_entry *jobs, *jobs_tail;
	uint32_t loading;   /* binaries queued or being parsed (under the loader's lock) */
	int loader_efd;	    /* loader -> loop: loading fell to 0 (eventfd); -1 without a loader */
	char slow_part[64]; /* tests: binaries whose path holds it are parsed slow_ns late */
	int64_t slow_ns;
	struct symshare shares; /* bytes loaded per user and process (under the loader's lock) */
	symbolizer_runtime_fn runtime; /* the runtime of a process, for its frames' names */
	void *runtime_arg;
	struct rt_name rt_last;	      /* the strings of the last runtime frame named */
	struct rt_shared *rt_shared;  /* names of runtimes' own code, between processes */
	struct rt_prefetch *prefetch; /* one stack's code objects read at once (NULL: not yet) */
};

void runtime_frame(struct symbolizer *s, pid_t pid, uint64_t word, struct sym_frame *out);
/*
 * JIT code left unnamed of a process whose runtime's version ember has no
 * layout for (V8 alone: its frames are read on the native walk, so they
 * stay addresses): one honest frame in *out ("[v8 13.6: not supported]").
 * False, *out untouched, for any other process.
 */
bool runtime_jit_unsupported(struct symbolizer *s, struct pid_entry *pe, pid_t pid,
			     struct sym_frame *out);

/* Marks a mapping whose file could not be opened or cached this interval. */
extern struct file_entry no_file;

/* symbolizer.c: the file cache */
void file_touch(struct symbolizer *s, struct file_entry *f);
struct file_entry *mapping_file(struct symbolizer *s, struct pid_entry *pe, size_t i);
/* The same with the file's identity known (key), or known not to be had (key_tried). */
struct file_entry *mapping_file_key(struct symbolizer *s, struct pid_entry *pe, size_t i,
				    const struct file_key *key, bool key_tried);

/* symbolizer_proc.c */
void pid_entry_free(void *p);
struct pid_entry *pid_maps(struct symbolizer *s, pid_t pid);
const struct proc_map *pid_find_map(struct symbolizer *s, struct pid_entry *pe, uint64_t addr);
/*
 * The mapping of addr in the image before an exec (*pe becomes that image's
 * entry), or in the current one; NULL when in neither.
 */
const struct proc_map *pid_find_map_any(struct symbolizer *s, struct pid_entry **pe, uint64_t addr);
void pid_expire(struct symbolizer *s);
/* pe's real user (read once an interval at most), SYMSHARE_NO_UID when it cannot be read. */
uid_t pid_uid(struct symbolizer *s, struct pid_entry *pe);
/* Heap bytes held by the processes' mappings, images before execs included. */
uint64_t pid_bytes(const struct symbolizer *s);

/* symbolizer_kernel.c */
void kname_reset(struct kname_cache *c);
void kernel_frame(struct symbolizer *s, uint64_t addr, struct sym_frame *out);

#endif
