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
#   it did not know (proc_exec_only_wakeups; one per exec before). The exec of a child
#   an on-CPU sample caught before it (a fork of the shell) does wake it, as it should.
. "$(dirname "$0")/lib.sh"
require_bpf
N=1000

said_young() { grep -Eq "growth: .*processes younger than growth_min_age [1-9]" "$T/emberd.log"; }

start_emberd --interval 2s -v
wait_for intervals_at_least 1 || fail "no interval stored at 2 s"
w0=$(status_key proc_wakeups) x0=$(status_key proc_exec_only_wakeups)
[ -n "$w0" ] && [ -n "$x0" ] || fail "no proc_wakeups or proc_exec_only_wakeups in the status file"
for ((i = 0; i < N; i++)); do
	/bin/true &
	echo "$!" >>"$T/children"
	wait "$!"
done
n=$(status_key intervals)
wait_for intervals_at_least $((n + 2)) || fail "no interval stored after the churn"
wakeups=$(($(status_key proc_wakeups) - w0)) exec_only=$(($(status_key proc_exec_only_wakeups) - x0))
wait_for said_young || fail "no growth of a young process was counted as such: $(grep growth: "$T/emberd.log" | tail -2)"

# the children emberd classified and captured, by the sampler whose first sample reported
# them (its debug line, by pid)
captured() {
	sed -n "s/.*debug: pid \([0-9]*\): first sample ($1): classified and captured.*/\1/p" \
		"$T/emberd.log" | sort -u | comm -12 "$T/children.sorted" - | wc -l
}
sort -u "$T/children" >"$T/children.sorted"
by_growth=$(captured "memory growth")
by_cpu=$(captured "on-CPU")
echo "children captured: $by_growth of $N for memory growth, $by_cpu for on-CPU samples;" \
	"$wakeups wakeups by process events, $exec_only of them for execs only"
# none lives 100 ms, unless a loaded host stalls one: 1% tolerated
[ "$by_growth" -le $((N / 100)) ] ||
	fail "$by_growth of $N short-lived children were captured for their start-up's memory growth"
# a wakeup may still find execs alone when the event that caused it was read before
[ "$exec_only" -le $((N / 20)) ] ||
	fail "$exec_only of $wakeups wakeups read only execs, for $N execs of processes emberd did not know"
pass "$N short-lived processes: $by_growth captured for growth, $by_cpu for on-CPU samples, $exec_only of $wakeups wakeups for execs only"
kill -TERM "$EMBERD_PID"
wait_emberd
