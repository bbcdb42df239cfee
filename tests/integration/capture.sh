#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# On-demand capture through the control socket: 5 s at 499 Hz of a busy
# fixture gives 499 samples per CPU second it used (+- 10 %) and ends by itself;
# a capture ends early when its process exits; a second capture of the same pid
# is refused; Ctrl-C cancels (no file) and frees the target; non-root callers
# are refused by the socket's mode and by SO_PEERCRED; hostile and silent
# clients are refused or dropped; --app captures an [app] by comm, with a
# process started meanwhile; a second emberd is refused and the socket goes
# away with emberd.
. "$(dirname "$0")/lib.sh"
require_bpf
require_go

RUN=$T/run
CONF=$T/ember.conf
HZ=499
# a comm of its own: other tests (and other users of this host) run fx_busy too
BUSY=$T/capbusy_$$
cp "$FX/fx_busy" "$BUSY"
printf '[app "burner"]\nmatch.comm = %s\n' "$(basename "$BUSY" | cut -c1-15)" >"$CONF"
cap() { "$EMBERCTL" capture --runtime-dir "$RUN" "$@"; }
# cpu_log PID: every ~20 ms until PID is gone, "wall-clock µs, its CPU ns" (schedstat), with
# no fork a line (read -t on a FIFO nobody writes is the sleep)
cpu_log() {
	local fd cpu
	mkfifo "$T/tick"
	exec {fd}<>"$T/tick"
	while read -r cpu _ 2>/dev/null <"/proc/$1/schedstat"; do
		echo "${EPOCHREALTIME/./} $cpu"
		read -r -t 0.02 -u "$fd" _ || true
	done
}
# cpu_between LOG FROM_NS TO_NS: CPU seconds the logged process used in [FROM, TO),
# interpolated between the log's lines; empty when the log does not cover the window
cpu_between() {
	awk -v a="$2" -v b="$3" '
	function at(t,   i) {
		for (i = 2; i <= n; i++)
			if (w[i] >= t)
				return c[i - 1] + (c[i] - c[i - 1]) * (t - w[i - 1]) / (w[i] - w[i - 1])
		return -1
	}
	{ n++; w[n] = $1 * 1000; c[n] = $2 }
	END {
		if (n < 2 || w[1] > a || w[n] < b) exit
		printf "%.3f", (at(b) - at(a)) / 1e9
	}' "$1"
}
# wait_for FILE PATTERN: up to 20 s for PATTERN to appear in FILE
wait_for() {
	for _ in $(seq 1 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	fail "'$2' did not appear in $1: $(cat "$1" 2>/dev/null)"
}

start_emberd --config "$CONF" --runtime-dir "$RUN"
[ -S "$RUN/control" ] || fail "no control socket at $RUN/control"
[ "$(stat -c %a "$RUN/control")" = 600 ] || fail "control socket mode $(stat -c %a "$RUN/control"), not 600"
"$EMBERD" --data-dir "$T/data2" --runtime-dir "$RUN" --duration 1s >"$T/second.log" 2>&1 &&
	fail "a second emberd started on the same runtime dir"
grep -q "another emberd is already running" "$T/second.log" ||
	fail "second emberd: unclear error: $(cat "$T/second.log")"
pass "socket $RUN/control (0600); a second emberd is refused"

# it must outlive every step below that names it, however slow the host: ended by the
# clean-up, not by a wall-clock guess (120 s ran out at step 2 on a host at load 11)
"$BUSY" 3600 >"$T/busy.out" &
WL=$!
PIDS+=("$WL")
sleep 0.5

# 1. 5 s at 499 Hz of one pid: ends by itself, 499 samples per CPU second (+- 10 %)
cpu_log "$WL" >"$T/cpu.log" &
CPULOG=$!
PIDS+=("$CPULOG")
s0=$(date +%s%N)
cap --pid "$WL" --hz $HZ --duration 5s -o "$T/pid.pb.gz" 2>"$T/pid.err" ||
	fail "capture failed: $(cat "$T/pid.err")"
s1=$(date +%s%N)
# the log must reach past the profile's end, which is before s1: its logger ticks every
# ~20 ms, and a loaded host can hold a tick back longer than emberctl takes to return
# (seen: the last line 2.4 ms short of the window's end)
logged_past() { local t; t=$(tail -1 "$T/cpu.log" | cut -d' ' -f1); [ -n "$t" ] && [ "$t" -ge $((s1 / 1000)) ]; }
for _ in $(seq 1 200); do logged_past && break; sleep 0.05; done
kill "$CPULOG" 2>/dev/null || true
took=$(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
awk -v t="$took" 'BEGIN { exit !(t >= 4.9 && t < 15) }' ||
	fail "the 5 s capture took $took s (expected to end by itself in 5..15 s)"
pprof_top "$T/pid.pb.gz" -sample_index=samples >"$T/top.txt"
got=$(total_of "$T/top.txt")
burn=$(flat_of "$T/top.txt" burn)
# The samples cover the profile's window (its Time and Duration), not emberctl's whole run,
# which on a loaded host also holds a second or more of set-up during which the fixture's
# share of its CPU differs: its CPU is read from the log over that window only.
go tool pprof -raw "$T/pid.pb.gz" >"$T/raw.txt" 2>"$T/pprof.err" ||
	fail "go tool pprof -raw rejected the capture: $(cat "$T/pprof.err")"
pstart=$(sed -n 's/^Time: \(.*\) [A-Z][A-Z]*$/\1/p' "$T/raw.txt" | head -1)
pstart=$(date -d "$pstart" +%s%N 2>/dev/null) ||
	fail "no start time in the capture's profile: $(head -5 "$T/raw.txt")"
# -raw prints the duration cut to 4 characters ("5.00", no unit): seconds to 10 ms here
dur=$(sed -n 's/^Duration: \([0-9.]*\).*/\1/p' "$T/raw.txt" | head -1)
[ -n "$dur" ] || fail "no Duration in the capture's profile: $(head -5 "$T/raw.txt")"
pend=$((pstart + $(awk -v d="$dur" 'BEGIN { printf "%.0f", d * 1e9 }'))) # mawk's %d stops at 2^31
cpu=$(cpu_between "$T/cpu.log" "$pstart" "$pend")
[ -n "$cpu" ] || fail "the CPU log ($(wc -l <"$T/cpu.log") lines) does not cover the profile's window"
want=$(awk -v c="$cpu" -v hz=$HZ 'BEGIN { printf "%d", c * hz }')
echo "5 s at $HZ Hz took $took s: $got samples ($burn in burn); fx_busy used $cpu CPU s" \
	"in its $dur s sampled -> $want expected (5 x $HZ = $((5 * HZ)) on an idle CPU)"
# Sharing its CPU, which ticks land in the fixture's time slices is chance: the count varies
# by about sqrt(want) (less when the fixture has most of its CPU), so the bound is 10% or
# 5 sqrt(want), the larger: 5 sigma at least (seen on a loaded host: 455 for 494, -8% = 1.8
# sqrt(want), which a bound of 10% over 500 samples failed; 4 sqrt(want), which binds under
# 1600 expected, failed about once in 16000 runs there).
tol=$(awk -v w="$want" 'BEGIN { t = 5 * sqrt(w); if (t < 0.10 * w) t = 0.10 * w; printf "%d", t }')
[ "$want" -ge 100 ] || fail "fx_busy got $cpu CPU s in 5 s: too few samples to judge"
[ "$got" -ge $((want - tol)) ] && [ "$got" -le $((want + tol)) ] ||
	fail "sample count $got differs from $want by more than $tol (10% or 5 sqrt($want))"
# on a quiet machine (the fixture had >= 95% of its CPU) the issue's own figure holds too
if awk -v c="$cpu" 'BEGIN { exit !(c >= 4.75) }'; then
	awk -v g="$got" -v w=$((5 * HZ)) 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d / w <= 0.10) }' ||
		fail "sample count $got differs from 5 x $HZ = $((5 * HZ)) by more than 10%"
