// SPDX-License-Identifier: MIT
/* nm.h: one nm -S run per question, its lines split into fields. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nm.h"
#include "suites.h"

uint64_t nm_symbol(const char *file, const char *name, bool dynamic, uint64_t *size)
{
	char cmd[1024], line[2048], *field[4], *save = NULL;
	uint64_t found = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -S --defined-only %s '%s'", dynamic ? "-D" : "", file);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	if (size)
		*size = 0;
	while (fgets(line, sizeof(line), p)) {
		int n = 0;

		/* "ADDR [SIZE] TYPE NAME": the size only where the symbol has one */
		for (char *f = strtok_r(line, " \n", &save); f && n < 4;
		     f = strtok_r(NULL, " \n", &save))
			field[n++] = f;
		if (n < 3)
			continue;
		field[n - 1][strcspn(field[n - 1], "@")] = '\0';
		if (strcmp(field[n - 1], name))
			continue;
		found = strtoull(field[0], NULL, 16);
		if (size)
			*size = n == 4 ? strtoull(field[1], NULL, 16) : 0;
	}
	pclose(p);
	return found;
}
