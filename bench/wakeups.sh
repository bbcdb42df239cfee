#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# emberd's steady cost thread by thread: one busy loop per CPU, emberd at 19 Hz with
# 10 s intervals, and after a settling time, each thread's on-CPU time and the times
# it was scheduled in (for an idle daemon's thread: its wakeups) from the first and
# third fields of /proc/PID/task/*/schedstat over the measured window, per 10 s
# interval. With several binaries (-e A -e B) the runs alternate, so that a shared
# host's drift falls on both alike. On a guest, an idle thread's wakeup can
# cost more than the work it wakes for: this is where they show. It prints figures;
# it asserts nothing.
#
# usage: bench/wakeups.sh [-d SECONDS] [-r REPEATS] [-s SETTLE] [-e EMBERD]...
#   -d  measured window, seconds (60): whole 10 s intervals, since an idle emberd
#       may not wake at all between two
#   -r  rounds over the binaries              (3)
#   -s  seconds after emberd starts sampling before the window opens (25: start-up
#       work, the unwinder's tables and the symbolizer's first reads, is left out)
#   -e  an emberd binary; repeat for an A/B   (build/daemon/emberd)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/.." && pwd)
DURATION=60
REPEAT=3
SETTLE=25
BINS=()
BENCH_NAME=wakeups
. "$HERE/lib.sh"
usage() { sed -n '12,18p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
while getopts 'd:r:s:e:h' opt; do
	# -e may come more than once: not bench_opt's single EMBERD
	[ "$opt" = e ] && { BINS+=("$OPTARG"); continue; }
	bench_opt "$opt" "${OPTARG:-}" && continue
	[ "$opt" = s ] && { SETTLE=$OPTARG; continue; }
	[ "$opt" = h ] && usage 0
	usage
done
bench_check_counts
[[ $SETTLE =~ ^[0-9]+$ ]] || die "-s wants whole seconds, not '$SETTLE'"
[ "${#BINS[@]}" -gt 0 ] || BINS=("$SRC/build/daemon/emberd")
EMBERD=${BINS[0]}
bench_emberd_setup
for b in "${BINS[@]}"; do [ -x "$b" ] || die "emberd not built at $b"; done
SPIN=()
stop_spin() { for p in "${SPIN[@]}"; do kill "$p" 2>/dev/null || true; done; SPIN=(); }
trap 'stop_spin; bench_emberd_cleanup' EXIT

# tid, on-CPU ns, times scheduled in and name of every thread of PID, in thread order
threads() {
	local f d comm
	for f in /proc/"$1"/task/*/schedstat; do
		d=$(dirname "$f")
		read -r ns _ sw <"$f" 2>/dev/null || continue
		read -r comm <"$d/comm" 2>/dev/null || comm=?
		echo "$(basename "$d") $ns $sw ${comm// /_}"
	done | sort # as join(1) wants: by tid as text
}

# one_run BIN ROUND: prints one line per thread (its rank, not its tid) and the total
one_run() {
	local bin=$1 round=$2 i
	for i in $(seq 1 "$(nproc)"); do (while :; do :; done) & SPIN+=("$!"); done
	rm -rf "$T/data"
	"$bin" --data-dir "$T/data" --runtime-dir "$T/run" --hz 19 --interval 10s >"$T/emberd.log" 2>&1 &
	EPID=$!
	for i in $(seq 1 300); do grep -q "sampling .* CPUs" "$T/emberd.log" && break; sleep 0.1; done
	grep -q "sampling .* CPUs" "$T/emberd.log" || die "emberd did not start: $(tail -3 "$T/emberd.log")"
	sleep "$SETTLE"
	threads "$EPID" >"$T/s0"
	sleep "$DURATION"
	threads "$EPID" >"$T/s1"
	kill "$EPID"
	wait "$EPID" 2>/dev/null || true
	EPID=
	stop_spin
	join "$T/s0" "$T/s1" | awk -v d="$DURATION" -v r="$round" -v b="$bin" '
		{ ms = ($5 - $2) / 1e6 / d * 10; w = ($6 - $3) / d * 10; tms += ms; tw += w
		  printf "| %s | %s | %s | %.3f | %.1f |\n", r, b, $4, ms, w }
		END { printf "| %s | %s | **all** | **%.3f** (%.4f %% of one CPU) | **%.1f** |\n", r, b, tms, tms / 100, tw }'
}

log "$REPEAT rounds of ${#BINS[@]} binaries: ${SETTLE} s settling, ${DURATION} s measured each"
echo "| round | emberd | thread | ms of CPU per 10 s | wakeups per 10 s |"
echo "| --- | --- | --- | ---: | ---: |"
for r in $(seq 1 "$REPEAT"); do
	for b in "${BINS[@]}"; do one_run "$b" "$r"; done
done
