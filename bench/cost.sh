#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What emberd costs at steady state on a quiet host and on one where commands
# come and go, next to a peer measured in the same run: the CPU of the
# profiler's threads and of its BPF programs, its RSS and BPF map memory, and,
# so that figures compare across machines, its system calls, bpf() calls and
# page faults per 10 s interval, the CPU per process forked on the host and the
# unwind tables emberd built (from its -v log); then the cost of one new process.
# Start-up CPU and the instructions the verifier went through are printed per emberd run.
# It prints figures and ratios; it never asserts on timings.
#
# usage: bench/cost.sh [-w WARMUP] [-d WINDOW] [-r REPEATS] [-z HZ] [-e EMBERD]
#                      [-b EMBERD2] [-p PEERS] [-o REPORT.md] [-k RAW.tsv]
#   -w  seconds after the profiler is ready before measuring  (BENCH_WARMUP, 30)
#   -d  seconds measured                                       (BENCH_DURATION, 60)
#   -r  interleaved repetitions; medians and spreads reported  (BENCH_REPEAT, 3)
#   -z  sampling rate of emberd and of the peer                (BENCH_HZ, 19)
#   -e  the emberd binary                                      (EMBERD: build/)
#   -b  a second emberd to compare (another commit's build), shown as emberd-b
#   -p  peers: otel, bpftrace, floor and/or none               (BENCH_PEERS, bpftrace)
#   -o  also write the report to this file
#   -k  also write the raw per-run rows (TSV) to this file
# The host keeps two CPU-bound processes throughout (as a busy host has). "quiet"
# adds nothing; "loop" adds issue 46's command loop: python3 -c, gcc -c and
# git --version one after the other, 0.3 s apart (~8 new processes a second;
# the distribution's /usr/bin/python3, not a version manager's shim: pyenv's
# runs some 25 processes of its own at each call).
# Peers: "otel", the OpenTelemetry eBPF profiler (issue 46's peer; built as
# bench/peer.sh builds it, exporting to a local receiver) at its default 20 Hz
# beside emberd's 19 (at -z HZ otherwise); bpftrace's `profile:hz:HZ` keeping user
# and kernel stacks in a map (named at exit); "floor", bpftrace's `profile:hz:HZ`
# counting samples by pid alone, the least a sampler's BPF program can do.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/.." && pwd)
WARMUP=${BENCH_WARMUP:-30}
DURATION=${BENCH_DURATION:-60}
REPEAT=${BENCH_REPEAT:-3}
HZ=${BENCH_HZ:-19}
PEERS=${BENCH_PEERS:-bpftrace}
EMBERD=${EMBERD:-$SRC/build/daemon/emberd}
EMBERD2=
REPORT=
RAWOUT=

usage() { sed -n '11,32p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
BENCH_NAME=cost
. "$HERE/lib.sh"
cost_opt() {
	case $1 in
	w) WARMUP=$2 ;;
	z) HZ=$2 ;;
	b) EMBERD2=$2 ;;
	p) PEERS=$2 ;;
	*) return 1 ;;
	esac
}
bench_getopts 'w:d:r:z:e:b:p:o:k:h' cost_opt "$@"
bench_check_counts
[[ $WARMUP =~ ^[0-9]+$ ]] || die "-w wants whole seconds"
[[ $HZ =~ ^[0-9]+$ && $HZ -ge 1 && $HZ -le 999 ]] || die "-z wants 1..999"
bench_emberd_setup
[ -z "$EMBERD2" ] || [ -x "$EMBERD2" ] || die "no emberd at $EMBERD2"
need perf "install linux-perf: system calls are counted with perf stat"
need cc "install gcc: the CPU-bound processes are compiled here"
# the distribution's python3, as a service's command runs it
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || die "the command loop runs python3 -c: install python3"
need git "the command loop runs git --version"
case ",$PEERS," in *,bpftrace,* | *,floor,*) need bpftrace "install bpftrace, the peer" ;; esac
OTEL_ARGS=()
[ "$HZ" = 19 ] || OTEL_ARGS=(-samples-per-second "$HZ") # else both at their defaults
# perf stat names tracepoints through tracefs
[ -d /sys/kernel/tracing/events/raw_syscalls ] || mount -t tracefs nodev /sys/kernel/tracing ||
	die "tracefs is not mounted and cannot be"

PROFILERS=emberd
[ -z "$EMBERD2" ] || PROFILERS+=" emberd-b"
for p in ${PEERS//,/ }; do
	case $p in
	otel) PROFILERS+=" otel" ;;
	bpftrace) PROFILERS+=" bpftrace" ;;
	floor) PROFILERS+=" floor" ;;
	none) ;;
	*) die "unknown peer '$p'" ;;
	esac
