#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What off-CPU profiling costs: `perf bench sched pipe` (two tasks ping-ponging through a
# pipe, a context switch at every message: the worst case) and a CPU-bound loop (no
# switches but the scheduler's), each with emberd off, with emberd sampling CPU only
# (offcpu = off) and with offcpu = on at each offcpu_sample_period asked for. Runs the
# configurations alternately R times, prints the medians of the workload's time and their
# ratios to emberd off (kernel.bpf_stats_enabled off), then, in a second pass with
# bpf_stats on, the off-CPU programs' run time per run and per round trip, and the ratio
# that implies. With bcc's offcputime (bpfcc-tools) or libbpf-tools' installed and able to
# run, it is measured too (configuration "offcputime"); so are two empty programs on the
# same tracepoints (configuration "empty": the floor any program run at every switch and
# wakeup pays), the switch's alone (configuration "empty-switch": what the wakeup's program,
# which "who woke it" needs, adds to that floor), and one empty program on a perf software
# event that counts context switches
# and fires every 64th (configuration "perf-cs": the kernel's own sampling of switches,
# which runs no program at the others but counts each). Figures only: it asserts nothing.
#
# usage: bench/offcpu.sh [-r REPEATS] [-l LOOPS] [-p "PERIODS"] [-c CPU] [-e EMBERD] [-b EMBERD]
#   -r  runs of each configuration, medians reported      (BENCH_REPEAT, 5)
#   -l  pipe messages per perf bench run                  (BENCH_LOOPS, 200000)
#   -p  offcpu_sample_period values to measure            (BENCH_PERIODS, "64": the default)
#   -c  run the ping-pong's two tasks on this CPU only     (BENCH_PIN_CPU, none: the
#       scheduler's choice, whose placement changes the round trip 3-10x on a guest)
#   -e  the emberd binary                                  (EMBERD, build/daemon/emberd)
#   -b  another emberd to compare (configurations base-P)  (EMBERD_BASE, none)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPEAT=${BENCH_REPEAT:-5}
LOOPS=${BENCH_LOOPS:-200000}
PERIODS=${BENCH_PERIODS:-64}
PIN=${BENCH_PIN_CPU:-}
EMBERD=${EMBERD:-$HERE/../build/daemon/emberd}
BASE=${EMBERD_BASE:-}

usage() { sed -n '17,24p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
BENCH_NAME=offcpu
. "$HERE/lib.sh"
while getopts 'r:l:p:c:e:b:h' opt; do
	bench_opt "$opt" "${OPTARG:-}" && continue # -r, -e
	case $opt in
	l) LOOPS=$OPTARG ;;
	p) PERIODS=$OPTARG ;;
	c) PIN=$OPTARG ;;
	b) BASE=$OPTARG ;;
	h) usage 0 ;;
	*) usage ;;
	esac
