#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Known answer for a switch storm at the default sampling: fx_offcpu storm's pp_worker asks
# pp_feeder for a byte, answered at once, 3 times in wait_long for each in wait_short, for
# 8 s: hundreds of thousands of switch-outs a second. Each CPU walks 200 a second with
# weight 1 and samples about 200 more 1 in its period, which the storm raises above
# offcpu_sample_period (64): every interval's walks stay under what 2 x 200 a second a
# CPU allow (with a 30% margin and the threads' forced walks), where a fixed 1 in 64 would
# walk tens of times more. The weights stay unbiased: the worker's weighed waits (events,
# not counting their run-queue part) within 25% of the voluntary context switches it
# counted itself, wait_long's share of them within 10 points of 75%. And the log says the
# period was raised.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/offcpu_lib.sh"
require_bpf
require_go

OFFCPU_PERIOD=default offcpu_run storm 8000
switches=$(awk '$1 == "pp_switches" { print $2 }' "$T/fx.out")
long_calls=$(fx_sum wait_long 3)
short_calls=$(fx_sum wait_short 3)
[ -n "$switches" ] && [ "$long_calls" -gt 0 ] && [ "$short_calls" -gt 0 ] ||
	fail "fx_offcpu did not report its waits: $(cat "$T/fx.out")"
# a storm: at 1 in offcpu_sample_period (64), twice the 200 sampled walks a second the CPU
# may make (the pair is pinned to one CPU; measured 345,000-900,000 by the machine's speed)
storm_min=$((8 * 200 * 64 * 2))
[ "$switches" -ge "$storm_min" ] ||
	fail "pp_worker switched only $switches times in 8 s, want >= $storm_min: not a storm"
# each interval's walks: weight 1 (budget, forced) and sampled, and those at a raised period
sed -n 's/.*offcpu: ~\([0-9]*\) switch-outs (the weights. sum), \([0-9]*\) walked with weight 1 and \([0-9]*\) sampled (\([0-9]*\) at a period a storm raised).*/\1 \2 \3 \4/p' \
	"$T/emberd.log" >"$T/walks"
[ -s "$T/walks" ] || fail "no offcpu line in emberd's log: $(grep offcpu: "$T/emberd.log" | head -3)"
ncpu=$(nproc)
threads=$(ls -d /proc/[0-9]*/task/[0-9]* 2>/dev/null | wc -l)
# 2 s intervals: 2 x (200 + 200) walks a CPU, 30% over, and a forced walk a second a thread
bound=$((ncpu * 400 * 2 * 130 / 100 + 2 * threads))
max=$(awk '{ w = $2 + $3; if (w > m) m = w } END { print m + 0 }' "$T/walks")
raised=$(awk '{ s += $4 } END { print s + 0 }' "$T/walks")
est=$(awk '{ s += $1 } END { print s + 0 }' "$T/walks")
e_long=$(ns_of "$T/off.pb.gz" events -tagfocus=comm=pp_worker -focus=wait_long -ignore='run queue')
e_short=$(ns_of "$T/off.pb.gz" events -tagfocus=comm=pp_worker -focus=wait_short -ignore='run queue')
e_all=$(ns_of "$T/off.pb.gz" events -tagfocus=comm=pp_worker -ignore='run queue')
echo "pp_worker: $switches voluntary switches, $long_calls wait_long and $short_calls wait_short" \
	"calls; profile: $e_all weighed waits, $e_long in wait_long and $e_short in wait_short;" \
	"host: ~$est switch-outs, at most $max walks an interval (bound $bound), $raised sampled" \
	"at a raised period"
[ "$raised" -gt 0 ] || fail "the storm raised no CPU's period: $(cat "$T/walks")"
[ "$max" -le "$bound" ] ||
	fail "an interval walked $max switch-outs, want at most $bound ($ncpu CPUs): $(cat "$T/walks")"
[ $((e_all * 100)) -ge $((switches * 75)) ] && [ $((e_all * 100)) -le $((switches * 125)) ] ||
	fail "pp_worker has $e_all weighed waits for its $switches voluntary switches, want within 25%"
within "$(pct "$e_long" $((e_long + e_short)))" 75 10 ||
	fail "wait_long has $(pct "$e_long" $((e_long + e_short)))% of the two waits' weighed" \
		"count, want 75% +- 10 points"
pass "$e_all weighed waits for $switches switches, wait_long $(pct "$e_long" $((e_long + e_short)))%," \
	"at most $max walks an interval (bound $bound), $raised at a raised period"
