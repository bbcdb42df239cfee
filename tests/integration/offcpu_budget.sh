#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Known answer for cpu_budget: fx_offcpu budget runs the storm's ping-pong pinned to CPU 0
# (hundreds of thousands of switch-outs a second, what makes off-CPU programs dear) and four
# napper threads pinned to the last CPU (on the storm's, their rare samples would weigh its
# raised period, thousands), each sleeping 4 ms in take_nap again and again and saying how
# many times it slept and its own wall and CPU time: its time off the CPU is their
# difference. offcpu_sample_period = 1: within the duty cycle's windows a switch-out is
# walked unless a CPU switching fast raised its period.
# - cpu_budget = 1ms (0.1% of a CPU: the storm does not fit): emberd lowers off-CPU's duty
#   cycle one step an interval down to 1/16, says so in its log, in the status file and in
#   emberctl status (both formats, the Prometheus one checked by promcheck), and in the
#   offcpu profiles' comments (read by go tool pprof -comments). The nappers' waits, weighed,
#   stay near their true count and time, within a tolerance from the sampling: each CPU
#   walks about 200 switch-outs a second of the windows' time (a CPU switching faster gets
#   its period raised to keep to it; past the first 200/16 a second, a nap's weight is 16
#   times that period), so at 1/16 the run's ~1.5 s of windows give the nappers' CPU ~300
#   walks; on this shared host other builds' threads switch there too and take most of
#   them: n = 50 of the nappers', a count's relative sd 1/sqrt(50) (14%). Count and time
#   must be within 4 sd (57%; 10 runs: 64-127% and 60-120%), which a weight not scaled
#   (6%) or scaled twice (1,600%) is far outside.
# - cpu_budget = 1s (the whole CPU): nothing lowered.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/offcpu_lib.sh"
require_bpf
require_go

# budget_run BUDGET MS: fx_offcpu budget MS under emberd with off-CPU time on and BUDGET,
# 1 s intervals; its offcpu profiles exported to $T/off.pb.gz; the status file copied to
# $T/snap/status at napper's end (emberctl status of it in $T/status.txt, Prometheus in
# $T/prom); napper's time off the CPU by its own clocks in NAP_OFF and in the profile in
# NAP_PROF (ns).
budget_run() {
	printf '[daemon]\noffcpu = on\noffcpu_sample_period = 1\ncpu_budget = %s\n' "$1" \
		>"$T/ember.conf"
	start_emberd --config "$T/ember.conf" --hz 19 --interval 1s -v
	"$FX/fx_offcpu" budget "$2" >"$T/fx.out" &
	WL=$!
	PIDS+=("$WL")
	wait_for grep -Eq "unwinder: pid $WL: .*\(0 to build\)" "$T/emberd.log" ||
		fail "emberd did not load fx_offcpu's unwind tables within 30 s"
	kill -USR1 "$WL"
	wait "$WL" || fail "fx_offcpu budget exited with status $?"
	# the interval napper ended in, drained
	local n
	n=$(status_key intervals)
	wait_for intervals_at_least $((n + 2)) || fail "emberd's intervals stopped"
	offcpu_status_snap
	kill "$EMBERD_PID"
	wait_emberd
	offcpu_export offcpu "$T/off.pb.gz"
	NAP_OFF=$(awk '$1 == "napper" { s += $2 - $3 } END { printf "%.0f\n", s }' "$T/fx.out")
	NAPS=$(awk '$1 == "naps" { s += $2 } END { print s + 0 }' "$T/fx.out")
	[ "$NAP_OFF" -gt 0 ] && [ "$NAPS" -gt 0 ] || fail "napper did not report: $(cat "$T/fx.out")"
	NAP_PROF=$(ns_of "$T/off.pb.gz" offcpu -tagfocus=comm=napper)
	NAPS_PROF=$(ns_of "$T/off.pb.gz" events -tagfocus=comm=napper -ignore='run queue')
	echo "napper: $NAPS naps, $NAPS_PROF weighed in the profile; off the CPU $NAP_OFF ns by its" \
		"clocks, $NAP_PROF ns in the profile"
}

