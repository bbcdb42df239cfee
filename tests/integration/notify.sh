#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The sd_notify protocol without systemd: notifylisten binds the socket that
# NOTIFY_SOCKET names; emberd must say READY=1 only once it samples, pet the
# watchdog (WATCHDOG_USEC=2 s: every second), bracket a SIGHUP with RELOADING=1
# and READY=1 (applied or refused), say STOPPING=1 on SIGTERM, and still store
# the last partial interval.
. "$(dirname "$0")/lib.sh"
require_bpf
LISTEN=$EMBER_BUILD/tests/tools/notifylisten
[ -x "$LISTEN" ] || fail "notifylisten not built at $LISTEN"

# notify_wait PATTERN [AFTER_LINE]: waits up to 30 s for a message matching
# PATTERN on a line after AFTER_LINE; prints its line number.
notify_wait() {
	local n
	for _ in $(seq 1 300); do
		n=$(awk -v after="${2:-0}" -v pat="$1" 'NR > after && $0 ~ pat { print NR; exit }' \
			"$T/notify.log")
		[ -n "$n" ] && { echo "$n"; return 0; }
		sleep 0.1
	done
	echo "notify messages so far:" >&2
	sed 's/^/  /' "$T/notify.log" >&2
	fail "no notify message matching '$1' after line ${2:-0} within 30 s"
}

"$LISTEN" "$T/notify.sock" >"$T/notify.log" 2>"$T/listen.err" &
PIDS+=("$!")
for _ in $(seq 1 50); do [ -S "$T/notify.sock" ] && break; sleep 0.1; done
[ -S "$T/notify.sock" ] || fail "notifylisten did not bind: $(cat "$T/listen.err")"

# start_notified INTERVAL WATCHDOG_USEC DATA_DIR: emberd with that interval, told of the
# socket and the watchdog as systemd would; its log in $T/emberd.log
start_notified() {
	printf '[daemon]\ninterval = %s\n' "$1" >"$T/ember.conf"
	NOTIFY_SOCKET=$T/notify.sock WATCHDOG_USEC=$2 \
		"$EMBERD" --config "$T/ember.conf" --data-dir "$3" >"$T/emberd.log" 2>&1 &
	EMBERD_PID=$!
	PIDS+=("$EMBERD_PID")
}

start_notified 3s 2000000 "$T/data"

# READY=1 comes after the sampler is attached: the "sampling" line is already logged.
ready=$(notify_wait '(^| |\|)READY=1')
grep -q "sampling .* CPUs" "$T/emberd.log" || fail "READY=1 arrived before emberd logged 'sampling'"
sed -n "${ready}p" "$T/notify.log" | grep -q 'STATUS=sampling [0-9]* CPUs at 19 Hz' ||
	fail "READY=1 without its STATUS=: $(sed -n "${ready}p" "$T/notify.log")"
pass "READY=1 with STATUS= after the sampler is attached"

# An interval summary as STATUS=.
notify_wait 'STATUS=last interval: [0-9]+ samples of [0-9]+ processes in [0-9]+ apps' >/dev/null
pass "STATUS= after an interval"

# The watchdog: WATCHDOG_USEC/2 = 1 s between pets.
sleep 5
pets=$(grep -c 'WATCHDOG=1' "$T/notify.log" || true)
[ "$pets" -ge 4 ] || fail "only $pets WATCHDOG=1 in ~7 s with WATCHDOG_USEC=2000000"
gap=$(awk '/WATCHDOG=1/ { if (p) { g = $1 - p; if (g > m) m = g } p = $1 } END { print m + 0 }' \
	"$T/notify.log")
awk -v g="$gap" 'BEGIN { exit !(g < 2.0) }' ||
	fail "the longest gap between WATCHDOG=1 is ${gap}s, past WATCHDOG_USEC (2 s)"
pass "$pets WATCHDOG=1, longest gap ${gap}s (< 2 s)"
# each interval's report pets it too (and pushes the timer back: under the unit, whose
# WatchdogSec/2 is longer than the interval, the timer never wakes emberd)
grep -q 'WATCHDOG=1|STATUS=last interval' "$T/notify.log" ||
	fail "the interval's report did not pet the watchdog: $(grep 'last interval' "$T/notify.log" | head -1)"
