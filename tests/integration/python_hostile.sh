#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A Python process that rewrites its own interpreter frame chain while it is sampled
# (ctypes writes _PyInterpreterFrame.previous of the running frame, then puts it back
# before the frame returns): an unmapped address, a frame pointing at itself, two fake
# frames pointing at each other, and a fake frame whose code is not a code object. The
# walk must stop the Python frames at the bad one with a counted reason
# (runtime_end_bad_frame), never loop, name garbage or stall, and go on natively: each
# phase's stacks hold spin_hostile, the real frames inside it, and nothing past it from
# the fake ones; emberd keeps running. Debian's python3.11 (its layout: 3.11's).
. "$(dirname "$0")/lib.sh"
require_bpf
PY=/usr/bin/python3.11
[ -x "$PY" ] || fail "Debian's python3.11 is not installed (scripts/install-deps.sh)"

cat >"$T/hostile.py" <<'PY'
import ctypes
import sys
import time

PREVIOUS = 48  # _PyInterpreterFrame.previous (3.11)
F_FRAME = 24   # PyFrameObject.f_frame (3.11)
fakes = []     # kept alive: their memory is what the fake frames point to


def fake_code():
    pass  # its code object is what the fake frames of a cycle say they run


def fake_frame(previous, code):
    # words of a _PyInterpreterFrame: f_code at 32, previous at 48, is_entry 0
    buf = ctypes.create_string_buffer(96)
    ctypes.c_void_p.from_address(ctypes.addressof(buf) + 32).value = code
    ctypes.c_void_p.from_address(ctypes.addressof(buf) + PREVIOUS).value = previous
    fakes.append(buf)
    return ctypes.addressof(buf)


def spin_hostile(kind, seconds, ready):
    me = ctypes.c_void_p.from_address(id(sys._getframe()) + F_FRAME).value
    slot = ctypes.c_void_p.from_address(me + PREVIOUS)
    saved = slot.value
    if kind == "unmapped":
        slot.value = 0xDEAD0000000
    elif kind == "self":
        slot.value = me
    elif kind == "cycle":
        a = fake_frame(0, id(fake_code.__code__))
        b = fake_frame(a, id(fake_code.__code__))
        ctypes.c_void_p.from_address(a + PREVIOUS).value = b
        slot.value = a
    elif kind == "notcode":
        slot.value = fake_frame(0, id(fakes))
    open(ready, "w").close()
    end = time.process_time() + seconds
    x = 0
    while time.process_time() < end:
        for i in range(2000):
            x += i
    slot.value = saved  # the interpreter follows it when this frame returns
    return x


def phase(kind, seconds, ready):
    return spin_hostile(kind, seconds, ready)


for kind in sys.argv[2].split(","):
    phase(kind, float(sys.argv[1]), sys.argv[3] + "." + kind)
print("done")
PY

start_emberd --hz 99 --interval 2s -v
KINDS=unmapped,self,cycle,notcode
"$PY" "$T/hostile.py" 1.5 "$KINDS" "$T/ready" >"$T/py.out" 2>&1 &
PY_PID=$!
PIDS+=("$PY_PID")
wait "$PY_PID" || fail "hostile.py failed: $(tail -5 "$T/py.out")"
grep -qx done "$T/py.out" || fail "hostile.py did not finish: $(tail -3 "$T/py.out")"
# the daemon lives on and reports the walks it cut
kill -0 "$EMBERD_PID" 2>/dev/null || fail "emberd died"
# its counters reach the status file at the end of the interval that drained them
bad=0
for _ in $(seq 1 300); do
	"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/run" --format prometheus \
		>"$T/prom.txt" 2>"$T/status.err" || fail "emberctl status failed: $(cat "$T/status.err")"
	bad=$(awk '/^ember_unwind_total\{.*what="runtime_end_bad_frame"/ { print $NF }' "$T/prom.txt")
	[ "${bad:-0}" -gt 0 ] && break
	sleep 0.1
done
"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/run" >"$T/status.txt" 2>&1 ||
	fail "emberctl status failed"
kill "$EMBERD_PID"
wait_emberd

"$EMBERCTL" --data-dir "$T/data" folded --type cpu --pid "$PY_PID" >"$T/folded" 2>/dev/null ||
	fail "emberctl folded failed"
total=$(awk '{ n += $NF } END { print n + 0 }' "$T/folded")
hostile=$(awk '/;spin_hostile(;|$)/ { n += $NF } END { print n + 0 }' "$T/folded")
echo "samples $total, in spin_hostile $hostile; walks cut at a bad frame (since start): ${bad:-?}"
grep 'runtimes' "$T/status.txt" || true
[ "$hostile" -gt 0 ] || fail "no sample names spin_hostile: $(head -3 "$T/folded" | cut -c1-300)"
# past the bad frame nothing: spin_hostile's caller is phase (the real one) only while the
# chain is intact (its first and last instructions, around the spin); the two fake frames
# of the cycle may show (fake_code: their code object is a real one), never more, and no
# stack runs to the depth limit on them
past=$(awk '/;phase;spin_hostile(;| [0-9])/ { n += $NF } END { print n + 0 }' "$T/folded")
# (the fake chain is only ever in spin_hostile's stacks: the interpreter's start, an
# import's deep stack cut at the copy's end, are no part of it)
garbage=$(grep ';spin_hostile' "$T/folded" | grep -E '\[python code 0x|\[truncated\]' |
	head -2 | cut -c1-300 || true)
[ -z "$garbage" ] || fail "garbage from the fake chain: $garbage"
loops=$(awk '{ n = gsub(/fake_code/, "&"); if (n > 3) print }' "$T/folded" | head -2 | cut -c1-300)
[ -z "$loops" ] || fail "the cycle was followed: $loops"
awk -v p="$past" -v h="$hostile" 'BEGIN { exit !(p * 10 <= h) }' ||
	fail "$past of $hostile samples have phase above spin_hostile: the rewritten chain was not the one walked"
[ "${bad:-0}" -gt 0 ] || fail "no walk counted as cut at a bad frame (runtime_end_bad_frame)"
pass "$hostile samples in spin_hostile stop at the rewritten chain; $bad walks counted as cut"
