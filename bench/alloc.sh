#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What libember_alloc.so costs a malloc-heavy program: a 64-byte malloc/free loop on 4
# threads (next to a 64 MiB resident heap), unprofiled; under the library with no profiler
# attached (semaphores 0); and with sampling forced on (EMBER_ALLOC_FORCE_SAMPLING=1: an
# attached profiler without BPF, the probe sites being nops), with the resident heap (so
# sampled pointers are live and every free looks in the live set) and without it. Runs
# the configurations round-robin R times and prints the medians and their ratios to the
# unprofiled run; and, for scale, under a bare wrapper whose malloc and free only jump to
# glibc's (what any LD_PRELOAD interposer costs at least). As root, two more: with emberd
# attached in inuse mode (its USDT programs on the library's probes, semaphores set by
# the kernel), and with direct uprobes on glibc's malloc and free (bpftrace, for scale).
# Figures only: it asserts nothing about timings.
#
# usage: bench/alloc.sh [-r REPEATS] [-n PAIRS] [-t THREADS] [-s SIZE] [-b BUILD_DIR] [-o LIB]
#   -r  runs of each configuration, medians reported         (BENCH_REPEAT, 7)
#   -n  malloc/free pairs per thread                         (BENCH_PAIRS, 20000000)
#   -t  threads                                              (BENCH_THREADS, 4)
#   -s  allocation size, bytes                               (BENCH_SIZE, 64)
#   -b  the build directory with alloc/libember_alloc.so     (BUILD, build)
#   -o  another libember_alloc.so (an older build) run beside it, as *-old rows
# Build first: cmake --build build --target ember_alloc ember_alloc_bench emberd
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPEAT=${BENCH_REPEAT:-7}
PAIRS=${BENCH_PAIRS:-20000000}
THREADS=${BENCH_THREADS:-4}
SIZE=${BENCH_SIZE:-64}
BUILD=${BUILD:-$HERE/../build}

usage() { sed -n '15,22p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
OLD=
while getopts 'r:n:t:s:b:o:h' opt; do
	case $opt in
	r) REPEAT=$OPTARG ;;
	n) PAIRS=$OPTARG ;;
	t) THREADS=$OPTARG ;;
	s) SIZE=$OPTARG ;;
	b) BUILD=$OPTARG ;;
	o) OLD=$OPTARG ;;
	h) usage 0 ;;
	*) usage ;;
	esac
done

LIB=$BUILD/alloc/libember_alloc.so
LOOP=$BUILD/alloc/ember_alloc_bench
[ -f "$LIB" ] && [ -x "$LOOP" ] ||
	{ echo "bench/alloc.sh: build first: cmake --build $BUILD --target ember_alloc ember_alloc_bench" >&2; exit 1; }

command -v cc >/dev/null || { echo "bench/alloc.sh: needs cc (the bare wrapper)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
BARE=$TMP/bare.so
cat >"$TMP/bare.c" <<'EOF2'
#include <stddef.h>
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
static void *(*next_malloc)(size_t) = __libc_malloc;
static void (*next_free)(void *) = __libc_free;
void *malloc(size_t size) { return next_malloc(size); }
void free(void *p) { next_free(p); }
EOF2
cc -O2 -shared -fPIC -fno-builtin-malloc -fno-builtin-free -Wl,-z,now -o "$BARE" "$TMP/bare.c"

CONFIGS="unprofiled bare-wrapper no-profiler sampling sampling-live"
[ -z "$OLD" ] || { [ -f "$OLD" ] || { echo "bench/alloc.sh: -o $OLD: no such file" >&2; exit 1; }
	CONFIGS="$CONFIGS no-profiler-old sampling-live-old"; }
EMBERD=$BUILD/daemon/emberd
if [ "$(id -u)" -eq 0 ] && [ -x "$EMBERD" ]; then
	# emberd attaches to a copy of the loop under another name (the other rows' loop
	# must not be attached: their semaphores would be set) when it execs, then its alloc
	# and free programs run on every sampled pair; their run times are counted
	cp "$LOOP" "$TMP/ember_inuse_loop"
	printf '[daemon]\ngrowth_fault_period = 0\n[app "bench"]\nmatch.comm = ember_inuse_*\nmemory = inuse\n' \
		>"$TMP/ember.conf"
	OLD_BPF_STATS=$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null || echo 0)
	echo 1 >/proc/sys/kernel/bpf_stats_enabled 2>/dev/null || true
	"$EMBERD" --config "$TMP/ember.conf" --data-dir "$TMP/data" --runtime-dir "$TMP/run" \
		--hz 99 --interval 10s >"$TMP/emberd.log" 2>&1 &
	EMBERD_PID=$!
	trap 'kill "$EMBERD_PID" 2>/dev/null; echo "$OLD_BPF_STATS" >/proc/sys/kernel/bpf_stats_enabled 2>/dev/null; rm -rf "$TMP"' EXIT
	for _ in $(seq 1 300); do
		grep -q "sampling .* CPUs" "$TMP/emberd.log" && break
		sleep 0.1
	done
	CONFIGS="$CONFIGS emberd-inuse"
	[ -z "$OLD" ] || CONFIGS="$CONFIGS emberd-inuse-old"
	command -v bpftrace >/dev/null && CONFIGS="$CONFIGS uprobes"
