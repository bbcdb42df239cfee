// SPDX-License-Identifier: MIT
/*
 * The table of emberd's counters (counters.h): every name each one goes by,
 * where it comes from and whether it is a loss, in one row.
 */
#include <stdint.h>
#include <string.h>

#include "counters.h"
#include "ember/offcpu.h"
#include "ember/proc.h"
#include "ember/sample.h"

const struct counter_family counter_families[FAMILY_NR] = {
	[FAMILY_BPF_DROPS] =
		{"ember_bpf_drops_total", "cause",
		 "Samples, stacks or events lost in BPF since emberd started, by cause "
		 "(stack causes: the sample was kept without that stack).",
		 "ember_last_interval_bpf_drops",
		 "Samples, stacks or events lost in BPF in the last interval, by cause."},
	[FAMILY_SKIPPED] = {"ember_samples_skipped_total", "reason",
			    "Samples left out on purpose (not losses), by reason.", NULL, NULL},
	[FAMILY_UNWIND] = {"ember_unwind_total", "what",
			   "The user stack walk since emberd started: frames by how they were "
			   "unwound (frames_*), stacks by why they ended (end_*), tables built and "
			   "failed, runtime (Python, JavaScript) frames and why they stopped short "
			   "(runtime_*).",
			   NULL, NULL},
	[FAMILY_OFFCPU] = {"ember_offcpu_total", "what",
			   "Off-CPU time's sampler since emberd started: switch-outs (estimated), "
			   "sampled and walked, intervals folded or left out as short, wakeups, "
			   "stacks held.",
			   NULL, NULL},
	[FAMILY_OFFCPU_LOSSES] =
		{"ember_offcpu_losses_total", "cause",
		 "Off-CPU intervals, stacks or wakers lost since emberd started, by "
		 "cause.",
		 "ember_last_interval_offcpu_losses",
		 "Off-CPU intervals, stacks or wakers lost in the last interval, by "
		 "cause."},
	[FAMILY_REFUSED] = {"ember_refused_total", "what",
			    "Hostile or broken input refused or cut short since emberd started, by "
			    "kind.",
			    NULL, NULL},
	[FAMILY_ALLOC_LOSSES] =
		{"ember_alloc_losses_total", "cause",
		 "Sampled allocations lost or not attached since emberd started, by "
		 "cause.",
		 NULL, NULL},
};

/* A counter of a group's array: its name is also its Prometheus label. */
#define C(g, i, name, fam, is_loss, from, m, phrase)                                         \
	{                                                                                    \
		.group = (g), .index = (i), .key = (name), .family = (fam), .label = (name), \
		.loss = (is_loss), .src = (from), .metric = (m), .log = (phrase)             \
	}
/* A plain total of struct ember_status at field, under key and a label of its own. */
#define T(field, k, fam, lbl)                                                                    \
	{                                                                                        \
		.group = COUNTER_TOTAL, .off = offsetof(struct ember_status, field), .key = (k), \
		.family = (fam), .label = (lbl), .loss = true                                    \
	}

