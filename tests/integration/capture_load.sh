#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A capture's programs load off emberd's event loop. EMBER_TEST_CAPTURE_LOAD_MS holds
# each load that long first, standing for a slow verifier: emberd goes on ending its
# 1 s intervals while a capture loads; a second capture of the same target is refused
# as still loading; the held capture then runs and ends with a profile of its
# process; one whose emberctl goes away while it loads is let go once its load ends
# (its programs closed, and the same target captured again); one whose process exits
# while it loads is refused once loaded.
. "$(dirname "$0")/lib.sh"
require_bpf
require_go

RUN=$T/run
HOLD_MS=4000
cap() { "$EMBERCTL" capture --runtime-dir "$RUN" "$@"; }
# loading_lines: how many captures emberd began loading; loading_more N: more than N
loading_lines() { grep -c "loading its programs" "$T/emberd.log" || true; }
loading_more() { [ "$(loading_lines)" -gt "$1" ]; }
# bpf_progs: the BPF programs emberd holds open
bpf_progs() {
	local n=0 f
	for f in /proc/"$EMBERD_PID"/fd/*; do
		[ "$(readlink "$f" 2>/dev/null)" = "anon_inode:bpf-prog" ] && n=$((n + 1))
	done
	echo "$n"
}
progs_back_to() { [ "$(bpf_progs)" -eq "$1" ]; }

"$FX/fx_busy" 3600 >/dev/null &
WL=$!
PIDS+=("$WL")
EMBER_TEST_CAPTURE_LOAD_MS=$HOLD_MS start_emberd --interval 1s
wait_for intervals_at_least 1 || fail "no interval ended"
progs0=$(bpf_progs)

# 1. intervals end while the capture loads; the same target meanwhile is refused
cap --pid "$WL" --duration 2s -o "$T/a.pb.gz" >"$T/a.out" 2>&1 &
A=$!
wait_for loading_more 0 || fail "the capture did not begin loading"
i0=$(status_key intervals)
rc=0
cap --pid "$WL" --duration 1s -o "$T/b.pb.gz" >"$T/b.out" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "a second capture of pid $WL was accepted while the first loaded"
grep -q "still loading" "$T/b.out" || fail "the refusal does not say why: $(cat "$T/b.out")"
wait_for grep -q "at [0-9]* Hz for .* started for emberctl" "$T/emberd.log" ||
	fail "the held capture did not start"
i1=$(status_key intervals)
echo "intervals while the capture's load was held $HOLD_MS ms: $i0 -> $i1"
[ $((i1 - i0)) -ge 2 ] || fail "only $((i1 - i0)) intervals ended during a $HOLD_MS ms load"
pass "$((i1 - i0)) intervals ended while the capture loaded; a second one was refused as loading"

wait "$A" || fail "the held capture failed: $(cat "$T/a.out")"
pprof_top "$T/a.pb.gz" -sample_index=samples >"$T/top.txt"
got=$(total_of "$T/top.txt")
[ "${got:-0}" -gt 0 ] || fail "the held capture has no samples: $(head -20 "$T/top.txt")"
grep -q burn "$T/top.txt" || fail "the held capture does not show fx_busy's burn"
pass "the held capture ended with $got samples of fx_busy"

# 2. emberctl goes away while its capture loads: let go once the load ends
n=$(loading_lines)
# emberctl itself in the background (a function would run in a subshell of its own)
"$EMBERCTL" capture --runtime-dir "$RUN" --pid "$WL" --duration 1s -o "$T/c.pb.gz" \
	>"$T/c.out" 2>&1 &
C=$!
wait_for loading_more "$n" || fail "the second capture did not begin loading"
kill -INT "$C"
wait "$C" 2>/dev/null || true
wait_for grep -q "emberctl (pid $C) went away\|cancelled by emberctl (pid $C)" "$T/emberd.log" ||
	fail "emberd did not see emberctl go away while loading"
[ ! -s "$T/c.pb.gz" ] || fail "a capture cancelled while loading wrote $T/c.pb.gz"
WAIT_S=60 wait_for progs_back_to "$progs0" ||
	fail "the abandoned load's programs stayed open: $(bpf_progs), $progs0 before"
cap --pid "$WL" --duration 1s -o "$T/d.pb.gz" >"$T/d.out" 2>&1 ||
	fail "the same target after an abandoned load: $(cat "$T/d.out")"
pid_alive "$EMBERD_PID" || fail "emberd died"
pass "a capture abandoned while loading was let go: its programs closed, its target free"

# 3. its process exits while the capture loads: refused once loaded, not sampled in vain
sleep 600 &
GONE=$!
PIDS+=("$GONE")
n=$(loading_lines)
rc=0
cap --pid "$GONE" --duration 60s -o "$T/e.pb.gz" >"$T/e.out" 2>&1 &
E=$!
wait_for loading_more "$n" || fail "the capture of pid $GONE did not begin loading"
kill "$GONE"
wait "$E" || rc=$?
[ "$rc" -ne 0 ] || fail "the capture of a process gone while it loaded succeeded"
grep -q "no such process: pid $GONE" "$T/e.out" ||
	fail "a process gone while its capture loaded: $(cat "$T/e.out")"
pass "a process gone while its capture loaded: refused once loaded"

kill -INT "$EMBERD_PID"
wait_emberd
