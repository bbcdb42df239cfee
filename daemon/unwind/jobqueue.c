// SPDX-License-Identifier: MIT
/* The unwind tables waiting to be compiled, and who waits for each (jobqueue.h). */
#include <stdlib.h>
#include <string.h>

#include "jobqueue.h"

/* Adds pid to the processes j refreshes once built; false past JOBQUEUE_WAITERS or on ENOMEM. */
static bool job_wait(struct job *j, pid_t pid)
{
	if (j->npids == j->cap) {
		size_t cap = j->cap ? 2 * j->cap : 8;
		pid_t *v = cap <= JOBQUEUE_WAITERS ? realloc(j->pids, cap * sizeof(*v)) : NULL;

		if (!v)
			return false; /* refreshed once every job is done */
		j->pids = v;
		j->cap = cap;
	}
	j->pids[j->npids++] = pid;
	return true;
}

void job_free(struct job *j)
{
	free(j->m.path);
	free(j->pids);
}

bool jobqueue_add(struct jobqueue *q, pid_t pid, const struct proc_map *m,
		  const struct file_key *key)
{
	struct job *j;

	for (size_t i = 0; key->size && i < q->n; i++) {
		j = &q->v[i];
		if (!file_key_cmp(&j->key, key)) {
			for (size_t k = 0; k < j->npids; k++)
				if (j->pids[k] == pid)
					return true;
			job_wait(j, pid);
			return true;
		}
	}
	if (q->n == JOBQUEUE_MAX)
		return false;
	j = &q->v[q->n];
	memset(j, 0, sizeof(*j));
	j->m = *m;
	j->m.path = strdup(m->path);
	if (!j->m.path || !job_wait(j, pid)) {
		job_free(j);
		return false;
	}
	j->key = *key;
	q->n++;
	return true;
}

bool jobqueue_take(struct jobqueue *q, struct job *out)
{
	size_t best = 0;

	if (!q->n)
		return false;
	for (size_t i = 1; i < q->n; i++)
		if (q->v[i].key.size < q->v[best].key.size)
			best = i;
	*out = q->v[best];
	q->v[best] = q->v[--q->n];
	return true;
}

void jobqueue_free(struct jobqueue *q)
{
	for (size_t i = 0; i < q->n; i++)
		job_free(&q->v[i]);
	q->n = 0;
}
