#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Retention in the real daemon. An old history (mkhistory: 2026-01-01, schema
# v2, no auto-vacuum) is compacted once at start and its profiles, older than
# `retention`, go at the first prune; then one profile per app per second
# under a 128 KiB `max_size`: the oldest go, the newest stay, and history.db
# with its WAL is under the bound right after every prune (the figure the
# daemon logs, measured on disk after its checkpoint) and after exit. Between
# prunes the WAL holds what one interval wrote. Last, with a collector that
# never answers, unsent profiles are kept past max_size and that is said once.
. "$(dirname "$0")/lib.sh"
require_bpf
MK=$EMBER_BUILD/tests/tools/mkhistory
[ -x "$MK" ] || fail "mkhistory not built at $MK"
MAX_KIB=128
RUN_S=16

# disk_kib DIR: history.db plus its WAL, in KiB rounded up.
disk_kib() {
	local total=0 f
	for f in "$1/history.db" "$1/history.db-wal"; do
		[ -f "$f" ] && total=$((total + $(stat -c %s "$f")))
	done
	echo $(((total + 1023) / 1024))
}

# list_summary: sets COUNT, OLDEST and NEWEST (start times, RFC 3339) from emberctl list.
list_summary() {
	"$EMBERCTL" --data-dir "$T/data" list >"$T/list" 2>&1 || fail "emberctl list: $(cat "$T/list")"
	# every type's rows: emberd's stored count covers cpu and memory_growth profiles
	COUNT=$(awk '$1 ~ /^[0-9][0-9][0-9][0-9]-/ { n++ } END { print n + 0 }' "$T/list")
	OLDEST=$(awk '/ cpu /{ print $1; exit }' "$T/list")
	NEWEST=$(awk '/ cpu /{ t = $1 } END { print t }' "$T/list")
}

# --- an old history, a tiny bound, a second profile per app and second ---------------
"$MK" --count 500 --v2 "$T/data" || fail "mkhistory failed"
old_kib=$(disk_kib "$T/data")
[ "$old_kib" -gt "$MAX_KIB" ] || fail "the old history is only $old_kib KiB"
printf '[daemon]\nretention = 7d\nmax_size = %dKiB\n' "$MAX_KIB" >"$T/ember.conf"
# Enough distinct stacks every interval to outgrow the bound within the run even
# on an idle machine: four applications, kernel stacks among them.
"$FX/fx_work_ab" $((RUN_S + 10)) >/dev/null &
PIDS+=("$!")
"$FX/fx_syscall" $((RUN_S + 10)) >/dev/null &
PIDS+=("$!")
"$FX/fx_cpp" $((RUN_S + 10)) >/dev/null &
PIDS+=("$!")
"$FX/fx_short_lived" $((RUN_S * 5)) >/dev/null &
PIDS+=("$!")
start_emberd --config "$T/ember.conf" --hz 499 --interval 1s --duration ${RUN_S}s
sleep 6
list_summary
mid_count=$COUNT mid_oldest=$OLDEST mid_newest=$NEWEST
wait_emberd
cp "$T/emberd.log" "$T/emberd-retention.log"
list_summary
end_count=$COUNT end_oldest=$OLDEST end_newest=$NEWEST
stored=$(sed -n 's/.*stopped after storing \([0-9]*\) profile.*/\1/p' "$T/emberd.log")
end_kib=$(disk_kib "$T/data")
echo "old history $old_kib KiB; stored $stored profiles; mid-run $mid_count from $mid_oldest;" \
	"at the end $end_count from $end_oldest, $end_kib KiB on disk"

grep -q "history.db: compacted once for retention (VACUUM" "$T/emberd.log" ||
	fail "no one-time VACUUM of the v2 file logged"
grep -q "retention: deleted 503 profiles older than 7d" "$T/emberd.log" ||
	fail "the 503 profiles of 2026-01-01 were not deleted by age at the first prune"
n=$("$EMBERCTL" --data-dir "$T/data" list --until 2026-01-02T00:00:00Z | grep -c ' cpu ' || true)
[ "$n" -eq 0 ] || fail "$n profiles of 2026-01-01 are still listed"

sized=$(grep -c "profiles\? over max_size $MAX_KIB.0 KiB" "$T/emberd.log" || true)
[ "$sized" -ge 3 ] || fail "only $sized prunes deleted by size in $RUN_S intervals"
# every prune that deleted: history.db + WAL on disk right after it, within the bound;
# one may find the WAL held by the mid-run emberctl list (it waits 100 ms, then
# leaves the truncation to the next prune)
awk -v max="$MAX_KIB" '/retention: deleted/ {
	match($0, /history.db [0-9.]+ [A-Za-z]+ on disk/)
	split(substr($0, RSTART, RLENGTH), w, " "); v = w[2]; u = w[3]
	kib = u == "KiB" ? v : u == "bytes" ? v / 1024 : u == "MiB" ? v * 1024 : 1e12
	if (kib > max) { print "over the bound after a prune: " $0; over++ }
} END { exit over > 1 }' "$T/emberd.log" || fail "prunes left history.db over $MAX_KIB KiB"
[ "$end_kib" -le "$MAX_KIB" ] || fail "history.db is $end_kib KiB after exit, over $MAX_KIB KiB"
list_kib=$(sed -n 's/.*history.db: \([0-9.]*\) KiB on disk.*/\1/p' "$T/list")
[ -n "$list_kib" ] && awk -v k="$list_kib" -v m="$MAX_KIB" 'BEGIN { exit !(k <= m) }' ||
	fail "emberctl list shows history.db at '$list_kib' KiB: $(tail -1 "$T/list")"

# the oldest profiles went, the newest stayed, the count is bounded
[ "$mid_count" -gt 0 ] && [ "$end_count" -gt 0 ] || fail "no profiles listed ($mid_count, $end_count)"
[[ "$end_oldest" > "$mid_oldest" ]] || fail "the oldest profile did not move: $mid_oldest -> $end_oldest"
[ "$end_count" -lt "$stored" ] || fail "all $stored stored profiles are still there"
[[ "$end_newest" > "$mid_newest" ]] || fail "the newest profile is gone: $mid_newest -> $end_newest"

summary="503 old profiles deleted by age, $sized size prunes under $MAX_KIB KiB, $end_count of $stored kept"

# --- a collector that never answers: unsent profiles are kept past max_size ---------
rm -rf "$T/data"
printf '[daemon]\nmax_size = 64KiB\n[collector]\nurl = http://127.0.0.1:1\n' >"$T/ember.conf"
"$FX/fx_work_ab" 20 >/dev/null &
PIDS+=("$!")
start_emberd --config "$T/ember.conf" --hz 499 --interval 1s --duration 12s
wait_emberd
stored=$(sed -n 's/.*stopped after storing \([0-9]*\) profile.*/\1/p' "$T/emberd.log")
list_summary
kept=$COUNT
warned=$(grep -c "retention: .* not yet pushed to the collector" "$T/emberd.log" || true)
echo "collector down: stored $stored, kept $kept, over-size warnings $warned, $(disk_kib "$T/data") KiB"
! grep -q "retention: deleted" "$T/emberd.log" || fail "unsent profiles were deleted: $(grep 'retention: deleted' "$T/emberd.log")"
[ "$kept" -eq "$stored" ] || fail "$stored profiles stored but $kept kept"
[ "$warned" -eq 1 ] || fail "expected one warning that unsent profiles keep the history over max_size, got $warned"
pass "retention: $summary; with the collector down all $kept unsent profiles kept"
