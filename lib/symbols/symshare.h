/* SPDX-License-Identifier: MIT */
/*
 * Pure: the symbol cache's bytes charged to each user and each process, and
 * the room a new binary has within its shares, so that no one process or user
 * takes the cache that every process on the host is named from.
 */
#ifndef EMBER_SYMSHARE_H
#define EMBER_SYMSHARE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Shares of the cache's bound: one binary's symbols at most half (node 24's
 * take 2.6 MB, of the 12 MiB half at the default memory_limit), the binaries
 * loaded for one process at most half, and those of one user's processes at
 * most half, so that whatever one user runs, maps or keeps busy, half is left
 * to the others. root's processes are the system's own, many and trusted:
 * bounded each by its process's share, not all together by one user's.
 */
#define SYMSHARE_FILE 2
#define SYMSHARE_PROC 2
#define SYMSHARE_USER 2
/* The user of a process that could not be read (gone by then): one user for all such. */
#define SYMSHARE_NO_UID ((uid_t)-1)

/* Which bound left a binary the least room. */
enum symshare_by {
	SYMSHARE_BY_FILE,  /* its own share */
	SYMSHARE_BY_PROC,  /* what its process's share had left */
	SYMSHARE_BY_USER,  /* what its user's share had left */
	SYMSHARE_BY_CACHE, /* what the whole cache had left */
};

/* Bytes charged to one user or one process. */
struct symshare_ent {
	uint32_t id;  /* a uid or a pid */
	uint8_t proc; /* 1: id is a pid; 0: a uid */
	uint64_t bytes;
};

/* The charges, and their sum. Zero-initialized is empty. */
struct symshare {
	struct symshare_ent *v;
	size_t n, cap;
	uint64_t total;
};

/* Charges bytes to uid and pid (negative: gives them back). 0 or -ENOMEM. */
int symshare_charge(struct symshare *t, uid_t uid, pid_t pid, int64_t bytes);
uint64_t symshare_user(const struct symshare *t, uid_t uid);
uint64_t symshare_proc(const struct symshare *t, pid_t pid);
/*
 * The most a new binary loaded for pid, of user uid, may hold in a cache of
 * cap bytes: the least of its own share and what its process's and (but for
 * root) its user's shares and the cache have left; *by says which bound that was.
 */
uint64_t symshare_room(const struct symshare *t, uid_t uid, pid_t pid, uint64_t cap,
		       enum symshare_by *by);
void symshare_free(struct symshare *t);

#endif
