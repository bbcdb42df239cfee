#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A Python code object freed and another made at its address (lib/symbols/runtime.c's
# rt_cache_check()): emberd keeps a code object's names by its address for the process's
# life, and a program frees code objects while it runs (a module's body after its import,
# code given to exec()). app.py, run by Debian's python3.11 without flags, makes
# phase_alpha from source with exec() and spends 3 s of CPU in it, drops it, then makes
# phase_omega, which CPython places at the address phase_alpha had (the fixture says
# whether it did, by id()), and spends 3 s in it. Known answer: half the samples each.
# Read with go tool pprof from ember's profile:
# - each of phase_alpha and phase_omega is on >= 25% of the process's samples (the
#   interval in which the second took the first's room names the second's samples of it
#   as the first: 1 s of 6 at most, intervals of 1 s), the two on >= 80%;
# - each at a line of its own generated file (gen_phase_omega.py for phase_omega);
# - emberd counts the code object read again (emberd -v).
# Before the check, every phase_omega sample was named phase_alpha.
. "$(dirname "$0")/lib.sh"
require_bpf
require_go
PY=/usr/bin/python3.11
[ -x "$PY" ] || fail "Debian's python3.11 is not installed (scripts/install-deps.sh)"

cat >"$T/app.py" <<'PY'
import gc
import sys
import time

SRC = """def {name}(seconds):
    end = time.process_time() + seconds
    x = 0
    while time.process_time() < end:
        for i in range(2000):
            x += i * i
    return x
"""


def make(name):
    ns = {"time": time}
    exec(compile(SRC.format(name=name), "gen_" + name + ".py", "exec"), ns)
    return ns[name]


seconds = float(sys.argv[1])
f = make("phase_alpha")
at = id(f.__code__)
f(seconds)
del f
gc.collect()
held = []  # a try at another address is kept, so that the next takes another room
for tries in range(1, 101):
    g = make("phase_omega")
    if id(g.__code__) == at:
        break
    held.append(g)
print("same address" if id(g.__code__) == at else "another address", tries, flush=True)
g(seconds)
PY

start_emberd --hz 99 --interval 1s -v
"$PY" "$T/app.py" 3 >"$T/app.out" &
APP=$!
PIDS+=("$APP")
wait "$APP" || fail "$PY app.py failed"
read -r where _ tries <"$T/app.out" || fail "app.py said nothing"
[ "$where" = same ] ||
	fail "fixture: CPython put phase_omega's code at another address than phase_alpha's" \
		"($tries tries): nothing to test"
# its last interval drained
kill "$EMBERD_PID"
wait_emberd

"$EMBERCTL" --data-dir "$T/data" export --type cpu --pid "$APP" -o "$T/cpu.pb.gz" \
	2>/dev/null || fail "export failed"
"$EMBERCTL" --data-dir "$T/data" folded --type cpu --pid "$APP" >"$T/folded" 2>/dev/null ||
	fail "emberctl folded failed"
pprof_top "$T/cpu.pb.gz" -sample_index=samples -lines >"$T/lines"
total=$(awk '{ n += $NF } END { print n + 0 }' "$T/folded")
[ "$total" -ge 200 ] || fail "$total samples of app.py, want >= 200 (6 s at 99 Hz)"
# -lines: "flat flat% sum% cum cum% FUNC FILE:LINE"; a stack holds each once
share() {
	awk -v fn="$1" -v t="$total" '$6 == fn { split($7, a, ":"); f = a[1]; sub(/.*\//, "", f)
		if (f == "gen_" fn ".py") s += $4; else other += $4 }
		END { printf "%.1f %d\n", t ? 100 * s / t : 0, other }' "$T/lines"
}
read -r alpha alpha_other < <(share phase_alpha)
read -r omega omega_other < <(share phase_omega)
echo "pid $APP: phase_alpha on $alpha%, phase_omega on $omega% of $total samples" \
	"(phase_omega made at phase_alpha's address, try $tries)"
grep -E ' phase_(alpha|omega) ' "$T/lines" | head -4
[ "$alpha_other" -eq 0 ] && [ "$omega_other" -eq 0 ] ||
	fail "a phase named at another file's line: $(grep -E ' phase_' "$T/lines" | head -3)"
awk -v a="$alpha" -v o="$omega" 'BEGIN { exit !(a >= 25 && o >= 25 && a + o >= 80) }' || {
	sort -t' ' -k2 -nr "$T/folded" | head -4 | cut -c1-300
	fail "phase_alpha $alpha%, phase_omega $omega%: want each >= 25%, both >= 80% (3 s each)"
}
# "(K could not be; C code objects checked, R read again: ...)"
read -r checked reread < <(grep -o 'could not be; [0-9]* code objects checked, [0-9]* read again' \
	"$T/emberd.log" | tail -1 | awk '{ print $4, $8 }')
[ "${reread:-0}" -ge 1 ] || fail "emberd counted no code object read again: ${reread:-none}"
pass "a code object made at a freed one's address named as itself ($alpha% / $omega%);" \
	"$checked code objects checked as their stacks were announced, $reread read again"