fi
LIBC=$(ldd "$LOOP" | awk '/libc\.so/ { print $3 }')
run() { # config -> "cpu_ns wall_ns" per pair
	case $1 in
	unprofiled) "$LOOP" "$THREADS" "$PAIRS" "$SIZE" 64 ;;
	bare-wrapper) LD_PRELOAD=$BARE "$LOOP" "$THREADS" "$PAIRS" "$SIZE" 64 ;;
	no-profiler) LD_PRELOAD=$LIB "$LOOP" "$THREADS" "$PAIRS" "$SIZE" 64 ;;
	sampling) EMBER_ALLOC_FORCE_SAMPLING=1 LD_PRELOAD=$LIB "$LOOP" "$THREADS" "$PAIRS" "$SIZE" 0 ;;
	sampling-live) EMBER_ALLOC_FORCE_SAMPLING=1 LD_PRELOAD=$LIB "$LOOP" "$THREADS" "$PAIRS" "$SIZE" 64 ;;
	emberd-inuse) LD_PRELOAD=$LIB "$TMP/ember_inuse_loop" "$THREADS" "$PAIRS" "$SIZE" 64 ;;
	no-profiler-old) LD_PRELOAD=$OLD "$LOOP" "$THREADS" "$PAIRS" "$SIZE" 64 ;;
	sampling-live-old) EMBER_ALLOC_FORCE_SAMPLING=1 LD_PRELOAD=$OLD "$LOOP" "$THREADS" "$PAIRS" "$SIZE" 64 ;;
	emberd-inuse-old) LD_PRELOAD=$OLD "$TMP/ember_inuse_loop" "$THREADS" "$PAIRS" "$SIZE" 64 ;;
	uprobes) # a hundredth of the pairs: each costs ~100x more; per-pair figures compare
		bpftrace -q -e "uprobe:$LIBC:malloc { @m = count(); } uprobe:$LIBC:free { @f = count(); }" \
			-c "$LOOP $THREADS $((PAIRS / 100)) $SIZE 64" 2>/dev/null | grep -E '^[0-9.]+ [0-9.]+$' ;;
	esac
}

RAW=$TMP/raw
echo "libember_alloc.so: $THREADS threads x $PAIRS malloc($SIZE)/free pairs, $REPEAT runs each, round-robin" >&2
for r in $(seq "$REPEAT"); do
	for c in $CONFIGS; do
		echo "$c $(run "$c")" >>"$RAW"
	done
	echo "  run $r/$REPEAT done" >&2
done

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
base_cpu=$(awk '$1 == "unprofiled" { print $2 }' "$RAW" | median)
base_wall=$(awk '$1 == "unprofiled" { print $3 }' "$RAW" | median)
echo
echo "| configuration | CPU ns per pair (median) | ratio | wall ns per pair per thread (median) | ratio | CPU ns, all runs |"
echo "| --- | ---: | ---: | ---: | ---: | --- |"
for c in $CONFIGS; do
	cpu=$(awk -v c="$c" '$1 == c { print $2 }' "$RAW" | median)
	wall=$(awk -v c="$c" '$1 == c { print $3 }' "$RAW" | median)
	all=$(awk -v c="$c" '$1 == c { printf "%s%.1f", sep, $2; sep = " " }' "$RAW")
	awk -v c="$c" -v cpu="$cpu" -v wall="$wall" -v bc="$base_cpu" -v bw="$base_wall" -v all="$all" \
		'BEGIN { printf "| %s | %.2f | %.3f | %.1f | %.3f | %s |\n", c, cpu, cpu / bc, wall, wall / bw, all }'
done
echo
echo "unprofiled: no preload. bare-wrapper: malloc and free that only jump to glibc's."
echo "no-profiler: preloaded, semaphores 0. sampling: semaphores forced to 1, mean"
echo "interval 512 KiB, no resident heap (live set mostly empty)."
echo "sampling-live: the same with 64 MiB resident in 64 KiB blocks (~128 sampled pointers"
echo "live, so every free is looked up). CPU = thread CPU time (robust to a shared machine)."
echo "emberd-inuse: emberd running with memory = inuse for the loop (attached at its exec)."
echo "uprobes: bpftrace counting glibc's malloc and free (1/100 of the pairs)."
if [ -n "${EMBERD_PID:-}" ] && command -v bpftool >/dev/null; then
	# the USDT programs' own run time (the traps into them are not in it)
	for id in $(grep -h '^prog_id:' /proc/"$EMBERD_PID"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -un); do
		line=$(bpftool prog show id "$id" 2>/dev/null) || continue
		line=${line%%$'\n'*}
		case $line in
		*" name ember_alloc "* | *" name ember_free "*)
			sed -n 's/.* name \([a-z_]*\) .*run_time_ns \([0-9]*\) run_cnt \([0-9]*\).*/\1 \2 \3/p' <<<"$line" |
				awk '$3 > 0 { printf "BPF %s: %d runs, %.0f ns a run\n", $1, $3, $2 / $3 }' ;;
		esac
	done
fi
[ -z "$OLD" ] || echo "*-old: the same under $OLD."
