#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# No sample lost or counted twice across drains: 1 s intervals while a busy fixture
# pinned to CPU 0 burns 10 s of its own CPU time; its samples must equal hz x its
# CPU seconds +- 5 %. When the fixture shares CPU 0 with others, which tick lands in
# its time slices is chance: the count varies by about sqrt(expected), so the
# expected count must be large for 5 % to be several of those (999 Hz: ~9990,
# sqrt 1 %); at 99 Hz over 20 s on a busy host (217 expected, 229 got) it failed.
. "$(dirname "$0")/lib.sh"
require_bpf
require_go

HZ=999
start_emberd --hz $HZ --interval 1s
"$FX/fx_busy" cpu:10 >"$T/busy.out" &
WL=$!
PIDS+=("$WL")
wait "$WL"
kill "$EMBERD_PID"	# SIGTERM: emberd stores the last interval, then exits 0
wait_emberd

cpu=$(awk '/cpu_seconds/ { print $2 }' "$T/busy.out")
intervals=$("$EMBERCTL" --data-dir "$T/data" list --type cpu --app fx_busy | grep -c ' cpu ' || true)
[ "$intervals" -ge 10 ] || fail "expected >= 10 stored 1 s intervals, found $intervals"
"$EMBERCTL" --data-dir "$T/data" export --type cpu --pid "$WL" -o "$T/cpu.pb.gz" ||
	fail "export failed"
pprof_top "$T/cpu.pb.gz" -sample_index=samples >"$T/top.txt"
got=$(total_of "$T/top.txt")
want=$(awk -v c="$cpu" -v hz=$HZ 'BEGIN { printf "%d", c * hz }')
echo "busy fixture: $cpu CPU seconds -> expected $want samples at $HZ Hz, got $got over $intervals intervals"
awk -v g="$got" -v w="$want" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(w > 0 && d / w <= 0.05) }' ||
	fail "sample count $got differs from $want by more than 5%"
pass "$got samples for $want expected ($intervals intervals)"