const struct counter counters[] = {
	C(COUNTER_DROP, STATUS_DROP_USER_STACK, "user_stack_unreadable", FAMILY_BPF_DROPS, true,
	  COUNTER_SRC_CPU, EMBER_SAMPLE_M_USTACK_FAILED, "user stacks unreadable"),
	C(COUNTER_DROP, STATUS_DROP_KERNEL_STACK, "kernel_stack_unreadable", FAMILY_BPF_DROPS, true,
	  COUNTER_SRC_SAMPLING, EMBER_SAMPLE_M_KSTACK_FAILED, "kernel stacks unreadable"),
	C(COUNTER_DROP, STATUS_DROP_STACK_MAP_FULL, "stack_map_full", FAMILY_BPF_DROPS, true,
	  COUNTER_SRC_SAMPLING, EMBER_SAMPLE_M_STACKS_FULL, "stacks lost (stack map full)"),
	C(COUNTER_DROP, STATUS_DROP_COUNTS_MAP_FULL, "counts_map_full", FAMILY_BPF_DROPS, true,
	  COUNTER_SRC_SAMPLING, EMBER_SAMPLE_M_COUNTS_FULL, "samples dropped (counts map full)"),
	C(COUNTER_DROP, STATUS_DROP_PROC_EVENT_LOST, "process_event_lost", FAMILY_BPF_DROPS, true,
	  COUNTER_SRC_PROC, EMBER_PROC_M_RINGBUF_FULL, "process events lost"),
	C(COUNTER_DROP, STATUS_DROP_FIRST_SAMPLE_RETRIED, "first_sample_event_retried",
	  FAMILY_BPF_DROPS, true, COUNTER_SRC_SAMPLING, EMBER_SAMPLE_M_PROC_EVENT_LOST,
	  "new-process events retried (ring buffer full)"),

	C(COUNTER_SKIP, STATUS_SKIP_IDLE, "idle", FAMILY_SKIPPED, false, COUNTER_SRC_CPU,
	  EMBER_SAMPLE_M_IDLE_SKIPPED, NULL),
	C(COUNTER_SKIP, STATUS_SKIP_FILTERED, "filtered", FAMILY_SKIPPED, false, COUNTER_SRC_CPU,
	  EMBER_SAMPLE_M_FILTERED, NULL),
	C(COUNTER_SKIP, STATUS_SKIP_EXCLUDED, "excluded", FAMILY_SKIPPED, false, COUNTER_SRC_HOST,
	  0, NULL),

#define W(i, name, m) C(COUNTER_UNWIND, i, name, FAMILY_UNWIND, false, COUNTER_SRC_CPU, m, NULL)
	W(STATUS_UNWIND_FRAMES_TABLE, "frames_table", EMBER_SAMPLE_M_FRAMES_TABLE),
	W(STATUS_UNWIND_FRAMES_FP, "frames_frame_pointer", EMBER_SAMPLE_M_FRAMES_FP),
	W(STATUS_UNWIND_FRAMES_BAD_RULE, "frames_bad_rule", EMBER_SAMPLE_M_FRAMES_BAD_RULE),
	W(STATUS_UNWIND_NO_TABLES, "samples_not_loaded", EMBER_SAMPLE_M_PROC_NO_TABLES),
	W(STATUS_UNWIND_DEFERRED, "samples_deferred", EMBER_SAMPLE_M_DEFERRED),
	W(STATUS_UNWIND_DEFER_FULL, "samples_defer_full", EMBER_SAMPLE_M_DEFER_FULL),
	W(STATUS_UNWIND_END_OUTERMOST, "end_outermost", EMBER_SAMPLE_M_END_OUTERMOST),
	W(STATUS_UNWIND_END_SIGNAL, "end_signal", EMBER_SAMPLE_M_END_SIGNAL),
	W(STATUS_UNWIND_END_NO_TABLE, "end_no_table", EMBER_SAMPLE_M_END_NO_TABLE),
	W(STATUS_UNWIND_END_BAD_RULE, "end_bad_rule", EMBER_SAMPLE_M_END_BAD_RULE),
	W(STATUS_UNWIND_END_UNREADABLE, "end_unreadable", EMBER_SAMPLE_M_END_UNREADABLE),
	W(STATUS_UNWIND_END_DEPTH, "end_depth", EMBER_SAMPLE_M_END_DEPTH),
	W(STATUS_UNWIND_END_EXITED, "end_exited", EMBER_SAMPLE_M_END_EXITED),
	W(STATUS_UNWIND_EXIT_STACKS, "exit_stacks", EMBER_SAMPLE_M_EXIT_STACK),
	C(COUNTER_UNWIND, STATUS_UNWIND_TABLES_BUILT, "tables_built", FAMILY_UNWIND, false,
	  COUNTER_SRC_HOST, 0, NULL),
	C(COUNTER_UNWIND, STATUS_UNWIND_TABLES_FAILED, "tables_failed", FAMILY_UNWIND, false,
	  COUNTER_SRC_HOST, 0, NULL),
	W(STATUS_UNWIND_RT_PY_FRAMES, "runtime_frames_python", EMBER_SAMPLE_M_RT_PY_FRAMES),
	W(STATUS_UNWIND_RT_V8_FRAMES, "runtime_frames_v8", EMBER_SAMPLE_M_RT_V8_FRAMES),
	/* and the JIT frames of a V8 without a layout, which the host names (report.c) */
	W(STATUS_UNWIND_RT_UNSUPPORTED, "runtime_unsupported", EMBER_SAMPLE_M_RT_UNSUPPORTED),
	W(STATUS_UNWIND_RT_NO_THREAD, "runtime_end_no_thread", EMBER_SAMPLE_M_RT_NO_THREAD),
	W(STATUS_UNWIND_RT_BAD_FRAME, "runtime_end_bad_frame", EMBER_SAMPLE_M_RT_BAD_FRAME),
#undef W

#define O(i, name, m) C(COUNTER_OFFCPU, i, name, FAMILY_OFFCPU, false, COUNTER_SRC_OFFCPU, m, NULL)
#define OL(i, name, m) \
	C(COUNTER_OFFCPU, i, name, FAMILY_OFFCPU_LOSSES, true, COUNTER_SRC_OFFCPU, m, NULL)
	O(STATUS_OFFCPU_SWITCHES, "switches", EMBER_OFFCPU_M_SWITCHES),
	O(STATUS_OFFCPU_SAMPLED, "sampled", EMBER_OFFCPU_M_SAMPLED),
	O(STATUS_OFFCPU_RAISED, "sampled_raised", EMBER_OFFCPU_M_RAISED),
	O(STATUS_OFFCPU_FORCED, "walked_weight_one", EMBER_OFFCPU_M_FORCED),
	O(STATUS_OFFCPU_FOLDED, "folded", EMBER_SAMPLE_M_COUNTED),
	O(STATUS_OFFCPU_SHORT, "short", EMBER_OFFCPU_M_SHORT),
	O(STATUS_OFFCPU_WAKEUPS, "wakeups", EMBER_OFFCPU_M_WAKEUPS),
	O(STATUS_OFFCPU_HELD, "held", EMBER_OFFCPU_M_HELD),
	O(STATUS_OFFCPU_HELD_MAP_FULL, "held_map_full", EMBER_OFFCPU_M_HELD_FULL),
	OL(STATUS_OFFCPU_PARKED_EVICTED, "parked_evicted", EMBER_OFFCPU_M_PARKED_LOST),
	OL(STATUS_OFFCPU_NO_STORAGE, "no_storage", EMBER_OFFCPU_M_NO_STORAGE),
	OL(STATUS_OFFCPU_COUNTS_MAP_FULL, "counts_map_full", EMBER_SAMPLE_M_COUNTS_FULL),
	OL(STATUS_OFFCPU_STACK_MAP_FULL, "stack_map_full", EMBER_SAMPLE_M_STACKS_FULL),
	OL(STATUS_OFFCPU_WAKERS_MAP_FULL, "wakers_map_full", EMBER_OFFCPU_M_WAKERS_FULL),
#undef O
#undef OL

	T(refused.perfmap_symlink, "refused.perf_map_symlink", FAMILY_REFUSED, "perf_map_symlink"),
	T(refused.perfmap_owner, "refused.perf_map_owner", FAMILY_REFUSED, "perf_map_owner"),
	T(refused.perfmap_size, "refused.perf_map_size", FAMILY_REFUSED, "perf_map_size"),
	T(refused.perfmap_type, "refused.perf_map_type", FAMILY_REFUSED, "perf_map_type"),
	T(refused.perfmap_over_share, "refused.perf_map_over_share", FAMILY_REFUSED,
	  "perf_map_over_share"),
	T(refused.binaries_too_big, "refused.binaries_too_big", FAMILY_REFUSED, "binary_too_big"),
	T(refused.binaries_over_share, "refused.binaries_over_share", FAMILY_REFUSED,
	  "binary_over_share"),
	T(refused.frames_wait_cut, "refused.frames_wait_cut", FAMILY_REFUSED, "frame_wait_cut"),
	T(refused.names_unread, "refused.names_unread", FAMILY_REFUSED, "name_unread"),
	T(refused.names_sanitized, "refused.names_sanitized", FAMILY_REFUSED, "name_sanitized"),

	T(allocs.live_map_full, "allocs.live_map_full", FAMILY_ALLOC_LOSSES, "live_map_full"),
	T(allocs.live_proc_cap, "allocs.live_proc_cap", FAMILY_ALLOC_LOSSES,
	  "live_per_process_cap"),
	T(allocs.counts_map_full, "allocs.counts_map_full", FAMILY_ALLOC_LOSSES, "counts_map_full"),
	T(allocs.stack_map_full, "allocs.stack_map_full", FAMILY_ALLOC_LOSSES, "stack_map_full"),
	T(allocs.not_attached, "allocs.not_attached", FAMILY_ALLOC_LOSSES, "not_attached"),
	T(allocs.notes_malformed, "allocs.notes_malformed", FAMILY_ALLOC_LOSSES, "note_malformed"),
};
#undef C
#undef T

