#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# JavaScript frames named without flags: `node app.js` (no --perf-basic-prof) runs an async
# handler that calls hotJsLoop (which calls innerJs) and sideJs; TurboFan optimises them,
# inlining innerJs into hotJsLoop and, at times, hotJsLoop into asyncHandler. ember reads
# V8's frames in the kernel and names them on the host, a function inlined into optimised
# code as a frame of its own (a line of the code's location, as pprof marks inlining):
# at least 90% of the samples of the process's work (those under asyncHandler, from its
# first await on: the main thread's) name asyncHandler, the outer function, with script and
# line; at least 10% name hotJsLoop, and at least 10% are in its TurboFan code, innerJs
# inlined into it at the line of the call; no JavaScript frame under asyncHandler is left
# unnamed.
# The ground truth is V8's own sampler: a second run under node --cpu-prof, sampled by ember
# too, where the self share of each top JavaScript function must be within 5 points of V8's.
. "$(dirname "$0")/lib.sh"
require_bpf
require_go
command -v node >/dev/null || fail "node not installed (scripts/install-deps.sh installs nodejs)"
NODE=${EMBER_TEST_NODE:-$(command -v node)}
echo "node: $NODE $("$NODE" --version) (V8 $("$NODE" -p process.versions.v8))"

cat >"$T/app.js" <<'JS'
'use strict';
function innerJs(i) {
	let s = 0;
	for (let k = 0; k < 200; k++)
		s += (i * k) % 7;
	return s;
}
function hotJsLoop(n) {
	let x = 0;
	for (let i = 0; i < n; i++)
		x += innerJs(i);
	return x;
}
// a second hot function, a third of hotJsLoop's time: two shares to compare
function sideJs(n) {
	let y = 1;
	for (let i = 0; i < n * 60; i++)
		y = (y * 31 + i) % 1000003;
	return y;
}
// runs for ms of the process's CPU time: a known number of samples on a loaded host
function cpuMs() { const u = process.cpuUsage(); return (u.user + u.system) / 1000; }
// Each round's sizes vary at random: rounds of one length (~10 ms) alias with a sampler's
// fixed rate, 99 Hz landing on one function up to 99 times in 100 while V8's 1 kHz sampler
// saw half each (bpftrace at 99 Hz agreed with ember, perf at 999 Hz with V8)
function size() { return 10000 + Math.floor(Math.random() * 20000); }
async function asyncHandler(ms) {
	const end = cpuMs() + ms;
	let x = 0;
	while (cpuMs() < end) {
		x += hotJsLoop(size()) + sideJs(size());
		await null;
	}
	return x;
}
// up for argv[3] ms once its work is done, as a service is: its frames are named from its
// memory at the end of emberd's interval
asyncHandler(Number(process.argv[2])).then((x) => {
	console.log(x);
	setTimeout(() => {}, Number(process.argv[3] || 0));
});
JS

# 499 Hz: ~2,500 samples of the 5 s under --cpu-prof, where a share's sampling error is
# about a point (at 99 Hz, 500 samples: 2.3 points, and 5 points off one run in 25)
start_emberd --hz 499 --interval 2s -v
warm_node "$NODE" # node's table built before the workload starts
"$NODE" "$T/app.js" 5000 4000 >"$T/node.out" &
WL=$!
PIDS+=("$WL")
wait "$WL" || fail "node app.js failed"
# the ground truth: V8's own sampler in a second run, sampled by emberd as well
"$NODE" --cpu-prof --cpu-prof-dir="$T/prof" "$T/app.js" 5000 4000 >"$T/node2.out" &
WL2=$!
PIDS+=("$WL2")
wait "$WL2" || fail "node --cpu-prof app.js failed"
kill "$EMBERD_PID" "$WARM" # SIGTERM: emberd stores the last interval, then exits 0
wait_emberd
"$EMBERCTL" --data-dir "$T/data" export --type cpu --pid "$WL" -o "$T/cpu.pb.gz" ||
	fail "export failed"
