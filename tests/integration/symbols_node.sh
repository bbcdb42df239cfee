#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# JIT frames from perf maps: node --perf-basic-prof spends its time in a recursive
# JS fib called from hotLoop. Both names must appear, fib with the highest flat
# count among JavaScript frames and more than half of all samples.
. "$(dirname "$0")/lib.sh"
require_bpf
require_go
command -v node >/dev/null || fail "node not installed (scripts/install-deps.sh installs nodejs)"

cat >"$T/app.js" <<'JS'
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
// runs for ms of the process's CPU time: a known number of samples on a loaded host
function cpuMs() { const u = process.cpuUsage(); return (u.user + u.system) / 1000; }
function hotLoop(ms) {
	const end = cpuMs() + ms;
	let x = 0;
	while (cpuMs() < end)
		x += fib(25);
	return x;
}
console.log(hotLoop(6000));
JS

start_emberd --hz 99 --interval 2s -v
node --perf-basic-prof "$T/app.js" >"$T/node.out" &
WL=$!
PIDS+=("$WL")
at_exit 'rm -f "/tmp/perf-$WL.map"'
wait "$WL"
kill "$EMBERD_PID"	# SIGTERM: emberd stores the last interval, then exits 0
wait_emberd

"$EMBERCTL" --data-dir "$T/data" export --type cpu --pid "$WL" -o "$T/cpu.pb.gz" ||
	fail "export failed"
pprof_top "$T/cpu.pb.gz" -sample_index=samples >"$T/top.txt"
total=$(total_of "$T/top.txt")
# Node names JS functions "JS:*fib /path/app.js:1:13" (optimized) or "JS:~fib ..."
# (interpreted): sum each function's flat over its variants. pprof -top prints the
# name from column 6 on.
js_flat() {
	awk -v fn="$1" '$6 ~ "^(JS|LazyCompile|Function):[*~^+]?" fn "$" && $7 ~ /app\.js/ { s += $1 }
		END { print s + 0 }' "$T/top.txt"
}
fib=$(js_flat fib)
hot=$(js_flat hotLoop)
hot_cum=$(awk '$6 ~ /hotLoop$/ && $7 ~ /app\.js/ { s += $4 } END { print s + 0 }' "$T/top.txt")
top_js=$(awk '$7 ~ /app\.js/ { print $6; exit }' "$T/top.txt")
echo "fib flat $fib, hotLoop flat $hot (cum $hot_cum), top JS frame $top_js, of $total samples"
grep 'app\.js' "$T/top.txt" | head -5
[ "${fib:-0}" -gt 0 ] || { head -30 "$T/top.txt"; fail "fib is not named"; }
grep -q 'hotLoop' "$T/top.txt" || { head -30 "$T/top.txt"; fail "hotLoop is not named"; }
case "$top_js" in *fib) ;; *) fail "the JS frame with the highest flat is $top_js, not fib" ;; esac
share=$(awk -v f="$fib" -v t="$total" 'BEGIN { printf "%.1f", 100 * f / t }')
awk -v s="$share" 'BEGIN { exit !(s >= 50) }' || fail "fib has only $share% of the samples"
pass "fib $share% of $total samples (on top of the JS frames), hotLoop named"
