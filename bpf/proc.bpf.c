// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Process events: exec and exit, from raw tracepoints (no tracefs needed), into
 * the events ring buffer that cpu.bpf.c also writes "first sample" events to.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "ember/proc.h"
#include "proc_maps.bpf.h"
#include "unwind_procs.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Per-CPU counters indexed by enum ember_proc_metric; summed by the daemon. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EMBER_PROC_M_NR);
	__type(key, __u32);
	__type(value, __u64);
} proc_metrics SEC(".maps");

/*
 * The time (CLOCK_MONOTONIC) of each process's last exec, by tgid: the
 * unwinder's map, reused by fd (daemon/unwind/unwinder.c), which drops an entry it
 * wrote from a read made before it. LRU: only the latest execs matter.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, EMBER_UNWIND_EXECS_MAX);
	__type(key, __u32);
	__type(value, __u64);
} unwind_execs SEC(".maps");

static __always_inline void metric_inc(enum ember_proc_metric m)
{
	__u32 key = m;
	__u64 *v = bpf_map_lookup_elem(&proc_metrics, &key);

	if (v)
		*v += 1;
}

/*
 * Set by the daemon (any time): 1 when every exec (and exit) must wake it at
 * once (an application asks for sampled allocations: attached at exec,
 * detached at exit); 0: only the execs of processes it knows, the others and
 * the exits wait for its next wakeup.
 */
__u32 exec_wake_all;

/*
 * Wakeup flags for an exec of a process the daemon does not know (it has no
 * state to update for it) and for an exit (its state is merely freed): the
 * event waits for the next wakeup (a first sample, a drain) unless the ring is
 * filling. A host that execs hundreds of processes a second would otherwise
 * cost the daemon a context switch or two for each.
 */
static __always_inline __u64 lazy_wakeup(void)
{
	if (exec_wake_all || proc_ring_filling())
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

static __always_inline void emit(__u32 type, __u32 tgid)
{
	if (proc_event(type, tgid, EMBER_PROC_SRC_OTHER, lazy_wakeup()))
		metric_inc(EMBER_PROC_M_RINGBUF_FULL);
}

/*
 * After exec the mappings are new: forget the process so its next sample
 * reports it, and its unwind entry so that the walk does not read the new
 * program's stacks with the old one's tables. The event carries the new comm
 * (set before this tracepoint).
 */
SEC("raw_tracepoint/sched_process_exec")
int ember_proc_exec(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct ember_proc_exec_event *x;
	__u8 *known_as = bpf_map_lookup_elem(&known, &tgid);
	__u64 now;
	bool was_known = known_as && *known_as != EMBER_PROC_KNOWN_YOUNG;

	metric_inc(EMBER_PROC_M_EXEC);
	/*
	 * known (and woken for): the daemon holds its old image's mappings and
	 * tables, to drop now. One reported young (a fork sampled before it
	 * exec'd) waits, as a process it never read: it has seldom read it.
	 */
	if (known_as)
		bpf_map_delete_elem(&known, &tgid);
	/*
	 * the old program's tables: the new one's samples wait for its own. Its
	 * time first: the daemon checks it after writing an entry from a read
	 * made before (daemon/unwind/unwinder.c, write_entry)
	 */
	now = bpf_ktime_get_ns();
	bpf_map_update_elem(&unwind_execs, &tgid, &now, BPF_ANY);
	bpf_map_delete_elem(&unwind_procs, &tgid);
	x = bpf_ringbuf_reserve(&events, sizeof(*x), 0);
	if (!x) {
		metric_inc(EMBER_PROC_M_RINGBUF_FULL);
		return 0;
	}
	x->e.type = EMBER_PROC_EXEC;
	x->e.source = was_known ? EMBER_PROC_EXEC_KNOWN : 0;
	x->e.tgid = tgid;
	x->e.ktime_ns = now;
	x->e.cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(x->comm, sizeof(x->comm));
	bpf_ringbuf_submit(x, was_known ? BPF_RB_FORCE_WAKEUP : lazy_wakeup());
	return 0;
}

/* --- the mappings of a process gone young ------------------------------------------------ */

/* The task VMA iterator (Linux 6.4): the mappings of the exiting process, its lock tried. */
extern int bpf_iter_task_vma_new(struct bpf_iter_task_vma *it, struct task_struct *task,
				 __u64 addr) __weak __ksym;
extern struct vm_area_struct *bpf_iter_task_vma_next(struct bpf_iter_task_vma *it) __weak __ksym;
extern void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma *it) __weak __ksym;

#define VM_EXEC 0x4   /* include/linux/mm.h */
#define PAGE_SHIFT 12 /* vm_pgoff counts pages: 4 KiB on x86-64 (and arm64's default) */

