/* SPDX-License-Identifier: MIT */
/* binutils' nm as the independent reader of the symbol suites' expected answers. */
#ifndef EMBER_TEST_NM_H
#define EMBER_TEST_NM_H

#include <stdbool.h>
#include <stdint.h>

/*
 * The address nm gives the defined symbol name in file (dynamic: its .dynsym,
 * nm -D), its size in *size when size is not NULL (0 where nm gives none); 0
 * when nm lists no such symbol. A version (name@@V) is not part of the name.
 */
uint64_t nm_symbol(const char *file, const char *name, bool dynamic, uint64_t *size);

#endif
