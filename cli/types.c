// SPDX-License-Identifier: MIT
/*
 * --type: a type the history does not hold is an error that names the types
 * it holds (cpu, memory_growth, memory, offcpu, offcpu_wakers: whatever was stored).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* Room for the names of every type ember stores, and many more. */
#define TYPES_BUF 1024

int check_type(struct history *h, const struct selection *sel)
{
	char buf[TYPES_BUF], list[2 * TYPES_BUF + 2] = ""; /* with ", " between names */
	const char *t = buf;
	size_t n;
	int ret;

	if (!sel->type)
		return 0;
	ret = history_types(h, buf, sizeof(buf), &n);
	if (ret || !n)
		return 0; /* an empty history: the command says so as before */
	for (size_t i = 0; i < n; i++, t += strlen(t) + 1) {
		if (!strcmp(t, sel->type))
			return 0;
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
			 t);
	}
	note("no profiles of type \"%s\" in the history; it holds: %s (choose with --type)",
	     sel->type, list);
	return EXIT_RUNTIME;
}
