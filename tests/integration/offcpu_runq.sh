#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Known answer for run-queue delay (every switch-out walked: with the default sampling, on
# a loaded machine, the few switch-outs of three starved threads give too few samples for
# a 10-point bound): fx_offcpu's three rq_spin
# threads, pinned to CPU 0, spin for the same wall time. Sharing one CPU, each runs about a
# third of it and waits for the CPU the rest: their run-queue delay in the offcpu profile
# is within 10 points of the share of their wall time they measured off the CPU (about
# 2/3: more when other work shares CPU 0; 25 points when that work raised the sampling
# period), and that share is at least 2/3 - 10 points; all their off-CPU time is run queue.
# While they run, the status file, emberctl status and its Prometheus text give fx_offcpu's
# run-queue latency (there a mean in seconds: > 0 and under the interval), and the off-CPU
# sampler's counts and losses, each under its name with the same value in all three.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/offcpu_lib.sh"
require_bpf
require_go

OFFCPU_STATUS=1 offcpu_run runq
[ "$(grep -c '^rq_spin ' "$T/fx.out")" -eq 3 ] ||
	fail "fx_offcpu did not report its three threads: $(cat "$T/fx.out")"
wall=$(fx_sum rq_spin 2)
cpu=$(fx_sum rq_spin 3)
runq=$(ns_of "$T/off.pb.gz" offcpu -tagfocus=comm=rq_spin -focus='off-CPU: run queue')
off=$(ns_of "$T/off.pb.gz" offcpu -tagfocus=comm=rq_spin)
want=$(pct $((wall - cpu)) "$wall")
echo "rq_spin: wall $wall ns, cpu $cpu ns (themselves); run-queue delay $runq ns of $off off"
[ "$want" -ge 56 ] || fail "the threads were off the CPU ${want}% of their wall time: not pinned?"
# they never block: their off-CPU time is run-queue delay
[ "$(pct "$runq" "$off")" -ge 95 ] ||
	fail "run-queue delay is $(pct "$runq" "$off")% of the threads' off-CPU time, want >= 95%"
# Every switch-out is walked unless other work on the host switches faster than a CPU's
# budget of walks: then the sampler raises that CPU's period (status: sampled_raised) and
# the sum is an unbiased estimate from the few of the threads' waits it sampled. At load
# 9-12 (the threads got 9% of CPU 0, ~350 switch-outs, 1,680 sampled host-wide at a raised
# period) one run came out 12 points under: with a few dozen waits of ~30 ms sampled, the
# standard error is about 10 points, so the bound is then 25 points.
raised=$(awk '$1 == "offcpu" && $2 == "sampled_raised" { print $4 }' "$T/run/status")
tol=10
[ "${raised:-0}" -eq 0 ] || tol=25
within "$(pct "$runq" "$wall")" "$want" "$tol" ||
	fail "run-queue delay $(pct "$runq" "$wall")% of wall time, want ${want}% +- $tol points" \
		"($raised switch-outs sampled at a period other work on the host raised)"
# emberctl status shows the application's run-queue latency
grep -Eq ' fx_offcpu: [0-9.]+ us mean over [1-9][0-9]* waits' "$T/status.txt" ||
	fail "emberctl status does not show fx_offcpu's run-queue latency: $(cat "$T/status.txt")"
grep -E 'run queue| fx_offcpu: ' "$T/status.txt"
# and its Prometheus text: the family's HELP and TYPE, and fx_offcpu's mean in seconds
grep -q '^# TYPE ember_last_interval_run_queue_latency_seconds gauge$' "$T/prom" ||
	fail "no run-queue latency family in the Prometheus text"
lat=$(awk '$1 == "ember_last_interval_run_queue_latency_seconds{app=\"fx_offcpu\"}" { print $2 }' "$T/prom")
awk -v v="${lat:-x}" 'BEGIN { exit !(v ~ /^[0-9.e+-]+$/ && v + 0 > 0 && v + 0 < 2) }' ||
	fail "fx_offcpu's run-queue latency in the Prometheus text is '${lat}', want 0 < s < 2:" \
		"$(grep run_queue "$T/prom")"
echo "prometheus: fx_offcpu run-queue latency ${lat} s"
# the off-CPU sampler's counts: each in the status file, in emberctl status's lines and, with
# the same total, in the Prometheus text; switch-outs were seen and folded
counts="switches sampled sampled_raised walked_weight_one folded short wakeups held held_map_full"
losses="parked_evicted no_storage counts_map_full stack_map_full wakers_map_full"
offcpu_total() { awk -v n="$1" '$1 == "offcpu" && $2 == n { print $4 }' "$T/snap/status"; }
for n in $counts $losses; do
	total=$(offcpu_total "$n")
	[ -n "$total" ] || fail "no off-CPU count $n in the status file: $(grep ^offcpu "$T/snap/status")"
	case " $losses " in
	*" $n "*) series="ember_offcpu_losses_total{cause=\"$n\"}" ;;
	*) series="ember_offcpu_total{what=\"$n\"}" ;;
	esac
	prom=$(awk -v s="$series" '$1 == s { print $2 }' "$T/prom")
	[ "$prom" = "$total" ] ||
		fail "$series is '$prom' in the Prometheus text, $total in the status file"
done
for n in $losses; do
	grep -q "^ember_last_interval_offcpu_losses{cause=\"$n\"} [0-9]" "$T/prom" ||
		fail "no last-interval off-CPU loss $n in the Prometheus text"
done
[ "$(offcpu_total switches)" -gt 0 ] && [ "$(offcpu_total folded)" -gt 0 ] ||
	fail "no off-CPU switch-outs seen or folded: $(grep ^offcpu "$T/snap/status")"
switches=$(awk '$1 == "offcpu" && $2 == "switches" { print $3 }' "$T/snap/status")
grep -Eq "^  off-CPU +last interval: ~$switches switch-outs; [0-9]+ sampled" "$T/status.txt" ||
	fail "emberctl status does not show the off-CPU counts: $(cat "$T/status.txt")"
grep -Eq '^  off-CPU lost +last interval: ' "$T/status.txt" &&
	grep -A1 '^  off-CPU lost' "$T/status.txt" | grep -Eq '^ +since start: ' ||
	fail "emberctl status does not show the off-CPU losses: $(cat "$T/status.txt")"
grep -E '^  off-CPU|^ +since start' "$T/status.txt"
pass "run-queue delay $(pct "$runq" "$wall")% of the threads' wall time (measured ${want}%)"
