/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The maps proc.bpf.c and cpu.bpf.c share: declared once here, created by the
 * proc object, and reused by fd in the cpu object (daemon/sampler.c).
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

#endif /* EMBER_PROC_MAPS_BPF_H */
