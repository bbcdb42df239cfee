/* SPDX-License-Identifier: MIT */
/* Kernel symbols from /proc/kallsyms, sorted for address lookup. */
#ifndef EMBER_KSYMS_H
#define EMBER_KSYMS_H

#include <stddef.h>
#include <stdint.h>

struct ksyms;

/* Pure: parses kallsyms text (text symbols only: t/T/w/W). 0 or negative errno.
 * Fails with -ENOENT when every address is 0 (kptr_restrict hides them). */
int ksyms_parse(const char *text, size_t len, struct ksyms **out);
/* Reads and parses /proc/kallsyms. */
int ksyms_load(struct ksyms **out);
/* Function containing addr, or NULL; *module is set to the module name or NULL. */
const char *ksyms_lookup(const struct ksyms *k, uint64_t addr, const char **module);
size_t ksyms_count(const struct ksyms *k);
void ksyms_free(struct ksyms *k);

#endif
