#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# JIT frames from perf maps: node --perf-basic-prof spends its time in a recursive
# JS fib called from hotLoop. Both names must appear, fib with the highest flat
# count among JavaScript frames and more than half of all samples, hotLoop under half
# of all at least. Node writes "JS:*fib /path/app.js:1:13": the profile names the
# function fib, in app.js, at line 1 (go tool pprof -lines), with the runtime's text as
# its system name (-raw). The node is one whose V8 ember has no layout for (Node 23's
# 12.9, from npm), as on a host running a Node ember does not know: the perf map names its
# JavaScript (where ember reads a V8's frames, those name them, from its first samples).
. "$(dirname "$0")/lib.sh"
require_bpf
require_go
NODE=${EMBER_TEST_NODE23:-/usr/local/lib/ember-tools/node_modules/node23/bin/node}
[ -x "$NODE" ] || fail "$NODE: no Node 23 (scripts/install-deps.sh installs it from npm)"

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
# --interpreted-frames-native-stack: functions still in V8's interpreter get their
# own named entry too (without it, hotLoop shows as Builtins_InterpreterEntryTrampoline
# until V8 optimizes it, which on a busy machine may be never within the run).
"$NODE" --perf-basic-prof --interpreted-frames-native-stack "$T/app.js" >"$T/node.out" &
WL=$!
PIDS+=("$WL")
at_exit 'rm -f "/tmp/perf-$WL.map"'
wait "$WL"
kill "$EMBERD_PID"	# SIGTERM: emberd stores the last interval, then exits 0
wait_emberd

"$EMBERCTL" --data-dir "$T/data" export --type cpu --pid "$WL" -o "$T/cpu.pb.gz" ||
	fail "export failed"
pprof_top "$T/cpu.pb.gz" -sample_index=samples >"$T/top.txt"
pprof_top "$T/cpu.pb.gz" -sample_index=samples -lines >"$T/lines.txt"
go tool pprof -raw "$T/cpu.pb.gz" >"$T/raw.txt" 2>"$T/pprof.err" ||
	fail "go tool pprof -raw rejected the profile: $(cat "$T/pprof.err")"
total=$(total_of "$T/top.txt")
# pprof -top prints the function from column 6 on; with -lines, FILE:LINE follows.
fib=$(awk '$6 == "fib" { s += $1 } END { print s + 0 }' "$T/top.txt")
hot=$(awk '$6 == "hotLoop" { s += $1 } END { print s + 0 }' "$T/top.txt")
top_js=$(awk '$6 == "fib" || $6 == "hotLoop" { print $6; exit }' "$T/lines.txt")
fib_at=$(awk '$6 == "fib" { print $7; exit }' "$T/lines.txt")
hot_at=$(awk '$6 == "hotLoop" { print $7; exit }' "$T/lines.txt")
hot_cum=$(awk '$6 == "hotLoop" { s += $4 } END { print s + 0 }' "$T/lines.txt")
echo "fib flat $fib at $fib_at, hotLoop flat $hot cum $hot_cum at $hot_at, top JS frame $top_js," \
	"of $total samples"
grep -E ' (fib|hotLoop) ' "$T/lines.txt" | head -5
[ "${fib:-0}" -gt 0 ] || { head -30 "$T/top.txt"; fail "fib is not named"; }
# the interpreter's trampoline copied per function (--interpreted-frames-native-stack): its
# frames are interpreted frames, named as such, never a Code object the walk cannot name
if grep -q '\[v8 code ' "$T/top.txt"; then
	fail "a JS frame is a bare Code object: $(grep -m3 '\[v8 code ' "$T/top.txt" | paste -sd' ')"
fi
grep -qw 'hotLoop' "$T/top.txt" || { head -30 "$T/top.txt"; fail "hotLoop is not named"; }
if grep -qE "JS:[*~^+]?'?fib" "$T/top.txt"; then
	fail "a JS frame is named with V8's raw text, not split: $(grep -m1 'JS:' "$T/top.txt")"
fi
[ "$fib_at" = "$T/app.js:1" ] || fail "fib is at '$fib_at', not $T/app.js:1"
[ "$hot_at" = "$T/app.js:4" ] || fail "hotLoop is at '$hot_at', not $T/app.js:4"
[ "$top_js" = fib ] || fail "the JS frame with the highest flat is $top_js, not fib"
# -raw prints a line "fib FILE:LINE s=START(SYSTEM_NAME)" when the two names differ; Go
# 1.26 (the polyglot machines' /usr/local/go, first on PATH) adds the column ("FILE:LINE:0":
# ember sets none); Debian's 1.19 does not
raw_fib=$(grep -m1 -E "fib $T/app\.js:1(:0)? s=1\(JS:[*~^+]?'?fib $T/app\.js:1:13\)" "$T/raw.txt")
[ -n "$raw_fib" ] || { grep -m5 'fib' "$T/raw.txt"; fail "fib's system name is not V8's text"; }
# hotLoop is under every fib: a stack that loses it lost its JS caller's frame.
awk -v c="$hot_cum" -v t="$total" 'BEGIN { exit !(2 * c >= t) }' ||
	fail "hotLoop is on only $hot_cum of $total stacks"
share=$(awk -v f="$fib" -v t="$total" 'BEGIN { printf "%.1f", 100 * f / t }')
awk -v s="$share" 'BEGIN { exit !(s >= 50) }' || fail "fib has only $share% of the samples"
pass "fib $share% of $total samples at app.js:1 (on top of the JS frames), hotLoop at app.js:4" \
	"under $hot_cum"
