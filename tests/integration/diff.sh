#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# emberctl diff and flamegraph over a history with known profiles
# (tests/tools/mkhistory --diff): f_a's samples double between two windows, so
# it must be the top grower with exact shares, and the flame graphs' rectangles
# must match the merged profiles to the hundredth of a pixel.
. "$(dirname "$0")/lib.sh"

MK=$EMBER_BUILD/tests/tools/mkhistory
[ -x "$MK" ] || fail "mkhistory not built at $MK"
"$MK" --diff "$T/h" || fail "mkhistory --diff"
ctl() { "$EMBERCTL" --data-dir "$T/h" "$@"; }
BASE=(--base-since 2026-01-02T00:00:00Z --base-until 2026-01-02T00:00:30Z)
NEW=(--since 2026-01-02T01:00:00Z --until 2026-01-02T01:00:30Z)

# rects FILE: "name x width value [base]" per frame, in document order
rects() {
	sed -n 's/.*<g class="f" data-name="\([^"]*\)"[^>]* data-v="\([0-9]*\)"\( data-b="\([0-9]*\)"\)\{0,1\}><rect x="\([0-9.]*\)" y="[0-9]*" width="\([0-9.]*\)".*/\1 \5 \6 \2 \4/p' "$1" |
		sed 's/ $//'
}

# 1. the movers: base 90 samples, f_a f_b f_c 30 each; new 120, f_a 60
want='    base      new      delta  function (self)
  33.33%   50.00%   +16.67pp  f_a
  33.33%   25.00%    -8.33pp  f_b
  33.33%   25.00%    -8.33pp  f_c'
got=$(ctl diff "${BASE[@]}" "${NEW[@]}" 2>"$T/err") || fail "diff: $(cat "$T/err")"
[ "$got" = "$want" ] || fail "diff table:
$got
want:
$want"
grep -q "base between 2026-01-02T00:00:00Z and 2026-01-02T00:00:30Z: 90 samples from 3 profiles; new between 2026-01-02T01:00:00Z and 2026-01-02T01:00:30Z: 120 samples from 3 profiles" "$T/err" ||
	fail "diff summary: $(cat "$T/err")"
# the new window defaults to everything after the base one
got=$(ctl diff "${BASE[@]}" 2>/dev/null) || fail "diff without --since"
[ "$got" = "$want" ] || fail "diff without --since/--until: $got"
got=$(ctl diff "${BASE[@]}" -n 1 2>/dev/null | tail -n +2)
[ "$got" = "  33.33%   50.00%   +16.67pp  f_a" ] || fail "diff -n 1: $got"
# the same windows swapped: f_a is now the top shrinker
got=$(ctl diff --base-since 2026-01-02T01:00:00Z --base-until 2026-01-02T01:00:30Z \
	--since 2026-01-02T00:00:00Z --until 2026-01-02T00:00:30Z -n 1 2>/dev/null | tail -n +2)
[ "$got" = "  50.00%   33.33%   -16.67pp  f_a" ] || fail "diff swapped: $got"

# 2. the differential flame graph: width = mean share, colour = change of share
ctl diff "${BASE[@]}" "${NEW[@]}" -o "$T/diff.svg" >/dev/null 2>"$T/err" || fail "diff -o: $(cat "$T/err")"
got=$(rects "$T/diff.svg")
# all/main 100% both; f_a (50+33.3)/2 = 41.67% of 1180 = 491.67; f_b 58.33%; f_c 29.17%
want_d='all 10.00 1180.00 120 90
main 10.00 1180.00 120 90
f_a 10.00 491.67 60 30
f_b 501.67 688.33 60 60
f_c 501.67 344.17 30 30'
[ "$got" = "$want_d" ] || fail "diff flame graph rects:
$got
want:
$want_d"
grep -q 'data-name="f_a"[^>]*><rect [^>]*fill="rgb(222,40,40)"' "$T/diff.svg" ||
	fail "f_a (grew 16.67 points, the most) is not full red"
grep -q 'data-name="f_b"[^>]*><rect [^>]*fill="rgb(50,100,225)"' "$T/diff.svg" ||
	fail "f_b (shrank 16.67 points) is not full blue"