/* What an exit's record is built in (too big for the stack): one per CPU. */
struct exit_scratch {
	struct ember_proc_maps_event ev;
	const unsigned char *names[EMBER_PROC_PATH_DEPTH]; /* a path's names, its leaf first */
	/*
	 * Mappings looked at. It and ev.n are counted here, not in registers:
	 * the verifier then sees every turn of the mappings' loop alike
	 * instead of one state per count.
	 */
	__u32 seen;
	/* a path as it is built: a name read at any offset below EMBER_PROC_PATH_MAX fits */
	char path[2 * EMBER_PROC_PATH_MAX];
};

/* The exit program's scratch record. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct exit_scratch);
} exit_scratch SEC(".maps");

/* Where a path's walk and its writing are, between turns of their bpf_loop() callbacks. */
struct path_walk {
	struct exit_scratch *s;
	struct dentry *dentry; /* the next name's */
	struct vfsmount *vmnt; /* the mount dentry is seen in */
	struct mount *mnt;     /* the same, as the mount tree holds it */
	__u32 depth;	       /* names in s->names */
	__u32 off;	       /* bytes written to s->path */
	int done;	       /* 1: the walk reached the root; -1: the path cannot be had */
};

/*
 * One step up from w->dentry: its name into s->names, or, at the root of a
 * mount, on to the mount point (as /proc/PID/maps crosses them); ends at the
 * root of the mount namespace. A bpf_loop() callback: verified once.
 */
static long path_step(__u64 i, struct path_walk *w)
{
	/* locals: BPF_CORE_READ relocates every access of its first argument */
	struct dentry *dentry = w->dentry, *parent = BPF_CORE_READ(dentry, d_parent);
	struct vfsmount *vmnt = w->vmnt;
	struct mount *mnt = w->mnt, *up;

	if (dentry == BPF_CORE_READ(vmnt, mnt_root)) {
		up = BPF_CORE_READ(mnt, mnt_parent);
		if (up == mnt) {
			w->done = 1; /* the namespace's root */
			return 1;
		}
		w->dentry = BPF_CORE_READ(mnt, mnt_mountpoint);
		w->mnt = up;
		w->vmnt = (void *)up + bpf_core_field_offset(struct mount, mnt);
		return 0;
	}
	if (dentry == parent) {
		w->done = 1; /* a filesystem's root not mounted where it is seen from */
		return 1;
	}
	if (w->depth >= EMBER_PROC_PATH_DEPTH) {
		w->done = -1;
		return 1;
	}
	w->s->names[w->depth++] = BPF_CORE_READ(dentry, d_name.name);
	w->dentry = parent;
	return 0;
}

/* Appends "/" and the i-th name from the root to s->path. A bpf_loop() callback. */
static long path_put(__u64 i, struct path_walk *w)
{
	__u64 j = (__u64)w->depth - 1 - i, off = w->off, at;
	long n;

	if (j >= EMBER_PROC_PATH_DEPTH || off >= EMBER_PROC_PATH_MAX - 2) {
		w->done = -1;
		return 1;
	}
	w->s->path[off] = '/';
	at = off + 1;
	barrier_var(at); /* the bound is checked on at itself, not on a copy of it */
	if (at >= EMBER_PROC_PATH_MAX)
		return 1;
	n = bpf_probe_read_kernel_str(&w->s->path[at], EMBER_PROC_PATH_MAX, w->s->names[j]);
	if (n <= 1 || at + n - 1 >= EMBER_PROC_PATH_MAX) {
		w->done = -1; /* unreadable, an empty name, or too long */
		return 1;
	}
	w->off = at + n - 1;
	return 0;
}

/*
 * Writes the path of the file at file_addr into s->path (NUL-terminated):
 * false when it is too deep, too long or cannot be read. A global function:
 * verified once, not at every mapping of the loop that calls it.
 */
__noinline int exit_file_path(struct exit_scratch *s, __u64 file_addr)
{
	struct file *file = (struct file *)file_addr;
	struct path_walk w = {.s = s};

	if (!s)
		return 0;
	w.dentry = BPF_CORE_READ(file, f_path.dentry);
	w.vmnt = BPF_CORE_READ(file, f_path.mnt);
	w.mnt = (void *)w.vmnt - bpf_core_field_offset(struct mount, mnt);
	/* each step a name or a mount point: twice the names bounds both */
	bpf_loop(2 * EMBER_PROC_PATH_DEPTH, path_step, &w, 0);
	if (w.done != 1 || !w.depth || w.depth > EMBER_PROC_PATH_DEPTH)
		return 0;
	w.done = 0;
	bpf_loop(w.depth, path_put, &w, 0);
	return !w.done && w.off;
}

