#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Memory growth through a JIT, as users start node (no flags: V8's frames are read by the
# walk, issue 44): `node growth_node.js`, whose
# leakyCache keeps appending large arrays to an array it never clears (with churn
# making garbage alongside) until the process holds 256 MiB. In its memory_growth profile
# (emberctl top --sample resident), leakyCache leads: >= 80% of the resident bytes in
# total (under it, V8's C++ that fills the arrays), more than every other JS function
# of the script but its callers grow and waitForGo (which calls grow once told to go:
# the walk that reads V8's frames shows it above, as it is). Seen: 95-96% (93-96% when
# this test ran node with --perf-basic-prof, named from its perf map).
. "$(dirname "$0")/lib.sh"
require_bpf
command -v node >/dev/null || fail "node not installed (scripts/install-deps.sh installs nodejs)"

cp "$(dirname "$0")/growth_node.js" "$T/growth_node.js"
start_emberd --hz 99 --interval 5s -v
cd "$T" || fail "cannot enter $T"
node "$T/growth_node.js" 256 >"$T/node.out" 2>&1 &
WL=$!
PIDS+=("$WL")
# Steady state: node's unwind tables loaded (its first CPU samples report it) before
# it grows, and the BPF program walks its faults (before, the daemon walks them from a
# copy of the stack: growth_young.sh).
wait_for grep -Eq "unwinder: pid $WL: .*\\(0 to build\\)" "$T/emberd.log" ||
	fail "emberd did not load node's unwind tables within 30 s"
# and past its start-up, which memory growth leaves out (growth_min_age, 100 ms)
wait_for older_than "$WL" 200 || fail "node did not live 200 ms"
kill -USR2 "$WL"
grown() {
	kill -0 "$WL" 2>/dev/null || fail "node exited: $(tail -3 "$T/node.out")"
	grep -q "^grew" "$T/node.out"
}
wait_for grown || fail "node did not grow to 256 MiB within 30 s"
kill "$EMBERD_PID" # the last interval is stored while node lives: its frames are read from it
wait_emberd
kill "$WL"

"$EMBERCTL" --data-dir "$T/data" top --type memory_growth --sample resident --pid "$WL" -n 0 \
	>"$T/top.txt" 2>"$T/top.err" || fail "emberctl top failed: $(cat "$T/top.err")"
head -4 "$T/top.txt"
leaky=$(top_total_pct "$T/top.txt" leakyCache)
for f in churn; do
	[ "$leaky" -gt "$(top_total_pct "$T/top.txt" "$f")" ] ||
		fail "$f holds $(top_total_pct "$T/top.txt" "$f")% of the resident growth, leakyCache $leaky%"
done
[ "$leaky" -ge 80 ] || fail "leakyCache holds $leaky% of the resident growth in total, want >= 80%"
pass "leakyCache leads with $leaky% of the resident growth in total"
