#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Memory growth through the interpreter's frames, as users start Python (no flags):
# Debian's python3.11 spins until SIGUSR2 (on CPU, so that emberd loads it), then grow
# calls leaky_py, which keeps 1 MiB bytearrays in a list it never clears, until the
# process holds 256 MiB more. The pages are touched in C (bytearray's zero fill) under
# leaky_py's Python frame, which the walk reads in place of the eval loop's. In its
# memory_growth profile (emberctl top --sample resident), leaky_py leads: >= 80% of the
# resident bytes in total, at a line of its body in its script.
. "$(dirname "$0")/lib.sh"
require_bpf
require_go
[ -x /usr/bin/python3.11 ] || fail "Debian's python3.11 is not installed (scripts/install-deps.sh)"

cat >"$T/grow.py" <<'PY'
import signal, sys, time
go = False
def on_usr2(sig, frame):
    global go
    go = True
signal.signal(signal.SIGUSR2, on_usr2)
cache = []
def leaky_py(n):
    cache.append(bytearray(n))
def grow(mib):
    for _ in range(mib):
        leaky_py(1 << 20)
while not go:
    pass
grow(int(sys.argv[1]))
print('grew', flush=True)
time.sleep(600)
PY
start_emberd --hz 99 --interval 5s -v
/usr/bin/python3.11 "$T/grow.py" 256 >"$T/py.out" 2>&1 &
WL=$!
PIDS+=("$WL")
# its tables loaded (its CPU samples report it) and past its start-up, which memory growth
# leaves out (growth_min_age, 100 ms): the BPF program walks its faults
wait_for grep -Eq "unwinder: pid $WL: .*\\(0 to build\\)" "$T/emberd.log" ||
	fail "emberd did not load python's unwind tables"
wait_for older_than "$WL" 200 || fail "python did not live 200 ms"
kill -USR2 "$WL"
grown() {
	kill -0 "$WL" 2>/dev/null || fail "python exited: $(tail -3 "$T/py.out")"
	grep -q "^grew" "$T/py.out"
}
wait_for grown || fail "python did not grow by 256 MiB"
kill "$EMBERD_PID" # the last interval is stored while python lives: its frames are read from it
wait_emberd
kill "$WL"

"$EMBERCTL" --data-dir "$T/data" top --type memory_growth --sample resident --pid "$WL" -n 0 \
	>"$T/top.txt" 2>"$T/top.err" || fail "emberctl top failed: $(cat "$T/top.err")"
head -6 "$T/top.txt"
leaky=$(top_total_pct "$T/top.txt" leaky_py)
[ "$leaky" -ge 80 ] || fail "leaky_py holds $leaky% of the resident growth in total, want >= 80%"
# at a line of its body, as go tool pprof reads the profile
"$EMBERCTL" --data-dir "$T/data" export --type memory_growth --pid "$WL" -o "$T/grow.pb.gz" ||
	fail "export failed"
pprof_top "$T/grow.pb.gz" -sample_index=resident -lines >"$T/lines.txt"
body=$(grep -n '^def leaky_py' "$T/grow.py" | cut -d: -f1)
awk -v f="$T/grow.py" -v at="$((body + 1))" '$6 == "leaky_py" && $7 == f ":" at { n++ }
	END { exit !n }' "$T/lines.txt" || {
	grep leaky_py "$T/lines.txt" | head -3
	fail "leaky_py not named at grow.py:$((body + 1))"
}
pass "leaky_py leads with $leaky% of the resident growth in total, at grow.py:$((body + 1))"
