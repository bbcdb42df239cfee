#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A full disk (issue 15): the data directory on a small tmpfs, filled by a file
# in the middle of a run with 1 s intervals. While full, the stores fail: the
# status file's state is store-failing, emberctl status and the Prometheus
# output show the failures and the backlog kept in memory. Once the file is
# removed every backlogged profile lands: the workload's application has one
# profile per interval, none lost. A SIGTERM while full exits 0 and says what
# could not be stored.
. "$(dirname "$0")/lib.sh"
require_bpf
command -v mount >/dev/null || skip "no mount"
mkdir -p "$T/data"
mount -t tmpfs -o size=6m,mode=0700 ember-test "$T/data" || skip "cannot mount a tmpfs"
# before lib.sh's cleanup (which removes $T): emberd stopped, then the mount goes
umount_data() {
	[ -z "${EMBERD_PID:-}" ] || kill "$EMBERD_PID" 2>/dev/null || true
	[ -z "${EMBERD_PID:-}" ] || wait "$EMBERD_PID" 2>/dev/null || true
	umount "$T/data" 2>/dev/null || umount -l "$T/data" 2>/dev/null || true
}
AT_EXIT=('umount_data' "${AT_EXIT[@]}")

STATUS=$T/run/status
status_key() { sed -n "s/^$1 //p" "$STATUS" 2>/dev/null; }
fill() { dd if=/dev/zero of="$T/data/fill" bs=64k status=none 2>/dev/null || true; }
failing() { [ "$(status_key state)" = "store-failing" ]; }
not_failing() { [ "$(status_key state)" = "running" ] && [ "$(status_key store.backlog)" = 0 ]; }
backlog_at_least() { [ "$(status_key store.backlog)" -ge "$1" ] 2>/dev/null; }
stored_at_least() { [ "$(status_key profiles | cut -d' ' -f2)" -ge "$1" ] 2>/dev/null; }

"$FX/fx_work_ab" 300 >/dev/null &
PIDS+=("$!")
start_emberd --interval 1s --hz 99
wait_for stored_at_least 3 || fail "emberd did not store 3 profiles"

# --- full -----------------------------------------------------------------------------
fill
wait_for failing || fail "state is $(status_key state), not store-failing, with the disk full"
wait_for backlog_at_least 3 || fail "the backlog holds $(status_key store.backlog) profiles, not 3"
failed=$(status_key store.failed)
[ "${failed:-0}" -gt 0 ] || fail "store.failed is ${failed:-missing}"
"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/run" >"$T/st.txt" 2>&1 || true
grep -q "running, STORES FAILING" "$T/st.txt" || fail "emberctl status: $(head -3 "$T/st.txt")"
grep -q "store .*FAILING since .*No space left on device" "$T/st.txt" ||
	fail "emberctl status does not show the failure: $(grep store "$T/st.txt")"
"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/run" --format prometheus >"$T/st.prom" 2>/dev/null || true
"$EMBER_BUILD/tests/tools/promcheck" -m "$T/st.prom" >"$T/promcheck" 2>&1 ||
	fail "promcheck: $(head -3 "$T/promcheck")"
grep -q "^ember_store_failing 1$" "$T/st.prom" || fail "no ember_store_failing 1"
grep -Eq "^ember_store_failures_total [1-9]" "$T/st.prom" || fail "no ember_store_failures_total"
grep -Eq "^ember_store_backlog_profiles [1-9]" "$T/st.prom" || fail "no ember_store_backlog_profiles"
grep -q '^ember_store_last_error_info{error=".*No space left on device"} 1$' "$T/st.prom" ||
	fail "no ember_store_last_error_info"
grep -q "cannot store profiles in $T/data/history.db: .*kept in memory" "$T/emberd.log" ||
	fail "the failure was not logged when it started"
grep "stores failed this interval" "$T/emberd.log" | grep -q "repeated" &&
	fail "a per-app message was summarized"
kept=$(status_key store.backlog)
pass "disk full: state store-failing, $failed failed stores, $kept profiles kept in memory"

# --- space again ----------------------------------------------------------------------
rm -f "$T/data/fill"
wait_for not_failing || fail "still $(status_key state) with $(status_key store.backlog) kept after space returned"
grep -q "storing in .* works again" "$T/emberd.log" || fail "the recovery was not logged"
[ "$(status_key store.dropped)" = 0 ] || fail "$(status_key store.dropped) profiles dropped"
wait_for stored_at_least $(($(status_key profiles | cut -d' ' -f2) + 2)) || fail "storing stopped"
kill -TERM "$EMBERD_PID"
wait_emberd
# nothing lost, counted by time window: every interval has its profiles (a
# CPU-bound workload at 99 Hz: each interval but possibly the last has some),
# and the history holds exactly what emberd counts as stored
# (stored counts every type's profiles: cpu and memory_growth)
"$EMBERCTL" --data-dir "$T/data" list >"$T/list" 2>&1 || fail "emberctl list failed"
windows=$(awk '/ cpu /{ print $1 }' "$T/list" | sort -u | wc -l)
rows=$(awk '$1 ~ /^[0-9][0-9][0-9][0-9]-/ { n++ } END { print n + 0 }' "$T/list")
intervals=$(status_key intervals)
stored=$(status_key profiles | cut -d' ' -f2)
[ "$windows" -ge $((intervals - 1)) ] ||
	fail "profiles of $windows intervals of $intervals: the profiles of some were lost"
[ "$rows" -eq "$stored" ] || fail "the history holds $rows profiles, emberd stored $stored"
pass "space again: the backlog landed: $rows profiles in $windows of $intervals intervals"

# --- SIGTERM while full ---------------------------------------------------------------
start_emberd --interval 1s
wait_for stored_at_least 1 || fail "emberd did not store a profile"
fill
wait_for backlog_at_least 2 || fail "the backlog holds $(status_key store.backlog) profiles, not 2"
kill -TERM "$EMBERD_PID"
wait_emberd
grep -q "stopping with [0-9]* profiles .* that could not be stored" "$T/emberd.log" ||
	fail "the stop did not say what it could not store"
pass "SIGTERM while full exited 0 and said what it could not store"
