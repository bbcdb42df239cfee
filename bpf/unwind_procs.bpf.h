/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The unwinder's map of loaded processes, apart: the walk (unwind.bpf.h) reads
 * it, the exec program (proc.bpf.c) deletes from it; both reuse the map
 * daemon/unwind/unwinder.c creates, by fd.
 */
#ifndef EMBER_UNWIND_PROCS_BPF_H
#define EMBER_UNWIND_PROCS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "ember/unwind.h"

/*
 * Each loaded process's executable mappings and their tables, by tgid. Not
 * preallocated (8 KiB a value): only the daemon inserts; an exec deletes the
 * old program's entry at once, in the kernel, so that no sample of the new
 * program is walked with it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EMBER_UNWIND_PROCS_MAX);
	__type(key, __u32);
	__type(value, struct ember_unwind_proc);
} unwind_procs SEC(".maps");

#endif /* EMBER_UNWIND_PROCS_BPF_H */
