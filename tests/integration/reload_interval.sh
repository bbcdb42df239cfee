#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SIGHUP changing `interval`: a shorter one takes effect (the BPF maps, sized at
# start for the longer one, hold its samples); one that would need bigger maps
# (1s -> 1h) is refused as needing a restart, logged, and the daemon keeps its
# interval with no sample dropped for a full counts map. A key only a restart applies
# (live_allocs) keeps its running value, and the reload's log names it.
. "$(dirname "$0")/lib.sh"
require_bpf
RUN=$T/run

# counts_map_full_total: samples dropped for a full counts map since the start
counts_map_full_total() {
	status_total drop counts_map_full "$RUN/status"
}
interval_is() { [ "$(status_key interval_ns)" = "$1" ]; }
# reload_to DUR: writes the configuration with interval = DUR and sends SIGHUP
reload_to() {
	printf '[daemon]\ninterval = %s\n' "$1" >"$T/ember.conf"
	kill -HUP "$EMBERD_PID"
}

# distinct stacks: the counts map fills first if a reload left it too small
"$FX/fx_busy" 120 >/dev/null &
PIDS+=("$!")
"$FX/fx_many_stacks" 120 >/dev/null &
PIDS+=("$!")
# the interval from the file only: a command-line --interval would override every reload
printf '[daemon]\ninterval = 2s\n' >"$T/ember.conf"
start_emberd --config "$T/ember.conf"
wait_for intervals_at_least 1 || fail "no interval stored at 2 s"
interval_is 2000000000 || fail "interval_ns is $(status_key interval_ns), not 2 s"

# --- shorter: applied --------------------------------------------------------------
reload_to 1s
wait_for grep -qF "one profile every 1s from now on" "$T/emberd.log" ||
	fail "a shorter interval (2s -> 1s) was not applied"
wait_for interval_is 1000000000 || fail "the status file does not say 1 s after the reload"
pass "2s -> 1s applied: the maps sized for 2 s hold 1 s"

# --- longer than the maps were sized for: refused, logged, unchanged ------------------
n=$(status_key intervals)
reload_to 1h
refusal="interval 3600s needs bigger BPF maps than emberd sized at start: it changes only"
refusal="$refusal with a restart; keeping 1s"
wait_for grep -qF "$refusal" "$T/emberd.log" ||
	fail "1s -> 1h was not refused as needing a restart"
grep -q "configuration applied" "$T/emberd.log" || fail "the rest of the reload was not applied"
# two more intervals within the wait's 30 s: still 1 s, not 1 h
wait_for intervals_at_least $((n + 3)) || fail "no interval stored after the refused reload"
interval_is 1000000000 || fail "interval_ns is $(status_key interval_ns) after a refused reload"
[ "$(counts_map_full_total)" = 0 ] ||
	fail "samples dropped for a full counts map: $(counts_map_full_total)"
pass "1s -> 1h refused as needing a restart; interval kept at 1 s, no counts_map_full drop"

# --- a key only a restart applies: kept, and said with its name ------------------------
printf '[daemon]\ninterval = 1s\nlive_allocs = 1024\n' >"$T/ember.conf"
kill -HUP "$EMBERD_PID"
wait_for grep -qF "[daemon] live_allocs = 1024 needs a restart: keeping 65536 until then" \
	"$T/emberd.log" || fail "a reload changing live_allocs did not say that it needs a restart"
pass "live_allocs changed by a reload: kept at 65536 until a restart, and said"

kill -TERM "$EMBERD_PID"
wait_emberd
