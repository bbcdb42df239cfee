// SPDX-License-Identifier: MIT
/*
 * The user-space half of bpf/fold.bpf.h: shares an object's maps with the
 * objects that own them, attaches its per-CPU perf events, and drains its
 * double-buffered counts and stacks (in parts: daemon/sample/stackparts.c joins them).
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "clock.h"
#include "fold.h"

/* Batch size of map reads: one syscall per this many entries. */
#define DRAIN_BATCH 256

/*
 * Reuses fd for obj's map name, or (fd < 0) leaves its own, shrunk to tiny when
 * asked; with fd < 0, an object without the map (not every one has them all) is fine.
 */
static int share_one(struct bpf_object *obj, const char *name, int fd, bool shrink)
{
	struct bpf_map *map = bpf_object__find_map_by_name(obj, name);

	if (!map)
		return fd < 0 ? 0 : -ENOENT;
	if (fd < 0)
		return shrink ? bpf_map__set_max_entries(map, 1) : 0;
	return bpf_map__reuse_fd(map, fd) ? -errno : 0;
}

int fold_share_maps(struct bpf_object *obj, const struct fold_shared *sh, char *err, size_t errlen)
{
	const struct {
		const char *name, *what;
		int fd;
		bool shrink; /* without its owner: the walk reads nothing, frame pointers only */
	} v[] = {
		{"events", "process-event", sh->events_fd, false},
		{"known", "process-event", sh->known_fd, false},
		{"drop_tgids", "process-filter", sh->drop_fd, false},
		{"unwind_rows", "unwind tables'", sh->unwind.rows, true},
		{"unwind_tables", "unwind tables'", sh->unwind.tables, true},
		{"unwind_procs", "unwind tables'", sh->unwind.procs, true},
		{"unwind_stale", "unwind tables'", sh->unwind.stale, true},
		{"rt_exes", "unwind tables'", sh->unwind.rt_exes, true},
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		int rc = share_one(obj, v[i].name, v[i].fd, v[i].shrink);

		if (rc) {
			snprintf(err, errlen, "cannot share the %s maps (%s): %s", v[i].what,
				 v[i].name, strerror(-rc));
			return rc;
		}
	}
	return 0;
}

int fold_size_buffers(struct bpf_object *obj, uint32_t counts, uint32_t stacks)
{
	static const char *const names[] = {"counts0", "counts1", "stacks0", "stacks1"};

	for (int i = 0; i < 4; i++) {
		struct bpf_map *map = bpf_object__find_map_by_name(obj, names[i]);

		if (!map || bpf_map__set_max_entries(map, i < 2 ? counts : stacks))
			return -ENOENT;
	}
	return 0;
}

/* Parses /sys/devices/system/cpu/online ("0-3,5") into a bitmap of max CPUs. */
static int online_cpus(bool *online, unsigned int max)
{
	char buf[4096], *p, *end;
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (p = buf; *p && *p != '\n';) {
		unsigned long a = strtoul(p, &end, 10), b = a;

		if (end == p)
			return -EINVAL;
		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		for (unsigned long c = a; c <= b && c < max; c++)
			online[c] = true;
		p = *end == ',' ? end + 1 : end;
	}
	return 0;
}

/* Opens attr on cpu and attaches prog. 0 or -errno (said). */
static int attach_cpu(struct fold_perf *p, struct bpf_program *prog, struct perf_event_attr *attr,
		      unsigned int cpu, const char *what, char *err, size_t errlen)
{
	struct bpf_link *link;
	int fd = syscall(__NR_perf_event_open, attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC), rc;

	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "perf events unavailable: perf_event_open(%s, cpu %u): %s",
			 what, cpu, strerror(errno));
		return rc;
	}
	link = bpf_program__attach_perf_event(prog, fd);
	if (!link) {
		rc = -errno;
		snprintf(err, errlen, "cannot attach the %s program to cpu %u: %s", what, cpu,
			 strerror(errno));
		close(fd);
		return rc;
	}
	p->pfds[p->n] = fd;
	p->links[p->n++] = link;
	return 0;
}

int fold_perf_open(struct fold_perf *p, struct bpf_program *prog, struct perf_event_attr *attr,
		   const char *what, char *err, size_t errlen)
{
	int ncpus = libbpf_num_possible_cpus(), rc = 0;
	bool *online;

	if (ncpus <= 0) {
		snprintf(err, errlen, "cannot count the possible CPUs");
		return ncpus ? ncpus : -ENODEV;
	}
	online = calloc(ncpus, sizeof(*online));
	p->links = calloc(ncpus, sizeof(*p->links));
	p->pfds = calloc(ncpus, sizeof(*p->pfds));
	if (!online || !p->links || !p->pfds) {
		free(online);
		return -ENOMEM;
	}
	rc = online_cpus(online, ncpus);
	if (rc)
		snprintf(err, errlen, "cannot read the online CPUs: %s", strerror(-rc));
	for (int cpu = 0; !rc && cpu < ncpus; cpu++)
		if (online[cpu])
			rc = attach_cpu(p, prog, attr, cpu, what, err, errlen);
	free(online);
	if (!rc && !p->n) {
		snprintf(err, errlen, "no online CPU to sample");
		rc = -ENODEV;
	}
	return rc;
}

