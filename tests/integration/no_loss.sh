#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# No sample lost or counted twice across drains: 1 s intervals over 20 s of a
# busy fixture pinned to CPU 0; its samples must equal hz x its CPU seconds +- 5 %.
. "$(dirname "$0")/lib.sh"
require_bpf
require_go

HZ=99
start_emberd --hz $HZ --interval 1s --duration 24s
"$FX/fx_busy" 20 >"$T/busy.out" &
WL=$!
PIDS+=("$WL")
wait "$WL"
wait_emberd

cpu=$(awk '/cpu_seconds/ { print $2 }' "$T/busy.out")
intervals=$("$EMBERCTL" --data-dir "$T/data" list --type cpu --app fx_busy | grep -c ' cpu ' || true)
[ "$intervals" -ge 20 ] || fail "expected >= 20 stored 1 s intervals, found $intervals"
"$EMBERCTL" --data-dir "$T/data" export --type cpu --pid "$WL" -o "$T/cpu.pb.gz" ||
	fail "export failed"
pprof_top "$T/cpu.pb.gz" -sample_index=samples >"$T/top.txt"
got=$(total_of "$T/top.txt")
want=$(awk -v c="$cpu" -v hz=$HZ 'BEGIN { printf "%d", c * hz }')
echo "busy fixture: $cpu CPU seconds -> expected $want samples at $HZ Hz, got $got over $intervals intervals"
awk -v g="$got" -v w="$want" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(w > 0 && d / w <= 0.05) }' ||
	fail "sample count $got differs from $want by more than 5%"
pass "$got samples for $want expected ($intervals intervals)"
