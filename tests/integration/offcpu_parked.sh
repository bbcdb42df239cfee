#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A thread asleep across drains keeps its off-CPU stacks through a flood of new ones
# (bpf/offcpu.bpf.c: the drain's task iterator holds the stacks of threads still away).
# With offcpu_parked_stacks = 512 (the parked LRU's size), fx_offcpu's away_sleeper blocks
# once in wait_for_word's read(); after two drains (a stack evicted before the first drain
# after it parked is lost: docs/offcpu.md, Limits), a loop runs `sleep 0.001` 3,072 times
# (each process has its own addresses and its first switch-out walked: a new parked
# stack). After 2,048 of them, four times the LRU, away_waker wakes the sleeper; the
# other 1,024 run in the intervals after the wakeup. The sleeper's off-CPU time must be in
# wait_for_word (named, so walked whole), >= 90% of the time it measured in the read, and
# none of it under a lost stack; its wakers profile must name away_waker for >= 90% of it.
# Without the hold the LRU evicts its stacks: all of its time is then under [lost user
# stack] and [lost kernel stack]; without the symbolizer keeping its process's mappings
# (idle meanwhile, gone before the drain that names them), unnamed; with the waker's
# stacks read only from the parked LRU at the drain, the flood after the wakeup may evict
# them first.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/offcpu_lib.sh"
require_bpf
require_go

PARKED=1024 FLOOD=4096 WAKE_AT=3072
printf '[daemon]\noffcpu = on\ncpu_budget = 0\noffcpu_parked_stacks = %s\n' "$PARKED" >"$T/ember.conf"
start_emberd --config "$T/ember.conf" --hz 99 --interval 1s -v
grep -q "off-CPU time: .* $PARKED stacks of threads away kept" "$T/emberd.log" ||
	fail "emberd did not load the off-CPU sampler with $PARKED parked stacks"
"$FX/fx_offcpu" away >"$T/fx.out" &
WL=$!
PIDS+=("$WL")
wait_for grep -Eq "unwinder: pid $WL: .*\(0 to build\)" "$T/emberd.log" ||
	fail "emberd did not load fx_offcpu's unwind tables within 30 s"
drains() { grep -c 'offcpu: ~' "$T/emberd.log" || true; }
drains_past() { [ "$(drains)" -ge "$1" ]; }
# past emberd's start, whose first walk of every thread on the host parks hundreds of new
# stacks: those of the interval the sleeper blocks in must not evict its stacks before the
# next drain holds them (the limit the test is not about)
wait_for drains_past 3 || fail "emberd did not drain 3 times within 30 s"
kill -USR1 "$WL"