done
bench_emberd_setup
[ -z "$PIN" ] || [ -d "/sys/devices/system/cpu/cpu$PIN" ] || die "-c wants a CPU of this host, not '$PIN'"
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
# the floor: empty programs on emberd's two tracepoints, loaded and attached by a loader
# that then waits (configuration "empty")
cat >"$T/empty.bpf.c" <<'EOF2'
#define SEC(name) __attribute__((section(name), used))
char LICENSE[] SEC("license") = "GPL";
SEC("tp_btf/sched_switch") int empty_switch(void *ctx) { return 0; }
SEC("tp_btf/sched_waking") int empty_waking(void *ctx) { return 0; }
EOF2
cat >"$T/empty-switch.bpf.c" <<'EOF2'
#define SEC(name) __attribute__((section(name), used))
char LICENSE[] SEC("license") = "GPL";
SEC("tp_btf/sched_switch") int empty_switch(void *ctx) { return 0; }
EOF2
cat >"$T/perfcs.bpf.c" <<'EOF2'
#define SEC(name) __attribute__((section(name), used))
char LICENSE[] SEC("license") = "GPL";
SEC("perf_event") int empty_cs(void *ctx) { return 0; }
EOF2
cat >"$T/empty.c" <<'EOF2'
#include <stdio.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <bpf/libbpf.h>
/* A perf software event counting context switches on cpu, overflowing every 64th. */
static int switches_event(int cpu)
{
	struct perf_event_attr a = {.type = PERF_TYPE_SOFTWARE, .size = sizeof(a),
				    .config = PERF_COUNT_SW_CONTEXT_SWITCHES, .sample_period = 64};

	return (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}
/*
 * Loads and attaches every program of the object argv[1] (a perf_event one to each
 * CPU's switches_event), says so, then waits to be killed.
 */
int main(int argc, char **argv)
{
	struct bpf_object *o = argc > 1 ? bpf_object__open_file(argv[1], NULL) : NULL;
	int ncpu = libbpf_num_possible_cpus();
	struct bpf_program *p;

	if (!o || bpf_object__load(o) || ncpu < 1)
		return 1;
	bpf_object__for_each_program(p, o) {
		if (bpf_program__type(p) != BPF_PROG_TYPE_PERF_EVENT) {
			if (!bpf_program__attach(p))
				return 1;
			continue;
		}
		for (int cpu = 0; cpu < ncpu; cpu++) {
			int fd = switches_event(cpu);

			if (fd < 0 || !bpf_program__attach_perf_event(p, fd))
				return 1;
		}
	}
	puts("attached");
	fflush(stdout);
	pause();
	return 0;
}
EOF2
EMPTY=
if clang -O2 -target bpf -c "$T/empty.bpf.c" -o "$T/empty.bpf.o" 2>"$T/empty.err" &&
	clang -O2 -target bpf -c "$T/empty-switch.bpf.c" -o "$T/empty-switch.bpf.o" 2>>"$T/empty.err" &&
	clang -O2 -target bpf -c "$T/perfcs.bpf.c" -o "$T/perfcs.bpf.o" 2>>"$T/empty.err" &&
	cc -O2 -o "$T/empty" "$T/empty.c" -lbpf 2>>"$T/empty.err"; then
	EMPTY=1
else
	log "no empty-program floor (needs clang and libbpf-dev): $(head -1 "$T/empty.err")"
fi
printf '[daemon]\n' >"$T/cpu-only.conf"
for p in $PERIODS; do
	printf '[daemon]\noffcpu = on\ncpu_budget = 0\noffcpu_sample_period = %s\n' "$p" >"$T/offcpu-$p.conf"
done

start() { # config file [emberd]
	"${2:-$EMBERD}" --config "$1" --data-dir "$T/data" --runtime-dir "$T/run" >"$T/emberd.log" 2>&1 &
	EPID=$!
	for _ in $(seq 1 300); do
		grep -q "sampling .* CPUs" "$T/emberd.log" && { sleep 1; settle; return 0; }
		kill -0 "$EPID" 2>/dev/null || die "emberd exited: $(tail -2 "$T/emberd.log")"
		sleep 0.1
	done
	die "emberd did not start"
}
# After "sampling", emberd still reads the host's processes, their symbols and unwind
# tables (~0.5 s of CPU on a 2-CPU host): a workload started then shares the CPUs with
# that, and a sub-second ping-pong measured it, not the programs (cpu-only came out 41%
# slower than off). Waits (60 s at most) until emberd spent under 0.5% of a CPU over
# half a second, twice in a row.
settle() {
	local a b quiet=0
	for _ in $(seq 1 120); do
		a=$(cpu_ns "$EPID")
		sleep 0.5
		b=$(cpu_ns "$EPID")
		if [ $((b - a)) -lt 2500000 ]; then
			quiet=$((quiet + 1))
			[ "$quiet" -ge 2 ] && return 0
		else
			quiet=0
		fi
	done
	log "emberd did not settle within 60 s; measuring anyway"
}
peer_start() { # offcputime of bcc or libbpf-tools, attached (its programs loaded) or dead
	"$PEER" "${PEER_ARGS[@]}" >"$T/peer.out" 2>&1 &
	EPID=$!
	for _ in $(seq 1 600); do
		kill -0 "$EPID" 2>/dev/null || die "$PEER exited: $(tail -3 "$T/peer.out")"
		grep -qs '^prog_id:' /proc/"$EPID"/fdinfo/* && { sleep 1; return 0; }
		sleep 0.1
	done
	die "$PEER did not load its programs"
}
progs() { # config: "name run_time_ns run_cnt" of EPID's off-CPU programs (offcputime's: all)
	local id line
	for id in $(grep -h '^prog_id:' /proc/"$EPID"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -un); do
		line=$(bpftool prog show id "$id" 2>/dev/null) || continue
		line=${line%%$'\n'*}
		# bpftool leaves run_time_ns and run_cnt out while a program has not run
		[[ $line == *run_cnt* ]] || line="$line run_time_ns 0 run_cnt 0"
		sed -n 's/.* name \([A-Za-z0-9_]*\) .*run_time_ns \([0-9]*\) run_cnt \([0-9]*\).*/\1 \2 \3/p' <<<"$line"
	done | awk -v c="$1" 'c == "offcputime" || $1 ~ /^(ember_offcpu|empty_)/'
}
empty_start() { # object: the empty programs' loader, once they are attached
	"$T/empty" "$T/$1.bpf.o" >"$T/empty.out" 2>&1 &
	EPID=$!
	for _ in $(seq 1 300); do
		grep -q attached "$T/empty.out" && return 0
		kill -0 "$EPID" 2>/dev/null || die "the empty programs did not load: $(cat "$T/empty.out")"
		sleep 0.1
	done
	die "the empty programs did not load"
}
stop() { # config workload: emberd's CPU time, then stop (offcputime: SIGINT, it prints and exits)
	case $1 in offcputime | empty | empty-switch | perf-cs) ;; *) echo "$2 $1 emberd $(cpu_ns "$EPID")" >>"$T/emberd_cpu" ;; esac
	if [ "$1" = offcputime ]; then kill -INT "$EPID"; else kill "$EPID"; fi
	wait "$EPID" || true
	EPID=
}
work() { # workload: prints its time in ns
	if [ "$1" = pipe ]; then
		${PIN:+taskset -c "$PIN"} perf bench sched pipe -l "$LOOPS" 2>/dev/null |
			awk '/usecs\/op/ { printf "%.0f\n", $1 * 1000 * '"$LOOPS"' }'
	else
		"$T/spin"
	fi
}
run() { # config workload [stats]: the workload's time; with stats, its programs' run time
	case $1 in
	off) ;;
	offcputime) peer_start ;;
	empty | empty-switch) empty_start "$1" ;;
	perf-cs) empty_start perfcs ;;
	base-*) start "$T/offcpu-${1#base-}.conf" "$BASE" ;;
	*) start "$T/$1.conf" ;;
	esac
	[ -z "${3:-}" ] || progs "$1" >"$T/before"
	work "$2"
	if [ -n "${3:-}" ]; then
		# the programs' runs during the workload: after minus before
		progs "$1" | awk -v w="$2" -v c="$1" 'NR == FNR { t[$1] = $2; n[$1] = $3; next }
			{ print w, c, $1, $2 - t[$1], $3 - n[$1] }' "$T/before" - >>"$T/bpf"
	fi
	[ "$1" = off ] || stop "$1" "$2"
}

