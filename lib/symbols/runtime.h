/* SPDX-License-Identifier: MIT */
/*
 * The runtimes whose frames the stack walk reads (bpf/uwalk_rt.bpf.h): how a
 * runtime is found in a binary (the symbols it exports about itself), and
 * how a frame word (include/ember/runtime.h) is named from the live
 * process's memory, cached per process. Every byte read from a process is
 * hostile: bounded, checked, and a bad one an error, never a crash.
 */
#ifndef EMBER_RUNTIME_SYMBOLS_H
#define EMBER_RUNTIME_SYMBOLS_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ember/runtime.h>

#include "mapfile.h"

/* One piece of a process's memory to read: len bytes at addr into dst. */
struct rt_piece {
	void *dst;
	size_t len;
	uint64_t addr;
};

/*
 * A process's memory: read reads len bytes at addr into dst (false when it cannot);
 * readv, when not NULL, reads n pieces in one call and returns how many of them, from the
 * first, it read whole (those after one it could not read are left unread).
 */
struct rt_mem {
	bool (*read)(void *arg, void *dst, size_t len, uint64_t addr);
	void *arg;
	size_t (*readv)(void *arg, const struct rt_piece *p, size_t n);
};

/*
 * struct rt_mem's readers of a live process, arg its pid ((void *)(intptr_t)pid):
 * one process_vm_readv() each (root or CAP_SYS_PTRACE). rt_readv_pid() takes at most
 * RT_READV_MAX pieces.
 */
#define RT_READV_MAX 8
bool rt_read_pid(void *arg, void *dst, size_t len, uint64_t addr);
size_t rt_readv_pid(void *arg, const struct rt_piece *p, size_t n);

/*
 * Reads the n pieces p from mem; read[i]: piece i read whole. With mem's readv, in calls of
 * RT_READV_MAX pieces, the next call resuming past a piece the kernel could not read;
 * without, one read a piece. Returns the calls made.
 */
size_t rt_read_pieces(const struct rt_mem *mem, const struct rt_piece *p, size_t n, bool *read);

/* A function inlined into a runtime frame's code: its names and lines. */
struct rt_fn {
	char function[256];
	char file[512];
	uint32_t line;	     /* the line executing in it, 0 when unknown */
	uint32_t start_line; /* its first line, 0 when unknown */
};

/*
 * Functions kept of those inlined into one frame's code at the pc (V8's
 * TurboFan); the frame's own at the line of its call into the outermost one
 * kept. Deeper inlining shows as its call's line in the innermost kept.
 */
#define RT_INLINED_MAX 6

/* A runtime frame's names: its function, and those inlined into its code where it runs. */
struct rt_name {
	char function[256];
	char file[512];
	uint32_t line;	     /* the line executing (the call's, with inlined), 0 when unknown */
	uint32_t start_line; /* the function's first line, 0 when unknown */
	uint32_t n_inlined;  /* of inlined[] */
	struct rt_fn inlined[RT_INLINED_MAX]; /* innermost first: each called by the next */
};

/*
 * The runtime a binary holds, if any, into *out with the ELF virtual
 * addresses of its symbols (the unwinder adds the mapping's load bias): true
 * when found (kind set; EMBER_RT_F_UNSUPPORTED for a version without a
 * layout). fd: the file elf reads, for a value a symbol holds.
 */
bool rt_detect(Elf *elf, int fd, struct ember_rt_proc *out);
/* rt's text and addresses moved by bias (a mapping's load bias). */
void rt_relocate(struct ember_rt_proc *rt, uint64_t bias);
/*
 * The lowest vaddr of elf's executable segments, where the kernel's
 * mm->start_code points in a process running it (struct ember_rt_exe): false
 * when it has none, or is not a program the kernel loads (ET_EXEC, ET_DYN).
 */
bool rt_code_vaddr(Elf *elf, uint64_t *out);

/* Runtime frames named in one process: names by object, until the process goes. */
struct rt_cache;

struct rt_cache *rt_cache_new(void);
void rt_cache_free(struct rt_cache *c);
/* Bytes the cache holds. */
size_t rt_cache_bytes(const struct rt_cache *c);
/*
 * Names frame word (EMBER_RT_IS_WORD) of a process whose runtime is rt,
 * reading its memory through mem once per object: 0, or -ENOENT (the object
 * is not what it should be, or could not be read) with a name saying so in out.
 */
