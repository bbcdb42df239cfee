#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Known answer for off-CPU time at the default sampling (offcpu_sample_period 64 after a
# CPU's 200 walks a second with weight 1): fx_offcpu's pp_worker asks pp_feeder for a byte
# in wait_long (answered after 300 us) then in wait_short (100 us), thousands of times a
# second, far past the budget, so most of its waits are seen 1 in 64 with weight 64. Its
# offcpu profile, read with go tool pprof: wait_long's share of the two functions'
# off-CPU time within 15 points of the share the worker measured itself (about 3/4), its
# share of their weighed counts within 10 points of the calls' 50%; the
# weighed waits (events, not counting their run-queue part) of each within 35% of the calls
# the worker counted (each call blocks once); the total time within 40% of what it measured
# off the CPU (wall less its own CPU time in the calls). And the 1-in-64 path was
# taken: the daemon's offcpu log lines count sampled switch-outs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/offcpu_lib.sh"
require_bpf
require_go

# 16 s: a sampled wait stands for 64, and one the loaded machine stretched tenfold weighs 64
# times that; over 4 s such outliers moved the time shares by up to 30 points here
OFFCPU_PERIOD=default offcpu_run sampled 16000
grep -q 'off-CPU time: 1 switch-out in 64 sampled' "$T/emberd.log" ||
	fail "the default offcpu_sample_period is not 64: $(grep 'off-CPU time' "$T/emberd.log")"
long=$(fx_sum wait_long 2)
short=$(fx_sum wait_short 2)
long_calls=$(fx_sum wait_long 3)
short_calls=$(fx_sum wait_short 3)
[ "$long" -gt 0 ] && [ "$short" -gt 0 ] ||
	fail "fx_offcpu did not report its waits: $(cat "$T/fx.out")"
p_long=$(ns_of "$T/off.pb.gz" offcpu -tagfocus=comm=pp_worker -focus=wait_long)
p_short=$(ns_of "$T/off.pb.gz" offcpu -tagfocus=comm=pp_worker -focus=wait_short)
# a wait's events: one for its wait, one for its run-queue delay after the wakeup; the
# waits alone (not in the run queue) are the calls
e_long=$(ns_of "$T/off.pb.gz" events -tagfocus=comm=pp_worker -focus=wait_long -ignore='run queue')
e_short=$(ns_of "$T/off.pb.gz" events -tagfocus=comm=pp_worker -focus=wait_short -ignore='run queue')
sampled=$(sed -n 's/.*offcpu: .* walked with weight 1 and \([0-9]*\) sampled.*/\1/p' "$T/emberd.log" |
	awk '{ s += $1 } END { print s + 0 }')
echo "pp_worker (itself): wait_long $long ns in $long_calls calls, wait_short $short ns in" \
	"$short_calls calls; profile: wait_long $p_long ns in $e_long waits, wait_short $p_short" \
	"ns in $e_short waits; $sampled switch-outs sampled 1 in 64"
[ "$sampled" -gt 0 ] || fail "no switch-out was sampled 1 in 64: the test did not test sampling"
[ $((long_calls + short_calls)) -ge 16000 ] ||
	fail "only $((long_calls + short_calls)) waits in 16 s: too few to need sampling"
[ $((p_long + p_short)) -gt 0 ] || fail "no off-CPU time in wait_long or wait_short"
want=$(pct "$long" $((long + short)))
got=$(pct "$p_long" $((p_long + p_short)))
within "$got" "$want" 15 ||
	fail "wait_long holds ${got}% of the two waits' off-CPU time, want ${want}% +- 15 points"
# the waits' counts, which no stretch skews: as many of each (50%), within 10 points
within "$(pct "$e_long" $((e_long + e_short)))" 50 10 ||
	fail "wait_long has $(pct "$e_long" $((e_long + e_short)))% of the two waits' weighed" \
		"count, want 50% +- 10 points"
# the weighed counts estimate the calls (35%: a few times the sampling's standard error)
counts_near() { # NAME WEIGHED CALLS
	[ $(($2 * 100)) -ge $(($3 * 65)) ] && [ $(($2 * 100)) -le $(($3 * 135)) ] ||
		fail "$1: $2 weighed waits in the profile for $3 calls, want within 35%"
}
counts_near wait_long "$e_long" "$long_calls"
counts_near wait_short "$e_short" "$short_calls"
# the time is weighed too (unweighed it would be a fraction): 60-140%
tot=$(pct $((p_long + p_short)) $((long + short)))
[ "$tot" -ge 60 ] && [ "$tot" -le 140 ] ||
	fail "the profile has ${tot}% of the time the worker measured in its waits, want 60-140%"
pass "wait_long ${got}% of the waits' time (measured ${want}%), counts $e_long/$long_calls" \
	"and $e_short/$short_calls, time ${tot}% of measured, $sampled sampled 1 in 64"