CONFIGS="off cpu-only"
for p in $PERIODS; do CONFIGS="$CONFIGS offcpu-$p"; done
if [ -n "$BASE" ]; then
	[ -x "$BASE" ] || die "no emberd at $BASE"
	for p in $PERIODS; do CONFIGS="$CONFIGS base-$p"; done
fi
# the peer: bcc's offcputime compiles its program at run time from the kernel's headers
# (which a kernel without CONFIG_IKHEADERS and /lib/modules lacks); libbpf-tools' is CO-RE
PEER= PEER_ARGS=()
if command -v offcputime-bpfcc >/dev/null; then
	if timeout 60 offcputime-bpfcc 1 >"$T/bcc.out" 2>&1; then
		PEER=offcputime-bpfcc PEER_ARGS=(-f 3600)
	else
		log "offcputime-bpfcc cannot run here: $(grep -m1 -iE 'error|fail|no such|unable' "$T/bcc.out")"
	fi
else
	log "install bpfcc-tools to compare with bcc's offcputime"
fi
if [ -z "$PEER" ] && [ -x /usr/sbin/offcputime ]; then
	PEER=/usr/sbin/offcputime PEER_ARGS=(-u 3600) # libbpf-tools (CO-RE); user threads, as emberd
fi
[ -z "$PEER" ] || { CONFIGS="$CONFIGS offcputime"; log "peer: $PEER"; }
[ -z "$EMPTY" ] || CONFIGS="$CONFIGS empty empty-switch perf-cs"

