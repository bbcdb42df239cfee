/* SPDX-License-Identifier: MIT */
/*
 * Which USDT probes (SystemTap .note.stapsdt notes) of one provider an ELF file
 * has: what emberd needs to know before libbpf attaches to them. Hostile input.
 */
#ifndef EMBER_STAPSDT_H
#define EMBER_STAPSDT_H

#include <stdbool.h>
#include <stddef.h>

/* Largest .note.stapsdt section read: real ones hold a few KiB. */
#define STAPSDT_SECTION_MAX (1U << 20)
/* Probe names looked for at once (bit i of the found mask is names[i]). */
#define STAPSDT_NAMES_MAX 8

/*
 * Walks the raw bytes of a .note.stapsdt section (host byte order, 64- or
 * 32-bit addresses) and sets bit i of *found for each names[i] of provider it
 * defines. 0, or -EINVAL when a note runs past the section or a stapsdt note's
 * description is not three addresses and three NUL-terminated strings.
 */
int stapsdt_scan(const void *notes, size_t len, bool is64, const char *provider,
		 const char *const *names, size_t n_names, unsigned int *found);

/*
 * The same for the file open at fd (left open; opened by the caller, e.g. with
 * mapfile_open, never a FIFO or a device): 0 with *found 0 when it is not ELF
 * or has no such section; -EINVAL for a malformed section (too large, foreign
 * byte order, bad notes).
 */
int stapsdt_fd(int fd, const char *provider, const char *const *names, size_t n_names,
	       unsigned int *found);

#endif