grep -q 'data-name="main"[^>]*><rect [^>]*fill="rgb(222,222,222)"' "$T/diff.svg" ||
	fail "main (unchanged) is not grey"

# 3. flamegraph: the new window, 120 samples at 9.83 px each
ctl flamegraph "${NEW[@]}" -o "$T/new.svg" 2>"$T/err" || fail "flamegraph: $(cat "$T/err")"
want_f='all 10.00 1180.00 120
main 10.00 1180.00 120
f_a 10.00 590.00 60
f_b 600.00 590.00 60
f_c 600.00 295.00 30'
got=$(rects "$T/new.svg")
[ "$got" = "$want_f" ] || fail "flamegraph rects:
$got
want:
$want_f"
grep -q "all apps, cpu, between 2026-01-02T01:00:00Z and 2026-01-02T01:00:30Z: 120 samples from 3 profiles" \
	"$T/new.svg" || fail "flamegraph subtitle"
# the same as an HTML page
ctl flamegraph "${NEW[@]}" -o "$T/new.html" 2>/dev/null || fail "flamegraph -o .html"
head -1 "$T/new.html" | grep -q '^<!DOCTYPE html>' || fail "new.html is not HTML"
[ "$(rects "$T/new.html")" = "$want_f" ] || fail "flamegraph .html rects differ from .svg"

# 4. the selection options reach the merge: mkhistory's first three profiles
#    (55 samples: f_a 34, f_b 12 self + f_c 9), pid 200 alone (f_a 4, f_b 2, f_c 9)
got=$(ctl flamegraph --until 2026-01-01T00:00:30Z 2>/dev/null | rects /dev/stdin)
want_all='all 10.00 1180.00 55
main 10.00 1180.00 55
f_a 10.00 729.45 34
f_b 739.45 450.55 21
f_c 739.45 193.09 9'
[ "$got" = "$want_all" ] || fail "flamegraph of 55 samples:
$got"
got=$(ctl flamegraph --until 2026-01-01T00:00:30Z --pid 200 2>/dev/null | rects /dev/stdin |
	awk '{ print $1, $4 }' | tr '\n' ' ')
[ "$got" = "all 15 main 15 f_a 4 f_b 11 f_c 9 " ] || fail "flamegraph --pid 200: $got"
got=$(ctl flamegraph --app checkout --label service_name=checkout 2>/dev/null | rects /dev/stdin |
	awk '{ print $1, $4 }' | tr '\n' ' ')
[ "$got" = "all 17 main 17 f_a 10 f_b 7 " ] || fail "flamegraph --app checkout: $got"
# a title is text, escaped
ctl flamegraph "${NEW[@]}" --title '<b>&"' -o "$T/t.svg" 2>/dev/null || fail "--title"
grep -q '<text id="title"[^>]*>&lt;b&gt;&amp;&quot;</text>' "$T/t.svg" || fail "--title not escaped"

# 5. usage and runtime errors
rc=0; ctl flamegraph -o "$T/x.png" 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q "FILE.svg or FILE.html" "$T/err" || fail "flamegraph -o x.png: rc $rc"
[ ! -e "$T/x.png" ] || fail "flamegraph wrote x.png"
rc=0; ctl diff --since 2026-01-02T01:00:00Z 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "diff without a base window: rc $rc"
rc=0; ctl diff "${BASE[@]}" -o - 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "diff -o -: rc $rc"
rc=0; ctl diff --base-since 2025-01-01T00:00:00Z --base-until 2025-01-02T00:00:00Z 2>"$T/err" || rc=$?
[ "$rc" = 1 ] || fail "diff with an empty base window: rc $rc"
rc=0; ctl flamegraph --since 2030-01-01T00:00:00Z -o "$T/none.svg" 2>/dev/null || rc=$?
[ "$rc" = 1 ] && [ ! -e "$T/none.svg" ] || fail "flamegraph of an empty window: rc $rc"

pass "diff: f_a (doubled) tops the movers at +16.67 points; flame graphs match the merged profiles"
