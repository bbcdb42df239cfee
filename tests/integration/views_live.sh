#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# emberctl's views on the real pipeline. Known answer: fx_work_ab spends 3/4 of
# its CPU in work_a, 1/4 in work_b. emberd samples it at 99 Hz while it runs for
# 10 s of its own CPU time (~990 samples, however loaded the host); then
# `emberctl top` must show work_a's self at 75 % of work_a + work_b (within 5
# sigma of the sampling noise, 5 points at least), `tree` must show main calling
# work_a, and `folded` must agree with `top`.
. "$(dirname "$0")/lib.sh"
require_bpf

CPU_S=10
start_emberd --hz 99 --interval 5s
"$FX/fx_work_ab" "cpu:$CPU_S" &
WL=$!
PIDS+=("$WL")
wait "$WL"
kill "$EMBERD_PID"	# SIGTERM: emberd stores the last interval, then exits 0
wait_emberd

ctl() { "$EMBERCTL" --data-dir "$T/data" "$@"; }

ctl top --pid "$WL" -n 0 > "$T/top.txt" 2> "$T/top.err" || fail "top: $(cat "$T/top.err")"
cat "$T/top.txt" | head -8
# self_of FUNC: the self column of FUNC's row (0 if absent)
self_of() { awk -v fn="$1" 'NR > 2 && $5 == fn { v = $1 } END { print v + 0 }' "$T/top.txt"; }
a=$(self_of work_a)
b=$(self_of work_b)
want=$((99 * CPU_S))
[ "$((a + b))" -ge "$((want * 80 / 100))" ] ||
	fail "too few samples of work_a+work_b: $((a + b)) (want 80% of $want at least)"
# 5 points or 5 sigma (1.4 points at ~960 samples), the larger: ~7 points here, still far
# from a 50/50 split
read -r share tol < <(share_band "$a" "$b" 5)
in_band "$share" "$tol" ||
	fail "work_a's self is $share% of work_a+work_b ($((a + b)) samples), not 75 +- $tol% (5 points or 5 sigma)"
grep -q "samples, pid $WL\$" "$T/top.txt" || fail "top's header does not name pid $WL"
awk 'NR > 2 && $5 == "main" && $3 + 0 > 0 { ok = 1 } END { exit !ok }' "$T/top.txt" ||
	fail "main has no total: stacks were not walked to the root"

# tree: a line for main, and work_a indented one level deeper right below it
ctl tree --pid "$WL" --min-percent 5 > "$T/tree.txt" 2> "$T/tree.err" ||
	fail "tree: $(cat "$T/tree.err")"
cat "$T/tree.txt"
awk '
	{ name = $NF; indent = index($0, name) }
	name == "main" { main_indent = indent; next }
	main_indent && name == "work_a" && indent == main_indent + 2 { found = 1 }
	END { exit !found }' "$T/tree.txt" || fail "tree does not show main -> work_a"

# callers of work_a lead to main; folded lines sum to top's total
ctl callers work_a --pid "$WL" > "$T/callers.txt" 2>/dev/null || fail "callers work_a failed"
grep -q ' main$' "$T/callers.txt" || fail "callers of work_a do not reach main"
total=$(sed -n '1s/.*, \([0-9][0-9]*\) samples.*/\1/p' "$T/top.txt")
folded=$(ctl folded --pid "$WL" 2>/dev/null | awk '{ s += $NF } END { print s + 0 }')
[ "$folded" = "$total" ] || fail "folded sums to $folded samples, top says $total"
pass "work_a self $share% of $((a + b)) samples (75 +- $tol%); tree main -> work_a; folded = top = $total"
