// SPDX-License-Identifier: MIT
/*
 * Loads bpf/proc.bpf.c, attaches its raw tracepoints and reads the events ring
 * buffer. The only file that includes the proc skeleton.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpfload.h"
#include "percpu.h"
#include "proctrack.h"

#include "proc.skel.h"

struct proctrack {
	struct proc_bpf *skel;
	struct ring_buffer *rb;
	proctrack_cb cb;
	void *arg;
	/* proctrack_wakeup() calls; those that read only execs of processes it did not know */
	uint64_t wakeups, exec_only;
	uint64_t read_lazy, read_other; /* events read: those execs, and the others */
};

static int on_event(void *ctx, void *data, size_t size)
{
	const struct ember_proc_event *e = data;
	struct ember_proc_exec_event x = {};
	struct proctrack *p = ctx;

	if (size < sizeof(*e))
		return 0;
	if (e->type == EMBER_PROC_EXEC) { /* the callback reads its comm: never past the end */
		memcpy(&x, data, size < sizeof(x) ? size : sizeof(x));
		x.comm[sizeof(x.comm) - 1] = '\0';
		e = &x.e;
		size = sizeof(x);
	}
	if (e->type == EMBER_PROC_EXEC && e->source != EMBER_PROC_EXEC_KNOWN)
		p->read_lazy++;
	else
		p->read_other++;
	p->cb(e, size, p->arg);
	return 0;
}

/*
 * The unwinder's maps of loaded processes, whose entries an exec deletes, and
 * of exec times, which it writes (fds); or stubs without an unwinder (-1).
 */
static int share_unwind_maps(struct proc_bpf *skel, int procs_fd, int execs_fd)
{
	if (procs_fd < 0 || execs_fd < 0)
		return bpf_map__set_max_entries(skel->maps.unwind_procs, 1) ||
		       bpf_map__set_max_entries(skel->maps.unwind_execs, 1);
	return bpf_map__reuse_fd(skel->maps.unwind_procs, procs_fd) ||
	       bpf_map__reuse_fd(skel->maps.unwind_execs, execs_fd);
}

int proctrack_open(proctrack_cb cb, void *arg, int unwind_procs_fd, int unwind_execs_fd,
		   struct proctrack **out, char *err, size_t errlen)
{
	struct proctrack *p = calloc(1, sizeof(*p));
	int rc;

	if (!p)
		return -ENOMEM;
	p->cb = cb;
	p->arg = arg;
	p->skel = proc_bpf__open();
	if (!p->skel || share_unwind_maps(p->skel, unwind_procs_fd, unwind_execs_fd)) {
		rc = -errno;
		snprintf(err, errlen, "cannot open the process-event BPF object: %s",
			 strerror(-rc));
		goto fail;
	}
	bpfload_prepare(p->skel->obj, "process-event");
	rc = proc_bpf__load(p->skel);
	if (rc) {
		bpfload_error(rc, "process-event", err, errlen);
		goto fail;
	}
	bpfload_report(p->skel->obj, "process-event");
	rc = proc_bpf__attach(p->skel);
	if (rc) {
		snprintf(err, errlen,
			 "cannot attach to the sched_process_exec/exit raw "
			 "tracepoints: %s",
			 strerror(-rc));
		goto fail;
	}
	p->rb = ring_buffer__new(bpf_map__fd(p->skel->maps.events), on_event, p, NULL);
	if (!p->rb) {
		rc = -errno;
		snprintf(err, errlen, "cannot open the events ring buffer: %s", strerror(-rc));
		goto fail;
	}
	*out = p;
	return 0;
fail:
	proctrack_close(p);
	return rc;
}

void proctrack_close(struct proctrack *p)
{
	if (!p)
		return;
	ring_buffer__free(p->rb);
	proc_bpf__destroy(p->skel);
	bpfload_closed();
	free(p);
}

void proctrack_wake_on_every_exec(struct proctrack *p, bool all)
{
	p->skel->bss->exec_wake_all = all;
}

int proctrack_events_fd(const struct proctrack *p)
{
	return bpf_map__fd(p->skel->maps.events);
}

int proctrack_known_fd(const struct proctrack *p)
{
	return bpf_map__fd(p->skel->maps.known);
}

int proctrack_epoll_fd(const struct proctrack *p)
{
	return ring_buffer__epoll_fd(p->rb);
}

int proctrack_consume(struct proctrack *p)
{
	return ring_buffer__consume(p->rb);
}

int proctrack_wakeup(struct proctrack *p)
{
	uint64_t lazy = p->read_lazy, others = p->read_other;
	int rc = ring_buffer__consume(p->rb);

	p->wakeups++;
	if (p->read_lazy != lazy && p->read_other == others)
		p->exec_only++;
	return rc;
}

void proctrack_wakeups(const struct proctrack *p, uint64_t *wakeups, uint64_t *exec_only)
{
	*wakeups = p->wakeups;
	*exec_only = p->exec_only;
}

int proctrack_mark_known(struct proctrack *p, uint32_t pid)
{
	uint8_t woken = EMBER_PROC_KNOWN_WOKEN;

	return bpf_map_update_elem(bpf_map__fd(p->skel->maps.known), &pid, &woken, BPF_ANY) ?
		       -errno :
		       0;
}

int proctrack_mark_done(struct proctrack *p, uint32_t pid)
{
	uint8_t done = EMBER_PROC_KNOWN_DONE;

	return bpf_map_update_elem(bpf_map__fd(p->skel->maps.known), &pid, &done, BPF_EXIST) ?
		       -errno :
		       0;
}

int proctrack_metrics(struct proctrack *p, uint64_t out[EMBER_PROC_M_NR])
{
	return percpu_array_sum(bpf_map__fd(p->skel->maps.proc_metrics), EMBER_PROC_M_NR, out);
}

int64_t proctrack_run_ns(const struct proctrack *p)
{
	return bpfload_run_ns(p->skel->obj);
}
