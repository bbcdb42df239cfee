#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Known answer: fx_work_ab spends 3/4 of its CPU in work_a, 1/4 in work_b. emberd
# samples it at 99 Hz for ~20 s; go tool pprof must see work_a at 75 +- 5 %.
. "$(dirname "$0")/lib.sh"
require_bpf
require_go

start_emberd --hz 99 --interval 5s --duration 24s
"$FX/fx_work_ab" 20 &
WL=$!
PIDS+=("$WL")
wait "$WL"
wait_emberd

"$EMBERCTL" --data-dir "$T/data" export --type cpu --pid "$WL" -o "$T/cpu.pb.gz" ||
	fail "export failed"
pprof_top "$T/cpu.pb.gz" -sample_index=samples > "$T/top.txt"
a=$(flat_of "$T/top.txt" work_a)
b=$(flat_of "$T/top.txt" work_b)
echo "work_a=$a work_b=$b samples"
[ "$((a + b))" -ge 1000 ] || fail "too few samples of work_a+work_b: $((a + b)) (expected ~1900)"
share=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", 100 * a / (a + b) }')
awk -v s="$share" 'BEGIN { exit !(s >= 70 && s <= 80) }' ||
	fail "work_a share $share% is not 75 +- 5%"
grep -q ' main$' "$T/top.txt" || fail "main is missing: stacks were not walked to the root"
pass "work_a share $share% of $((a + b)) samples"
