#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Rollups give the views exactly the numbers of the raw profiles.
# 1. No BPF: a history of a few hours (tests/tools/mkbusy, small, plus
#    mkhistory's apps, types and corrupt rows in the first hour), its rollups
#    built by tests/tools/mkrollups; `emberctl top -n 0` and `folded` must print
#    the same with and without --no-rollups over windows that align with hours
#    and windows that cut them, filtered by app, type, label and pid; `list`
#    stays raw.
# 2. emberd builds rollups itself: with EMBER_TEST_ROLLUP_SECONDS=3 (test only)
#    and 1 s intervals, rollup rows appear for completed periods and top and
#    folded over the whole window are unchanged by them.
. "$(dirname "$0")/lib.sh"

MKBUSY=$EMBER_BUILD/tests/tools/mkbusy
MKHIST=$EMBER_BUILD/tests/tools/mkhistory
MKROLL=$EMBER_BUILD/tests/tools/mkrollups
for bin in "$EMBERCTL" "$MKBUSY" "$MKHIST" "$MKROLL"; do
	[ -x "$bin" ] || fail "$bin is not built"
done

H=$T/hist
ctl() { "$EMBERCTL" --data-dir "$H" "$@"; }

# same VIEW ARGS...: VIEW's output is the same with and without rollups, and not empty
same() {
	local view=$1
	shift
	ctl "$view" "$@" >"$T/with.txt" 2>"$T/with.err" || fail "$view $*: $(cat "$T/with.err")"
	ctl "$view" --no-rollups "$@" >"$T/raw.txt" 2>"$T/raw.err" ||
		fail "$view --no-rollups $*: $(cat "$T/raw.err")"
	[ -s "$T/raw.txt" ] || fail "$view $*: no output"
	cmp -s "$T/with.txt" "$T/raw.txt" ||
		fail "$view $* differs with rollups (< with, > raw):
$(diff "$T/with.txt" "$T/raw.txt" | head -10)"
	checked=$((checked + 1))
}

# --- 1. a history of 4 h 10 min ----------------------------------------------------------
# mkbusy: 1500 profiles of 10 s from 2026-01-01T00:00:00Z (host-wide, 30 pids);
# mkhistory: apps, a mem profile and 2 corrupt ones in the first minute
"$MKBUSY" -n 1500 -s 60 -U 150 -P 30 -f 80 "$H" >/dev/null || fail "mkbusy"
"$MKHIST" --mem --corrupt --deep "$H" >/dev/null || fail "mkhistory"
ctl list >"$T/list.before" || fail "list"

# rollups of the hours that ended by 04:00 only: hour 4 (10 min of it) stays raw
"$MKROLL" -b 1767240000 "$H" >"$T/mkr.out" || fail "mkrollups: $(cat "$T/mkr.out")"
cat "$T/mkr.out"
grep -q "^mkrollups: [1-9][0-9]* rollups of 1440 profiles\|^mkrollups: [1-9][0-9]* rollups of 144[0-9] profiles" \
	"$T/mkr.out" || fail "mkrollups did not merge hours 0-3: $(cat "$T/mkr.out")"
# again: nothing is missing
"$MKROLL" -b 1767240000 "$H" | grep -q "^mkrollups: 0 rollups" || fail "mkrollups built twice"
ctl status >"$T/status.txt" 2>&1 || true
grep -q "profiles (and [1-9][0-9]* rollups" "$T/status.txt" ||
	fail "status does not count the rollups: $(cat "$T/status.txt")"
ctl list >"$T/list.after" || fail "list after"
cmp -s "$T/list.before" "$T/list.after" || fail "list shows rollups:
$(diff "$T/list.before" "$T/list.after" | head -5)"