int rt_cache_name(struct rt_cache *c, const struct rt_mem *mem, const struct ember_rt_proc *rt,
		  uint64_t word, struct rt_name *out);

/*
 * Checks the names c holds for frame word, sampled at sampled_ns (mono_ns()'s
 * clock, bpf_ktime_get_ns()'s): a code object read before the sample may
 * have been freed since and another made at its address (a module's body
 * after its import, code of exec()), which its names would name for the rest
 * of the process. One read of its head where so; another code object there is
 * read anew, and so is one that could not be read before; no code object there
 * now (freed since the sample) keeps its name. RT_CHECK_READ when read anew,
 * RT_CHECK_SAME when its head was read and is the same, else RT_CHECK_NONE (not
 * named yet, read after the sample, the binary's own, the process gone, none
 * there now).
 * The drain's naming (rt_cache_name()) trusts the names: a sample of the
 * object that died and one of the object after it, of one stack in one
 * interval (announced once: bpf/fold.bpf.h's rt_seen), are named alike.
 */
enum rt_check { RT_CHECK_NONE, RT_CHECK_SAME, RT_CHECK_READ };
enum rt_check rt_cache_check(struct rt_cache *c, const struct rt_mem *mem,
			     const struct ember_rt_proc *rt, uint64_t word, int64_t sampled_ns);
/*
 * The object rt_cache_check() and rt_cache_name() would read for word sampled at
 * sampled_ns (< 0: naming only), or 0 when they would read none: one of the binary's own,
 * named and read after the sample (a check), or named already (naming only).
 */
uint64_t rt_cache_to_read(struct rt_cache *c, const struct ember_rt_proc *rt, uint64_t word,
			  int64_t sampled_ns);

/*
 * The first bytes of several objects of one process read at once, for the reads of one
 * stack's names: a block at each, in as few vectored calls as they fit (RT_READV_MAX a
 * call), served to reads that lie inside one; other reads go to the process.
 */
#define RT_PREFETCH_MAX 64
#define RT_PREFETCH_BLOCK 256
struct rt_prefetch {
	struct rt_mem under; /* the process's memory */
	size_t n;
	uint64_t addr[RT_PREFETCH_MAX];
	bool read[RT_PREFETCH_MAX];
	uint8_t bytes[RT_PREFETCH_MAX][RT_PREFETCH_BLOCK];
};

/*
 * Reads a block at each of addrs (n of them, repeats once, RT_PREFETCH_MAX at most) from
 * under (whose readv it needs: without one, nothing is read ahead). Returns the calls made.
 */
size_t rt_prefetch_fill(struct rt_prefetch *pf, const struct rt_mem *under, const uint64_t *addrs,
			size_t n);
/* A reader of pf's blocks, the process's memory beyond them. */
struct rt_mem rt_prefetch_mem(struct rt_prefetch *pf);

/*
 * Where one process maps its runtime's binary. A code object inside [lo, hi)
 * is the binary's own (CPython's deep-frozen code: importlib, site, os, ...):
 * the same bytes at the same vaddr (its address less bias) in every process
 * of that binary, but for what a process wrote over its own copy; hence
 * names shared only between the processes of one user.
 */
struct rt_image {
	struct file_key file; /* the runtime's binary */
	uint32_t uid;	      /* the process's real user */
	uint64_t lo, hi;      /* its PT_LOAD segments' span in the process */
	uint64_t bias;	      /* the process's address less the binary's vaddr */
};

/* Names of binaries' own code objects, by binary, user and vaddr: shared between processes. */
struct rt_shared;

struct rt_shared *rt_shared_new(void);
void rt_shared_free(struct rt_shared *sh);
/* Bytes it holds; and how many names it gave a process without a read, since its start. */
size_t rt_shared_bytes(const struct rt_shared *sh);
uint64_t rt_shared_hits(const struct rt_shared *sh);
/*
 * From now on c names the code objects inside img (the process's) through sh
 * first, and adds those it reads (sh NULL: no longer); sh must outlive its use.
 */
void rt_cache_share(struct rt_cache *c, struct rt_shared *sh, const struct rt_image *img);

#endif /* EMBER_RUNTIME_SYMBOLS_H */
