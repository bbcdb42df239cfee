#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Push, happy path: every interval's profile of an application reaches the
# collector once, with Pyroscope's labels and the process_cpu:cpu:nanoseconds shape.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/push_lib.sh"
require_bpf
require_go
require_collector

start_collector
# memory growth on (the default): its profiles are pushed beside the CPU ones
PUSH_GROWTH=100 push_conf "$T/ember.conf"
start_emberd --config "$T/ember.conf" --hz 99 --interval 2s -v
# 8 s of its own CPU time: 8 s or more, ~790 samples however loaded the host
"$FX/fx_work_ab" cpu:8 "$WORK_TAG" & W=$!
PIDS+=("$W")
wait "$W"
sleep 2.5	# the interval holding the workload's end is stored
wait_arrived 15 || { show_lists; fail "not every stored profile arrived exactly once"; }
n=$(wc -l <"$T/stored.txt")
[ "$n" -ge 4 ] || { show_lists; fail "only $n profiles of $APP in 8 s or more at 2 s intervals"; }
cmp -s "$T/stored.txt" "$T/arrived.txt" || { show_lists; fail "arrived out of order or twice"; }
pass "$n of $n profiles arrived, in order, each once"

# Series labels: exactly these, sorted, on every profile of the app; its
# memory_growth profiles carry the same but for __name__.
want="__delta__=false,__name__=process_cpu,hostname=$(hostname),service_name=$APP,team=a"
bad=$(awk -F '\t' -v w="$want" '{ l = $3; sub(/__name__=memory_growth,/, "__name__=process_cpu,", l) }
	l != w { print $3 }' "$COLL_STORE/index.tsv" | head -3)
[ -z "$bad" ] || fail "series labels: got '$bad', want '$want'"
pass "labels: $want"

# The payload, read by go tool pprof: the Go CPU shape (of the largest profile) and the
# workload's answer (of them all).
big=$(awk -F '\t' '$3 ~ /__name__=process_cpu,/ { print $5, $1 }' "$COLL_STORE/index.tsv" |
	sort -n | tail -1 | cut -d' ' -f2)
f=$COLL_STORE/$(printf '%06d' "$big").pb
go tool pprof -raw -symbolize=none "$f" >"$T/raw.txt" 2>"$T/pprof.err" ||
	fail "go tool pprof rejected $f: $(cat "$T/pprof.err")"
grep -q '^PeriodType: cpu nanoseconds' "$T/raw.txt" || fail "period type is not cpu/nanoseconds"
grep -q '^samples/count cpu/nanoseconds' "$T/raw.txt" ||
	fail "sample types are not [samples/count, cpu/nanoseconds]: $(sed -n 6p "$T/raw.txt")"
# work_a's share of n samples is binomial around ~74% (main and the start-up take ~1%),
# sigma = sqrt(.74 x .26 / n): the largest 2 s profile alone held ~50 samples on a loaded
# host, where 50% was 3.9 sigma under it; all of them merged hold ~790, 15 sigma.
mapfile -t cpu < <(awk -F '\t' -v d="$COLL_STORE" '$3 ~ /__name__=process_cpu,/ {
	printf "%s/%06d.pb\n", d, $1 }' "$COLL_STORE/index.tsv")
pprof_top "${cpu[0]}" -sample_index=samples "${cpu[@]:1}" >"$T/top.txt"
a=$(flat_of "$T/top.txt" work_a)
tot=$(total_of "$T/top.txt")
[ "$a" -gt 0 ] && [ $((a * 2)) -gt "$tot" ] ||
	fail "work_a has $a of $tot samples in the ${#cpu[@]} CPU profiles"
pass "profile $big: process_cpu:cpu:nanoseconds:cpu:nanoseconds shape; work_a $a of $tot samples in ${#cpu[@]} profiles"
kill "$EMBERD_PID"
wait_emberd

# protocol = ingest: the legacy /ingest?name=APP{k=v,...}&format=pprof form arrives too.
stop_collector
rm -rf "$T/data"
COLL_PORT=0 COLL_STORE=$T/store2
start_collector
push_conf "$T/ember.conf" "protocol = ingest"
start_emberd --config "$T/ember.conf" --hz 99 --interval 1s -v
"$FX/fx_work_ab" 3 "$WORK_TAG"
sleep 1.5
wait_arrived 15 || { show_lists; fail "ingest: not every stored profile arrived exactly once"; }
n=$(wc -l <"$T/stored.txt")
want="__delta__=false,__name__=process_cpu,hostname=$(hostname),pyroscope_spy=ember,"
want+="service_name=$APP,team=a"
# (the CPU profiles: Pyroscope names a memory_growth profile sent this way from its sample types)
bad=$(awk -F '\t' -v w="$want" '$3 ~ /__name__=process_cpu,/ && ($3 != w || $6 != "ingest") {
	print $3, $6 }' "$COLL_STORE/index.tsv")
got=$(awk -F '\t' -v w="$want" '$3 == w' "$COLL_STORE/index.tsv" | wc -l)
[ "$got" -ge "$n" ] || fail "ingest: $got CPU profiles arrived with '$want', $n stored"
[ -z "$bad" ] || fail "ingest: got '$(echo "$bad" | head -1)', want '$want'"
pass "ingest: $n of $n profiles arrived through /ingest with $want"
kill "$EMBERD_PID"
wait_emberd
