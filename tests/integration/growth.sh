#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Known answer for memory growth (bpf/growth.bpf.c): fx_growth's grow_memory touches
# 512 MiB of fresh pages (malloc'd, never freed) while its other thread's small_touch
# keeps rewriting one 64 KiB buffer. In the process's memory_growth profile, read with
# go tool pprof: grow_memory holds >= 90% of resident/bytes and of mapped/bytes, and
# the resident total is 512 MiB +- 20% (1 fault in 100 sampled, each standing for 100
# pages).
. "$(dirname "$0")/lib.sh"
require_bpf
require_go

# cum_of TOPFILE FUNC: the cumulative value of FUNC in a pprof -top listing (0 if absent).
cum_of() {
	awk -v fn="$2" '$6 == fn { v = $4 } END { print (v == "" ? 0 : v) }' "$1"
}

start_emberd --hz 99 --interval 5s -v
"$FX/fx_growth" wait >"$T/growth.out" &
WL=$!
PIDS+=("$WL")
# Steady state, as on a host where emberd runs: the process's unwind tables are loaded
# (its first CPU samples report it) before it grows, and the BPF program walks its faults
# (growth_young.sh grows a process before: its faults are walked by the daemon).
wait_for grep -Eq "unwinder: pid $WL: .*\(0 to build\)" "$T/emberd.log" ||
	fail "emberd did not load fx_growth's unwind tables within 30 s"
# and past its start-up, which memory growth leaves out (growth_min_age, 100 ms)
wait_for older_than "$WL" 200 || fail "fx_growth did not live 200 ms"
kill -USR1 "$WL"
wait "$WL" || fail "fx_growth exited with status $?"
kill "$EMBERD_PID" # SIGTERM: emberd stores the last interval, then exits 0
wait_emberd

"$EMBERCTL" --data-dir "$T/data" export --type memory_growth --pid "$WL" -o "$T/growth.pb.gz" ||
	fail "export of the memory_growth profile failed"
for s in resident mapped faults; do
	# bytes print as 536576000B: the unit dropped for the shared readers
	pprof_top "$T/growth.pb.gz" -sample_index=$s -unit=byte | sed 's/\([0-9]\)B\b/\1/g' \
		>"$T/$s.txt"
done
grep -q "small_touch" "$T/resident.txt" || echo "note: small_touch's one buffer was not sampled"
total=$(total_of "$T/resident.txt")
grow=$(cum_of "$T/resident.txt" grow_memory)
mtotal=$(total_of "$T/mapped.txt")
mgrow=$(cum_of "$T/mapped.txt" grow_memory)
echo "resident: grow_memory $grow of $total B; mapped: grow_memory $mgrow of $mtotal B"
want=$((512 << 20))
[ "$total" -ge "$((want * 80 / 100))" ] && [ "$total" -le "$((want * 120 / 100))" ] ||
	fail "resident total $total B, want 512 MiB +- 20%"
[ "$((grow * 100))" -ge "$((total * 90))" ] ||
	fail "grow_memory holds $grow of $total resident bytes, want >= 90%"
[ "$mtotal" -ge "$want" ] || fail "mapped total $mtotal B, want at least the 512 MiB malloc'd"
[ "$((mgrow * 100))" -ge "$((mtotal * 90))" ] ||
	fail "grow_memory holds $mgrow of $mtotal mapped bytes, want >= 90%"
grep -q ' main$' "$T/resident.txt" || fail "main is missing: stacks were not walked to the root"
pass "grow_memory holds $((grow * 100 / total))% of $((total >> 20)) MiB resident, $((mgrow * 100 / mtotal))% of mapped"
