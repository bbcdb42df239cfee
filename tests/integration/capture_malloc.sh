#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Emergency malloc captures (emberctl capture --type malloc): fx_malloc_ab's
# big_alloc asks for 3 times the bytes of small_alloc, as often, so the
# profile's alloc_space is 75% / 25% by function (+- 10 points) and its
# alloc_objects 50% / 50%; the probes are gone once it ends; a capture whose
# process exits ends then; over the 60 s cap, an app, a second capture of the
# same pid and a static process are refused clearly; Ctrl-C cancels (130, no
# file, probes gone).
. "$(dirname "$0")/lib.sh"
require_bpf
require_go

RUN=$T/run
CTLRAW=$EMBER_BUILD/tests/tools/ctlraw
# a comm of its own: other tests (and other users of this host) may run the fixture too
MAB=$T/mab_$$
cp "$FX/fx_malloc_ab" "$MAB"
cap() { "$EMBERCTL" capture --runtime-dir "$RUN" "$@"; }
# the malloc programs loaded in the kernel: 0 once a capture has ended
probes() { bpftool prog show 2>/dev/null | grep -c "name ember_malloc" || true; }
# wait_for_line FILE PATTERN: up to 20 s for PATTERN to appear in FILE
wait_for_line() {
	for _ in $(seq 1 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	fail "'$2' did not appear in $1: $(cat "$1" 2>/dev/null)"
}
command -v bpftool >/dev/null || fail "bpftool not installed (scripts/install-deps.sh installs it)"

start_emberd --runtime-dir "$RUN"
# up until the test ends (cleanup kills it): its parts took 178 s on a loaded host
"$MAB" 3600 &
WL=$!
PIDS+=("$WL")
wait_for_line "/proc/$WL/maps" "libc"

# 1. 4 s of every allocation: alloc_space 75/25 and alloc_objects 50/50 by function
cap --type malloc --pid "$WL" --duration 4s -o "$T/m.pb.gz" 2>"$T/m.err" ||
	fail "malloc capture failed: $(cat "$T/m.err")"
grep -q "will be ~[0-9]*x slower in pid $WL while this runs" "$T/m.err" ||
	fail "no slowdown printed before the capture: $(cat "$T/m.err")"
grep -q "wrote $T/m.pb.gz: [0-9]* allocations of pid $WL" "$T/m.err" ||
	fail "no summary line: $(cat "$T/m.err")"
go tool pprof -raw -symbolize=none "$T/m.pb.gz" >"$T/raw.txt" 2>"$T/pprof.err" ||
	fail "go tool pprof rejected the profile: $(cat "$T/pprof.err")"
grep -q "^alloc_objects/count alloc_space/bytes" "$T/raw.txt" ||
	fail "sample types are not alloc_objects/count alloc_space/bytes: $(head -8 "$T/raw.txt")"
grep -q "^PeriodType: space bytes" "$T/raw.txt" || fail "period type is not space/bytes"
pprof_top "$T/m.pb.gz" -sample_index=alloc_space -unit=B >"$T/space.txt"
pprof_top "$T/m.pb.gz" -sample_index=alloc_objects >"$T/objs.txt"
big=$(cum_share_of "$T/space.txt" big_alloc)
small=$(cum_share_of "$T/space.txt" small_alloc)
bigo=$(cum_share_of "$T/objs.txt" big_alloc)
calls=$(total_of "$T/objs.txt")
echo "alloc_space: big_alloc $big%, small_alloc $small%; alloc_objects: big_alloc $bigo% of $calls calls"
[ "${calls:-0}" -ge 1000 ] || fail "only ${calls:-0} allocations in 4 s: $(cat "$T/objs.txt")"
[ "$big" -ge 65 ] && [ "$big" -le 85 ] || fail "big_alloc has $big% of alloc_space (expected 75 +- 10)"
[ "$small" -ge 15 ] && [ "$small" -le 35 ] ||
	fail "small_alloc has $small% of alloc_space (expected 25 +- 10)"
[ "$bigo" -ge 40 ] && [ "$bigo" -le 60 ] || fail "big_alloc has $bigo% of the calls (expected 50 +- 10)"
[ "$(probes)" -eq 0 ] || fail "the malloc probes are still loaded after the capture ended"
pass "alloc_space: big_alloc $big%, small_alloc $small% (75/25 +- 10); calls $bigo% / $calls; probes gone"

# 2. a capture whose process exits ends then, with what it recorded: killed once the
# capture runs (however long the start took on a loaded host)
"$MAB" 120 &
SHORT=$!
PIDS+=("$SHORT")
wait_for_line "/proc/$SHORT/maps" "libc"
cap --type malloc --pid "$SHORT" --duration 30s -o "$T/short.pb.gz" 2>"$T/short.err" &
SCAP=$!
wait_for_line "$T/short.err" "Ctrl-C cancels"
sleep 1 # some allocations recorded: a condition would need the capture's count
kill "$SHORT"
s0=$(date +%s%N)
wait "$SCAP" || fail "capture of an exiting process failed: $(cat "$T/short.err")"
took=$(awk -v a="$s0" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
awk -v t="$took" 'BEGIN { exit !(t < 20) }' || fail "the 30 s capture outlived its process by $took s"
grep -q "capture of pid $SHORT: the process exited" "$T/emberd.log" || fail "no exit noted in the log"
pprof_top "$T/short.pb.gz" -sample_index=alloc_space -unit=B >"$T/short.txt"
[ "$(cum_share_of "$T/short.txt" big_alloc)" -ge 65 ] ||
	fail "exited process: big_alloc has $(cum_share_of "$T/short.txt" big_alloc)% of alloc_space"
pass "capture of a process killed during it ended $took s after, with its profile"

# 3. refusals: over the cap (emberctl and, forged, emberd), an app, a static process
cap --type malloc --pid "$WL" --duration 61s -o "$T/x.pb.gz" 2>"$T/cap.err" && fail "61 s accepted"
grep -q "a malloc capture lasts at most 60 s" "$T/cap.err" || fail "unclear refusal: $(cat "$T/cap.err")"
# CTL_CAPTURE, pid target, 499 Hz, 61000 ms, pid 1, kind malloc
printf 'EC\001\001\016\000\000\000\001\363\001\000\000\110\356\000\000\001\000\000\000\001' |
	"$CTLRAW" "$RUN/control" >"$T/raw.out"
grep -q "^ERROR 22 bad request: duration 61000 ms is over the malloc capture's cap of 60 s" \
	"$T/raw.out" || fail "emberd did not refuse 61 s: $(cat "$T/raw.out")"
cap --type malloc --app x -o "$T/x.pb.gz" 2>"$T/app.err" && fail "--type malloc --app accepted"
grep -q "probes one process: --pid N, not --app" "$T/app.err" || fail "unclear: $(cat "$T/app.err")"
[ ! -e "$T/x.pb.gz" ] || fail "a refused capture wrote a file"
printf 'int main(void){for(;;);}\n' >"$T/static.c"
cc -static -o "$T/fx_static" "$T/static.c" || fail "cannot build a static program"
"$T/fx_static" &
STATIC=$!
PIDS+=("$STATIC")
cap --type malloc --pid "$STATIC" -o "$T/x.pb.gz" 2>"$T/static.err" && fail "static process accepted"
grep -q "pid $STATIC maps no glibc libc.so.6: it is statically linked" "$T/static.err" ||
	fail "unclear refusal of a static process: $(cat "$T/static.err")"
kill "$STATIC"
pass "refused: 61 s (emberctl, emberd), --app, a static process: $(tail -1 "$T/static.err")"

# 4. a second capture of the same pid is refused; Ctrl-C cancels: 130, no file, probes gone
"$EMBERCTL" capture --runtime-dir "$RUN" --type malloc --pid "$WL" --duration 30s \
	-o "$T/long.pb.gz" 2>"$T/long.err" & # not through cap(): kill -INT must reach emberctl
LONG=$!
wait_for_line "$T/long.err" "Ctrl-C cancels"
cap --type malloc --pid "$WL" --duration 2s -o "$T/dup.pb.gz" 2>"$T/dup.err" &&
	fail "a concurrent malloc capture of pid $WL was accepted"
grep -q "pid $WL is already being captured .*until" "$T/dup.err" ||
	fail "unclear refusal: $(cat "$T/dup.err")"
[ "$(probes)" -ge 1 ] || fail "no malloc probe loaded while the capture runs"
kill -INT "$LONG"
rc=0
wait "$LONG" || rc=$?
[ "$rc" -eq 130 ] || fail "cancelled capture exited with $rc, not 130: $(cat "$T/long.err")"
grep -q "cancelled; no file written" "$T/long.err" || fail "no 'cancelled' line: $(cat "$T/long.err")"
ls "$T"/long.pb.gz* >/dev/null 2>&1 && fail "the cancelled capture left a file"
for _ in $(seq 1 50); do [ "$(probes)" -eq 0 ] && break; sleep 0.1; done
[ "$(probes)" -eq 0 ] || fail "the malloc probes are still loaded after the cancel"
pass "second capture refused; Ctrl-C: status 130, no file, probes gone"
