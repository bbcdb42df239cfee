#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# An emergency malloc capture of a Python service (emberctl capture --type malloc), named
# through the interpreter's frames, no flags (issue 44 item 5): Debian's python3.11 calls
# big_py and small_py in turn, each making a bytearray (malloc'd by the interpreter, not
# its small-object allocator: over 512 bytes), big_py's 3 times small_py's bytes. In the
# capture, read with go tool pprof: alloc_space 75% / 25% by Python function (+- 10
# points), alloc_objects 50% / 50%, at the lines of their bodies.
. "$(dirname "$0")/lib.sh"
require_bpf
require_go
[ -x /usr/bin/python3.11 ] || fail "Debian's python3.11 is not installed (scripts/install-deps.sh)"

RUN=$T/run
cat >"$T/ab.py" <<'PY'
import sys, time
def big_py():
    return bytearray(3 * 65536)
def small_py():
    return bytearray(65536)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    big_py()
    small_py()
PY

start_emberd --runtime-dir "$RUN" -v
/usr/bin/python3.11 "$T/ab.py" 3600 &
WL=$!
PIDS+=("$WL")
# the capture walks with the process's tables: loaded once its CPU samples report it
wait_for grep -Eq "unwinder: pid $WL: .*\\(0 to build\\)" "$T/emberd.log" ||
	fail "emberd did not load python's unwind tables"
"$EMBERCTL" capture --runtime-dir "$RUN" --type malloc --pid "$WL" --duration 4s \
	-o "$T/m.pb.gz" 2>"$T/m.err" || fail "malloc capture failed: $(cat "$T/m.err")"
pprof_top "$T/m.pb.gz" -sample_index=alloc_space -unit=B >"$T/space.txt"
pprof_top "$T/m.pb.gz" -sample_index=alloc_objects >"$T/objs.txt"
pprof_top "$T/m.pb.gz" -sample_index=alloc_space -lines >"$T/lines.txt"
big=$(cum_share_of "$T/space.txt" big_py)
small=$(cum_share_of "$T/space.txt" small_py)
bigo=$(cum_share_of "$T/objs.txt" big_py)
calls=$(total_of "$T/objs.txt")
echo "alloc_space: big_py $big%, small_py $small%; alloc_objects: big_py $bigo% of $calls calls"
[ "${calls:-0}" -ge 1000 ] || fail "only ${calls:-0} allocations in 4 s: $(head -20 "$T/objs.txt")"
[ "$big" -ge 65 ] && [ "$big" -le 85 ] || {
	head -12 "$T/space.txt"
	fail "big_py has $big% of alloc_space (expected 75 +- 10)"
}
[ "$small" -ge 15 ] && [ "$small" -le 35 ] || fail "small_py has $small% of alloc_space (expected 25 +- 10)"
[ "$bigo" -ge 40 ] && [ "$bigo" -le 60 ] || fail "big_py has $bigo% of the calls (expected 50 +- 10)"
for fn in big_py small_py; do
	at=$(($(grep -n "^def $fn" "$T/ab.py" | cut -d: -f1) + 1))
	awk -v fn="$fn" -v at="$T/ab.py:$at" '$6 == fn && $7 == at { n++ } END { exit !n }' \
		"$T/lines.txt" || fail "$fn not named at ab.py:$at: $(grep "$fn" "$T/lines.txt" | head -2)"
done
pass "alloc_space: big_py $big%, small_py $small% (75/25 +- 10); calls $bigo% / $calls; at their lines"
