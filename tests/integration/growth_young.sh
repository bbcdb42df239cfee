#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Known answer for memory growth in a process's first moments: fx_growth (built without
# frame pointers) touches 512 MiB at once from its start, with growth_min_age = 0, so
# that its first sampled faults come before emberd has loaded its unwind tables. Those
# go to the deferred walks with a copy of their stack (bpf/growth.bpf.c, as the cpu
# program's samples do) and are walked once the tables are there: in its memory_growth
# profile, >= 95% of the resident bytes are under grow_memory, walked to the root
# (`_start`), and the total is 512 MiB +- 20%. Walked with frame pointers instead, the
# first faults lost their callers above main (seen: 14-30% of the bytes).
. "$(dirname "$0")/lib.sh"
require_bpf

printf '[daemon]\ngrowth_min_age = 0\n' >"$T/ember.conf"
start_emberd --config "$T/ember.conf" --hz 99 --interval 5s -v
"$FX/fx_growth" >"$T/growth.out" &
WL=$!
PIDS+=("$WL")
wait "$WL" || fail "fx_growth exited with status $?"
kill "$EMBERD_PID" # SIGTERM: emberd walks what waits, stores the last interval, exits 0
wait_emberd

# sent: samples of processes not loaded yet that the growth program sent to the deferred ring
sent=$(sed -n 's/.*growth: .* \([0-9]*\) of processes not loaded yet sent.*/\1/p' \
	"$T/emberd.log" | awk '{ s += $1 } END { print s + 0 }')
"$EMBERCTL" --data-dir "$T/data" top --type memory_growth --sample resident --sort total \
	--pid "$WL" -n 0 >"$T/top.txt" 2>"$T/top.err" || fail "emberctl top failed: $(cat "$T/top.err")"
head -8 "$T/top.txt"
# total_of FUNC: the total (column 3) of FUNC in the listing, 0 when absent
total_of_fn() { awk -v fn="$1" '$5 == fn { v = $3 } END { print v + 0 }' "$T/top.txt"; }
total=$(sed -n '1s/.*, \([0-9]*\) resident,.*/\1/p' "$T/top.txt")
grow=$(total_of_fn grow_memory)
root=$(total_of_fn _start)
echo "resident $total B: grow_memory $grow B, under _start $root B; $sent samples deferred"
want=$((512 << 20))
[ -n "$total" ] && [ "$total" -ge "$((want * 80 / 100))" ] && [ "$total" -le "$((want * 120 / 100))" ] ||
	fail "resident total ${total:-none} B, want 512 MiB +- 20%"
[ "$((grow * 100))" -ge "$((total * 95))" ] ||
	fail "grow_memory holds $grow of $total resident bytes, want >= 95%"
[ "$((root * 100))" -ge "$((total * 95))" ] ||
	fail "$root of $total resident bytes are walked to _start, want >= 95%"
[ "$sent" -gt 0 ] ||
	fail "no growth sample was sent to the deferred walks: the tables were loaded before fx_growth grew"
pass "$((root * 100 / total))% of $((total >> 20)) MiB walked to _start, $sent samples walked by the daemon"
