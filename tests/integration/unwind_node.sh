#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Node.js (--perf-basic-prof) under GC pressure: short-lived objects (scavenges) and a
# retained ring (mark-compacts). Two processes run side by side:
# - with V8's defaults (GC and compilers on worker threads): 98% of the samples must
#   be complete, ending at the process's start (main, or node::Start, which Debian's
#   main tail-calls) or at a thread's (start_thread);
# - with --single-threaded (all of V8's work on the main thread): 98% of the samples
#   inside V8's C++ (its innermost C++ frame below its innermost JS frame, libc
#   called from C++ included) must reach JS frames and the process's start.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/unwind_lib.sh"
require_bpf
command -v node >/dev/null || fail "node not installed (scripts/install-deps.sh installs nodejs)"

cp "$(dirname "$0")/gc.js" "$T/gc.js"

start_emberd --hz 99 --interval 5s -v
cd "$T" || fail "cannot enter $T" # node writes its isolate-*-v8.log files where it runs
# Steady state, as on a host where emberd runs: node's table (4.5 MB of rows, up to a
# second to compile) is built for a first process; until it is loaded, node's frames
# are walked with frame pointers. Wait until the unwinder says it has every table.
node --perf-basic-prof "$T/gc.js" 60 >"$T/warm.out" 2>&1 &
WARM=$!
PIDS+=("$WARM")
for _ in $(seq 1 600); do
	grep -Eq "unwinder: pid $WARM: [0-9]+ of [0-9]+ mappings with a table \(0 to build\)" \
		"$T/emberd.log" && break
	kill -0 "$WARM" 2>/dev/null || break
	sleep 0.1
done
grep -Eq "unwinder: pid $WARM: .*\(0 to build\)" "$T/emberd.log" ||
	fail "emberd did not load the warm-up node's unwind tables within 60 s"
kill "$WARM"
wait "$WARM" 2>/dev/null || true
rm -f "/tmp/perf-$WARM.map"
node --perf-basic-prof "$T/gc.js" 24 >"$T/multi.out" 2>&1 &
MULTI=$!
node --perf-basic-prof --single-threaded "$T/gc.js" 24 >"$T/single.out" 2>&1 &
SINGLE=$!
PIDS+=("$MULTI" "$SINGLE")
trap 'rm -f "/tmp/perf-$MULTI.map" "/tmp/perf-$SINGLE.map"; cleanup' EXIT
wait "$MULTI" || fail "node exited with status $?: $(tail -3 "$T/multi.out")"
wait "$SINGLE" || fail "node --single-threaded exited with status $?: $(tail -3 "$T/single.out")"
stop_and_fold "$MULTI:$T/multi.folded" "$SINGLE:$T/single.folded"

START='(main|node::Start(\([^;]*\))?)'
expect_share "$T/multi.folded" "complete (process or thread start)" 98 300 \
	";($START|start_thread);"

# The samples inside V8's C++: the innermost C++ frame (v8::, node::, cppgc::) comes
# after the innermost frame of generated code (JS: from the perf map, Builtins_*, or an
# unnamed address), libc called from C++ included; and those with neither kind of frame
# (libc cut from its caller: with --single-threaded only the main thread runs, and only
# V8's C++ calls libc there). Left out, only when their stack says so: start-up,
# tear-down and exit, which run no JS; other threads; samples with no user frame (the
# first frame is the kernel's entry: an exiting process has no user stack left), or taken
# in the kernel's do_exit (its user memory is being unmapped: only the interrupted leaf
# remains). Not left out, and the reason for 24 s of CPU: a process's first sample, walked
# before emberd has read its mappings (frame pointers alone: libc's leaf without caller),
# one in 250 of its V8 C++ samples here (one in 130 with 12 s: a third miss of any kind
# failed the 98%).
NOJS=";node::Start[^;]*;node::(NodeMainInstance::(~)?NodeMainInstance|[A-Za-z]*OncePerProcess)"
NOJS="$NOJS|;__libc_start_call_main;exit;|;(clone3?|start_thread);|^;(entry_SYSCALL|asm_|ret_from_fork)|;do_exit;"
awk -v nojs="$NOJS" '{
	s = $0
	sub(/ [0-9]+$/, "", s)
	if (";" s ";" ~ nojs)
		next
	n = split(s, f, ";")
	gen = cxx = 0
	for (i = 1; i <= n; i++)
		if (f[i] ~ /^(JS:|Builtins_|0x)/)
			gen = i
		else if (f[i] ~ /(v8|node|cppgc|heap::base)::/)
			cxx = i
	if (cxx > gen || cxx + gen == 0)
		print
}' "$T/single.folded" >"$T/cxx.folded"
echo "samples inside V8's C++ (single-threaded): $(share "$T/cxx.folded" . | cut -d' ' -f1) of" \
	"$(share "$T/single.folded" . | cut -d' ' -f1) samples"
# Complete: every V8 C++ sample reaches the process's start, through the JS frames
# that called it where JS did (V8's platform tasks run from the event loop, and
# start-up builds the context, with no JS above them). 98%, not the issue's 95%:
# today's frame-pointer walk, which loses only libc's callers here, reaches 90-95%.
expect_share "$T/cxx.folded" "V8's C++ reaches the process's start" 98 50 ";$START;"
# and the walk crosses JIT code: JS frames (named by the perf map, the interpreter's, or
# read by the walk itself: gc.js's churn and makeGarbage) stand between the start and
# most of V8's C++
expect_share "$T/cxx.folded" "V8's C++ under JS frames, down to the process's start" 80 50 \
	";$START;([^;]*;)*(JS:|Builtins_InterpreterEntryTrampoline|churn;|makeGarbage;)"
finish "node: complete stacks under GC pressure, V8's C++ under its JS frames"