# WALKS: the nappers' walks at 1/16 (the header says why).
WALKS=50
# near A B K: A within K standard deviations (1/sqrt(WALKS)) of B.
near() {
	awk -v a="$1" -v b="$2" -v k="$3" -v n="$WALKS" \
		'BEGIN { t = k / sqrt(n); exit !(a >= b * (1 - t) && a <= b * (1 + t)) }'
}
# tol K: K standard deviations, in percent.
tol() { awk -v k="$1" -v n="$WALKS" 'BEGIN { printf "%.0f\n", 100 * k / sqrt(n) }'; }

budget_run 1ms 24000
shift_now=$(status_key budget.offcpu_duty_shift "$T/snap/status")
lowered=$(status_key budget.lowered "$T/snap/status")
echo "tiny budget: duty shift $shift_now after $lowered steps lowered"
awk '/cpu_budget:/' "$T/emberd.log" | sed 's/^.*cpu_budget:/  cpu_budget:/'
[ "$shift_now" = 4 ] || fail "off-CPU's duty cycle is 1/2^$shift_now, want 1/16: $(grep ^budget "$T/snap/status")"
[ "$lowered" -ge 4 ] || fail "$lowered steps lowered, want 4 or more"
grep -q "cpu_budget: .*off-CPU's duty cycle lowered to 1/16" "$T/emberd.log" ||
	fail "the log does not say the duty cycle was lowered to 1/16"
grep -Eq "^  cpu budget +0\.100% of one CPU" "$T/status.txt" &&
	grep -q "off-CPU duty cycle 1/16 (LOWERED" "$T/status.txt" ||
	fail "emberctl status does not show the lowered duty cycle: $(grep -A1 'cpu budget' "$T/status.txt")"
grep -q '^ember_offcpu_duty_ratio 0.0625$' "$T/prom" ||
	fail "no ember_offcpu_duty_ratio 0.0625: $(grep duty "$T/prom")"
go tool pprof -comments "$T/off.pb.gz" >"$T/comments" 2>&1 || fail "pprof -comments: $(cat "$T/comments")"
grep -q "off-CPU duty cycle 1/16 (cpu_budget)" "$T/comments" ||
	fail "the offcpu profiles do not say their duty cycle: $(cat "$T/comments")"
near "$NAPS_PROF" "$NAPS" 4 ||
	fail "the nappers' weighed naps are $NAPS_PROF, want within $(tol 4)% of their $NAPS"
near "$NAP_PROF" "$NAP_OFF" 4 ||
	fail "the nappers' weighed time off the CPU is $NAP_PROF ns, want within $(tol 4)% of their" \
		"$NAP_OFF ns"
tiny="at duty 1/16 the nappers' naps $((NAPS_PROF * 100 / NAPS))% (within $(tol 4)%), their time off"
tiny="$tiny the CPU $((NAP_PROF * 100 / NAP_OFF))% (within $(tol 4)%)"

budget_run 1s 4000
[ "$(status_key budget.offcpu_duty_shift "$T/snap/status")" = 0 ] &&
	[ "$(status_key budget.lowered "$T/snap/status")" = 0 ] ||
	fail "a budget of the whole CPU lowered something: $(grep ^budget "$T/snap/status")"
grep -q "off-CPU duty cycle 1/1;" "$T/status.txt" ||
	fail "emberctl status does not show the whole duty cycle: $(grep -A1 'cpu budget' "$T/status.txt")"
grep -q '^ember_offcpu_duty_ratio 1$' "$T/prom" || fail "no ember_offcpu_duty_ratio 1: $(grep duty "$T/prom")"
! grep -q "cpu_budget: .*lowered" "$T/emberd.log" || fail "the log says something was lowered"
pass "$tiny; the whole budget lowered nothing (naps $((NAPS_PROF * 100 / NAPS))%, time" \
	"$((NAP_PROF * 100 / NAP_OFF))%)"
