#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Push, kill -9: emberd dies while a push is in flight (the collector holds the
# request 5 s, then stores it); restarted on the same data directory it pushes
# what is pending: nothing is missing, only the in-flight profile may arrive twice.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/push_lib.sh"
require_bpf
require_collector

start_collector
push_conf "$T/ember.conf"
start_emberd --config "$T/ember.conf" --hz 99 --interval 2s -v
"$FX/fx_work_ab" 16 "$WORK_TAG" & W=$!
PIDS+=("$W")
wait_for test -s "$COLL_STORE/index.tsv" || fail "no profile arrived"
coll_fault slowok 1 ms=5000
wait_for stat_ge fault.slowok 1 || fail "no push reached the slow reply"
sleep 0.5
kill -9 "$EMBERD_PID"
wait "$EMBERD_PID" 2>/dev/null || true
mv "$T/emberd.log" "$T/emberd.1.log"
sleep 5	# the collector stores the orphaned request meanwhile
start_emberd --config "$T/ember.conf" --hz 99 --interval 2s -v
wait "$W"
sleep 2.5
end=$((SECONDS + 20))
while :; do
	stored_list >"$T/stored.txt"
	arrived_list >"$T/arrived.txt"
	miss=$(sort "$T/stored.txt" | comm -23 - <(sort "$T/arrived.txt") | wc -l)
	[ "$miss" -eq 0 ] && break
	[ "$SECONDS" -lt "$end" ] || { show_lists; fail "$miss profiles never arrived"; }
	sleep 0.5
done
sleep 2
# arrived first, then stored: whatever arrived was stored before it was pushed
# (the fixture's last partial interval may still be stored and pushed meanwhile)
arrived_list >"$T/arrived.txt"
stored_list >"$T/stored.txt"
extra=$(sort -u "$T/arrived.txt" | comm -13 <(sort "$T/stored.txt") - | wc -l)
dups=$(sort "$T/arrived.txt" | uniq -d | wc -l)
n=$(wc -l <"$T/stored.txt")
[ "$extra" -eq 0 ] || { show_lists; fail "$extra arrived profiles emberd never stored"; }
[ "$dups" -le 1 ] || { show_lists; fail "$dups profiles arrived twice, at most 1 may"; }
pass "all $n stored profiles arrived after kill -9 and restart;" \
	"$dups arrived twice (the in-flight one)"
kill "$EMBERD_PID"
wait_emberd
