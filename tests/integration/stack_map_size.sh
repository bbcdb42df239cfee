#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The stacks maps are sized from hz, the interval and the CPUs (issue 15): at
# 999 Hz with 20 s intervals, two fx_many_stacks (a distinct stack at nearly
# every sample) and whatever else runs fill an interval with more stacks than
# the 16384 the map held before (they run until one interval did), and none may be
# lost (stack_map_full and counts_map_full stay 0). Before, 40711 stacks were lost here (41 % in an
# interval; at 10 s on a busy host no interval reached 16384). Nothing is lost on
# the way to the history either:
# the stored profiles hold every sample the drains read, and the fixtures'
# profile holds what the BPF program counted for them: hz x their CPU time (schedstat),
# -20 % +5 %: which ticks land in their time slices is chance (no_loss.sh), and
# their CPU time includes the sampling interrupts they take, ours and those of
# any other profiler on the host (6-12 % more here, beside 6 other emberds).
. "$(dirname "$0")/lib.sh"
require_bpf
HZ=999
INTERVAL=${INTERVAL:-20}
OLD_CAP=16384
# each fixture's CPU budget: ample, as they are stopped once an interval held enough stacks
BUDGET=${BUDGET:-240}

# drop_total CAUSE, skip_total REASON, count_total KEY: totals since the start (status file)
drop_total() { status_total drop "$1"; }
skip_total() { status_total skip "$1"; }
count_total() { awk -v k="$1" '$1 == k { print $3 }' "$T/run/status"; }
# most_stacks: the most stacks one interval folded so far (emberd -v's interval lines)
most_stacks() {
	sed -n 's/.*interval: [0-9]* samples in \([0-9]*\) stacks.*/\1/p' "$T/emberd.log" |
		sort -n | tail -1
}
over_cap() { [ "$(most_stacks)" -gt "$OLD_CAP" ] 2>/dev/null; }
# cpu_ns PID: the CPU time PID has run (schedstat's first field)
cpu_ns() { awk '{ print $1 }' "/proc/$1/schedstat"; }

printf '[app "manystacks"]\nmatch.exe = %s\n' "$FX/fx_many_stacks" >"$T/ember.conf"
# -v: every interval's line ("interval: N samples in M stacks"), lost or not
start_emberd -v --config "$T/ember.conf" --hz $HZ --interval "${INTERVAL}s"
# one per CPU of a 2-CPU host: each sample is one of 16.7 million stacks. Niced up so
# that other work on a shared host does not spread their CPU time over more intervals.
nice -n -10 "$FX/fx_many_stacks" "$BUDGET" &
A=$!
nice -n -10 "$FX/fx_many_stacks" "$BUDGET" &
B=$!
PIDS+=("$A" "$B")
# They run until one interval held more stacks than the old map: on a busy host (other
# tenants, or a spinner in another session, where nice does not reach) their CPU time
# spreads over more intervals, and a fixed amount of it may never fill one.
for _ in $(seq 1 $((BUDGET * 2))); do
	over_cap && break
	kill -0 "$A" 2>/dev/null || break
	sleep 0.5
done
# the test means something only if an interval held more stacks than the old map
over_cap || fail "no interval folded more than $OLD_CAP stacks ($(most_stacks))" \
	"while the fixtures ran, $BUDGET s of CPU each at most"
# stopped first, so that the CPU time read is all they will ever have run
kill -STOP "$A" "$B" || fail "fx_many_stacks exited before its budget was spent"
fx_ns=$(($(cpu_ns "$A") + $(cpu_ns "$B")))
kill -KILL "$A" "$B"
wait "$A" "$B" 2>/dev/null || true # killed: bash reports it ("Killed")
kill -TERM "$EMBERD_PID" # stores the last interval, then exits 0
wait_emberd

"$EMBERCTL" --data-dir "$T/data" list --type cpu >"$T/list.txt" || fail "emberctl list failed"
stored=$(awk '$3 == "cpu" { s += $5 } END { print s + 0 }' "$T/list.txt")
fixture=$(awk '$3 == "cpu" && $4 == "manystacks" { s += $5 } END { print s + 0 }' "$T/list.txt")
most=$(most_stacks)
sfull=$(drop_total stack_map_full)
cfull=$(drop_total counts_map_full)
drained=$(count_total samples)
want=$((HZ * fx_ns / 1000000000))
echo "most stacks in one interval: $most; stored $stored samples, drained $drained" \
	"(excluded $(skip_total excluded)); fixtures $fixture for $want expected;" \
	"lost: stack_map_full $sfull, counts_map_full $cfull"

[ "$sfull" = 0 ] || fail "$sfull stacks lost: the stacks map was full"
[ "$cfull" = 0 ] || fail "$cfull samples lost: the counts map was full"
"$EMBERCTL" --data-dir "$T/data" folded --app manystacks -o "$T/folded" ||
	fail "emberctl folded failed"
lost=$(grep -c 'lost user stack' "$T/folded" || true)
[ "$lost" = 0 ] || fail "$lost stacks of the fixture are [lost user stack]"
[ "$stored" -eq "$drained" ] || fail "stored $stored samples, the drains read $drained"
awk -v g="$fixture" -v w="$want" 'BEGIN { exit !(g >= 0.80 * w && g <= 1.05 * w) }' ||
	fail "the fixtures' profile holds $fixture samples, $want expected (-20 % +5 %)"
pass "$most stacks in one interval (the old map held $OLD_CAP), none lost; the fixtures'" \
	"$fixture samples of $want expected"
