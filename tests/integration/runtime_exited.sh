#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runtime frames of a process gone before the drain: a Python script and a Node.js script,
# started the way cron or a CI job starts them (no flags), each spend ~2 s of CPU in a loop
# and exit, well inside one of emberd's intervals (30 s). Their frames' names live in the
# process's memory: emberd reads them moments after the sample that first holds them
# (EMBER_PROC_RT_FRAMES), not at the drain, when the process is gone. In each process's
# profile, read with go tool pprof:
# - >= 85% of the samples name the hot function at a line of its body in its script (node:
#   92-94% measured, its start-up's native code, GC and compiler threads the rest), its first
#   samples too, taken before emberd loaded the process and walked from a copy of their stack
#   (V8's frames in it, the objects they name read from the live process);
# - at most 1% hold a frame that could not be read ([python code 0x..], [v8 unreadable ..]).
. "$(dirname "$0")/lib.sh"
require_bpf
require_go
[ -x /usr/bin/python3.11 ] || fail "Debian's python3.11 is not installed (scripts/install-deps.sh)"
command -v node >/dev/null || fail "node not installed (scripts/install-deps.sh installs nodejs)"

# the workloads, shared with bench/peer.sh
cp "$(dirname "$0")/hot_loop.py" "$T/app.py"
cp "$(dirname "$0")/hot_loop.js" "$T/app.js"

start_emberd --hz 99 --interval 30s -v
# each binary's unwind table is built once per host (node's takes a second or more): a
# first short run has them built, as on a host where these scripts run every minute
for run in "/usr/bin/python3.11 $T/app.py 1" "node $T/app.js 1000"; do
	$run >/dev/null &
	WARM=$!
	PIDS+=("$WARM")
	wait_for grep -q "unwinder: pid $WARM: .* (0 to build)" "$T/emberd.log" ||
		fail "emberd did not load the tables of $run"
	wait "$WARM" || fail "$run failed"
done
/usr/bin/python3.11 "$T/app.py" 2 &
PY_PID=$!
PIDS+=("$PY_PID")
wait "$PY_PID" || fail "python3.11 app.py failed"
node "$T/app.js" 2000 >/dev/null &
JS_PID=$!
PIDS+=("$JS_PID")
wait "$JS_PID" || fail "node app.js failed"
# both are gone: the drain at emberd's stop is the first for them
kill "$EMBERD_PID"
wait_emberd

# checks the profile of PID: the share of samples naming FUNC in FILE at lines FIRST-LAST
check() {
	local what=$1 pid=$2 func=$3 file=$4 first=$5 last=$6 want=$7 total named bad share
	"$EMBERCTL" --data-dir "$T/data" export --type cpu --pid "$pid" -o "$T/$what.pb.gz" \
		2>/dev/null || fail "$what: export failed"
	"$EMBERCTL" --data-dir "$T/data" folded --type cpu --pid "$pid" >"$T/$what.folded" \
		2>/dev/null || fail "$what: emberctl folded failed"
	pprof_top "$T/$what.pb.gz" -sample_index=samples -lines >"$T/$what.lines"
	total=$(awk '{ n += $NF } END { print n + 0 }' "$T/$what.folded")
	# -lines: "flat flat% sum% cum cum% FUNC FILE:LINE"; a stack holds it once
	named=$(awk -v fn="$func" -v f="$file" -v lo="$first" -v hi="$last" '
		$6 == fn { split($7, a, ":"); if (a[1] == f && a[2] >= lo && a[2] <= hi) s += $4 }
		END { print s + 0 }' "$T/$what.lines")
	bad=$(awk '/\[python code 0x|\[v8 unreadable|\[runtime frame 0x/ { n += $NF }
		END { print n + 0 }' "$T/$what.folded")
	share=$(awk -v a="$named" -v t="$total" 'BEGIN { printf "%.1f", t ? 100 * a / t : 0 }')
	echo "$what (pid $pid, gone before the drain): $func at $(basename "$file"):$first-$last" \
		"on $named of $total samples ($share%), $bad with a frame unread"
	[ "$total" -ge 50 ] || fail "$what: $total samples, want >= 50 (2 s at 99 Hz)"
	[ $((100 * bad)) -le "$total" ] || {
		grep -E '\[python code 0x|\[v8 unreadable|\[runtime frame 0x' "$T/$what.folded" |
			head -3 | cut -c1-300
		fail "$what: $bad of $total samples hold a frame emberd could not read"
	}
	awk -v s="$share" -v w="$want" 'BEGIN { exit !(s >= w) }' || {
		sort -t' ' -k2 -nr "$T/$what.folded" | head -5 | cut -c1-400
		fail "$what: $func named on $share% of the samples, want >= $want%"
	}
}
py_first=$(grep -n '^def hot_py_loop' "$T/app.py" | cut -d: -f1)
py_last=$(grep -n '    return x$' "$T/app.py" | tail -1 | cut -d: -f1)
js_first=$(grep -n '^function hotJsLoop' "$T/app.js" | cut -d: -f1)
js_last=$((js_first + 7))
check python "$PY_PID" hot_py_loop "$T/app.py" "$py_first" "$py_last" 85
check node "$JS_PID" hotJsLoop "$T/app.js" "$js_first" "$js_last" 85
pass "Python and Node.js frames named from processes gone before the drain"