done

# --- the host's load: two busy processes, and the command loop --------------------
BUSY=()
LOOP=
cat >"$T/spin.c" <<'EOF'
int main(void)
{
	for (volatile unsigned long x = 0;; x++)
		;
}
EOF
cc -O1 -o "$T/spin" "$T/spin.c"
echo 'int f(int x) { return 3 * x; }' >"$T/a.c"
cat >"$T/loop.sh" <<EOF
#!/bin/bash
while :; do
	$PY -c 'import json; json.dumps({"a": 1})'; sleep 0.3
	gcc -c -o "$T/a.o" "$T/a.c"; sleep 0.3
	git --version >/dev/null; sleep 0.3
done
EOF
chmod +x "$T/loop.sh"
stop_load() {
	[ -z "$LOOP" ] || { kill "$LOOP" 2>/dev/null; wait "$LOOP" 2>/dev/null || true; LOOP=; }
}
PID=
cleanup_all() {
	[ -z "$PID" ] || { kill -INT "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; }
	otel_stop
	stop_load
	for p in "${BUSY[@]}"; do kill "$p" 2>/dev/null || true; done
	bench_emberd_cleanup
}
trap cleanup_all EXIT
[[ " $PROFILERS " != *" otel "* ]] || otel_build
for _ in 1 2; do
	"$T/spin" &
	BUSY+=($!)
done
echo 1 >/proc/sys/kernel/bpf_stats_enabled

# --- figures of one process -------------------------------------------------------
# minor + major page faults of PID (all its threads)
faults() { awk '{ print $10 + $12 }' /proc/"$1"/stat; }
# VmRSS of PID in KiB
rss_kib() { awk '/^VmRSS:/ { print $2 }' /proc/"$1"/status; }
# bytes of the BPF maps PID holds (memlock of each map once, from fdinfo)
map_bytes() {
	local fd id ml seen=" " sum=0
	for fd in /proc/"$1"/fd/*; do
		[ "$(readlink "$fd" 2>/dev/null)" = anon_inode:bpf-map ] || continue
		id=$(awk '/^map_id:/ { print $2 }' "/proc/$1/fdinfo/${fd##*/}" 2>/dev/null)
		ml=$(awk '/^memlock:/ { print $2 }' "/proc/$1/fdinfo/${fd##*/}" 2>/dev/null)
		[ -n "$id" ] && [[ $seen != *" $id "* ]] || continue
		seen+="$id "
		sum=$((sum + ${ml:-0}))
	done
	echo "$sum"
}
# processes forked on the host since boot
forks() { awk '/^processes/ { print $2 }' /proc/stat; }
# "BUILT MS" of the unwind tables emberd (-v) built since its start, as its last interval
# logged them (0 0 for another profiler)
builds() {
	awk '/unwinder since the start: [0-9]+ tables built in/ {
		for (i = 1; i < NF; i++) if ($i == "built" && $(i + 1) == "in") { b = $(i - 2); ms = $(i + 2) }
	} END { print b + 0, ms + 0 }' "$T/log.$1" 2>/dev/null || echo 0 0
}

# window_count EVENT START W0 W1: EVENT's count in perf stat -I 1000's seconds (started at
# START) that fall between W0 and W1, scaled to W1 - W0 (epoch seconds)
window_count() {
	awk -F, -v e="$1" -v s="$2" -v w0="$3" -v w1="$4" '
		BEGIN { a = w0 - s; b = w1 - s }
		$4 == e && $1 + 0 > a && $1 + 0 <= b { sum += $2; n++ }
		END { printf "%.0f\n", n ? sum * (b - a) / n : 0 }' "$T/pstat"
}

# --- one run ----------------------------------------------------------------------
# ready PROFILER WORD: waits (at most 60 s) until PROFILER (PID) logs WORD, as it does once
# it samples; dies if it exits first or never does
ready() {
	local i
	for ((i = 0; i < 600; i++)); do
		grep -q "$2" "$T/log.$1" && return 0
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	die "$1 did not start: $(tail -3 "$T/log.$1")"
}

