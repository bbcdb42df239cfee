#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What off-CPU profiling costs: `perf bench sched pipe` (two tasks ping-ponging through a
# pipe, a context switch at every message: the worst case) and a CPU-bound loop (no
# switches but the scheduler's), each with emberd off, with emberd sampling CPU only
# (offcpu = off) and with offcpu = on at each offcpu_sample_period asked for. Runs the
# configurations alternately R times, prints the medians of the workload's time and their
# ratios to emberd off, and the off-CPU programs' run time per switch (bpf_stats).
# Figures only: it asserts nothing.
#
# usage: bench/offcpu.sh [-r REPEATS] [-l LOOPS] [-p "PERIODS"] [-e EMBERD]
#   -r  runs of each configuration, medians reported      (BENCH_REPEAT, 5)
#   -l  pipe messages per perf bench run                  (BENCH_LOOPS, 200000)
#   -p  offcpu_sample_period values to measure            (BENCH_PERIODS, "1 16")
#   -e  the emberd binary                                  (EMBERD, build/daemon/emberd)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPEAT=${BENCH_REPEAT:-5}
LOOPS=${BENCH_LOOPS:-200000}
PERIODS=${BENCH_PERIODS:-1 16}
EMBERD=${EMBERD:-$HERE/../build/daemon/emberd}

usage() { sed -n '11,15p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
BENCH_NAME=offcpu
. "$HERE/lib.sh"
while getopts 'r:l:p:e:h' opt; do
	bench_opt "$opt" "${OPTARG:-}" && continue # -r, -e
	case $opt in
	l) LOOPS=$OPTARG ;;
	p) PERIODS=$OPTARG ;;
	h) usage 0 ;;
	*) usage ;;
	esac
done
bench_emberd_setup
need perf "install linux-perf: the ping-pong is perf bench sched pipe"
need cc "install gcc: the CPU-bound loop is compiled here"

cat >"$T/spin.c" <<'EOF2'
#include <stdio.h>
#include <time.h>
/* A fixed amount of arithmetic; prints its CPU time in ns. */
int main(void)
{
	volatile unsigned long x = 0;
	struct timespec ts;

	for (unsigned long i = 0; i < 2000000000UL; i++)
		x = x * 31 + i;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	printf("%ld\n", ts.tv_sec * 1000000000L + ts.tv_nsec);
	return 0;
}
EOF2
cc -O2 -o "$T/spin" "$T/spin.c"
printf '[daemon]\n' >"$T/cpu-only.conf"
for p in $PERIODS; do
	printf '[daemon]\noffcpu = on\noffcpu_sample_period = %s\n' "$p" >"$T/offcpu-$p.conf"
done

start() { # config file
	"$EMBERD" --config "$1" --data-dir "$T/data" --runtime-dir "$T/run" >"$T/emberd.log" 2>&1 &
	EPID=$!
	for _ in $(seq 1 300); do
		grep -q "sampling .* CPUs" "$T/emberd.log" && return 0
		kill -0 "$EPID" 2>/dev/null || die "emberd exited: $(tail -2 "$T/emberd.log")"
		sleep 0.1
	done
	die "emberd did not start"
}
stop() { # config workload: the off-CPU programs' run time and count, then stop
	local name id line
	for id in $(grep -h '^prog_id:' /proc/"$EPID"/fdinfo/* | awk '{print $2}' | sort -un); do
		line=$(bpftool prog show id "$id" 2>/dev/null) || continue
		line=${line%%$'\n'*}
		name=$(sed -n 's/.* name \([a-z_]*\) .*/\1/p' <<<"$line")
		case $name in
		ember_offcpu_*)
			echo "$2 $1 $name $(sed -n 's/.*run_time_ns \([0-9]*\) run_cnt \([0-9]*\).*/\1 \2/p' <<<"$line")" >>"$T/bpf"
			;;
		esac
	done
	echo "$2 $1 emberd $(cpu_ns "$EPID")" >>"$T/emberd_cpu"
	kill "$EPID"
	wait "$EPID" || true
	EPID=
}
work() { # workload: prints its time in ns
	if [ "$1" = pipe ]; then
		perf bench sched pipe -l "$LOOPS" 2>/dev/null |
			awk '/usecs\/op/ { printf "%.0f\n", $1 * 1000 * '"$LOOPS"' }'
	else
		"$T/spin"
	fi
}
run() { # config workload
	case $1 in
	off) ;;
	cpu-only) start "$T/cpu-only.conf" ;;
	*) start "$T/$1.conf" ;;
	esac
	work "$2"
	[ "$1" = off ] || stop "$1" "$2"
}

echo 1 >/proc/sys/kernel/bpf_stats_enabled
CONFIGS="off cpu-only"
for p in $PERIODS; do CONFIGS="$CONFIGS offcpu-$p"; done
for r in $(seq "$REPEAT"); do
	for w in pipe spin; do
		for c in $CONFIGS; do
			echo "$w $c $(run "$c" "$w")" >>"$T/raw"
		done
	done
	log "run $r/$REPEAT done"
done

echo "| workload | configuration | ms (median of $REPEAT) | ratio to off | all runs, ms |"
echo "| --- | --- | --- | --- | --- |"
bench_ratio_table "$T/raw" "pipe spin" "$CONFIGS"
echo
echo "| workload | configuration | program | runs (median) | ns per run (median) |"
echo "| --- | --- | --- | --- | --- |"
for w in pipe spin; do
	for c in $CONFIGS; do
		for p in ember_offcpu_sw ember_offcpu_wa; do
			cnt=$(awk -v w="$w" -v c="$c" -v p="$p" '$1 == w && $2 == c && index($3, p) == 1 { print $5 }' "$T/bpf" 2>/dev/null | median)
			[ -n "$cnt" ] || continue
			ns=$(awk -v w="$w" -v c="$c" -v p="$p" '$1 == w && $2 == c && index($3, p) == 1 && $5 > 0 { print $4 / $5 }' "$T/bpf" | median)
			printf '| %s | %s | %s | %s | %.0f |\n' "$w" "$c" "$p" "$cnt" "$ns"
		done
	done
done
echo
echo "| workload | configuration | emberd CPU ms (median) |"
echo "| --- | --- | --- |"
for w in pipe spin; do
	for c in $CONFIGS; do
		[ "$c" = off ] && continue
		m=$(awk -v w="$w" -v c="$c" '$1 == w && $2 == c { print $4 }' "$T/emberd_cpu" | median)
		printf '| %s | %s | %.0f |\n' "$w" "$c" "$(echo "$m / 1000000" | bc -l)"
	done
done
