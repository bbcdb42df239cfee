// SPDX-License-Identifier: MIT
/* A process's executable mappings and their files' identities, read once (procsnap.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ember/proc.h"
#include "procsnap.h"

bool procsnap_wants_file(const struct proc_map *m)
{
	return (m->perms & PROCMAP_X) && m->path && m->path[0] == '/';
}

struct proc_snap *procsnap_wrap(pid_t pid, struct proc_maps *maps)
{
	size_t n = maps->n ? maps->n : 1;
	struct proc_snap *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->keys = calloc(n, sizeof(*s->keys));
	s->key_err = malloc(n * sizeof(*s->key_err));
	if (!s->keys || !s->key_err) {
		free(s->keys);
		free(s->key_err);
		free(s);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		s->key_err[i] = -ENODATA;
	s->pid = pid;
	s->maps = *maps;
	memset(maps, 0, sizeof(*maps));
	s->refs = 1;
	return s;
}

int procsnap_read_maps(pid_t pid, struct proc_maps *maps)
{
	static bool no_query;
	int err;

	if (!__atomic_load_n(&no_query, __ATOMIC_RELAXED)) {
		err = procmaps_read_exec(pid, maps);
		if (err != -ENOTTY && err != -EINVAL)
			return err;
		__atomic_store_n(&no_query, true, __ATOMIC_RELAXED);
		procmaps_free(maps);
	}
	return procmaps_read(pid, maps);
}

static bool same_mapping(const struct proc_map *a, const struct proc_map *b)
{
	return a->start == b->start && a->end == b->end && a->offset == b->offset &&
	       a->inode == b->inode && a->dev_major == b->dev_major &&
	       a->dev_minor == b->dev_minor && a->perms == b->perms && !a->path == !b->path &&
	       (!a->path || !strcmp(a->path, b->path));
}

size_t procsnap_carry(struct proc_snap *s, const struct proc_snap *prev)
{
	size_t i = 0, j = 0, n = 0;

	if (!prev || prev->pid != s->pid)
		return 0;
	/* both sorted by start */
	while (i < s->maps.n && j < prev->maps.n) {
		const struct proc_map *m = &s->maps.v[i], *o = &prev->maps.v[j];

		if (m->start < o->start) {
			i++;
		} else if (o->start < m->start) {
			j++;
		} else {
			if (!prev->key_err[j] && same_mapping(m, o)) {
				s->keys[i] = prev->keys[j];
				s->key_err[i] = 0;
				n++;
			}
			i++;
			j++;
		}
	}
	return n;
}

/* Stats the file of each of s's mappings that procsnap_wants_file and has no identity yet. */
static void identify(struct proc_snap *s)
{
	for (size_t i = 0; i < s->maps.n; i++)
		if (s->key_err[i] && procsnap_wants_file(&s->maps.v[i]))
			s->key_err[i] = mapfile_key(s->pid, &s->maps.v[i], &s->keys[i]);
}

int procsnap_read(pid_t pid, const struct proc_snap *prev, struct proc_snap **out)
{
	struct proc_maps maps = {0};
	struct proc_snap *s;
	int64_t t0 = mono_ns();
	int err = procsnap_read_maps(pid, &maps);

	/* an exiting process (or a zombie) has no mm left: its maps read empty */
	if (!err && !maps.n)
		err = -ESRCH;
	if (err) {
		procmaps_free(&maps);
		return err;
	}
	s = procsnap_wrap(pid, &maps);
	if (!s) {
		procmaps_free(&maps);
		return -ENOMEM;
	}
	s->read_ns = t0;
	procsnap_carry(s, prev);
	identify(s);
	*out = s;
	return 0;
}

int procsnap_read_exit(const void *rec, size_t size, struct proc_snap **out)
{
	const struct ember_proc_event *e = rec;
	struct proc_maps maps = {0};
	struct proc_snap *s;
	int err = procmaps_parse_exit(rec, size, &maps);

	if (!err && !maps.n)
		err = -EINVAL; /* none whole */
	if (err) {
		procmaps_free(&maps);
		return err;
	}
	s = procsnap_wrap((pid_t)e->tgid, &maps);
	if (!s) {
		procmaps_free(&maps);
		return -ENOMEM;
	}
	s->read_ns = (int64_t)e->ktime_ns; /* the kernel's CLOCK_MONOTONIC */
	identify(s);
	*out = s;
	return 0;
}

bool procsnap_at_exit(const struct proc_snap *s)
{
	return s->maps.n && (s->maps.v[0].perms & PROCMAP_AT_EXIT);
}

struct proc_snap *procsnap_ref(struct proc_snap *s)
{
	if (s)
		__atomic_fetch_add(&s->refs, 1, __ATOMIC_RELAXED);
	return s;
}

void procsnap_unref(struct proc_snap *s)
{
	if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL))
		return;
	procmaps_free(&s->maps);
	free(s->keys);
	free(s->key_err);
	free(s);
}

int procsnap_key(const struct proc_snap *s, size_t i, const struct file_key **key)
{
	if (i >= s->maps.n)
		return -EINVAL;
	if (!s->key_err[i])
		*key = &s->keys[i];
	return s->key_err[i];
}
