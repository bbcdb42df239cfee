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
"$FX/fx_work_ab" 60 & W=$!
PIDS+=("$W")
wait_for test -s "$COLL_STORE/index.tsv" || fail "no profile arrived"
for f in 503 500 429 html502 slow close drop refuse; do
	t0=$SECONDS
	case $f in
	slow) coll_fault slow 1 ms=3000 ;;
	refuse) coll_fault refuse 1 seconds=2 ;;
	*) coll_fault "$f" 1 ;;
	esac
	wait_for stat_ge "fault.$f" 1 || fail "no push reached fault $f"
	before=$(coll_stat accepted)
	wait_for stat_ge accepted $((before + 1)) || fail "nothing arrived after fault $f"
	echo "fault $f: served, pushes flowing again after $((SECONDS - t0)) s"
done
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
