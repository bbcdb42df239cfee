#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A stopped loop (SIGSTOP for 3 s with 1 s intervals): the long interval is
# logged with its length and counted in the status file, `emberctl status` and
# the Prometheus output; sampling goes on after SIGCONT.
. "$(dirname "$0")/lib.sh"
require_bpf
RUN=$T/run

late_at_least() { [ "$(status_key intervals_late)" -ge "$1" ] 2>/dev/null; }

"$FX/fx_busy" 120 >/dev/null &
PIDS+=("$!")
start_emberd --interval 1s
wait_for intervals_at_least 2 || fail "no interval stored at 1 s"
late_before=$(status_key intervals_late)

# the fault itself lasts 3 s: this sleep is its length, not a wait for a condition
kill -STOP "$EMBERD_PID"
sleep 3
kill -CONT "$EMBERD_PID"
wait_for late_at_least $((late_before + 1)) || fail "no late interval counted after a 3 s SIGSTOP"
grep -q "an interval of [0-9.]*s where 1s was due: emberd was stopped or starved" \
	"$T/emberd.log" || fail "the long interval was not logged"
len=$(status_key late_last_ns)
[ "$len" -ge 3000000000 ] || fail "the late interval is $len ns long, not >= 3 s"

"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$RUN" >"$T/text" ||
	fail "emberctl status failed: $(cat "$T/text")"
grep -q "^  late  *[0-9]* intervals over 1.5x their length" "$T/text" ||
	fail "emberctl status does not show the late interval: $(cat "$T/text")"
EMBER_RUNTIME_DIR=$RUN "$EMBERCTL" --data-dir "$T/data" status --format prometheus >"$T/prom" ||
	fail "emberctl status --format prometheus failed"
grep -q "^ember_intervals_late_total [1-9]" "$T/prom" || fail "no ember_intervals_late_total"

n=$(status_key intervals)
wait_for intervals_at_least $((n + 2)) || fail "sampling did not go on after SIGCONT"
pass "3 s SIGSTOP: an interval of $((len / 1000000)) ms logged and counted; sampling went on"
kill -TERM "$EMBERD_PID"
wait_emberd