# start PROFILER: sets PID (the profiler) and waits until it samples
start() {
	local log=$T/log.$1
	case $1 in
	emberd | emberd-b)
		local bin=$EMBERD
		[ "$1" = emberd ] || bin=$EMBERD2
		rm -rf "$T/data" "$T/run"
		"$bin" -v --hz "$HZ" --data-dir "$T/data" --runtime-dir "$T/run" >"$log" 2>&1 &
		PID=$!
		EPID=$PID
		ready "$1" sampling
		;;
	bpftrace | floor)
		local key="ustack, kstack, comm, pid"
		[ "$1" = bpftrace ] || key=pid # the floor: a sample counted, no stack
		: >"$log"                       # ready() reads it at once
		bpftrace -e "profile:hz:$HZ { @[$key] = count(); }" >"$log" 2>&1 &
		PID=$!
		ready "$1" Attaching
		;;
	otel)
		otel_start "$log" "${OTEL_ARGS[@]}"
		PID=$OTEL_PID
		;;
	esac
}

# run REP SCENARIO PROFILER: one measured run, one raw row
run() {
	local rep=$1 scen=$2 prof=$3 c0 c1 b0 b1 f0 f1 k0 k1 st rss mb sys bpfc verified t0 t1 m0 m1
	local p0 p1 r0 r1 pstat p_at w0 w1
	[ "$scen" = quiet ] || { "$T/loop.sh" >/dev/null 2>&1 & LOOP=$!; }
	start "$prof"
	st=$(cpu_ns "$PID")
	verified=$(sed -n 's/.*instructions verified: .*; \([0-9]*\) in all$/\1/p' "$T/log.$prof" 2>/dev/null |
		awk '{ s += $1 } END { print s + 0 }')
	# counting from the warm-up on: perf's own start (a new process, whose binaries emberd
	# reads and builds tables for) falls before the window; the window's seconds are summed
	perf stat -I 1000 -x, -e raw_syscalls:sys_enter,syscalls:sys_enter_bpf -p "$PID" \
		-o "$T/pstat" 2>/dev/null &
	pstat=$!
	p_at=$(date +%s.%N)
	sleep "$WARMUP"
	w0=$(date +%s.%N)
	c0=$(cpu_ns "$PID")
	read -r p0 r0 b0 _ <<<"$(bpf_stats "$PID")"
	f0=$(faults "$PID")
	k0=$(forks)
	read -r t0 m0 <<<"$(builds "$prof")"
	sleep "$DURATION"
	w1=$(date +%s.%N)
	c1=$(cpu_ns "$PID")
	read -r p1 r1 b1 _ <<<"$(bpf_stats "$PID")"
	f1=$(faults "$PID")
	k1=$(forks)
	read -r t1 m1 <<<"$(builds "$prof")"
	rss=$(rss_kib "$PID")
	mb=$(map_bytes "$PID")
	kill -INT "$pstat" 2>/dev/null || true
	wait "$pstat" 2>/dev/null || true
	sys=$(window_count raw_syscalls:sys_enter "$p_at" "$w0" "$w1")
	bpfc=$(window_count syscalls:sys_enter_bpf "$p_at" "$w0" "$w1")
	kill -INT "$PID" 2>/dev/null || true
	wait "$PID" 2>/dev/null || true
	otel_stop # the peer's receiver
	EPID=
	PID=
	# the verifier's work per program, as the last run of each emberd logged it
	[[ $prof != emberd* ]] || grep -h 'instructions verified:' "$T/log.$prof" |
		sed 's/.*debug: bpf //' >"$T/verified.$prof" || true
	stop_load
	# rep scenario profiler proc_ns bpf_ns window_s rss_kib map_bytes syscalls bpf_calls
	# faults forks start_ns verified tables_built build_ms sampling_ns sampling_runs
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$scen" \
		"$prof" $((c1 - c0)) $((b1 - b0)) "$DURATION" "$rss" "$mb" "${sys:-0}" "${bpfc:-0}" \
		$((f1 - f0)) $((k1 - k0)) "$st" "$verified" $((t1 - t0)) "$(awk -v a="$m0" -v b="$m1" \
		'BEGIN { print b - a }')" $((p1 - p0)) $((r1 - r0)) >>"$T/raw"
	log "run $rep $scen $prof: process $(((c1 - c0) / 1000000)) ms, BPF $(((b1 - b0) / 1000000)) ms"
}

: >"$T/raw"
for ((r = 1; r <= REPEAT; r++)); do
	for scen in quiet loop; do
		for prof in $PROFILERS; do
			run "$r" "$scen" "$prof"
		done
	done
done
[ -z "$RAWOUT" ] || cp "$T/raw" "$RAWOUT"

