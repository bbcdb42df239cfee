// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Process events: exec and exit, from raw tracepoints (no tracefs needed), into
 * the events ring buffer that cpu.bpf.c also writes "first sample" events to.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "ember/proc.h"
#include "proc_maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Per-CPU counters indexed by enum ember_proc_metric; summed by the daemon. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EMBER_PROC_M_NR);
	__type(key, __u32);
	__type(value, __u64);
} proc_metrics SEC(".maps");

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
 * reports it. The event carries the new comm (set before this tracepoint).
 */
SEC("raw_tracepoint/sched_process_exec")
int ember_proc_exec(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct ember_proc_exec_event *x;
	__u8 *known_as = bpf_map_lookup_elem(&known, &tgid);
	bool was_known = known_as && *known_as == EMBER_PROC_KNOWN_WOKEN;

	metric_inc(EMBER_PROC_M_EXEC);
	/*
	 * known (and woken for): the daemon holds its old image's mappings and
	 * tables, to drop now. One reported young (a fork sampled before it
	 * exec'd) waits, as a process it never read: it has seldom read it.
	 */
	if (known_as)
		bpf_map_delete_elem(&known, &tgid);
	x = bpf_ringbuf_reserve(&events, sizeof(*x), 0);
	if (!x) {
		metric_inc(EMBER_PROC_M_RINGBUF_FULL);
		return 0;
	}
	x->e.type = EMBER_PROC_EXEC;
	x->e.source = was_known ? EMBER_PROC_EXEC_KNOWN : 0;
	x->e.tgid = tgid;
	x->e.ktime_ns = bpf_ktime_get_ns();
	x->e.cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(x->comm, sizeof(x->comm));
	bpf_ringbuf_submit(x, was_known ? BPF_RB_FORCE_WAKEUP : lazy_wakeup());
	return 0;
}

/* Runs for every exiting thread; only the leader's exit ends the process. */
SEC("raw_tracepoint/sched_process_exit")
int ember_proc_exit(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;

	if ((__u32)pid_tgid != tgid)
		return 0;
	metric_inc(EMBER_PROC_M_EXIT);
	if (bpf_map_delete_elem(&known, &tgid) == 0)
		emit(EMBER_PROC_EXIT, tgid);
	return 0;
}
