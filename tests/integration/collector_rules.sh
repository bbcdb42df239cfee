#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The fake collector answers crafted pushes as Pyroscope would: '-' in a sample type,
# 31 labels (also when a string sample label makes the 31st), invalid UTF-8, a profile
# older than the ingestion window -> 400; a profile over the ingestion burst -> 429 on
# every try; valid ones -> 200, their string sample label split into the series labels.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/push_lib.sh"
require_collector
CRAFT=$EMBER_BUILD/tests/fake_collector/craft_push
[ -x "$CRAFT" ] || fail "craft_push not built"

# The burst is lowered so a small profile can exceed it; the rate is kept low so the
# bucket cannot refill between two tries.
start_collector --ingest-burst 100000 --ingest-rate 1

# push NAME WANT_STATUS WANT_CODE CRAFT_ARGS...: one crafted push, its status and code.
push() {
	local name=$1 want=$2 code=$3 got
	shift 3
	"$CRAFT" "$@" >"$T/$name.bin" 2>>"$T/craft.log" || fail "$name: craft_push $*"
	got=$(curl -sS -m 10 -o "$T/$name.out" -w '%{http_code}' -X POST \
		-H 'Content-Type: application/proto' -H 'Connect-Protocol-Version: 1' \
		--data-binary "@$T/$name.bin" "$COLL_URL/push.v1.PusherService/Push") ||
		fail "$name: curl failed"
	[ "$got" = "$want" ] || fail "$name: HTTP $got, want $want: $(cat "$T/$name.out")"
	if [ -n "$code" ]; then
		grep -q "\"code\":\"$code\"" "$T/$name.out" ||
			fail "$name: body $(cat "$T/$name.out"), want code $code"
	fi
	pass "$name: $got${code:+ $code}"
}

push valid 200 "" --labels 30
push dash 400 invalid_argument --sample-type cpu-time
push labels31 400 invalid_argument --labels 31
grep -q 'label names; limit 30' "$T/labels31.out" || fail "31 labels: $(cat "$T/labels31.out")"
push split31 400 invalid_argument --labels 30 --sample-label comm=worker
grep -q "31 label names; limit 30" "$T/split31.out" || fail "split to 31: $(cat "$T/split31.out")"
push utf8 400 invalid_argument --fn $'work\xff'
push too_old 400 invalid_argument --time-offset -3700
grep -q 'outside of ingestion window' "$T/too_old.out" || fail "too old: $(cat "$T/too_old.out")"
push too_new 400 invalid_argument --time-offset 700
push time_zero 200 "" --time-zero
push over_burst 429 resource_exhausted --stacks 600
push over_burst_again 429 resource_exhausted --stacks 600
grep -q "push rate limit" "$T/over_burst_again.out" || fail "over burst: $(cat "$T/over_burst_again.out")"
push split 200 "" --labels 3 --sample-label comm=worker

# What was stored: four profiles, the last split into a series with comm=worker.
[ "$(coll_stat accepted)" -eq 3 ] || fail "accepted $(coll_stat accepted), want 3"
last=$(tail -1 "$COLL_STORE/series.tsv" | cut -f3)
[ "$last" = "__name__=process_cpu,comm=worker,l3=v,service_name=crafted" ] ||
	fail "split series labels: '$last'"
# time 0 became the arrival time (Normalize), within the test's run.
t0=$(awk -F '\t' 'NR == 2 { print int($4 / 1000000) - $2 }' "$COLL_STORE/index.tsv")
[ "${t0#-}" -lt 5000 ] || fail "time 0 stored as $(sed -n 2p "$COLL_STORE/index.tsv")"
grep -qx 'main;work 1' "$COLL_STORE/000001.folded" ||
	fail "flame graph of the valid push: $(cat "$COLL_STORE/000001.folded")"
pass "stored 3 profiles; split labels $last; flame graph 'main;work 1'"
