// SPDX-License-Identifier: MIT
/*
 * --type wall: a view of where threads spend their wall-clock time, on the CPU
 * and off it, from the cpu profiles' cpu/nanoseconds and the offcpu profiles'
 * offcpu/nanoseconds merged into one set of stacks.
 */
#include <stdio.h>
#include <string.h>

#include "views.h"

bool view_is_wall(const struct view_opts *o)
{
	return o->sel.type && !strcmp(o->sel.type, "wall");
}

int merge_wall(struct history *h, const struct view_opts *o, struct merge_state *s)
{
	struct selection sel = o->sel;
	uint64_t merged;
	int ret;

	if (o->sample) {
		note("--type wall counts nanoseconds on and off the CPU: --sample does not apply");
		return EXIT_USAGE;
	}
	/* off the CPU first: a history without it is the error to report */
	sel.type = "offcpu";
	s->value_type = "offcpu";
	ret = merge_stacks(h, &sel, s);
	if (ret)
		return ret;
	merged = s->merged;
	/* then on it, into the same slot; its stacks end in a function, not an [off-CPU: *] */
	sel.type = "cpu";
	s->value_type = "cpu";
	if (merge_stacks(h, &sel, s) == 0)
		merged += s->merged;
	s->merged = merged;
	snprintf(s->value_name, sizeof(s->value_name), "ns on and off the CPU");
	return 0;
}