# away_sleeper's thread, once it is blocked in read(2) (system call 0 on x86-64)
sleeper_blocked() {
	local t
	for t in /proc/"$WL"/task/*; do
		[ "$(cat "$t/comm" 2>/dev/null)" = away_sleeper ] || continue
		case $(cat "$t/syscall" 2>/dev/null) in "0 "*) return 0 ;; esac
	done
	return 1
}
wait_for sleeper_blocked || fail "away_sleeper did not block in read() within 30 s"
d0=$(drains)
blocked_at=$(($(wc -l <"$T/emberd.log") + 1))
mark=$(($(wc -l <"$T/emberd.log") + 1))
# two drains: the first may have run before the sleeper's switch-out; the second holds it
wait_for drains_past $((d0 + 2)) || fail "emberd did not drain twice within 30 s"
tail -n +"$mark" "$T/emberd.log" | grep 'offcpu: ~' | grep -q 'held [1-9]' ||
	fail "no drain held a stack of a thread away since away_sleeper blocked"
mark=$(($(wc -l <"$T/emberd.log") + 1))

# the flood: new processes, each walked at its first switch-out with its own addresses
(
	for i in $(seq 1 "$FLOOD"); do
		sleep 0.001
		echo "$i" >"$T/flood.n.tmp" && mv "$T/flood.n.tmp" "$T/flood.n" # never read half-written
	done
) &
FL=$!
PIDS+=("$FL")
flood_n() { cat "$T/flood.n" 2>/dev/null || echo 0; }
flood_at() { [ "$(flood_n)" -ge "$1" ]; }
at=
for _ in $(seq 1 16); do # 8 minutes at most: ~3 ms a process here, 30 on a loaded host
	wait_for flood_at "$WAKE_AT" && at=1 && break
done
[ -n "$at" ] || fail "the flood ran only $(flood_n) of $WAKE_AT processes in 8 min"
kill -USR2 "$WL"
wait "$WL" || fail "fx_offcpu away exited with status $?"
flood_done() { ! kill -0 "$FL" 2>/dev/null; }
for _ in $(seq 1 16); do # 8 minutes at most: ~3 ms a process here, 30 on a loaded host
	wait_for flood_done && break
done
flood_done || fail "the flood ran only $(flood_n) of $FLOOD processes in 8 min"
wait_for drains_past $(($(drains) + 1)) || fail "emberd did not drain after the flood"
walked=$(tail -n +"$mark" "$T/emberd.log" |
	sed -n 's/.*offcpu: ~[0-9]* switch-outs (the weights. sum), \([0-9]*\) walked with weight 1 and \([0-9]*\) sampled.*/\1 \2/p' |
	awk '{ s += $1 + $2 } END { print s + 0 }')
[ "$walked" -ge "$FLOOD" ] ||
	fail "only $walked switch-outs walked during the flood of $FLOOD processes: the LRU was not flooded"

kill "$EMBERD_PID"
wait_emberd
offcpu_export offcpu "$T/off.pb.gz"
offcpu_export offcpu_wakers "$T/wk.pb.gz"

blocked=$(awk '$1 == "away_blocked" { print $2 }' "$T/fx.out")
[ "${blocked:-0}" -gt 0 ] || fail "fx_offcpu did not report its blocked time: $(cat "$T/fx.out")"
off=$(ns_of "$T/off.pb.gz" offcpu -tagfocus=comm=away_sleeper)
named=$(ns_of "$T/off.pb.gz" offcpu -tagfocus=comm=away_sleeper -focus=wait_for_word)
lost=$(ns_of "$T/off.pb.gz" offcpu -tagfocus=comm=away_sleeper -focus='lost (user|kernel) stack')
echo "away_sleeper: blocked $blocked ns (itself); off-CPU $off ns, in wait_for_word $named," \
	"under a lost stack $lost; $walked switch-outs walked during the flood"
# stacks found evicted per interval (at a drain's hold, or at their thread's return), from
# the sleeper's block on: where the loss happened
evicted=$(tail -n +"$blocked_at" "$T/emberd.log" | sed -n 's/.*offcpu: .* lost: \([0-9]*\) parked stacks evicted.*/\1/p' | xargs)
[ "$lost" -eq 0 ] ||
	fail "$((lost / 1000000)) ms of away_sleeper's wait lost its stacks (evicted from the parked" \
		"LRU; stacks found evicted per interval since it blocked: $evicted)"
[ "$(pct "$named" "$blocked")" -ge 90 ] ||
	fail "wait_for_word holds $((named / 1000000)) ms of the $((blocked / 1000000)) ms" \
		"away_sleeper was blocked, want >= 90%"
woken=$(ns_of "$T/wk.pb.gz" offcpu -tagfocus=comm=away_sleeper -focus=away_waker)
echo "its wakers profile: away_waker woke $woken ns of it"
[ "$(pct "$woken" "$blocked")" -ge 90 ] ||
	fail "the wakers profile names away_waker for $((woken / 1000000)) ms of the" \
		"$((blocked / 1000000)) ms away_sleeper was blocked, want >= 90%"
pass "away_sleeper's $((blocked / 1000000)) ms wait kept its stacks through $walked walks" \
	"($(pct "$named" "$blocked")% of it in wait_for_word, $(pct "$woken" "$blocked")% woken" \
	"by away_waker)"
