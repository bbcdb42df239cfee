#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Known answer: fx_work_ab spends 3/4 of its CPU in work_a, 1/4 in work_b. emberd
# samples it at 99 Hz while it runs for 12 s of its own CPU time (however long a
# loaded host takes to give it that): 1188 samples, and go tool pprof must see
# work_a at 75 % (within 5 sigma of the sampling noise, 5 points at least).
. "$(dirname "$0")/lib.sh"
require_bpf
require_go

CPU_S=12
start_emberd --hz 99 --interval 5s
"$FX/fx_work_ab" "cpu:$CPU_S" &
WL=$!
PIDS+=("$WL")
wait "$WL"
wl_cpu_top
a=$(flat_of "$T/top.txt" work_a)
b=$(flat_of "$T/top.txt" work_b)
want=$((99 * CPU_S))
echo "work_a=$a work_b=$b samples (want about $want)"
# seen: 96-98% of want on a quiet host, 93% with another process keeping a CPU busy
# (main, the loop and the clocks' granularity take the rest); far fewer is lost samples
[ "$((a + b))" -ge "$((want * 80 / 100))" ] && [ "$((a + b))" -le "$((want * 105 / 100))" ] ||
	fail "$((a + b)) samples of work_a+work_b, want 80-105% of $want"
# 5 points or 5 sigma (1.3 points at ~1130 samples, where 5 points were 3.9 sigma), the
# larger: ~6.4 points here, still far from a 50/50 split
read -r share tol < <(share_band "$a" "$b" 5)
in_band "$share" "$tol" ||
	fail "work_a share $share% of $((a + b)) samples is not 75 +- $tol% (5 points or 5 sigma)"
grep -q ' main$' "$T/top.txt" || fail "main is missing: stacks were not walked to the root"
pass "work_a share $share% of $((a + b)) samples (75 +- $tol%)"
