#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Node 24's optimised code named by its lines (V8 13.6: a JSFunction reaches its Code only
# through its isolate group's dispatch table, which ember reads). The workload's hot function
# has no loop (so V8 never replaces it on the stack) and ~90 statements, too large to inline
# (V8 inlines up to 460 bytes of bytecode): once warm it runs in its own TurboFan code,
# entered by calls through the dispatch table. Its samples must name it with its script and
# the line of a statement of its body, not its first line: a frame of optimised code whose
# Code was not reached is named by the function's first line, as on-stack-replaced code is,
# so where the table is not read nearly every sample of it is on that line.
# EMBER_TEST_DISPATCH_NODE runs it under another node (symbols_v8_dispatch_node26.sh).
# EMBER_TEST_DISPATCH_FLAGS gives node flags: symbols_v8_baseline.sh holds big in baseline
# (Sparkplug) code, whose frames must be named by their lines as well.
# EMBER_TEST_DISPATCH_WORKER=1 runs big in a worker thread while the main thread runs other
# functions hot: big's frames must be big's, at its first line or its body's, and no frame
# under driver another function's.
# EMBER_TEST_DISPATCH_WORKER=lines: the same, and the worker's optimised code must be named
# by its lines as the main thread's is: a V8 whose isolates share their group's table (14.1,
# symbols_v8_worker_node25.sh), or one whose worker has a table of its own, read through the
# isolate its thread runs (14.6, symbols_v8_worker_node26.sh).
. "$(dirname "$0")/lib.sh"
require_bpf
require_go
NODE=${EMBER_TEST_DISPATCH_NODE:-${EMBER_TEST_NODE24:-/usr/local/lib/ember-tools/node_modules/node24/bin/node}}
[ -x "$NODE" ] || fail "$NODE: no such node (scripts/install-deps.sh installs it from npm)"
echo "node: $NODE $("$NODE" --version) (V8 $("$NODE" -p process.versions.v8))"

{
	echo "'use strict';"
	echo "function big(a) {"
	echo "	let x = a | 0;"
	for i in $(seq 1 90); do
		echo "	x = (x * $((i % 7 + 3)) + $i) % 1000003;"
	done
	echo "	return x;"
	echo "}"
	cat <<'JS'
// the CPU this thread has used, in ms (the process's before Node 23.9): a busy host
// stretches the run, not the samples it takes
function cpuMs() {
	const u = process.threadCpuUsage ? process.threadCpuUsage() : process.cpuUsage();
	return (u.user + u.system) / 1000;
}
function driver(ms) {
	const end = cpuMs() + ms;
	let s = 0;
	while (cpuMs() < end)
		for (let i = 0; i < 2000; i++)
			s = (s + big(i + s)) % 1000003;
	return s;
}
const { Worker, isMainThread, workerData } = require('worker_threads');
function other(n) {
	let y = 1;
	for (let i = 0; i < n; i++)
		y = (y * 31 + i) % 1000003;
	return y;
}
if (process.argv[3] !== 'worker') {
	console.log(driver(Number(process.argv[2])));
} else if (isMainThread) {
	let s = 0, done = false;
	new Worker(__filename, { workerData: Number(process.argv[2]), argv: ['0', 'worker'] })
		.on('exit', () => { done = true; });
	const tick = () => {
		for (let i = 0; i < 200; i++)
			s += other(1000);
		if (!done)
			setImmediate(tick);
	};
	tick();
} else {
	console.log(driver(workerData));
}
JS
} >"$T/big.js"
first=$(awk '/^function big/ { print NR; exit }' "$T/big.js")
last=$(awk '/^	return x;/ { print NR; exit }' "$T/big.js")

start_emberd --hz 99 --interval 2s -v
warm_node "$NODE"
WORKER=${EMBER_TEST_DISPATCH_WORKER:+worker}
WORKER_LINES=${EMBER_TEST_DISPATCH_WORKER:-}
# shellcheck disable=SC2086 # the flags are words
"$NODE" ${EMBER_TEST_DISPATCH_FLAGS:-} "$T/big.js" 6000 $WORKER >"$T/node.out" &
WL=$!
PIDS+=("$WL")
wait "$WL" || fail "node big.js failed"
kill "$EMBERD_PID" "$WARM"
wait_emberd
"$EMBERCTL" --data-dir "$T/data" export --type cpu --pid "$WL" -o "$T/cpu.pb.gz" ||
	fail "export failed"
pprof_top "$T/cpu.pb.gz" -sample_index=samples -lines >"$T/lines.txt"
total=$(total_of "$T/lines.txt")
# big's samples (innermost, go tool pprof's flat): at its first line, and at a line of its body
read -r at_first in_body <<<"$(awk -v file="$T/big.js" -v f="$first" -v l="$last" '
	/flat%/ { p = 1; next }
	p && $6 == "big" && index($7, file ":") == 1 {
		n = substr($7, length(file) + 2) + 0
		if (n == f) a += $1; else if (n > f && n <= l) b += $1
	}
	END { print a + 0, b + 0 }' "$T/lines.txt")"
echo "big: $in_body samples at a line of its body ($((first + 1))-$last), $at_first at its first" \
	"line ($first), of $total"
awk '/flat%/ { p = 1 } p && n++ < 8' "$T/lines.txt"
# 6 s of the thread's CPU at 99 Hz: ~590 samples, however busy the host
[ "${total:-0}" -gt 300 ] || fail "only ${total:-0} samples of node big.js"
if [ -n "$WORKER" ]; then
	# the worker's frames: big's, or driver's; never the main thread's other or tick
	pprof_top "$T/cpu.pb.gz" -sample_index=samples -focus='^driver$' >"$T/worker.txt"
	under=$(awk '/flat%/ { p = 1; next } p && $6 == "driver" { print $4; exit }' "$T/worker.txt")
	under=${under:-0}
	wrong=$(awk '/flat%/ { p = 1; next } p && ($6 == "other" || $6 == "tick") { s += $4 }
		END { print s + 0 }' "$T/worker.txt")
	echo "worker: $under samples under driver, big at its lines on $((in_body + at_first))," \
		"another function's name on $wrong"
	[ "$wrong" -eq 0 ] || fail "a worker's frame named by the main thread's function"
	awk -v b="$in_body" -v a="$at_first" -v t="$under" 'BEGIN { exit !(t > 150 && b + a >= 0.8 * t) }' ||
		fail "big named on $((in_body + at_first)) of the worker's $under samples only"
	if [ "$WORKER_LINES" = lines ]; then
		awk -v b="$in_body" -v a="$at_first" 'BEGIN { exit !(b >= 0.8 * (a + b)) }' ||
			fail "a worker's optimised code not named by its lines: $at_first of big's" \
				"samples at its first line"
	fi
	pass "a worker's big named as big on $((in_body + at_first)) of $under samples" \
		"($in_body at its body's lines)"
	exit 0
fi
awk -v b="$in_body" -v a="$at_first" -v t="$total" 'BEGIN { exit !(b + a >= 0.8 * t) }' ||
	fail "big named on $((in_body + at_first)) of $total samples only"
awk -v b="$in_body" -v a="$at_first" 'BEGIN { exit !(b >= 0.8 * (a + b)) }' ||
	fail "big's ${EMBER_TEST_DISPATCH_FLAGS:+baseline }code not named by its lines: $at_first of" \
		"its samples at its first line"
pass "big named at a line of its body on $in_body of $total samples ($at_first at its first line)"