"$EMBERCTL" --data-dir "$T/data" export --type cpu --pid "$WL2" -o "$T/cpu2.pb.gz" ||
	fail "export failed"
prof=$(ls "$T"/prof/*.cpuprofile 2>/dev/null | head -1)
[ -n "$prof" ] || fail "node --cpu-prof wrote no profile"
# self shares of the samples under asyncHandler, per function: "NAME SHARE"
python3 - "$prof" >"$T/truth.txt" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
nodes = {n['id']: n for n in p['nodes']}
parent = {c: n['id'] for n in p['nodes'] for c in n.get('children', [])}
def under(i):
	while i in nodes:
		if nodes[i]['callFrame']['functionName'] == 'asyncHandler':
			return True
		i = parent.get(i)
	return False
hits = {}
total = 0
for s in p['samples']:
	if not under(s):
		continue
	total += 1
	f = nodes[s]['callFrame']['functionName'] or '(anonymous)'
	hits[f] = hits.get(f, 0) + 1
for f, h in sorted(hits.items(), key=lambda x: -x[1]):
	print(f, '%.1f' % (100.0 * h / total))
PY

pprof_top "$T/cpu.pb.gz" -sample_index=samples >"$T/top.txt"
pprof_top "$T/cpu.pb.gz" -sample_index=samples -focus='^asyncHandler$' -lines >"$T/lines.txt"
pprof_top "$T/cpu2.pb.gz" -sample_index=samples -focus='^asyncHandler$' >"$T/focus2.txt"
total=$(total_of "$T/top.txt")
under=$(shown_of "$T/lines.txt")
under2=$(shown_of "$T/focus2.txt")
echo "ember: $total samples of node app.js, $under under asyncHandler:"
awk '/flat%/ { p = 1 } p && n++ < 6' "$T/lines.txt"
[ "${under:-0}" -gt 50 ] || { head -30 "$T/top.txt"; fail "asyncHandler is on too few stacks"; }

# the outer function named with script and line on >= 90% of the process's work
cum=$(awk -v file="$T/app.js" '$6 == "asyncHandler" && index($7, file ":") == 1 &&
	$7 ~ /:[1-9][0-9]*$/ { s += $4 } END { print s + 0 }' "$T/lines.txt")
share=$(awk -v c="$cum" -v t="$under" 'BEGIN { printf "%.1f", 100 * c / t }')
echo "asyncHandler with app.js:LINE on $share% of the $under samples under it"
if ! awk -v s="$share" 'BEGIN { exit !(s >= 90) }'; then
	grep -E ' asyncHandler ' "$T/lines.txt" | head || true
	fail "asyncHandler named with app.js:LINE on $share% only"
fi
for fn in hotJsLoop innerJs; do
	c=$(awk -v f="$fn" -v file="$T/app.js" '$6 == f && index($7, file ":") == 1 { s += $4 }
		END { print s + 0 }' "$T/lines.txt")
	echo "$fn (with app.js:LINE) on $c samples (where not inlined into its caller)"
	[ "$fn" = innerJs ] || hot=$c
done
# the hot inner function named with script and line (V8's --cpu-prof gives it over half)
awk -v c="$hot" -v t="$under" 'BEGIN { exit !(10 * c >= t) }' ||
	fail "hotJsLoop named with app.js:LINE on $hot of $under samples only"
# a TurboFan frame named: innerJs's body, inlined into hotJsLoop's optimised code, is one
# location of two lines (pprof -raw): innerJs at a line of its body, then hotJsLoop at the
# line of its call. Only an optimised Code with that inlining holds such samples
# (interpreted and baseline hotJsLoop call innerJs, whose own frame is then the innermost).
call=$(awk '/x \+= innerJs\(i\);/ { print NR; exit }' "$T/app.js")
go tool pprof -raw "$T/cpu.pb.gz" >"$T/raw.txt" 2>"$T/pprof.err" ||
	fail "go tool pprof -raw rejected the profile: $(cat "$T/pprof.err")"
inl=$(python3 - "$T/raw.txt" "$T/app.js" "$call" <<'PY'
import re, sys
raw, script, call = sys.argv[1], sys.argv[2], sys.argv[3]
locs, leaves, cur, part = {}, [], None, None
for line in open(raw):
	if not line.startswith(' '):
		part = line.strip()
		continue
	if part == 'Locations':
		m = re.match(r'^\s+(\d+): 0x[0-9a-f]+ (?:M=\d+ )?(.*)$', line)
		if m:
			cur, rest = m.group(1), m.group(2)
			locs[cur] = []
		elif not cur:
			continue
		else:
			rest = line.strip()
		m = re.match(r'^(\S+) (\S+?):(\d+):\d+ s=', rest)
		locs[cur].append((m.group(1), m.group(2), m.group(3)) if m else (rest, '', ''))
	elif part and part.startswith('samples/count'):
		m = re.match(r'^\s+(\d+)\s+\d+: (\d+)', line)
		if m:
			leaves.append((int(m.group(1)), m.group(2)))
n = 0
for count, leaf in leaves:
	lines = locs.get(leaf, [])
	if len(lines) >= 2 and lines[0][0] == 'innerJs' and lines[1] == ('hotJsLoop', script, call):
		n += count
print(n)
PY
)
echo "hotJsLoop's optimised code with innerJs inlined (a frame of innerJs over app.js:$call) on" \
	"$inl samples"
# Node 22, 24 and 25 run hotJsLoop's loop in on-stack-replaced code at every call, Node 20
# in its TurboFan code: either holds innerJs inlined (docs/unwinding.md).
# EMBER_TEST_V8_NO_INLINED=WHY: a node whose code records no position inside innerJs there
# (Node 24 and 25, measured: its source position table holds hotJsLoop's lines alone, the
# call's or the loop's), so that hotJsLoop's samples must be at lines of its body instead,
# not at its first (where a frame whose code was not found is named)
if [ -n "${EMBER_TEST_V8_NO_INLINED:-}" ]; then
	first=$(awk '/^function hotJsLoop/ { print NR; exit }' "$T/app.js")
	in_body=$(awk -v f="$T/app.js:" -v a="$first" '/flat%/ { p = 1; next }
		p && $6 == "hotJsLoop" && index($7, f) == 1 {
			n = substr($7, length(f) + 1) + 0; if (n > a && n <= a + 5) s += $1
		} END { print s + 0 }' "$T/lines.txt")
	echo "$EMBER_TEST_V8_NO_INLINED: hotJsLoop at lines of its body on $in_body samples"
	awk -v c="$in_body" -v t="$under" 'BEGIN { exit !(10 * c >= t) }' ||
		fail "hotJsLoop's on-stack-replaced code at lines of its body on $in_body samples only"
else
	awk -v c="$inl" -v t="$under" 'BEGIN { exit !(10 * c >= t) }' ||
		fail "innerJs inlined into hotJsLoop at app.js:$call on $inl samples only"
fi
# no frame the walk gave that the host could not name, in either run; one whose object was
# gone when read, moments after its sample, only outside the workload (a process's last
# milliseconds: node --cpu-prof writes its profile as it exits)
pprof_top "$T/cpu2.pb.gz" -sample_index=samples >"$T/top2.txt"
if grep -hE '\[v8 (code|object|function)|: not supported\]' "$T/top.txt" "$T/top2.txt" \
	>"$T/bad.txt" || grep -h '\[v8 unreadable ' "$T/lines.txt" "$T/focus2.txt" >>"$T/bad.txt"; then
	fail "JavaScript frames not named: $(head -3 "$T/bad.txt" | paste -sd' ')"
fi
echo "frames unreadable when read, outside asyncHandler:" \
	"$(awk '/\[v8 unreadable / { s += $4 } END { print s + 0 }' "$T/top.txt") and" \
	"$(awk '/\[v8 unreadable / { s += $4 } END { print s + 0 }' "$T/top2.txt") samples"

# the ground truth's top JavaScript functions (1% or more): ember's self share within 5
# points. V8's profile has no native frames: a JavaScript function's self time there holds
# the native code it calls (process.cpuUsage's getrusage), so ember's samples are credited,
# as V8 credits them, to their innermost frame of a function V8's profile names. V8's sampler
# is signalled on a wall-clock timer, and a thread descheduled on a loaded host takes it when
# it runs again, often on a system call's return: the loop checks its CPU time (a getrusage)
# every ~15 ms, not every 1.5, so that bias stays under a point (at load 19 it was 21 points).
go tool pprof -traces -sample_index=samples -symbolize=none -focus='^asyncHandler$' \
	"$T/cpu2.pb.gz" >"$T/traces2.txt" 2>"$T/pprof.err" ||
	fail "go tool pprof -traces rejected the profile: $(cat "$T/pprof.err")"
python3 - "$T/truth.txt" "$T/traces2.txt" >"$T/mine.txt" <<'PY'
import re, sys
js = {l.split()[0] for l in open(sys.argv[1]) if l.strip()}
credit, total = {}, 0
def close(frames, n):
	global total
	if not frames:
		return
	total += n
	f = next((f for f in frames if f in js), '(native)')
	credit[f] = credit.get(f, 0) + n
frames, n = [], 0
for line in open(sys.argv[2]):
	if line.startswith('-----------'):
		close(frames, n)
		frames, n = [], 0
		continue
	# a function inlined into its caller's code is marked so: the same function
	line = re.sub(r' \(inline\)$', '', line.rstrip())
	m = re.match(r'^\s+(\d+)\s+(\S.*)$', line)
	if m and not frames:
		n, frames = int(m.group(1)), [m.group(2).strip()]
	elif frames and line.strip():
		frames.append(line.strip())
close(frames, n)
for f, c in sorted(credit.items(), key=lambda x: -x[1]):
	print(f, '%.1f' % (100.0 * c / max(total, 1)))
PY
# innerJs and hotJsLoop compared as one function in both profiles: how the time of a
# function inlined into its caller is split between the two differs between profilers and
# versions. V8 before 14 credits it to the caller in --cpu-prof (hotJsLoop for innerJs), V8
# 14 to the inlined function, on-stack-replaced code included; ember shows the inlined
# function as a frame of its own in optimised code (checked above, from pprof's locations).
echo "innerJs's share counted in hotJsLoop's"
for f in truth mine; do
	awk '$1 == "innerJs" { s += $2; next } $1 == "hotJsLoop" { s += $2; next } { print }
		END { printf "hotJsLoop %.1f\n", s }' "$T/$f.txt" >"$T/$f.merged" &&
		mv "$T/$f.merged" "$T/$f.txt"
done
echo "node --cpu-prof run: ember $under2 samples under asyncHandler; self shares:"
ok=1
while read -r fn truth; do
	case $fn in \(*) continue ;; esac
	awk -v t="$truth" 'BEGIN { exit !(t >= 1) }' || continue
	mine=$(awk -v f="$fn" '$1 == f { print $2 }' "$T/mine.txt")
	mine=${mine:-0.0}
	echo "  $fn: $mine% in ember, $truth% in V8's --cpu-prof"
	awk -v a="$mine" -v b="$truth" 'BEGIN { d = a - b; exit !(d <= 5 && d >= -5) }' || ok=0
done <"$T/truth.txt"
[ "$ok" = 1 ] || fail "a top JavaScript function's self share is more than 5 points off --cpu-prof"
pass "asyncHandler named with app.js:LINE on $share%; self shares within 5 points of --cpu-prof"
