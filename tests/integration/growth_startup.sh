#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Known answer for the growth growth_min_age leaves out of the stacks: with growth_min_age at
# its largest (10 s), fx_growth touches 512 MiB from its start and exits, younger than that
# all along. Its growth is not walked but counted, so the totals stay true: in its
# memory_growth profile, >= 95% of the resident bytes are under one "[process start-up]"
# frame, and the total is 512 MiB +- 20%. The status file gives fx_growth's start-up bytes
# of the interval it grew in (> 0 and at most the profile's total), the same in emberctl
# status and its Prometheus text.
. "$(dirname "$0")/lib.sh"
require_bpf

printf '[daemon]\ngrowth_min_age = 10s\n' >"$T/ember.conf"
start_emberd --config "$T/ember.conf" --hz 99 --interval 2s -v
"$FX/fx_growth" >"$T/growth.out" &
WL=$!
PIDS+=("$WL")
wait "$WL" || fail "fx_growth exited with status $?"
# the status file names each interval's start-up growth per app: kept when fx_growth's shows
mkdir -p "$T/snap"
has_startup() {
	cp "$T/run/status" "$T/snap/status" 2>/dev/null && grep -q '^startup fx_growth ' "$T/snap/status"
}
wait_for has_startup || fail "no start-up growth of fx_growth in the status file: $(grep '^startup' "$T/snap/status")"
# emberctl status and its Prometheus text of that copy
"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/snap" >"$T/status.txt" 2>&1 || true
"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/snap" --format prometheus >"$T/prom" 2>&1 || true
kill "$EMBERD_PID"
wait_emberd

"$EMBERCTL" --data-dir "$T/data" top --type memory_growth --sample resident --sort total \
	--pid "$WL" -n 0 >"$T/top.txt" 2>"$T/top.err" || fail "emberctl top failed: $(cat "$T/top.err")"
head -6 "$T/top.txt"
total=$(sed -n '1s/.*, \([0-9]*\) resident,.*/\1/p' "$T/top.txt")
startup=$(awk '$5 == "[process" && $6 == "start-up]" { v = $3 } END { print v + 0 }' "$T/top.txt")
want=$((512 << 20))
echo "resident $total B, under [process start-up] $startup B"
[ -n "$total" ] && [ "$total" -ge "$((want * 80 / 100))" ] && [ "$total" -le "$((want * 120 / 100))" ] ||
	fail "resident total ${total:-none} B, want 512 MiB +- 20%"
[ "$((startup * 100))" -ge "$((total * 95))" ] ||
	fail "[process start-up] holds $startup of $total resident bytes, want >= 95%"
grep -q 'grow_memory' "$T/top.txt" && fail "a stack of fx_growth was walked, younger than growth_min_age"
seen=$(awk '$1 == "startup" && $2 == "fx_growth" { print $3 }' "$T/snap/status")
echo "status file: startup fx_growth $seen"
[ "$seen" -gt 0 ] && [ "$seen" -le "$((total + total / 5))" ] ||
	fail "status file: fx_growth's start-up growth $seen B, want 0 < B <= $total"
grep -Eq '^ +(start-ups)? +fx_growth: [0-9.]+ MiB resident in its processes. first growth_min_age$' \
	"$T/status.txt" || fail "emberctl status does not show fx_growth's start-up growth: $(cat "$T/status.txt")"
prom=$(awk '$1 == "ember_last_interval_startup_growth_bytes{app=\"fx_growth\"}" { print $2 }' "$T/prom")
[ "$prom" = "$seen" ] || fail "Prometheus: fx_growth's start-up growth '$prom', $seen in the status file"
pass "$((startup * 100 / total))% of $((total >> 20)) MiB under [process start-up]; status ${seen:-0} B"
