#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A damaged history (issue 15): one 4 KiB page of history.db overwritten with
# garbage by dd. emberctl reads every row it can, names the file damaged and
# says how many rows it could not read; emberctl status says DAMAGED and exits
# 1. emberd started on it moves it aside (damaged-*/), copies what reads into a
# fresh history (the same rows emberctl read), logs it, and stores new profiles
# that emberctl list reads. Then a page damaged while emberd runs: its check on
# a fresh connection (every 2 s here, hourly by default) finds it, moves it
# aside, and storing goes on.
. "$(dirname "$0")/lib.sh"
require_bpf
MK=$EMBER_BUILD/tests/tools/mkhistory
[ -x "$MK" ] || fail "mkhistory not built at $MK"
OLD=2020-01-01T00:00:00Z

# listed DIR [SINCE]: the profile count of emberctl list's last line (stderr to $T/list.err).
listed() {
	"$EMBERCTL" --data-dir "$1" list --since "${2:-$OLD}" 2>"$T/list.err" |
		sed -n 's/^\([0-9][0-9]*\) profiles\{0,1\} since.*/\1/p'
}
# damage DIR PAGE: PAGE (1-based) of DIR/history.db overwritten with 4 KiB of garbage.
damage() {
	dd if=/dev/urandom of="$1/history.db" bs=4096 seek=$(($2 - 1)) count=1 conv=notrunc \
		status=none || fail "dd failed"
}

# --- emberctl on a damaged file ----------------------------------------------------
"$MK" --count 400 "$T/data" >/dev/null || fail "mkhistory failed"
total=$(listed "$T/data")
[ "${total:-0}" -gt 300 ] || fail "the sound history lists ${total:-nothing}"
damage "$T/data" 20
rc=0
n=$("$EMBERCTL" --data-dir "$T/data" list --since $OLD 2>"$T/list.err" |
	sed -n 's/^\([0-9][0-9]*\) profiles since.*/\1/p') || rc=$?
[ "$rc" -eq 0 ] || fail "emberctl list exited $rc on a damaged file with intact rows"
grep -q "history.db is damaged" "$T/list.err" || fail "emberctl list did not name the damage: $(cat "$T/list.err")"
lost=$(sed -n 's/.*could not read about \([0-9][0-9]*\).*/\1/p' "$T/list.err")
[ -n "$n" ] && [ -n "$lost" ] || fail "emberctl list: no counts ($(cat "$T/list.err"))"
[ "$n" -gt 0 ] && [ "$lost" -gt 0 ] && [ "$n" -lt "$total" ] ||
	fail "read $n of $total rows, $lost not: one damaged page should lose a few"
[ $((n + lost)) -eq "$total" ] || fail "read $n + could not read $lost != $total rows"
rc=0
"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/run" >"$T/status" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "emberctl status exited 0 on a damaged history"
grep -q "DAMAGED" "$T/status" || fail "emberctl status did not say DAMAGED: $(cat "$T/status")"
pass "emberctl read $n of $total rows of a damaged file and said $lost could not be read"

# --- emberd started on it ----------------------------------------------------------
printf '[daemon]\nretention = 3650d\n' >"$T/ember.conf"
"$FX/fx_work_ab" 120 >/dev/null &
PIDS+=("$!")
since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
start_emberd --config "$T/ember.conf" --interval 1s
grep -q "history.db was damaged" "$T/emberd.log" || fail "emberd did not say the history was damaged"
moved=$(find "$T/data" -maxdepth 1 -name 'damaged-*' -type d | head -1)
[ -n "$moved" ] && [ -f "$moved/history.db" ] || fail "no damaged-*/history.db kept"
grep -q "moved to $moved/" "$T/emberd.log" || fail "the log does not name where it went"
salvaged=$(sed -n 's/.* \([0-9][0-9]*\) profiles that still read were copied.*/\1/p' "$T/emberd.log" | head -1)
[ "${salvaged:-x}" = "$n" ] || fail "emberd copied ${salvaged:-?} rows, emberctl read $n"
[ "$(listed "$moved")" = "$n" ] || fail "emberctl on the moved file reads $(listed "$moved"), not $n"
grep -q "is damaged" "$T/list.err" || fail "emberctl on the moved file does not say it is damaged"
new_at_least() { [ "$(listed "$T/data" "$since")" -ge "$1" ] 2>/dev/null; }
wait_for new_at_least 3 || fail "no new profiles stored in the fresh history"
[ "$(listed "$T/data")" -ge $((n + 3)) ] || fail "the fresh history lacks the copied rows"
grep -q "is damaged" "$T/list.err" && fail "the fresh history reads as damaged"
kill -TERM "$EMBERD_PID"
wait_emberd
pass "emberd moved the damaged file aside, copied $salvaged rows and stored on"

# --- damaged while emberd runs -----------------------------------------------------
rm -rf "$T/data" "$T/run"
"$MK" --count 400 "$T/data" >/dev/null || fail "mkhistory failed"
total=$(listed "$T/data")
EMBER_TEST_HISTORY_CHECK_SECONDS=2 start_emberd --config "$T/ember.conf" --interval 1s
grep -q "damaged" "$T/emberd.log" && fail "emberd found a sound history damaged"
damage "$T/data" 20
found() { grep -q "history.db is damaged" "$T/emberd.log"; }
wait_for found || fail "emberd did not find the page damaged while it ran"
moved=$(find "$T/data" -maxdepth 1 -name 'damaged-*' -type d | head -1)
[ -n "$moved" ] && [ -f "$moved/history.db" ] || fail "no damaged-*/history.db kept"
since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
wait_for new_at_least 3 || fail "no profiles stored after the damaged file went aside"
m=$(listed "$moved")
grep -q "is damaged" "$T/list.err" || fail "emberctl on the moved file does not say it is damaged"
[ "${m:-0}" -gt 0 ] || fail "emberctl reads nothing of the moved file"
kill -TERM "$EMBERD_PID"
wait_emberd
pass "a page damaged while emberd ran: found, moved aside ($m rows readable there), storing went on"
