#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Memory growth through a JIT: node --perf-basic-prof runs growth_node.js, whose
# leakyCache keeps appending objects to an array it never clears (with churn making
# garbage alongside) until the process holds 256 MiB. In its memory_growth profile
# (emberctl top --sample resident), leakyCache leads: the largest self value of every
# function, and >= 40% of the resident bytes in total (the rest: V8 copying what
# survives into the old space, on its own threads and stacks). Seen: 50% self, 70% total.
. "$(dirname "$0")/lib.sh"
require_bpf
command -v node >/dev/null || fail "node not installed (scripts/install-deps.sh installs nodejs)"

cp "$(dirname "$0")/growth_node.js" "$T/growth_node.js"
start_emberd --hz 99 --interval 5s -v
cd "$T" || fail "cannot enter $T"
node --perf-basic-prof "$T/growth_node.js" 256 >"$T/node.out" 2>&1 &
WL=$!
PIDS+=("$WL")
trap 'rm -f "/tmp/perf-$WL.map"; cleanup' EXIT
# Steady state: node's unwind tables loaded (its first CPU samples report it) before
# it grows; until then its C++ frames are walked with frame pointers, which it lacks.
wait_for grep -Eq "unwinder: pid $WL: .*\\(0 to build\\)" "$T/emberd.log" ||
	fail "emberd did not load node's unwind tables within 30 s"
kill -USR2 "$WL"
wait "$WL" || fail "node exited with status $?: $(tail -3 "$T/node.out")"
kill "$EMBERD_PID"
wait_emberd

"$EMBERCTL" --data-dir "$T/data" top --type memory_growth --sample resident --pid "$WL" -n 0 \
	>"$T/top.txt" 2>"$T/top.err" || fail "emberctl top failed: $(cat "$T/top.err")"
head -8 "$T/top.txt"
# rows: self self% total total% function; the first row has the largest self
first=$(awk 'NR > 2 && NF >= 5 { print $5; exit }' "$T/top.txt")
[[ "$first" == *leakyCache* ]] || fail "the largest self value is $first's, not leakyCache's"
share=$(awk '$5 ~ /leakyCache/ { sub("%", "", $4); print int($4); exit }' "$T/top.txt")
[ "${share:-0}" -ge 40 ] || fail "leakyCache holds ${share:-0}% of the resident bytes, want >= 40%"
pass "leakyCache leads with ${share}% of the resident growth in total"
