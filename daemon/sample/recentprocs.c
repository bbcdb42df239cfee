// SPDX-License-Identifier: MIT
/* The exits and execs the deferred walks read lately (recentprocs.h). */
#include "recentprocs.h"

void recent_exit(struct recent_procs *r, uint32_t pid)
{
	r->exited[r->nexited++ % RECENT_PROCS_MAX] = pid;
}

void recent_exec(struct recent_procs *r, uint32_t pid, uint64_t ktime_ns)
{
	uint32_t i = (uint32_t)(r->nexecs++ % RECENT_PROCS_MAX);

	r->execs[i].pid = pid;
	r->execs[i].ktime_ns = ktime_ns;
}

bool recent_exited(const struct recent_procs *r, uint32_t pid)
{
	uint32_t n = r->nexited < RECENT_PROCS_MAX ? (uint32_t)r->nexited : RECENT_PROCS_MAX;

	for (uint32_t i = 0; i < n; i++)
		if (r->exited[i] == pid)
			return true;
	return false;
}

bool recent_execd_after(const struct recent_procs *r, uint32_t pid, uint64_t ktime_ns)
{
	uint32_t n = r->nexecs < RECENT_PROCS_MAX ? (uint32_t)r->nexecs : RECENT_PROCS_MAX;

	for (uint32_t i = 0; i < n; i++)
		if (r->execs[i].pid == pid && r->execs[i].ktime_ns > ktime_ns)
			return true;
	return false;
}