# --- the report -------------------------------------------------------------------
# col SCEN PROF EXPR: EXPR (awk, over the raw row's fields) of each run, one a line
col() {
	awk -F'\t' -v s="$1" -v p="$2" '$2 == s && $3 == p { w = $6; print '"$3"' }' "$T/raw"
}
# med SCEN PROF EXPR FMT: "median (min-max)" of EXPR
med() {
	local m lo hi
	m=$(col "$1" "$2" "$3" | median)
	lo=$(col "$1" "$2" "$3" | sort -g | head -1)
	hi=$(col "$1" "$2" "$3" | sort -g | tail -1)
	printf "$4 ($4-$4)" "$m" "$lo" "$hi"
}
PCT_PROC='$4 / (w * 1e7)'
PCT_BPF='$5 / (w * 1e7)'
PCT_ALL='($4 + $5) / (w * 1e7)'
PER_FORK='($4 + $5) / ($12 > 0 ? $12 : 1) / 1e3'
{
	echo "kernel $(uname -r), $(nproc) CPUs, $HZ Hz, ${WARMUP} s warm-up, ${DURATION} s windows," \
		"$REPEAT interleaved runs; medians (min-max). Two CPU-bound processes throughout."
	echo
	echo "| host | profiler | process % of one CPU | BPF % | total % | RSS MB | BPF maps MiB |" \
		"syscalls / 10 s | bpf() / 10 s | faults / 10 s | host forks / s | us / host fork |" \
		"tables built / 10 s | their build % | BPF ns / sampling run |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	for scen in quiet loop; do
		for prof in $PROFILERS; do
			printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
				"$scen" "$prof" "$(med $scen $prof "$PCT_PROC" %.3f)" \
				"$(med $scen $prof "$PCT_BPF" %.3f)" "$(med $scen $prof "$PCT_ALL" %.3f)" \
				"$(med $scen $prof '$7 / 1024' %.1f)" "$(med $scen $prof '$8 / 1048576' %.1f)" \
				"$(med $scen $prof '$9 * 10 / w' %.0f)" "$(med $scen $prof '$10 * 10 / w' %.0f)" \
				"$(med $scen $prof '$11 * 10 / w' %.0f)" "$(med $scen $prof '$12 / w' %.1f)" \
				"$(med $scen $prof "$PER_FORK" %.0f)" "$(med $scen $prof '$15 * 10 / w' %.1f)" \
				"$(med $scen $prof '$16 / (w * 10)' %.2f)" \
				"$(med $scen $prof '$17 / ($18 > 0 ? $18 : 1)' %.0f)"
		done
	done
	echo
	echo "Cost of one new process (the loop's CPU, process + BPF, over the quiet run's, per" \
		"process forked on the host more than in the quiet run; medians of the runs' figures):"
	echo
	for prof in $PROFILERS; do
		q=$(col quiet "$prof" '($4 + $5) / w' | median)
		l=$(col loop "$prof" '($4 + $5) / w' | median)
		fq=$(col quiet "$prof" '$12 / w' | median)
		fl=$(col loop "$prof" '$12 / w' | median)
		awk -v p="$prof" -v q="$q" -v l="$l" -v fq="$fq" -v fl="$fl" 'BEGIN {
			if (fl > fq) printf "- %s: %.0f us of CPU per new process (%.1f more a second)\n", p, (l - q) / (fl - fq) / 1e3, fl - fq
			else printf "- %s: no more processes in the loop than quiet\n", p }'
	done
	for prof in emberd emberd-b; do
		[[ " $PROFILERS " == *" $prof "* ]] || continue
		echo "- $prof start-up: $(awk -F'\t' -v p="$prof" '$3 == p { print $13 / 1e6 }' "$T/raw" |
			median | xargs printf %.0f) ms of CPU to its first sample;" \
			"$(awk -F'\t' -v p="$prof" '$3 == p { print $14 }' "$T/raw" | median |
				xargs printf %.0f) instructions verified in all:"
		sed 's/^/  - /' "$T/verified.$prof" 2>/dev/null || true
	done
	for prof in emberd-b otel bpftrace floor; do
		[[ " $PROFILERS " == *" $prof "* ]] || continue
		for scen in quiet loop; do
			a=$(col $scen emberd '($4 + $5) / w' | median)
			b=$(col $scen "$prof" '($4 + $5) / w' | median)
			awk -v s="$scen" -v p="$prof" -v a="$a" -v b="$b" \
				'BEGIN { if (b > 0) printf "- %s: emberd / %s = %.2f (process + BPF)\n", s, p, a / b }'
		done
	done
} | tee "${REPORT:-/dev/null}"
