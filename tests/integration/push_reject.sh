#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Push, 400: the collector refuses one profile; it is not retried, it is
# counted as rejected, and the profiles after it still arrive.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/push_lib.sh"
require_bpf
require_collector

start_collector
push_conf "$T/ember.conf"
start_emberd --config "$T/ember.conf" --hz 99 --interval 2s -v
"$FX/fx_work_ab" 12 "$WORK_TAG" & W=$!
PIDS+=("$W")
wait_for test -s "$COLL_STORE/index.tsv" || fail "no profile arrived"
coll_fault 400 1
wait_for stat_ge fault.400 1 || fail "no push reached the armed 400"
before=$(wc -l <"$COLL_STORE/index.tsv")
wait "$W"
sleep 2.5
# Everything but the refused profile arrives; nothing arrives twice.
end=$((SECONDS + 15))
while :; do
	stored_list >"$T/stored.txt"
	arrived_list >"$T/arrived.txt"
	miss=$(sort "$T/stored.txt" | comm -23 - <(sort "$T/arrived.txt") | wc -l)
	[ "$miss" -le 1 ] && break
	[ "$SECONDS" -lt "$end" ] || { show_lists; fail "$miss profiles never arrived"; }
	sleep 0.5
done
sleep 3	# a retry of the refused profile would come within the first backoff steps
stored_list >"$T/stored.txt"
arrived_list >"$T/arrived.txt"
miss=$(sort "$T/stored.txt" | comm -23 - <(sort "$T/arrived.txt") | wc -l)
dups=$(sort "$T/arrived.txt" | uniq -d | wc -l)
after=$(($(wc -l <"$COLL_STORE/index.tsv") - before))
[ "$miss" -eq 1 ] && [ "$dups" -eq 0 ] ||
	{ show_lists; fail "$miss missing (want 1), $dups twice"; }
[ "$(coll_stat status.400)" -eq 1 ] || { show_lists; fail "the 400 was retried"; }
[ "$(coll_stat requests)" -eq "$(($(coll_stat accepted) + 1))" ] ||
	{ show_lists; fail "requests beyond one per profile + the refused one"; }
[ "$after" -ge 2 ] || { show_lists; fail "only $after profiles arrived after the 400"; }
pass "one profile refused and not retried; $after later profiles arrived"

# Counted as rejected: by the running daemon, and from the history when it is down.
"$EMBERCTL" --data-dir "$T/data" status >"$T/status.txt" 2>&1 || true
grep -Eq 'rejected 1,' "$T/status.txt" ||
	{ cat "$T/status.txt"; fail "emberctl status does not show rejected 1"; }
grep -q 'injected fault' "$T/status.txt" ||
	{ cat "$T/status.txt"; fail "emberctl status does not show the collector's message"; }
kill "$EMBERD_PID"
wait_emberd
"$EMBERCTL" --data-dir "$T/data" status >"$T/status2.txt" 2>&1 || true
grep -Eq 'rejected 1,' "$T/status2.txt" ||
	{ cat "$T/status2.txt"; fail "status from the history does not show rejected 1"; }
pass "emberctl status shows rejected 1 with the collector's message, live and from the history"
