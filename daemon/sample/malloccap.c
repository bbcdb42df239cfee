// SPDX-License-Identifier: MIT
/*
 * Loads bpf/malloc.bpf.c, attaches its uprobes to the glibc of one process,
 * and drains the folded allocation stacks once the probes are gone. The only
 * file that includes the malloc skeleton.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpfload.h"
#include "fold.h"
#include "malloccap.h"
#include "percpu.h"
#include "procmaps.h"

#include "malloc.skel.h"

/*
 * Map sizes, preallocated. Distinct allocation stacks are bounded by a
 * program's call sites, not by time: a large server has a few thousand. A
 * stack entry is ~2.1 KiB: 17 MiB of kernel memory for the capture's length.
 */
#define COUNTS_MAX 16384
#define STACKS_MAX 8192

/* The functions probed, and the program of each. */
enum { FN_MALLOC, FN_CALLOC, FN_REALLOC, FN_NR };
static const char *const fn_names[FN_NR] = {"malloc", "calloc", "realloc"};

struct malloccap {
	struct malloc_bpf *skel;
	struct bpf_link *links[FN_NR];
};

/* glibc's C library by file name: libc.so.6, or libc-2.NN.so before glibc 2.34. */
static bool is_glibc(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (!strncmp(base, "libc.so.6", 9))
		return true;
	return !strncmp(base, "libc-2.", 7) && strstr(base, ".so");
}

/*
 * The path, as the capturing daemon can open it, of the glibc that pid maps
 * executable: through /proc/PID/root, the process's own view of the file
 * system (a container's libc is not the host's).
 */
static int find_libc(uint32_t pid, char *out, size_t len, char *err, size_t errlen)
{
	struct proc_maps maps = {0};
	int rc = procmaps_read((pid_t)pid, &maps);

	if (rc) {
		snprintf(err, errlen, "cannot read the mappings of pid %u: %s", pid, strerror(-rc));
		return rc == -ENOENT ? -ESRCH : rc;
	}
	rc = -ENOENT;
	for (size_t i = 0; i < maps.n && rc; i++) {
		const struct proc_map *m = &maps.v[i];

		if (!(m->perms & PROCMAP_X) || !m->path || m->path[0] != '/' || !is_glibc(m->path))
			continue;
		if ((size_t)snprintf(out, len, "/proc/%u/root%s", pid, m->path) >= len) {
			snprintf(err, errlen, "the path of pid %u's libc is too long", pid);
			rc = -ENAMETOOLONG;
		} else {
			rc = 0;
		}
	}
	procmaps_free(&maps);
	if (rc == -ENOENT)
		snprintf(err, errlen,
			 "pid %u maps no glibc libc.so.6: it is statically linked or uses "
			 "another C library (musl); a malloc capture probes glibc's malloc only",
			 pid);
	return rc;
}

static int load(struct malloccap *m, const struct malloccap_opts *o, char *err, size_t errlen)
{
	/* the walk reads the unwinder's tables; without it, frame pointers only */
	const struct fold_shared sh = {.events_fd = o->events_fd,
				       .known_fd = o->known_fd,
				       .drop_fd = -1,
				       .unwind = o->unwind};
	int rc;

	m->skel = malloc_bpf__open();
	if (!m->skel) {
		rc = -errno;
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(errno));
		return rc;
	}
	/* set here, between open and load, by the daemon */
	m->skel->rodata->target_tgid = o->pid;
	bpf_map__set_max_entries(m->skel->maps.counts, COUNTS_MAX);
	bpf_map__set_max_entries(m->skel->maps.stacks, STACKS_MAX);
	rc = fold_share_maps(m->skel->obj, &sh, err, errlen);
	if (rc)
		return rc;
	bpfload_prepare(m->skel->obj, "malloc");
	rc = malloc_bpf__load(m->skel);
	if (rc)
		return bpfload_error(rc, "malloc", err, errlen);
	bpfload_report(m->skel->obj, "malloc");
	return 0;
}