/* One executable mapping into m; false when it is no file's and not the vDSO. */
static __always_inline bool exit_map(struct exit_scratch *s, struct ember_proc_map *m,
				     struct vm_area_struct *vma, __u64 vdso)
{
	/* read, not loaded: the global function takes it as a plain number */
	struct file *file = BPF_CORE_READ(vma, vm_file);

	m->start = vma->vm_start;
	m->end = vma->vm_end;
	m->offset = vma->vm_pgoff << PAGE_SHIFT;
	m->flags = 0;
	if (!file) {
		if (vma->vm_start != vdso)
			return false; /* anonymous code: a JIT's, named by its perf map */
		m->ino = 0;
		m->dev = 0;
		__builtin_memcpy(m->path, "[vdso]", sizeof("[vdso]"));
		return true;
	}
	m->ino = BPF_CORE_READ(file, f_inode, i_ino);
	m->dev = BPF_CORE_READ(file, f_inode, i_sb, s_dev);
	if (exit_file_path(s, (__u64)file))
		bpf_probe_read_kernel(m->path, EMBER_PROC_PATH_MAX, s->path);
	else
		m->flags = EMBER_PROC_MAP_NO_PATH;
	return true;
}

/*
 * Sends the executable mappings of the exiting process tgid (the current
 * task, its leader; its memory is still there: sched_process_exit comes
 * before exit_mm() since Linux 6.16), for the daemon to name and walk its
 * samples although it could never read /proc/PID/maps.
 */
static __always_inline void send_exit_maps(__u32 tgid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct bpf_iter_task_vma it;
	struct vm_area_struct *vma;
	struct exit_scratch *s;
	__u32 zero = 0, n;
	__u64 vdso;

	/*
	 * before Linux 6.4 the iterator is not there: libbpf resolves the weak
	 * kfunc to 0, and the verifier drops what follows as dead code
	 */
	if (!bpf_iter_task_vma_new)
		return;
	s = bpf_map_lookup_elem(&exit_scratch, &zero);
	if (!s)
		return;
	vdso = (__u64)BPF_CORE_READ(task, mm, context.vdso);
	s->ev.flags = 0;
	s->ev.n = 0;
	s->seen = 0;
	if (bpf_iter_task_vma_new(&it, task, 0)) {
		bpf_iter_task_vma_destroy(&it);
		metric_inc(EMBER_PROC_M_EXIT_MAPS_LOCKED);
		return;
	}
	while ((vma = bpf_iter_task_vma_next(&it))) {
		n = s->ev.n;
		if (++s->seen > EMBER_PROC_VMAS_MAX) {
			s->ev.flags = EMBER_PROC_MAPS_CUT;
			break;
		}
		if (!(vma->vm_flags & VM_EXEC))
			continue;
		if (n >= EMBER_PROC_MAPS_MAX) {
			s->ev.flags = EMBER_PROC_MAPS_CUT;
			break;
		}
		if (exit_map(s, &s->ev.m[n], vma, vdso))
			s->ev.n = n + 1;
	}
	bpf_iter_task_vma_destroy(&it);
	n = s->ev.n;
	if (!n || n > EMBER_PROC_MAPS_MAX)
		return;
	s->ev.e.type = EMBER_PROC_MAPS;
	s->ev.e.source = 0;
	s->ev.e.tgid = tgid;
	s->ev.e.ktime_ns = bpf_ktime_get_ns();
	s->ev.e.cgroup_id = bpf_get_current_cgroup_id();
	if (bpf_ringbuf_output(&events, &s->ev,
			       offsetof(struct ember_proc_maps_event, m) +
				       n * sizeof(struct ember_proc_map),
			       lazy_wakeup()))
		metric_inc(EMBER_PROC_M_RINGBUF_FULL);
	else
		metric_inc(EMBER_PROC_M_EXIT_MAPS);
}

/*
 * Runs for every exiting thread; only the leader's exit ends the process. One
 * the daemon has not marked done may never have been read (reported young, its
 * event waits for a wakeup; or gone before the wakeup's read): its mappings go
 * first, while they are there.
 */
SEC("raw_tracepoint/sched_process_exit")
int ember_proc_exit(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	__u8 *known_as;

	if ((__u32)pid_tgid != tgid)
		return 0;
	metric_inc(EMBER_PROC_M_EXIT);
	known_as = bpf_map_lookup_elem(&known, &tgid);
	if (!known_as)
		return 0;
	if (*known_as != EMBER_PROC_KNOWN_DONE)
		send_exit_maps(tgid);
	if (bpf_map_delete_elem(&known, &tgid) == 0)
		emit(EMBER_PROC_EXIT, tgid);
	return 0;
}