fi
[ "$((burn * 100 / got))" -ge 90 ] || fail "burn has $burn of $got samples (expected >= 90%)"
grep -q "wrote $T/pid.pb.gz: $got samples of pid $WL" "$T/pid.err" ||
	fail "no summary line: $(cat "$T/pid.err")"
pass "$got samples for $want expected (+- $tol), ended after $took s"

# 1b. a capture whose process exits ends then, with what it sampled
"$BUSY" 2 >/dev/null &
SHORT=$!
PIDS+=("$SHORT")
s0=$(date +%s%N)
cap --pid "$SHORT" --duration 30s -o "$T/short.pb.gz" 2>"$T/short.err" ||
	fail "capture of an exiting process failed: $(cat "$T/short.err")"
took=$(awk -v a="$s0" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
awk -v t="$took" 'BEGIN { exit !(t < 15) }' || fail "the capture outlived its process: $took s"
grep -q "capture of pid $SHORT: the process exited" "$T/emberd.log" || fail "no exit noted in the log"
pass "capture of a process that exited after 2 s ended after $took s"

# 2. a second capture of the same pid while one runs is refused, naming when it ends
"$EMBERCTL" capture --runtime-dir "$RUN" --pid "$WL" --hz $HZ --duration 20s \
	-o "$T/long.pb.gz" 2>"$T/long.err" & # not through cap(): kill -INT must reach emberctl
LONG=$!
wait_for "$T/long.err" "Ctrl-C cancels"
cap --pid "$WL" --duration 2s -o "$T/dup.pb.gz" 2>"$T/dup.err" && fail "a concurrent capture of pid $WL was accepted"
grep -q "pid $WL is already being captured .*until" "$T/dup.err" ||
	fail "unclear refusal: $(cat "$T/dup.err")"
[ ! -e "$T/dup.pb.gz" ] || fail "the refused capture wrote a file"
pass "concurrent capture refused: $(cat "$T/dup.err")"

# 3. Ctrl-C cancels: status 130, no file, and the pid can be captured again at once
kill -INT "$LONG"
rc=0
wait "$LONG" || rc=$?
[ "$rc" -eq 130 ] || fail "cancelled capture exited with $rc, not 130: $(cat "$T/long.err")"
grep -q "cancelled; no file written" "$T/long.err" || fail "no 'cancelled' line: $(cat "$T/long.err")"
ls "$T"/long.pb.gz* >/dev/null 2>&1 && fail "the cancelled capture left a file"
grep -q "capture of pid $WL cancelled by emberctl" "$T/emberd.log" || fail "emberd did not log the cancel"
cap --pid "$WL" --duration 1s -o "$T/again.pb.gz" 2>"$T/again.err" ||
	fail "a capture after the cancel was refused: $(cat "$T/again.err")"
pass "Ctrl-C: status 130, no file, the pid is free again"

# 4. non-root callers: refused by the socket's mode, and by SO_PEERCRED when it is open
chmod 755 "$T"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$EMBERCTL" capture \
	--runtime-dir "$RUN" --pid "$WL" --duration 1s -o /dev/null 2>"$T/nobody.err"; }
as_nobody && fail "a non-root capture succeeded through a 0600 socket"
grep -q "permission denied on $RUN/control: captures need root" "$T/nobody.err" ||
	fail "unclear refusal (mode): $(cat "$T/nobody.err")"
chmod 666 "$RUN/control"
as_nobody && fail "a non-root capture succeeded through an open socket"
grep -q "permission denied: captures are for root only" "$T/nobody.err" ||
	fail "unclear refusal (SO_PEERCRED): $(cat "$T/nobody.err")"
grep -q "refused a client with uid 65534" "$T/emberd.log" || fail "emberd did not log the refusal"
chmod 600 "$RUN/control"
pass "non-root refused by the socket mode and by SO_PEERCRED"

# 4b. hostile and silent clients: a one-line error, or dropped; emberd carries on
CTLRAW=$EMBER_BUILD/tests/tools/ctlraw
[ -x "$CTLRAW" ] || fail "ctlraw not built at $CTLRAW"
raw() { "$CTLRAW" "$RUN/control" >"$T/raw.out"; grep -q "$1" "$T/raw.out" || fail "$2: $(cat "$T/raw.out")"; }
printf 'GET / HTTP/1.0\r\n\r\n' | raw "^ERROR 22 bad request: not a control request" "garbage"
printf 'EC\001\001\377\377\000\000' | raw "^ERROR 22 bad request: request too large" "64 KiB header"
# a capture request forged with 5000 Hz
printf 'EC\001\001\015\000\000\000\001\210\023\000\000\210\023\000\000\322\004\000\000' |
	raw "^ERROR 22 bad request: hz 5000 is out of range 1..999" "5000 Hz"
SILENT=()
for i in $(seq 1 16); do
	"$CTLRAW" "$RUN/control" </dev/null >"$T/silent.$i" &
	SILENT+=("$!")
done
sleep 1
raw "^ERROR 16 too many emberctl connections" "17th connection" </dev/null
wait "${SILENT[@]}" || fail "a silent client was not dropped: $(cat "$T"/silent.*)"
for i in $(seq 1 16); do
	awk '/^CLOSED/ { exit !($2 >= 4.9 && $2 < 10) } END { if (NR != 1) exit 1 }' "$T/silent.$i" ||
		fail "silent client $i: $(cat "$T/silent.$i") (expected CLOSED after 5..10 s)"
done
grep -q "sent no request in time: dropped" "$T/emberd.log" || fail "emberd did not log the drop"
pass "garbage, oversized and out-of-range requests refused in one line; 16 silent clients dropped after 5 s, a 17th refused"

# 5. --app: every process of an [app] (matched by comm), one started meanwhile included
cap --app burner --hz $HZ --duration 4s -o "$T/app.pb.gz" 2>"$T/app.err" &
APP=$!
wait_for "$T/app.err" "Ctrl-C cancels"
sleep 1
"$BUSY" 2 >/dev/null &
LATE=$!
PIDS+=("$LATE")
wait "$APP" || fail "app capture failed: $(cat "$T/app.err")"
pprof_top "$T/app.pb.gz" -sample_index=samples >"$T/apptop.txt"
appn=$(total_of "$T/apptop.txt")
[ "$(flat_of "$T/apptop.txt" burn)" -ge $((appn * 9 / 10)) ] && [ "$appn" -ge 200 ] ||
	fail "app capture: $appn samples, burn $(flat_of "$T/apptop.txt" burn)"
# 2 processes; a sanitizer build's leak checker adds a short-lived clone of one at its exit
grep -Eq "samples of app burner \([2-9] processes\)" "$T/app.err" ||
	fail "the app capture did not sample the process started during it: $(cat "$T/app.err")"
pprof_top "$T/app.pb.gz" -sample_index=samples -tagfocus="pid=$LATE" >"$T/late.txt"
late=$(shown_of "$T/late.txt")
[ "${late:-0}" -ge 20 ] || fail "the late process has ${late:-0} samples (expected >= 20)"
cap --app nosuchapp --duration 1s -o "$T/none.pb.gz" 2>"$T/none.err" && fail "unknown app accepted"
grep -q "no running process belongs to app nosuchapp" "$T/none.err" ||
	fail "unclear refusal: $(cat "$T/none.err")"
cap --pid 2147483646 --duration 1s -o "$T/none.pb.gz" 2>"$T/none.err" && fail "missing pid accepted"
grep -q "no such process: pid 2147483646" "$T/none.err" || fail "unclear refusal: $(cat "$T/none.err")"
pass "app burner: $appn samples, $late of the process started during it; unknown app and pid refused clearly"

# 6. the socket goes away with emberd; then emberctl says emberd is not running
kill -TERM "$EMBERD_PID"
wait_emberd
[ ! -e "$RUN/control" ] || fail "emberd left its socket behind"
cap --pid "$WL" --duration 1s -o "$T/x.pb.gz" 2>"$T/down.err" && fail "capture without emberd succeeded"
grep -q "is emberd running?" "$T/down.err" || fail "unclear error without emberd: $(cat "$T/down.err")"
pass "socket removed at exit; emberctl: $(cat "$T/down.err")"
