#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Push, transient faults: 503, 500, 429, an HTML 502 from a proxy, a reply
# slower than the client's timeout, a connection closed mid-reply or without a
# reply, refused connections. Each is retried and every profile arrives once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/push_lib.sh"
require_bpf
require_collector

start_collector
push_conf "$T/ember.conf" "timeout = 1s"
start_emberd --config "$T/ember.conf" --hz 99 --interval 1s -v
"$FX/fx_work_ab" 600 "$WORK_TAG" & W=$!	# killed below; outlives any slow step
PIDS+=("$W")
wait_for test -s "$COLL_STORE/index.tsv" || fail "no profile arrived"
for f in 503 500 429 html502 slow close drop; do
	t0=$SECONDS
	case $f in
	slow) coll_fault slow 1 ms=3000 ;;
	*) coll_fault "$f" 1 ;;
	esac
	wait_for stat_ge "fault.$f" 1 || fail "no push reached fault $f"
	before=$(coll_stat accepted) || fail "cannot read the collector's stats after fault $f"
	wait_for stat_ge accepted $((before + 1)) || fail "nothing arrived after fault $f"
	echo "fault $f: served, pushes flowing again after $((SECONDS - t0)) s"
done
# refuse: the collector's port is closed, so its stats cannot be read until it reopens.
# The window lasts until emberd was refused (SIGUSR1 ends it), not a guessed length; then
# emberd must see the collector reachable again, i.e. a retry got through. Its status
# (the history's collector state) tells both: its log names only an outage's first error.
t0=$SECONDS
status_has() {
	"$EMBERCTL" --data-dir "$T/data" status >"$T/status.txt" 2>&1 || true
	grep -q "$1" "$T/status.txt"
}
coll_fault refuse 1 seconds=120
wait_for grep -q "^refusing connections" "$T/collector.log" ||
	fail "the collector did not close its port"
wait_for status_has "last error .*Failed to connect" ||
	fail "no push was refused while the port was closed: $(cat "$T/status.txt")"
kill -USR1 "$COLL_PID"
wait_for grep -q "^accepting connections again" "$T/collector.log" ||
	fail "the collector did not reopen its port"
wait_for status_has "state  *reachable" ||
	fail "emberd did not get through after the refused connections: $(cat "$T/status.txt")"
echo "fault refuse: refused, pushes flowing again after $((SECONDS - t0)) s"
kill "$W" 2>/dev/null || true
wait "$W" 2>/dev/null || true
sleep 1.5
wait_arrived 20 || { show_lists; fail "not every stored profile arrived"; }
dups=$(sort "$T/arrived.txt" | uniq -d | wc -l)
[ "$dups" -eq 0 ] || { show_lists; fail "$dups profiles arrived twice"; }
n=$(wc -l <"$T/stored.txt")
pass "8 faults retried: all $n profiles arrived, none twice"
kill "$EMBERD_PID"
wait_emberd