const size_t counters_nr = sizeof(counters) / sizeof(counters[0]);

static const struct {
	const char *word;
	unsigned int size;
	size_t off; /* its array of struct status_count in struct ember_status */
} groups[COUNTER_GROUPS_NR] = {
	[COUNTER_DROP] = {"drop", STATUS_DROP_NR, offsetof(struct ember_status, drops)},
	[COUNTER_SKIP] = {"skip", STATUS_SKIP_NR, offsetof(struct ember_status, skips)},
	[COUNTER_UNWIND] = {"unwind", STATUS_UNWIND_NR, offsetof(struct ember_status, unwind)},
	[COUNTER_OFFCPU] = {"offcpu", STATUS_OFFCPU_NR, offsetof(struct ember_status, offcpu)},
	[COUNTER_TOTAL] = {NULL, 0, 0},
};

const char *counter_group_word(enum counter_group g)
{
	return g < COUNTER_GROUPS_NR ? groups[g].word : NULL;
}

unsigned int counter_group_size(enum counter_group g)
{
	unsigned int n = 0;

	if (g >= COUNTER_GROUPS_NR)
		return 0;
	if (g != COUNTER_TOTAL)
		return groups[g].size;
	for (size_t i = 0; i < counters_nr; i++)
		n += counters[i].group == COUNTER_TOTAL;
	return n;
}