static int attach(struct malloccap *m, uint32_t pid, const char *libc, char *err, size_t errlen)
{
	struct bpf_program *progs[FN_NR] = {m->skel->progs.ember_malloc,
					    m->skel->progs.ember_calloc,
					    m->skel->progs.ember_realloc};

	for (int i = 0; i < FN_NR; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = fn_names[i]);

		m->links[i] = bpf_program__attach_uprobe_opts(progs[i], (pid_t)pid, libc, 0, &uo);
		if (!m->links[i]) {
			int rc = -errno;

			snprintf(err, errlen, "cannot probe %s in %s: %s", fn_names[i], libc,
				 strerror(errno));
			return rc == -ENOENT && access(libc, F_OK) ? -ESRCH : rc;
		}
	}
	return 0;
}

int malloccap_open(const struct malloccap_opts *o, struct malloccap **out, char *err, size_t errlen)
{
	struct malloccap *m;
	char libc[4096];
	int rc = find_libc(o->pid, libc, sizeof(libc), err, errlen);

	if (rc)
		return rc;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	rc = load(m, o, err, errlen);
	if (!rc)
		rc = attach(m, o->pid, libc, err, errlen);
	if (rc) {
		malloccap_close(m);
		return rc;
	}
	*out = m;
	return 0;
}

void malloccap_detach(struct malloccap *m)
{
	for (int i = 0; m && i < FN_NR; i++) {
		bpf_link__destroy(m->links[i]);
		m->links[i] = NULL;
	}
}

void malloccap_close(struct malloccap *m)
{
	if (!m)
		return;
	malloccap_detach(m);
	malloc_bpf__destroy(m->skel);
	bpfload_closed();
	free(m);
}

int malloccap_metrics(struct malloccap *m, uint64_t out[EMBER_MALLOC_M_NR])
{
	return percpu_array_sum(bpf_map__fd(m->skel->maps.metrics), EMBER_MALLOC_M_NR, out);
}

/* The stack of hash into st (ips point into buf); a hash not found is a lost stack. */
static void get_stack(int fd, uint64_t hash, bool lost, struct ember_stack *buf,
		      struct sampler_stack *st)
{
	memset(st, 0, sizeof(*st));
	st->lost = lost;
	if (!hash)
		return;
	if (bpf_map_lookup_elem(fd, &hash, buf)) {
		st->lost = true;
		return;
	}
	st->ips = (const uint64_t *)buf->ips;
	st->n = buf->len < EMBER_MAX_STACK_DEPTH ? buf->len : EMBER_MAX_STACK_DEPTH;
	sampler_stack_flags(st, buf->flags);
}

/*
 * Walks the counts map key by key (the probes are detached: nothing changes
 * under the walk), then empties both maps for the next drain.
 */
int malloccap_drain(void *src, int64_t period, profile_sample_cb cb, void *arg)
{
	struct malloccap *m = src;
	int cfd = bpf_map__fd(m->skel->maps.counts), sfd = bpf_map__fd(m->skel->maps.stacks);
	struct ember_stack *buf = malloc(sizeof(*buf));
	struct ember_sample_key key, next;
	struct sampler_stack none = {0};
	void *prev = NULL;
	int rc = buf ? 0 : -ENOMEM;

	(void)period; /* every call is recorded: each weighs itself */
	while (!rc && !bpf_map_get_next_key(cfd, prev, &next)) {
		struct ember_malloc_value v;
		struct sampler_stack us;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(cfd, &key, &v))
			continue;
		get_stack(sfd, key.user_stack, key.flags & EMBER_KEY_USTACK_LOST, buf, &us);
		rc = cb(&(struct profile_sample){.key = &key,
						 .values = (int64_t[]){(int64_t)v.count,
								       (int64_t)v.bytes},
						 .events = v.count,
						 .user = &us,
						 .kern = &none},
			arg);
	}
	free(buf);
	/* emptied by deleting from the first key each time: deletes break a walk */
	while (!bpf_map_get_next_key(cfd, NULL, &next))
		if (bpf_map_delete_elem(cfd, &next))
			break;
	for (uint64_t h; !bpf_map_get_next_key(sfd, NULL, &h);)
		if (bpf_map_delete_elem(sfd, &h))
			break;
	return rc;
}
