/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The maps proc.bpf.c and cpu.bpf.c share: declared once here, created by the
 * proc object, and reused by fd in the cpu object (daemon/sample/sampler.c); and the
 * one way both send an event.
 */
#ifndef EMBER_PROC_MAPS_BPF_H
#define EMBER_PROC_MAPS_BPF_H

#include "ember/proc.h"

/* Process events for the daemon: exec, exit, and first samples. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, EMBER_PROC_RINGBUF_BYTES);
} events SEC(".maps");

/* Processes already reported. LRU: never full; an evicted one is reported again. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, EMBER_PROC_KNOWN_MAX);
	__type(key, __u32);
	__type(value, __u8);
} known SEC(".maps");

/* Whether the ring is a quarter full: lazy events then wake the daemon, or are left out. */
static __always_inline bool proc_ring_filling(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= EMBER_PROC_RINGBUF_BYTES / 4;
}

/*
 * Sends an event of type for tgid (the current task's process: its cgroup is
 * read here), waking the daemon or not; -1: the ring is full.
 */
static __always_inline int proc_event(__u16 type, __u32 tgid, __u16 source, __u64 wake)
{
	struct ember_proc_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e)
		return -1;
	e->type = type;
	e->source = source;
	e->tgid = tgid;
	e->ktime_ns = bpf_ktime_get_ns();
	e->cgroup_id = bpf_get_current_cgroup_id();
	bpf_ringbuf_submit(e, wake);
	return 0;
}

#endif /* EMBER_PROC_MAPS_BPF_H */