checked=0
windows=(
	""                                                  # the whole history
	"--since 2026-01-01T01:00:00Z --until 2026-01-01T03:00:00Z"   # whole hours
	"--since 2026-01-01T00:00:00Z --until 2026-01-01T04:00:00Z"   # every rollup
	"--since 2026-01-01T00:30:00Z --until 2026-01-01T03:20:00Z"   # cuts hours 0 and 3
	"--since 2026-01-01T00:59:55Z --until 2026-01-01T02:00:05Z"   # a row straddles 01:00
	"--since 2026-01-01T02:10:00Z --until 2026-01-01T02:50:00Z"   # inside one hour
	"--since 2026-01-01T03:00:00Z"                                 # hour 3 and the raw hour 4
)
for w in "${windows[@]}"; do
	read -ra win <<<"$w"
	same top -n 0 "${win[@]}"
	same folded "${win[@]}"
	same top -n 0 --pid 1003 "${win[@]}"
done
same top -n 0 --app deep
# mkhistory's only mem profile is corrupt: the same error either way (no rollup of it)
ctl top --type mem >/dev/null 2>"$T/with.err" && fail "top --type mem succeeded"
ctl top --type mem --no-rollups >/dev/null 2>"$T/raw.err" && fail "top --type mem succeeded"
cmp -s "$T/with.err" "$T/raw.err" || fail "top --type mem: $(cat "$T/with.err") / $(cat "$T/raw.err")"
same top -n 0 --app checkout --since 2026-01-01T00:00:00Z --until 2026-01-01T02:00:00Z
same folded --label service_name=checkout --since 2026-01-01T00:00:00Z --until 2026-01-01T01:00:00Z
same tree --since 2026-01-01T00:00:00Z --until 2026-01-01T02:00:00Z
# the rollups are read: hour 0's corrupt rows (skipped when its rollup was built)
# are reported by the raw read only, and the header counts the raw profiles
ctl top -n 1 --until 2026-01-01T01:00:00Z >/dev/null 2>"$T/with.err" || fail "top over hour 0"
ctl top -n 1 --until 2026-01-01T01:00:00Z --no-rollups >/dev/null 2>"$T/raw.err" ||
	fail "top --no-rollups over hour 0"
grep -q "skipped 2 corrupt stored profiles" "$T/raw.err" || fail "raw: $(cat "$T/raw.err")"
[ ! -s "$T/with.err" ] || fail "with rollups, the raw rows were read: $(cat "$T/with.err")"
ctl top -n 1 --since 2026-01-01T01:00:00Z --until 2026-01-01T03:00:00Z | head -1 |
	grep -q "^720 cpu profiles from 2026-01-01T01:00:00Z to 2026-01-01T03:00:00Z" ||
	fail "top over 01:00-03:00 does not count 720 profiles"
ctl export -o "$T/with.pb.gz" 2>/dev/null || fail "export"
ctl export --no-rollups -o "$T/raw.pb.gz" 2>/dev/null || fail "export --no-rollups"
pass "$checked views identical with and without rollups over $((${#windows[@]})) windows"

# --- 2. emberd builds them ---------------------------------------------------------------
require_bpf
export EMBER_TEST_ROLLUP_SECONDS=3
start_emberd -v --hz 99 --interval 1s --duration 12s
"$FX/fx_work_ab" 10 &
WL=$!
PIDS+=("$WL")
wait "$WL"
wait_emberd
unset EMBER_TEST_ROLLUP_SECONDS
H=$T/data
grep -q "rollups of 3 s (test only)" "$T/emberd.log" || fail "emberd did not take the test period"
n=$(grep -c "rollup of cpu app" "$T/emberd.log" || true)
[ "$n" -ge 1 ] || fail "emberd built no rollup in 12 s of 3 s periods"
ctl status >"$T/status.txt" 2>&1 || true
grep -q "profiles (and [1-9][0-9]* rollups" "$T/status.txt" ||
	fail "status does not count emberd's rollups: $(cat "$T/status.txt")"
checked=0
same top -n 0
same folded
same top -n 0 --pid "$WL"
ctl top -n 0 --pid "$WL" | grep -q " work_a$" || fail "top --pid $WL has no work_a"
pass "emberd built $n rollups; top and folded identical with and without them"
