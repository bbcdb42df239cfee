#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A process whose first sample's report is missed (a daemon or kernel fault nobody
# foresaw; EMBER_TEST_MISS_REPORT drops the reports of fx_work_ab here) must not stay
# unloaded, its stacks cut at their leaf for its whole life: once its samples have waited
# DEFERRED_WAIT_NS (2 s) for tables nobody asked for, emberd reads it as at a first
# sample and says so in its log. Known answer: fx_work_ab spends 3/4 of its CPU in
# work_a for 8 s of its CPU time at 99 Hz; its samples after the late read (~5 s of the
# 8) reach main through its tables (distribution flags, no frame pointers: before, none
# did), and work_a keeps its 75 % (5 points or 5 sigma).
. "$(dirname "$0")/lib.sh"
require_bpf
require_go

CPU_S=8
EMBER_TEST_MISS_REPORT=fx_work_ab start_emberd --hz 99 --interval 1s -v
"$FX/fx_work_ab" "cpu:$CPU_S" &
WL=$!
PIDS+=("$WL")
wait_for grep -q "pid $WL: its samples waited 2 s for unwind tables nobody asked for" \
	"$T/emberd.log" || fail "emberd did not notice fx_work_ab's samples waiting"
grep -q "pid $WL: first sample's report dropped" "$T/emberd.log" ||
	fail "EMBER_TEST_MISS_REPORT did not drop fx_work_ab's report"
wait_for grep -Eq "unwinder: pid $WL: .*\(0 to build\)" "$T/emberd.log" ||
	fail "emberd did not load fx_work_ab's tables after reading it late"
wait "$WL" || fail "fx_work_ab exited with status $?"
wl_cpu_top
a=$(flat_of "$T/top.txt" work_a)
b=$(flat_of "$T/top.txt" work_b)
main=$(awk '$6 == "main" { print $4 + 0 }' "$T/top.txt")
echo "work_a=$a work_b=$b samples, ${main:-0} of them reach main"
[ "$((a + b))" -ge "$((99 * CPU_S / 2))" ] || fail "$((a + b)) samples, want >= $((99 * CPU_S / 2))"
# at least a third of them: those after the late read, ~5 s of 8 (2 s of waiting, the rest
# the read and the tables)
[ "${main:-0}" -ge "$(((a + b) / 3))" ] ||
	fail "${main:-0} of $((a + b)) samples reach main, want >= a third (walked with tables)"
read -r share tol < <(share_band "$a" "$b" 5)
in_band "$share" "$tol" ||
	fail "work_a share $share% of $((a + b)) samples is not 75 +- $tol% (5 points or 5 sigma)"
pass "read late, loaded: ${main:-0} of $((a + b)) samples reach main, work_a $share% (75 +- $tol%)"