# the slowdown with bpf_stats off: its two clock reads a program run would inflate it
echo 0 >/proc/sys/kernel/bpf_stats_enabled
for r in $(seq "$REPEAT"); do
	for w in pipe spin; do
		for c in $CONFIGS; do
			echo "$w $c $(run "$c" "$w")" >>"$T/raw"
		done
	done
	log "timing run $r/$REPEAT done"
done
# then, in a pass of their own, the programs' run time per run (bpf_stats on)
echo 1 >/proc/sys/kernel/bpf_stats_enabled
SCONFIGS=${CONFIGS#off cpu-only}
for r in $(seq "$REPEAT"); do
	for c in $SCONFIGS; do
		echo "pipe $c $(run "$c" pipe stats)" >>"$T/raw_stats"
	done
	log "bpf_stats run $r/$REPEAT done"
done

echo "Slowdown, kernel.bpf_stats_enabled = 0:"
echo
echo "| workload | configuration | ms (median of $REPEAT) | ratio to off | all runs, ms |"
echo "| --- | --- | --- | --- | --- |"
bench_ratio_table "$T/raw" "pipe spin" "$CONFIGS"
echo
# the cost per round trip from the programs' run times, against the round trip without
# them: load on a shared machine disturbs it less than the wall-time ratio
base=$(awk '$1 == "pipe" && $2 == "off" { print $3 }' "$T/raw" | median)
echo "BPF programs on the ping-pong, kernel.bpf_stats_enabled = 1 (a separate pass; the"
echo "runs are the whole host's during the workload; round trip without emberd:" \
	"$(echo "$base / $LOOPS" | bc -l | xargs printf '%.0f') ns):"
echo
echo "| configuration | program | runs per round trip (median) | ns per run (median) | ns per round trip | ratio to off (estimated) |"
echo "| --- | --- | --- | --- | --- | --- |"
for c in $SCONFIGS; do
	tot=0
	for p in $(awk -v c="$c" '$2 == c { print $3 }' "$T/bpf" | sort -u); do
		rpl=$(awk -v c="$c" -v p="$p" -v l="$LOOPS" '$2 == c && $3 == p { print $5 / l }' "$T/bpf" | median)
		ns=$(awk -v c="$c" -v p="$p" '$2 == c && $3 == p && $5 > 0 { print $4 / $5 }' "$T/bpf" | median)
		[ -n "$ns" ] || continue
		per=$(echo "$rpl * $ns" | bc -l)
		tot=$(echo "$tot + $per" | bc -l)
		printf '| %s | %s | %.2f | %.0f | %.0f | |\n' "$c" "$p" "$rpl" "$ns" "$per"
	done
	printf '| %s | all | | | %.0f | %.4f |\n' "$c" "$tot" "$(echo "1 + $tot * $LOOPS / $base" | bc -l)"
done
echo
echo "| workload | configuration | emberd CPU ms (median) |"
echo "| --- | --- | --- |"
for w in pipe spin; do
	for c in $CONFIGS; do
		case $c in off | offcputime | empty | empty-switch | perf-cs) continue ;; esac
		m=$(awk -v w="$w" -v c="$c" '$1 == w && $2 == c { print $4 }' "$T/emberd_cpu" | median)
		printf '| %s | %s | %.0f |\n' "$w" "$c" "$(echo "$m / 1000000" | bc -l)"
	done
done
