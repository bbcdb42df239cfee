#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A Python process's first samples, taken before emberd loaded the process (its first
# sample is what tells emberd of it; the daemon walks those samples later, from a copy of
# their stack). CPython's frame chain lives in the heap and moves on with the thread, so the
# kernel reads it at the sample (bpf/fold.bpf.h's defer_rt_trace(): the runtime known by
# the executable file, the unwinder's rt_exes map) and the daemon's walk gives it back.
# Short scripts started one after another, as cron or a CI job starts them (no flags), each
# ~0.5 s of CPU at 99 Hz, after one run that has python3.11's tables built (as on a host
# where such scripts run every minute). In their profiles (go tool pprof -lines):
# - >= 97% of the samples outside the interpreter's own start-up and shutdown (stacks
#   through Py_InitializeFromConfig, Py_FinalizeEx, the dynamic loader or execve: 3-6% of
#   each process's samples, more on a slower machine) name hot_py_loop at a line of its
#   body (100% measured; before: the first samples of each process stood as the native
#   _PyEval_EvalFrameDefault, 5.5%);
# - at most 1% hold _PyEval_EvalFrameDefault as a native frame (its Python frames unread).
. "$(dirname "$0")/lib.sh"
require_bpf
require_go
[ -x /usr/bin/python3.11 ] || fail "Debian's python3.11 is not installed (scripts/install-deps.sh)"

cp "$(dirname "$0")/hot_loop.py" "$T/app.py"
RUNS=6
start_emberd --hz 99 --interval 30s -v
/usr/bin/python3.11 "$T/app.py" 0.3 >/dev/null &
WARM=$!
PIDS+=("$WARM")
wait_for grep -q "unwinder: pid $WARM: .* (0 to build)" "$T/emberd.log" ||
	fail "emberd did not load the tables of python3.11"
wait "$WARM" || fail "python3.11 app.py failed"
# The first python3.11 a fresh emberd sees: its runtime told to the kernel from its first
# read (unwinder_hint()), before its table, which waits behind every smaller file's (and a
# large one's being built: python3.11 started 50 ms after node lost 2.8% of its first 8 s
# of samples to the wait, 0.7-1.4% since; docs/benchmarks.md)
if grep -q "unwinder: the table of /usr/bin/python3.11 (" "$T/emberd.log"; then
	grep -q "unwinder: pid $WARM: its executable's runtime told before its table" \
		"$T/emberd.log" || fail "python3.11's runtime was told to the kernel only with its table"
	echo "python3.11's runtime told before its table was built"
else
	echo "python3.11's table was built before this test's first process (a process of the host)"
fi
RUN_PIDS=()
for ((i = 0; i < RUNS; i++)); do
	/usr/bin/python3.11 "$T/app.py" 0.5 >/dev/null &
	PIDS+=("$!")
	RUN_PIDS+=("$!")
	wait "$!" || fail "python3.11 app.py failed"
done
kill "$EMBERD_PID"
wait_emberd

first=$(grep -n '^def hot_py_loop' "$T/app.py" | cut -d: -f1)
last=$(grep -n '    return x$' "$T/app.py" | tail -1 | cut -d: -f1)
total=0 named=0 raw=0 boot=0
# the interpreter's start-up and shutdown: no frame of the script's to name
boot_re='(^|;)(Py_InitializeFromConfig|Py_FinalizeEx|_dl_start|[[]execve[]])(;| [0-9]+$)'
for pid in "${RUN_PIDS[@]}"; do
	"$EMBERCTL" --data-dir "$T/data" export --type cpu --pid "$pid" -o "$T/$pid.pb.gz" \
		2>/dev/null || fail "pid $pid: export failed"
	"$EMBERCTL" --data-dir "$T/data" folded --type cpu --pid "$pid" >"$T/$pid.folded" \
		2>/dev/null || fail "pid $pid: emberctl folded failed"
	pprof_top "$T/$pid.pb.gz" -sample_index=samples -lines >"$T/$pid.lines"
	t=$(awk '{ n += $NF } END { print n + 0 }' "$T/$pid.folded")
	# -lines: "flat flat% sum% cum cum% FUNC FILE:LINE"; a stack holds it once
	n=$(awk -v f="$T/app.py" -v lo="$first" -v hi="$last" '$6 == "hot_py_loop" {
		split($7, a, ":"); if (a[1] == f && a[2] >= lo && a[2] <= hi) s += $4 }
		END { print s + 0 }' "$T/$pid.lines")
	r=$(awk '/(^|;)_PyEval_EvalFrameDefault(;| [0-9]+$)/ { n += $NF } END { print n + 0 }' \
		"$T/$pid.folded")
	b=$(awk -v re="$boot_re" '$0 ~ re { n += $NF } END { print n + 0 }' "$T/$pid.folded")
	echo "pid $pid: $n of $t samples name hot_py_loop, $b in start-up or shutdown, $r hold" \
		"the eval loop's native frame"
	total=$((total + t)) named=$((named + n)) raw=$((raw + r)) boot=$((boot + b))
done
share=$(awk -v a="$named" -v t="$((total - boot))" 'BEGIN { printf "%.1f", t ? 100 * a / t : 0 }')
echo "all $RUNS: hot_py_loop on $named of $((total - boot)) samples outside start-up and" \
	"shutdown ($share%; $boot in them), $raw with the eval loop's native frame;" \
	"$(grep -o 'runtime frames [0-9]*, read as sampled.*' "$T/emberd.log" | tail -1)"
[ "$total" -ge $((RUNS * 30)) ] || fail "$total samples, want >= $((RUNS * 30)) (0.5 s at 99 Hz each)"
[ $((100 * raw)) -le "$total" ] || {
	cat "$T"/*.folded | grep -E '(^|;)_PyEval_EvalFrameDefault(;| [0-9]+$)' | head -3 |
		cut -c1-300
	fail "$raw of $total samples hold _PyEval_EvalFrameDefault unread, want <= 1%"
}
awk -v s="$share" 'BEGIN { exit !(s >= 97) }' || {
	cat "$T"/*.folded | grep -vE "$boot_re" | grep -v ';hot_py_loop' | head -5 | cut -c1-300
	fail "hot_py_loop named on $share% of the samples outside start-up, want >= 97%"
}
pass "short Python processes named from their first samples"
