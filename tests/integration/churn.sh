#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Process churn costs little (issues 13 and 15): 1000 short-lived processes (a fork,
# an exec of /bin/true, an exit, about 1 ms each) beside emberd at its defaults.
# - Memory growth leaves out a process's first growth_min_age (100 ms): the children's
#   start-up faults are counted as such, and make none of them "sampled" (with
#   growth_min_age = 0, about 10% were captured for a growth sample). On-CPU samples
#   still catch some, as they should: the churn is most of the host's CPU time.
# - An exec of a process emberd does not know does not wake it: of its loop's wakeups
#   by process events (status proc_wakeups), next to none read only execs of processes
#   it did not know (proc_exec_only_wakeups; one per exec before). Nor does the exec of
#   a child an on-CPU sample caught young before it (a fork of the shell: churn_young.sh).
. "$(dirname "$0")/lib.sh"
require_bpf
N=1000

said_young() { grep -Eq "growth: .*processes younger than growth_min_age [1-9]" "$T/emberd.log"; }

start_emberd --interval 2s -v
wait_for intervals_at_least 1 || fail "no interval stored at 2 s"
w0=$(status_key proc_wakeups) x0=$(status_key proc_exec_only_wakeups)
[ -n "$w0" ] && [ -n "$x0" ] || fail "no proc_wakeups or proc_exec_only_wakeups in the status file"
# a loaded host can stall a child past growth_min_age, which is then right to count its growth
true_children "$N" "$T/children"
n=$(status_key intervals)
wait_for intervals_at_least $((n + 2)) || fail "no interval stored after the churn"
wakeups=$(($(status_key proc_wakeups) - w0)) exec_only=$(($(status_key proc_exec_only_wakeups) - x0))
wait_for said_young || fail "no growth of a young process was counted as such: $(grep growth: "$T/emberd.log" | tail -2)"

# the children emberd classified and captured, by the sampler whose first sample reported
# them (its debug line, by pid)
captured() {
	sed -n "s/.*debug: pid \([0-9]*\): first sample ($1): classified and captured.*/\1/p" \
		"$T/emberd.log" | sort -u | comm -12 "$2" - | wc -l
}
awk '{ print $1 }' "$T/children" | sort -u >"$T/children.sorted"
awk '$2 < 100000 { print $1 }' "$T/children" | sort -u >"$T/young.sorted"
young=$(wc -l <"$T/young.sorted")
by_growth=$(captured "memory growth" "$T/children.sorted")
young_by_growth=$(captured "memory growth" "$T/young.sorted")
by_cpu=$(captured "on-CPU" "$T/children.sorted")
echo "children captured: $by_growth of $N for memory growth ($young_by_growth of the $young" \
	"that lived under 100 ms), $by_cpu for on-CPU samples; $wakeups wakeups by process" \
	"events, $exec_only of them for execs only"
# a child that lived under growth_min_age from fork to exit is never "sampled" for growth
[ "$young" -ge $((N / 2)) ] ||
	fail "only $young of $N children lived under 100 ms: the host is too loaded to judge"
[ "$young_by_growth" -eq 0 ] ||
	fail "$young_by_growth of $young children that lived under 100 ms were captured for their start-up's memory growth"
# a wakeup may still find execs alone when the event that caused it was read before
[ "$exec_only" -le $((N / 20)) ] ||
	fail "$exec_only of $wakeups wakeups read only execs, for $N execs of processes emberd did not know"
pass "$N short-lived processes: $young_by_growth of the $young under 100 ms captured for growth ($by_growth of all), $by_cpu for on-CPU samples, $exec_only of $wakeups wakeups for execs only"
kill -TERM "$EMBERD_PID"
wait_emberd
