#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Push of memory profiles: an app with memory = inuse (fx_alloc_leak under
# libember_alloc.so) reaches the collector under __name__=memory with Go's heap
# shape (period space/bytes, alloc_objects/count alloc_space/bytes
# inuse_objects/count inuse_space/bytes: the types Pyroscope shows as memory), and
# each pushed profile's four totals are what emberctl reads from the local history.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/push_lib.sh"
require_bpf
require_go
require_collector
PRELOAD=$EMBER_BUILD/alloc/libember_alloc.so
[ -r "$PRELOAD" ] || fail "libember_alloc.so not built at $PRELOAD"
APP=fxmem

start_collector
{
	printf '[daemon]\nprofile = matched\ngrowth_fault_period = 0\n'
	printf '[app "%s"]\nmatch.cmdline = *fx_alloc_leak*%s*\nmemory = inuse\n' "$APP" "$WORK_TAG"
	printf '[collector]\nurl = %s\n' "$COLL_URL"
} >"$T/ember.conf"
start_emberd --config "$T/ember.conf" --hz 19 --interval 2s -v
EMBER_ALLOC_SAMPLE_BYTES=16384 LD_PRELOAD=$PRELOAD "$FX/fx_alloc_leak" 600 "$WORK_TAG" & L=$!
PIDS+=("$L")

# memory profiles stored, and arrived: "START_MS" each
stored_mem() {
	"$EMBERCTL" --data-dir "$T/data" list --type memory --app "$APP" 2>/dev/null |
		awk '/ memory / { print $1 }' | while read -r s; do date -u -d "$s" +%s%3N; done
}
arrived_mem() {
	[ -f "$COLL_STORE/index.tsv" ] || return 0
	awk -F '\t' -v s="service_name=$APP" '("," $3 ",") ~ ("," s ",") &&
		("," $3 ",") ~ /,__name__=memory,/ { print substr($4, 1, length($4) - 6) }' \
		"$COLL_STORE/index.tsv"
}
enough() {
	stored_mem | sort >"$T/stored.txt"
	arrived_mem | sort >"$T/arrived.txt"
	[ "$(wc -l <"$T/stored.txt")" -ge 4 ] && comm -23 "$T/stored.txt" "$T/arrived.txt" |
		awk 'END { exit NR > 1 }' # the newest may be on its way
}
for _ in $(seq 1 120); do enough && break; sleep 0.5; done
enough || fail "memory profiles stored: $(wc -l <"$T/stored.txt"), arrived: $(wc -l <"$T/arrived.txt")"
pass "$(wc -l <"$T/arrived.txt") memory profiles arrived of $(wc -l <"$T/stored.txt") stored"

want="__delta__=false,__name__=memory,hostname=$(hostname),service_name=$APP"
bad=$(awk -F '\t' -v w="$want" '$3 ~ /__name__=memory,/ && $3 != w { print $3 }' \
	"$COLL_STORE/index.tsv" | head -1)
[ -z "$bad" ] || fail "series labels: got '$bad', want '$want'"
pass "labels: $want"

# raw_totals FILE: the four sample types' totals of a pprof file (go tool pprof -raw)
raw_totals() {
	go tool pprof -raw -symbolize=none "$1" 2>"$T/pprof.err" >"$T/raw.txt" ||
		fail "go tool pprof rejected $1: $(cat "$T/pprof.err")"
	awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
	     s && /^ *[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+:/ { sub(/:.*/, ""); for (i = 1; i <= 4; i++) t[i] += $i }
	     END { printf "%d %d %d %d\n", t[1], t[2], t[3], t[4] }' "$T/raw.txt"
}
# local_totals START_MS: the four totals emberctl reads for the profile starting then
local_totals() {
	local a b out=""
	a=$(date -u -d "@$(awk -v s="$1" 'BEGIN { printf "%.3f", s / 1000 + 0.5 }')" +%Y-%m-%dT%H:%M:%S.%3NZ)
	b=$(date -u -d "@$(awk -v s="$1" 'BEGIN { printf "%.3f", s / 1000 + 1.0 }')" +%Y-%m-%dT%H:%M:%S.%3NZ)
	for t in alloc_objects alloc_space inuse_objects inuse_space; do
		"$EMBERCTL" --data-dir "$T/data" top --type memory --app "$APP" --since "$a" \
			--until "$b" --sample "$t" >"$T/top.txt" 2>&1 ||
			fail "emberctl top --sample $t failed: $(head -3 "$T/top.txt")"
		out+="$(sed -n "s/.*, \([0-9]*\) $t.*/\1/p" "$T/top.txt" | head -1) "
	done
	echo "${out% }"
}

checked=0
while read -r seq ms; do
	f=$COLL_STORE/$(printf '%06d' "$seq").pb
	go tool pprof -raw -symbolize=none "$f" >"$T/raw.txt" 2>"$T/pprof.err" ||
		fail "go tool pprof rejected $f: $(cat "$T/pprof.err")"
	grep -q '^PeriodType: space bytes' "$T/raw.txt" ||
		fail "profile $seq: period type is not space/bytes: $(grep PeriodType "$T/raw.txt")"
	grep -q '^alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes' \
		"$T/raw.txt" || fail "profile $seq: sample types: $(sed -n '/^Samples:/{n;p}' "$T/raw.txt")"
	got=$(raw_totals "$f")
	local=$(local_totals "$ms")
	[ "$got" = "$local" ] || fail "profile $seq at $ms: pushed totals '$got', emberctl reads '$local'"
	read -r _ _ _ inuse <<<"$got"
	[ "$inuse" -gt 0 ] || fail "profile $seq: no inuse_space"
	checked=$((checked + 1))
done < <(awk -F '\t' -v s="service_name=$APP" '("," $3 ",") ~ ("," s ",") &&
	("," $3 ",") ~ /,__name__=memory,/ { print $1 + 0, substr($4, 1, length($4) - 6) }' \
	"$COLL_STORE/index.tsv" | tail -n +2 | head -3)
[ "$checked" -ge 2 ] || fail "only $checked memory profiles compared"
pass "$checked pushed memory profiles: memory:{alloc_objects,alloc_space,inuse_objects,inuse_space}, totals equal to emberctl's (last: $got)"
kill "$L"
kill "$EMBERD_PID"
wait_emberd
