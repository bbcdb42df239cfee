#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Push, outage: the collector down for 60 s, then back on the same port: every
# interval arrives once and in order (the backlog oldest first), and
# emberd logs the outage once when it begins and once when it ends.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/push_lib.sh"
require_bpf
require_collector

OUTAGE_S=${EMBER_TEST_OUTAGE_S:-60}
start_collector
push_conf "$T/ember.conf" "timeout = 2s"
start_emberd --config "$T/ember.conf" --hz 49 --interval 5s -v
"$FX/fx_work_ab" $((OUTAGE_S + 30)) "$WORK_TAG" & W=$!
PIDS+=("$W")
wait_for test -s "$COLL_STORE/index.tsv" || fail "no profile arrived before the outage"
stop_collector
echo "collector down for $OUTAGE_S s"
sleep "$OUTAGE_S"
start_collector
back=$SECONDS
backlog=$(stored_list | wc -l)
echo "collector back on port $COLL_PORT; $backlog profiles stored so far"
# Backoff is capped by the jitter window: after 60 s of failures the next
# attempt may be up to ~128 s away (500 ms doubling, [d/2, d]).
wait_caught_up() {
	arrived_list >"$T/arrived.txt"
	[ "$(wc -l <"$T/arrived.txt")" -ge "$backlog" ]
}
for _ in $(seq 1 300); do
	wait_caught_up && break
	sleep 0.5
done
caught=$((SECONDS - back))
wait_caught_up || { show_lists; fail "the backlog did not arrive within 150 s"; }
sleep 10	# two more intervals after the catch-up
kill "$W" 2>/dev/null || true
wait "$W" 2>/dev/null || true
sleep 5.5	# the interval holding the workload's end is stored
wait_arrived 20 || { show_lists; fail "not every stored profile arrived exactly once"; }
n=$(wc -l <"$T/stored.txt")
missed=$(awk -v d="$OUTAGE_S" 'BEGIN { print int(d / 5) - 1 }')
dups=$(sort "$T/arrived.txt" | uniq -d | wc -l)
[ "$dups" -eq 0 ] || { show_lists; fail "$dups profiles arrived twice"; }
[ "$n" -ge "$missed" ] || { show_lists; fail "only $n profiles stored"; }
pass "$n of $n profiles arrived once; caught up $caught s after the collector returned"
# A backlog this short (ALTERNATE_MIN_PENDING in the uploader) drains oldest first.
cmp -s "$T/stored.txt" "$T/arrived.txt" || {
	show_lists
	fail "arrived out of order ($(backlog_order || true) not the oldest pending)"
}
pass "arrived in order"

# The outage is logged once when it starts and once when it ends, not per attempt.
began=$(grep -c 'collector .* unreachable since' "$T/emberd.log" || true)
ended=$(grep -c 'collector .* reachable again' "$T/emberd.log" || true)
[ "$began" -eq 1 ] && [ "$ended" -eq 1 ] || {
	grep -i collector "$T/emberd.log" | tail -20
	fail "outage logged $began time(s) as starting and $ended as ending, want 1 and 1"
}
pass "outage logged once at its start and once at its end"
kill "$EMBERD_PID"
wait_emberd