pass "the interval's STATUS= pets the watchdog"

# SIGHUP with a valid file: RELOADING=1, then READY=1 once it is applied (after the next drain).
printf '[daemon]\ninterval = 3s\n[app "idle"]\nmatch.comm = no-such-process\n' >"$T/ember.conf"
kill -HUP "$EMBERD_PID"
rl=$(notify_wait 'RELOADING=1')
ok=$(notify_wait '(^| |\|)READY=1' "$rl")
sed -n "${ok}p" "$T/notify.log" | grep -q 'STATUS=configuration applied: 1 apps' ||
	fail "READY=1 after a reload without 'configuration applied': $(sed -n "${ok}p" "$T/notify.log")"
grep -q "configuration applied" "$T/emberd.log" || fail "READY=1 before the reload was applied"
pass "SIGHUP: RELOADING=1 then READY=1 once applied"

# SIGHUP with a bad file: RELOADING=1, then READY=1 at once, the running configuration kept.
printf '[daemon]\nhz = 0\n' >"$T/ember.conf"
kill -HUP "$EMBERD_PID"
rl=$(notify_wait 'RELOADING=1' "$ok")
bad=$(notify_wait '(^| |\|)READY=1' "$rl")
sed -n "${bad}p" "$T/notify.log" | grep -q 'STATUS=configuration refused' ||
	fail "READY=1 after a refused reload without saying so: $(sed -n "${bad}p" "$T/notify.log")"
pass "SIGHUP with a bad file: RELOADING=1 then READY=1 (refused)"

# SIGTERM half-way through an interval: STOPPING=1, then the partial interval is stored.
last=$(notify_wait 'STATUS=last interval' "$bad")
# a busy process, so that the partial interval holds samples even on an idle host
"$FX/fx_busy" 3 >/dev/null &
PIDS+=("$!")
sleep 1
kill -TERM "$EMBERD_PID"
wait_emberd
stop=$(notify_wait 'STOPPING=1' "$last")
grep -q "storing the last interval" "$T/emberd.log" || fail "emberd did not store the last interval"
# the newest stored interval is the partial one: shorter than the 3 s interval (about 1 s,
# but a loaded host may deliver the TERM later, or just after the next drain: any length
# short of a whole interval is a partial one)
"$EMBERCTL" --data-dir "$T/data" list >"$T/list.txt" 2>&1 || fail "emberctl list: $(cat "$T/list.txt")"
newest=$(grep -E '^[0-9]{4}-' "$T/list.txt" | sort | tail -1)
dur=$(echo "$newest" | awk '{ sub(/s$/, "", $2); print $2 }')
awk -v d="$dur" 'BEGIN { exit !(d > 0 && d < 2.9) }' ||
	fail "the newest stored interval lasts ${dur}s, not a partial one of a 3 s interval: $newest"
# STOPPING=1 comes first, then the summary of the last interval it stored
notify_wait 'STATUS=last interval' "$stop" >/dev/null
pass "SIGTERM: STOPPING=1, then the last partial interval stored (${dur}s)"

# With an interval far shorter than WATCHDOG_USEC/2 (1 s against 10 s), every pet is an
# interval's report: the timer, pushed back by each, never fires (no wakeup of its own).
: >"$T/notify.log"
start_notified 1s 20000000 "$T/data2"
n=0
for _ in 1 2 3 4; do n=$(notify_wait 'STATUS=last interval' "$n"); done
kill -TERM "$EMBERD_PID"
wait_emberd
pets=$(grep -c 'WATCHDOG=1' "$T/notify.log" || true)
lone=$(grep 'WATCHDOG=1' "$T/notify.log" | grep -vc 'STATUS=last interval' || true)
[ "$pets" -ge 4 ] && [ "$lone" -eq 0 ] ||
	fail "$pets pets, $lone of them by the timer, with a 1 s interval and WATCHDOG_USEC=20 s"
pass "interval 1 s, WATCHDOG_USEC 20 s: $pets pets, each an interval's report"