const struct counter *counter_of(enum counter_group g, unsigned int index)
{
	if (g == COUNTER_TOTAL)
		return NULL;
	for (size_t i = 0; i < counters_nr; i++)
		if (counters[i].group == g && counters[i].index == index)
			return &counters[i];
	return NULL;
}

const struct counter *counter_named(enum counter_group g, const char *key)
{
	for (size_t i = 0; i < counters_nr; i++)
		if (counters[i].group == g && !strcmp(counters[i].key, key))
			return &counters[i];
	return NULL;
}

/* Where c lies in st: a struct status_count, or a uint64_t (COUNTER_TOTAL); NULL: nowhere. */
static size_t counter_off(const struct counter *c, bool *total)
{
	*total = c->group == COUNTER_TOTAL;
	if (*total)
		return c->off;
	if (c->group > COUNTER_TOTAL || c->index >= groups[c->group].size)
		return SIZE_MAX;
	return groups[c->group].off + c->index * sizeof(struct status_count);
}

struct status_count *counter_count(struct ember_status *st, const struct counter *c)
{
	bool total;
	size_t off = counter_off(c, &total);

	return off == SIZE_MAX || total ? NULL : (struct status_count *)((char *)st + off);
}

uint64_t *counter_total(struct ember_status *st, const struct counter *c)
{
	bool total;
	size_t off = counter_off(c, &total);

	return off == SIZE_MAX || !total ? NULL : (uint64_t *)((char *)st + off);
}

struct status_count counter_value(const struct ember_status *st, const struct counter *c)
{
	bool total;
	size_t off = counter_off(c, &total);
	const char *p = (const char *)st + off;

	if (off == SIZE_MAX)
		return (struct status_count){0, 0};
	if (total)
		return (struct status_count){*(const uint64_t *)p, *(const uint64_t *)p};
	return *(const struct status_count *)p;
}
