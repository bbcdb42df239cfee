#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What an emergency malloc capture (emberctl capture --type malloc) costs the process
# it probes: one thread doing N malloc(64)/free pairs, D frames below main, unprobed
# ("none"); under the capture ("capture": uprobes on malloc, calloc and realloc, each
# walking the stack); and for scale under a bare uprobe (bpftrace, a count, no stack) on
# malloc alone ("malloc-uprobe": the trap's own cost) and, to weigh the choice not to
# probe free(), on free alone ("free-uprobe"). R runs each, round-robin; prints the
# medians of the thread CPU time per pair and their ratio to "none". Figures only: it
# asserts nothing about timings.
#
# usage: bench/malloc_capture.sh [-r REPEATS] [-n PAIRS] [-D DEPTH] [-e EMBERD] [-o REPORT]
#   -r  runs of each configuration, medians reported   (BENCH_REPEAT, 5)
#   -n  malloc/free pairs per run                      (BENCH_PAIRS, 500000)
#   -D  frames between main and the allocating call    (BENCH_DEPTH, 8)
#   -e  the emberd binary (emberctl next to it)        (EMBERD, build/daemon/emberd)
#   -o  also write the table to this file
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
BENCH_NAME=malloc_capture
. "$HERE/lib.sh"
REPEAT=${BENCH_REPEAT:-5}
PAIRS=${BENCH_PAIRS:-500000}
DEPTH=${BENCH_DEPTH:-8}
EMBERD=${EMBERD:-$HERE/../build/daemon/emberd}
REPORT=
DURATION=2

usage() { sed -n '12,17p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
while getopts 'r:n:D:e:o:h' opt; do
	case $opt in
	n) PAIRS=$OPTARG ;;
	D) DEPTH=$OPTARG ;;
	h) usage 0 ;;
	*) bench_opt "$opt" "${OPTARG:-}" || usage ;;
	esac
done
bench_check_counts
[[ $PAIRS =~ ^[0-9]+$ && $PAIRS -ge 1000 ]] || die "-n wants a count >= 1000, not '$PAIRS'"
[[ $DEPTH =~ ^[0-9]+$ && $DEPTH -le 200 ]] || die "-D wants 0..200 frames, not '$DEPTH'"
[ "$(id -u)" -eq 0 ] || die "must run as root (uprobes, emberd)"
EMBERCTL=$(dirname "$EMBERD")/../cli/emberctl
[ -x "$EMBERD" ] && [ -x "$EMBERCTL" ] || die "build first: no $EMBERD or $EMBERCTL"
need cc "the workload is compiled on the spot"

TMP=$(mktemp -d /tmp/ember-mbench.XXXXXX)
EMBERD_PID=
cleanup() {
	[ -z "$EMBERD_PID" ] || { kill "$EMBERD_PID" 2>/dev/null; wait "$EMBERD_PID" 2>/dev/null || true; }
	rm -rf "$TMP"
}
trap cleanup EXIT

# The workload waits for a line on stdin (the probes are attached by then), runs, and
# prints the thread CPU ns of one pair; distribution flags, no frame pointers.
cat >"$TMP/loop.c" <<'EOF2'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static void *volatile sink;
static double ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}
__attribute__((noinline)) static void pairs(long n)
{
	for (long i = 0; i < n; i++) {
		sink = malloc(64);
		free(sink);
	}
}
__attribute__((noinline)) static void down(int d, long n)
{
	if (d > 0)
		down(d - 1, n);
	else
		pairs(n);
	__asm__ volatile("" ::: "memory"); /* not a tail call: a real frame each */
}
int main(int argc, char **argv)
{
	char line[8];
	long n = atol(argv[1]);
	double t0;

	if (!fgets(line, sizeof(line), stdin))
		return 1;
	t0 = ns();
	down(atoi(argv[2]), n);
	printf("%.2f\n", (ns() - t0) / (double)n);
	return 0;
}
EOF2
cc -g -O2 -fomit-frame-pointer -o "$TMP/loop" "$TMP/loop.c" || die "cannot build the workload"

"$EMBERD" --data-dir "$TMP/data" --runtime-dir "$TMP/run" >"$TMP/emberd.log" 2>&1 &
EMBERD_PID=$!
for _ in $(seq 1 300); do grep -q "sampling .* CPUs" "$TMP/emberd.log" && break; sleep 0.1; done
grep -q "sampling .* CPUs" "$TMP/emberd.log" || die "emberd did not start: $(cat "$TMP/emberd.log")"

CONFIGS="none capture"
command -v bpftrace >/dev/null && CONFIGS="$CONFIGS malloc-uprobe free-uprobe" ||
	log "no bpftrace: malloc-uprobe and free-uprobe left out"

# wait_line FILE PATTERN: up to 30 s
wait_line() {
	for _ in $(seq 1 300); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	die "'$2' did not appear in $1: $(cat "$1")"
}

run() { # config -> ns per pair
	local fifo=$TMP/go pid cap=
	rm -f "$fifo" "$TMP/cap.err" "$TMP/bt.out"
	mkfifo "$fifo"
	"$TMP/loop" "$PAIRS" "$DEPTH" <"$fifo" >"$TMP/out" &
	pid=$!
	exec 9>"$fifo"
	case $1 in
	capture)
		"$EMBERCTL" capture --runtime-dir "$TMP/run" --type malloc --pid "$pid" \
			--duration 60s -o "$TMP/m.pb.gz" 2>"$TMP/cap.err" &
		cap=$!
		wait_line "$TMP/cap.err" "Ctrl-C cancels" ;;
	malloc-uprobe | free-uprobe)
		bpftrace -p "$pid" -e "uprobe:libc:${1%-uprobe} { @n = count(); }" >"$TMP/bt.out" 2>&1 &
		cap=$!
		wait_line "$TMP/bt.out" "Attaching"
		sleep 1 ;; # bpftrace says so before the probe is in place (seen: a run at full speed)
	esac
	echo go >&9
	exec 9>&-
	wait "$pid" || die "the workload failed ($1)"
	if [ -n "$cap" ]; then
		if [ "$1" != capture ]; then kill -INT "$cap"; fi
		wait "$cap" || true
	fi
	cat "$TMP/out"
}

RAW=$TMP/raw
log "$PAIRS malloc(64)/free pairs at depth $DEPTH, $REPEAT runs each, round-robin: $CONFIGS"
for r in $(seq "$REPEAT"); do
	for c in $CONFIGS; do
		echo "$c $(run "$c")" >>"$RAW"
	done
	log "run $r/$REPEAT done"
done

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
base=$(awk '$1 == "none" { print $2 }' "$RAW" | median)
{
	echo "| configuration | CPU ns per malloc/free pair (median) | ratio to none | all runs |"
	echo "| --- | ---: | ---: | --- |"
	for c in $CONFIGS; do
		m=$(awk -v c="$c" '$1 == c { print $2 }' "$RAW" | median)
		all=$(awk -v c="$c" '$1 == c { printf "%s%s", sep, $2; sep = " " }' "$RAW")
		awk -v c="$c" -v m="$m" -v b="$base" -v all="$all" \
			'BEGIN { printf "| %s | %.1f | %.1f | %s |\n", c, m, m / b, all }'
	done
} | tee "${REPORT:-/dev/null}"