void fold_perf_close(struct fold_perf *p)
{
	for (unsigned int i = 0; i < p->n; i++) {
		bpf_link__destroy(p->links[i]);
		close(p->pfds[i]);
	}
	free(p->links);
	free(p->pfds);
	memset(p, 0, sizeof(*p));
}

int fold_buffers_init(struct fold_buffers *b, struct bpf_object *obj, uint32_t *active_buf,
		      uint32_t counts_max)
{
	static const char *const counts[] = {"counts0", "counts1"}, *const stacks[] = {"stacks0",
										       "stacks1"};

	memset(b, 0, sizeof(*b));
	for (int i = 0; i < EMBER_SAMPLE_NBUF; i++) {
		b->counts_fd[i] = bpf_object__find_map_fd_by_name(obj, counts[i]);
		b->stacks_fd[i] = bpf_object__find_map_fd_by_name(obj, stacks[i]);
		if (b->counts_fd[i] < 0 || b->stacks_fd[i] < 0)
			return -ENOENT;
	}
	b->gen.active_buf = active_buf;
	b->counts_max = counts_max;
	b->keys = calloc(counts_max, sizeof(*b->keys));
	b->counts = calloc(counts_max, sizeof(*b->counts));
	return b->keys && b->counts ? 0 : -ENOMEM;
}

void fold_buffers_free(struct fold_buffers *b)
{
	free(b->keys);
	free(b->counts);
	b->keys = NULL;
	b->counts = NULL;
	stack_parts_free(&b->stk); /* kept by a drain for another reader (keep_stacks) */
}

void fold_gen_flip(struct fold_gen *g)
{
	g->n++;
	__atomic_store_n(g->active_buf, g->n, __ATOMIC_SEQ_CST);
	g->flipped = true;
	g->flipped_ns = mono_ns();
}

uint32_t fold_gen_drainable(struct fold_gen *g)
{
	int64_t left;
	struct timespec ts;

	if (!g->flipped)
		fold_gen_flip(g);
	g->flipped = false;
	left = g->flipped_ns + FOLD_FLIP_GRACE_NS - mono_ns();
	if (left > 0) {
		ts = ns_to_timespec(left);
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	return !(g->n & 1);
}

long fold_read_all(int fd, bool del, void *keys, void *vals, size_t key_size, size_t val_size,
		   size_t room)
{
	uint32_t in = 0, out = 0, count;
	bool first = true;
	size_t n = 0;
	int err;

	do {
		count = room - n < DRAIN_BATCH ? room - n : DRAIN_BATCH;
		if (!count)
			return n; /* full: what remains is left for the next drain */
		err = (del ? bpf_map_lookup_and_delete_batch : bpf_map_lookup_batch)(
			fd, first ? NULL : &in, &out, (char *)keys + n * key_size,
			(char *)vals + n * val_size, &count, NULL);
		if (err && errno != ENOENT)
			return -errno;
		n += count;
		in = out;
		first = false;
	} while (!err);
	return n;
}

/*
 * Takes every stack part of the old buffer and indexes them. Each batch call
 * gets room for a full DRAIN_BATCH: the kernel refuses (ENOSPC) a call whose
 * room is smaller than the next hash bucket, so the room never shrinks.
 */
static int read_stacks(struct stack_parts *d, int fd)
{
	uint32_t in = 0, out = 0, count;
	bool first = true;
	int err;

	d->n = 0;
	do {
		if (stack_parts_reserve(d, d->n + DRAIN_BATCH))
			return -ENOMEM;
		count = DRAIN_BATCH;
		err = bpf_map_lookup_and_delete_batch(fd, first ? NULL : &in, &out, d->keys + d->n,
						      d->parts + d->n, &count, NULL);
		if (err && errno != ENOENT)
			return -errno;
		d->n += count;
		in = out;
		first = false;
	} while (!err);
	return stack_parts_index(d);
}

int fold_drain(struct fold_buffers *b, sampler_cb cb, void *arg)
{
	uint32_t old = fold_gen_drainable(&b->gen);
	int rc;
	long n;

	n = fold_read_all(b->counts_fd[old], true, b->keys, b->counts, sizeof(*b->keys),
			  sizeof(*b->counts), b->counts_max);
	rc = n < 0 ? (int)n : read_stacks(&b->stk, b->stacks_fd[old]);
	for (long i = 0; !rc && i < n; i++) {
		const struct ember_sample_key *k = &b->keys[i];
		struct sampler_stack us, ks;

		stack_parts_find(&b->stk, k->user_stack, k->flags & EMBER_KEY_USTACK_LOST,
				 &b->join[0], &us);
		stack_parts_find(&b->stk, k->kern_stack, k->flags & EMBER_KEY_KSTACK_LOST,
				 &b->join[1], &ks);
		rc = cb(k, b->counts[i], &us, &ks, arg);
	}
	/* large and transient: not worth keeping in RSS (unless another reader comes) */
	if (!b->keep_stacks)
		stack_parts_free(&b->stk);
	return rc;
}
