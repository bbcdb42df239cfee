#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CPU overhead benchmark: runs one fixed amount of busy work on every CPU with no
# profiler, with emberd, with perf record and with bpftrace (each at 19 and 999
# Hz), R times each, round-robin, and prints the medians as a Markdown table:
# the profiler's own CPU time and peak RSS, the run time of its BPF programs
# (kernel.bpf_stats_enabled, charged to the interrupted tasks, so reported
# apart), the size of perf.data, and the workload's slowdown against the
# baseline. It prints figures and ratios; it never asserts on timings.
#
# usage: bench/cpu_overhead.sh [-d SECONDS] [-r REPEATS] [-c CONFIGS] [-i INTERVAL]
#                              [-e EMBERD] [-o REPORT.md] [-k RAW.tsv]
#   -d  length of the workload in seconds on this machine    (BENCH_DURATION, 60)
#   -r  repetitions of each configuration; medians reported  (BENCH_REPEAT, 3)
#   -c  comma-separated configurations                       (BENCH_CONFIGS, all:
#       baseline,emberd-19,emberd-999,perf-19,perf-999,bpftrace-19,bpftrace-999)
#   -i  emberd --interval                                    (BENCH_INTERVAL, 10s)
#   -e  the emberd binary                                    (EMBERD, build-bench/ or build/)
#   -o  also write the table and ratios to this file
#   -k  also write the raw per-run rows (TSV) to this file
# A configuration ending in -churn (emberd-19-churn) runs with a churn generator:
# BENCH_CHURN_RATE (30) new processes (/bin/true) a second, 300 per 10 s interval.
# perf configurations also run `perf script` on what perf record wrote, as a user
# of perf must to read it: its CPU is added to the whole run (BENCH_PERF_SCRIPT=0: not).
# Issue 13's figures: -d 110 (10 intervals of 10 s) -c emberd-19,emberd-19-churn,perf-19
# and -d 20 -c emberd-999,perf-999.
# Quick smoke run: bench/cpu_overhead.sh -d 10 -r 1
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/.." && pwd)
DURATION=${BENCH_DURATION:-60}
REPEAT=${BENCH_REPEAT:-3}
CONFIGS=${BENCH_CONFIGS:-baseline,emberd-19,emberd-999,perf-19,perf-999,bpftrace-19,bpftrace-999}
INTERVAL=${BENCH_INTERVAL:-10s}
EMBERD=${EMBERD:-}
REPORT=
RAWOUT=

usage() { sed -n '11,27p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
BENCH_NAME=cpu_overhead
. "$HERE/lib.sh"
overhead_opt() {
	case $1 in
	c) CONFIGS=$2 ;;
	i) INTERVAL=$2 ;;
	*) return 1 ;;
	esac
}
bench_getopts 'd:r:c:i:e:o:k:h' overhead_opt "$@"
bench_check_counts

# --- prerequisites ----------------------------------------------------------------
bench_require "BPF programs, perf -a, kernel.bpf_stats_enabled"
need bpftrace "install bpftrace to compare with it"
need cc "install gcc: the workload and the rusage wrapper are compiled here"
if [ -z "$EMBERD" ]; then
	for b in "$SRC/build-bench" "$SRC/build"; do
		[ -x "$b/daemon/emberd" ] && { EMBERD=$b/daemon/emberd; break; }
	done
fi
case ",$CONFIGS," in
*,emberd-*)
	[ -n "$EMBERD" ] && [ -x "$EMBERD" ] || die "emberd not built: cmake -S . -B build-bench" \
		"-DCMAKE_BUILD_TYPE=RelWithDebInfo && make -C build-bench emberd (or pass -e PATH)" ;;
esac
for c in ${CONFIGS//,/ }; do
	[[ $c =~ ^(baseline|(emberd|perf|bpftrace)-[0-9]+)(-churn)?$ ]] || die "unknown configuration '$c'"
done
CHURN_RATE=${BENCH_CHURN_RATE:-30}
PERF_SCRIPT=${BENCH_PERF_SCRIPT:-1}
[[ $CHURN_RATE =~ ^[0-9]+$ && $CHURN_RATE -ge 1 ]] || die "BENCH_CHURN_RATE wants a count >= 1"

NCPU=$(nproc)

# --- clean-up: every background process, the sysctl, the temp dir ------------------
T=$(mktemp -d "${BENCH_TMPDIR:-/dev/shm}/ember-bench.XXXXXX") # tmpfs: perf.data costs no disk I/O
BG=() # wrapper pids
cleanup() {
	local p c
	for p in "${BG[@]}"; do
		kill -0 "$p" 2>/dev/null || continue
		for c in $(cat "/proc/$p/task/$p/children" 2>/dev/null); do kill -KILL "$c" 2>/dev/null || true; done
		kill -KILL "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	bench_restore_bpf_stats
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- helpers compiled here: the workload and a wait4() rusage wrapper ---------------
# The workload: WORKERS processes (one per CPU), each runs UNITS units of integer
# work through call chains of depth 1..16 ending in one of two leaves (32
# distinct stacks per worker), built with frame pointers so that every profiler
# can walk them. UNITS is calibrated, on the machine as loaded at the start, to
# last DURATION seconds (wall): other tenants' load changes the wall time of a
# run, hardly its CPU time, hence the two workload columns.
cat >"$T/work.c" <<'EOF'
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) unsigned long leaf_a(unsigned long n)
{
	unsigned long x = sink;

	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

__attribute__((noinline)) unsigned long leaf_b(unsigned long n)
{
	unsigned long x = sink;

	for (unsigned long i = 0; i < n; i++)
		x = x * 2862933555777941757UL + 3037000493UL;
	return x;
}

__attribute__((noinline)) unsigned long descend(int depth, int which, unsigned long n)
{
	unsigned long r;

	if (depth == 0)
		return which ? leaf_b(n) : leaf_a(n);
	r = descend(depth - 1, which, n);
	__asm__ volatile("" : "+r"(r)); /* no tail call, no accumulator loop */
	return r + 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

#define UNIT_N 100000UL

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * One worker: UNITS units; or, when UNITS is 0, as many as fit in SECS seconds,
 * putting in RATE the units per wall second and per second of its own CPU time.
 */
static void worker(unsigned long units, double secs, double rate[2])
{
	double t0 = now(), c0 = cpu_now();
	unsigned long i;

	for (i = 0; units ? i < units : now() < t0 + secs; i++)
		sink += descend(1 + i % 16, (i / 16) & 1, UNIT_N);
	rate[0] = i / (now() - t0);
	rate[1] = i / (cpu_now() - c0);
}

int main(int argc, char **argv)
{
	int calibrate, workers, fd[2];
	double arg, t0, t1;
	struct rusage ru;
	double done[2], least = 1e300, cpu = 1e300;

	if (argc != 4 || (strcmp(argv[1], "run") && strcmp(argv[1], "calibrate"))) {
		fprintf(stderr, "usage: work run UNITS WORKERS | work calibrate SECONDS WORKERS\n");
		return 2;
	}
	calibrate = !strcmp(argv[1], "calibrate");
	arg = atof(argv[2]);
	workers = atoi(argv[3]);
	if (pipe(fd))
		return perror("pipe"), 1;
	t0 = now();
	for (int w = 0; w < workers; w++) {
		pid_t p = fork();

		if (p < 0)
			return perror("fork"), 1;
		if (p == 0) {
			worker(calibrate ? 0 : (unsigned long)arg, arg, done);
			if (write(fd[1], &done, sizeof(done)) != sizeof(done))
				_exit(1);
			_exit(0);
		}
	}
	close(fd[1]);
	while (read(fd[0], done, sizeof(done)) == sizeof(done)) {
		least = done[0] < least ? done[0] : least;
		cpu = done[1] < cpu ? done[1] : cpu;
	}
	while (wait(NULL) > 0)
		;
	t1 = now();
	getrusage(RUSAGE_CHILDREN, &ru);
	if (calibrate) /* units per wall and per CPU second of the slowest worker */
		printf("%.1f %.1f\n", least, cpu);
	else /* wall seconds, CPU seconds (user+sys) of all workers */
		printf("%.6f %.6f\n", t1 - t0,
		       ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
			       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
	return 0;
}
EOF
# runstat PIDFILE STATFILE CMD...: runs CMD, forwards TERM/INT to it, and when it
# has exited writes "utime stime maxrss_kb wall status" from wait4(): the whole
# life of the profiler, its start-up and final drain or post-processing included.
cat >"$T/runstat.c" <<'EOF'
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile pid_t child;

static void forward(int sig)
{
	if (child > 0)
		kill(child, sig);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = forward };
	struct timespec t0, t1;
	struct rusage ru;
	int status;
	FILE *f;
	pid_t p;

	if (argc < 4) {
		fprintf(stderr, "usage: runstat PIDFILE STATFILE CMD...\n");
		return 2;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	p = fork();
	if (p < 0)
		return perror("fork"), 1;
	if (p == 0) {
		signal(SIGTERM, SIG_DFL); /* a background job of a script ignores INT */
		signal(SIGINT, SIG_DFL);
		execvp(argv[3], argv + 3);
		perror(argv[3]);
		_exit(127);
	}
	child = p;
	f = fopen(argv[1], "w");
	if (!f)
		return perror(argv[1]), 1;
	fprintf(f, "%d\n", p);
	fclose(f);
	while (wait4(p, &status, 0, &ru) < 0)
		if (errno != EINTR)
			return perror("wait4"), 1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	f = fopen(argv[2], "w");
	if (!f)
		return perror(argv[2]), 1;
	fprintf(f, "%.6f %.6f %ld %.3f %d\n", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
		ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, ru.ru_maxrss,
		t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9, status);
	fclose(f);
	return 0;
}
EOF
cc -O2 -g -fno-omit-frame-pointer -o "$T/work" "$T/work.c" || die "cannot compile the workload"
cc -O2 -o "$T/runstat" "$T/runstat.c" || die "cannot compile the rusage wrapper"
WORK=$T/work
RUNSTAT=$T/runstat

# --- measurement helpers -------------------------------------------------------------
now() { echo "$EPOCHREALTIME"; }

# wait_ready KIND FILE PID: until the profiler says it is attached
wait_ready() {
	local kind=$1 file=$2 pid=$3 i
	for ((i = 0; i < 600; i++)); do
		kill -0 "$pid" 2>/dev/null || return 1
		case $kind in
		emberd) grep -q 'sampling' "$file" 2>/dev/null && return 0 ;;
		bpftrace) grep -q 'Attaching' "$file" 2>/dev/null && return 0 ;;
		perf) [ -s "$file" ] && { sleep 1; return 0; } ;; # perf says nothing: header written
		esac
		sleep 0.1
	done
	return 1
}

RAW=$T/raw.tsv
printf 'config\trep\twork_wall_s\twork_cpu_s\tprof_cpu_s\tprof_wall_s\tsteady_cpu_ns\tsteady_wall_ns\thwm_kb\tmaxrss_kb\tbpf_pe_ns\tbpf_pe_cnt\tbpf_all_ns\tbpf_all_cnt\tdata_bytes\n' >"$RAW"

# run_one CONFIG REP: one run of the workload under CONFIG, one row into $RAW
run_one() {
	local cfg=$1 rep=$2 kind hz cmd=() sig ready out err wpid pid w t0 t1 c0 c1 hwm bpf st i data=0
	local churn=${cfg%-churn} post=0 cpid=
	kind=${churn%-*} hz=${churn##*-}
	[ "$churn" = "$cfg" ] && churn= || churn=1
	out=$T/$cfg.$rep.out err=$T/$cfg.$rep.err
	case $kind in
	baseline)
		w=$("$WORK" run "$UNITS" "$NCPU")
		printf '%s\t%s\t%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\n' "$cfg" "$rep" ${w% *} ${w#* } >>"$RAW"
		return 0 ;;
	emberd)
		mkdir -p "$T/data"
		cmd=("$EMBERD" --data-dir "$T/data" --runtime-dir "$T/run" --hz "$hz" --interval "$INTERVAL" --duration "$((DURATION * 3 + 120))s")
		sig=TERM ready=$err ;;
	perf)
		cmd=(perf record -F "$hz" -a -g -o "$T/perf.data")
		sig=INT ready=$T/perf.data ;;
	bpftrace)
		cmd=(bpftrace -e "profile:hz:$hz { @[ustack, kstack] = count(); }")
		sig=INT ready=$out ;;
	esac
	rm -f "$T/pid" "$T/stat"
	"$RUNSTAT" "$T/pid" "$T/stat" "${cmd[@]}" >"$out" 2>"$err" &
	wpid=$!
	BG+=("$wpid")
	for ((i = 0; i < 100; i++)); do [ -s "$T/pid" ] && break; sleep 0.05; done
	pid=$(cat "$T/pid" 2>/dev/null) || die "$cfg: the wrapper did not start"
	if ! wait_ready "$kind" "$ready" "$pid"; then
		tail -5 "$err" >&2
		die "$cfg: the profiler did not attach within 60 s (stderr above)"
	fi
	if [ -n "$churn" ]; then # RATE short-lived processes a second, started before the window
		( # one new process per turn, on a fixed schedule (catching up when late);
			# read -t on a silent pipe sleeps without forking; says how many it ran
			exec 9<> <(:)
			n=0 step=$((1000000 / CHURN_RATE)) next=${EPOCHREALTIME/./}
			trap 'echo "$n" >"$T/churned"; exit 0' TERM
			while :; do
				/bin/true
				n=$((n + 1)) next=$((next + step)) d=$((next - ${EPOCHREALTIME/./}))
				[ "$d" -le 0 ] || read -rt "$(printf '0.%06d' "$d")" -u 9 || true
			done
		) &
		cpid=$!
		BG+=("$cpid")
	fi
	sleep 1 # let start-up settle; the steady window starts here
	t0=$(now) c0=$(cpu_ns "$pid")
	w=$("$WORK" run "$UNITS" "$NCPU")
	c1=$(cpu_ns "$pid") t1=$(now)
	if [ -n "$cpid" ]; then
		kill "$cpid" 2>/dev/null
		wait "$cpid" 2>/dev/null || true
		log "$cfg: the churn generator ran $(cat "$T/churned" 2>/dev/null || echo ?) processes" \
			"($(awk -v n="$(cat "$T/churned" 2>/dev/null || echo 0)" -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", n / (b - a)}') a second)"
	fi
	[ "$(awk '{print $3}' /proc/"$pid"/stat 2>/dev/null)" != Z ] && kill -0 "$pid" 2>/dev/null ||
		die "$cfg: the profiler died during the run: $(tail -3 "$err")"
	hwm=$(awk '/^VmHWM:/ {print $2}' /proc/"$pid"/status)
	bpf=$(bpf_stats "$pid")
	[ "$kind" = perf ] || [ "${bpf%% *}" != 0 ] || log "$cfg: no BPF run time found for PID $pid"
	kill -"$sig" "$pid"
	for ((i = 0; i < 3000; i++)); do [ -s "$T/stat" ] && break; sleep 0.1; done # up to 5 min of post-processing
	[ -s "$T/stat" ] || die "$cfg: the profiler did not exit within 5 min of SIG$sig"
	wait "$wpid" || true
	st=$(cat "$T/stat")
	set -- $st # utime stime maxrss wall status
	# a clean exit, or (perf) death by the stop signal re-raised after its clean-up
	[ "$5" -eq 0 ] || [ "$5" -eq "$(kill -l "$sig")" ] ||
		log "$cfg: the profiler exited with wait status $5 (stderr: $(grep -v "debug:" "$err" | tail -4 | tr "\n" "|"))"
	if [ "$kind" = perf ]; then
		data=$(stat -c %s "$T/perf.data")
		if [ "$PERF_SCRIPT" = 1 ]; then # reading what perf record wrote is part of its cost
			"$RUNSTAT" "$T/spid" "$T/sstat" perf script -i "$T/perf.data" >/dev/null 2>&1 || true
			post=$(awk '{printf "%.6f", $1 + $2}' "$T/sstat" 2>/dev/null || echo 0)
		fi
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$cfg" "$rep" ${w% *} ${w#* } \
		"$(awk -v u="$1" -v s="$2" -v p="$post" 'BEGIN{printf "%.6f", u + s + p}')" "$4" \
		"$((c1 - c0))" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.0f", (b - a) * 1e9}')" \
		"$hwm" "$3" $bpf "$data" >>"$RAW"
	rm -rf "$T/data" "$T/perf.data" "$T/perf.data.old"
}

# --- run ------------------------------------------------------------------------------
echo 1 >/proc/sys/kernel/bpf_stats_enabled
log "calibrating the workload: $NCPU workers for ${DURATION} s"
RATE=$("$WORK" calibrate 3 "$NCPU")
UNITS=$(awk -v r="${RATE% *}" -v d="$DURATION" 'BEGIN{printf "%d", r * d}')
log "$UNITS units per worker (${RATE% *} per wall second, ${RATE#* } per CPU second); ${REPEAT} rounds of: ${CONFIGS//,/ }"
START=$(date -u '+%Y-%m-%d %H:%M UTC')
for ((rep = 1; rep <= REPEAT; rep++)); do
	for cfg in ${CONFIGS//,/ }; do
		log "round $rep/$REPEAT: $cfg"
		run_one "$cfg" "$rep"
		tail -1 "$RAW" | awk -F'\t' '{printf "cpu_overhead:   workload %.2f s wall; profiler %s s CPU\n", $3, $5}' >&2
	done
done
bench_restore_bpf_stats
[ -z "$RAWOUT" ] || cp "$RAW" "$RAWOUT"

# --- report: medians per configuration -------------------------------------------------
# med CONFIG COLUMN [EXPR]: median over the runs of CONFIG of a column (or of an
# awk expression over the row's columns); '-' where there is nothing to take
med() {
	awk -F'\t' -v c="$1" -v col="$2" -v e="${3:-}" -v base="${BASE_CPU:-0}" '
		$1 == c && $col != "-" {
			if (e == "") v = $col
			else if (e == "pe") v = ($12 > 0) ? $11 / $12 : "-"
			else if (e == "steady") v = $7 / $8 * 100
			else if (e == "bpfpct") v = $13 / $8 * 100
			else if (e == "total") v = ($7 + $13) / $8 * 100
			else if (e == "life") v = $5 / $6 * 100
			else if (e == "allin") v = $5 + $4 - base
			if (v != "-") print v
		}' "$RAW" | sort -g | awk '{a[NR] = $1} END {
			if (NR == 0) { print "-"; exit }
			print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
fmt() { [ "$2" = - ] && echo - || awk -v f="$1" -v v="$2" 'BEGIN{printf f, v}'; }
ratio() { [ "$1" = - ] || [ "$2" = - ] && echo - || awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.1f", a / b; else print "inf" }'; }
# than OTHER EMBERD: "N times less" or "N times MORE" (emberd against OTHER)
than() {
	[ "$1" = - ] || [ "$2" = - ] && { echo "- times less"; return; }
	awk -v o="$1" -v e="$2" 'BEGIN{
		if (e <= 0) print "inf times less"
		else if (o >= e) printf "%.1f times less", o / e
		else if (o <= 0) print "inf times MORE"
		else printf "%.1f times MORE", e / o }'
}

BASE_WALL=$(med baseline 3)
BASE_CPU=$(med baseline 4)
[ "$BASE_WALL" != - ] || BASE_CPU=
TABLE=$T/table.md
{
	echo "| config | profiler CPU s | % of one CPU (whole run) | % of one CPU (steady) | BPF ns/sample | BPF % of one CPU | total incl. BPF % | peak RSS MB | perf.data MB | workload wall | workload CPU | all-in CPU s |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	for cfg in ${CONFIGS//,/ }; do
		ww=$(med "$cfg" 3) wc=$(med "$cfg" 4)
		slow=$(awk -v a="$ww" -v b="${BASE_WALL:--}" 'BEGIN{ if (b == "-" || b == 0) print "-"; else printf "%.3f×", a / b }')
		cslow=$(awk -v a="$wc" -v b="${BASE_CPU:--}" 'BEGIN{ if (b == "-" || b == 0) print "-"; else printf "%.3f×", a / b }')
		[ "$cfg" = baseline ] && slow="1 ($(fmt %.1f "$ww") s)" cslow="1 ($(fmt %.1f "$wc") s)"
		allin=-
		[ -z "$BASE_CPU" ] || [ "$cfg" = baseline ] || allin=$(fmt %.2f "$(med "$cfg" 5 allin)")
		printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$cfg" \
			"$(fmt %.3f "$(med "$cfg" 5)")" "$(fmt %.3f "$(med "$cfg" 5 life)")" \
			"$(fmt %.3f "$(med "$cfg" 7 steady)")" "$(fmt %.0f "$(med "$cfg" 11 pe)")" \
			"$(fmt %.3f "$(med "$cfg" 13 bpfpct)")" "$(fmt %.3f "$(med "$cfg" 7 total)")" \
			"$(fmt %.1f "$(awk -v k="$(med "$cfg" 10)" 'BEGIN{ if (k == "-") print "-"; else print k / 1024 }')")" \
			"$(fmt %.1f "$(awk -v k="$(med "$cfg" 15)" 'BEGIN{ if (k == "-" || k == 0) print "-"; else print k / 1048576 }')")" \
			"$slow" "$cslow" "$allin"
	done
	echo
	for hz in 19 999; do
		case ",$CONFIGS," in *,emberd-$hz,*,perf-$hz,*) ;; *) continue ;; esac
		e=$(med "emberd-$hz" 5) p=$(med "perf-$hz" 5)
		es=$(med "emberd-$hz" 7 steady) ps=$(med "perf-$hz" 7 steady) et=$(med "emberd-$hz" 7 total)
		echo "- at $hz Hz emberd uses $(than "$p" "$e") CPU than perf record" \
			"(profiler process, whole run: $(fmt %.3f "$e") s against $(fmt %.3f "$p") s)"
		echo "  - steady state, process only: $(than "$ps" "$es");" \
			"emberd with its BPF time against perf record without its in-kernel cost: $(than "$ps" "$et")"
		if [ -n "$BASE_CPU" ]; then
			ea=$(med "emberd-$hz" 5 allin) pa=$(med "perf-$hz" 5 allin)
			echo "  - all-in (process CPU + extra CPU of the workload, which pays for the in-kernel" \
				"sampling of both; noisy): $(than "$pa" "$ea") ($(fmt %.2f "$ea") s against $(fmt %.2f "$pa") s)"
		fi
	done
	for hz in 19 999; do
		case ",$CONFIGS," in *,emberd-$hz,*,bpftrace-$hz,*) ;; *) continue ;; esac
		e=$(med "emberd-$hz" 7 total) b=$(med "bpftrace-$hz" 7 total)
		echo "- at $hz Hz emberd uses $(than "$b" "$e") CPU than bpftrace (steady state, both with their BPF time;" \
			"whole run: $(than "$(med "bpftrace-$hz" 5)" "$(med "emberd-$hz" 5)"))"
	done
	if [[ ",$CONFIGS," == *,emberd-19,* ]]; then
		s=$(med emberd-19 7 steady) t=$(med emberd-19 7 total) m=$(med emberd-19 10)
		echo "- target at 19 Hz, at most 0.02 % of one CPU: emberd steady $(fmt %.4f "$s") %," \
			"with BPF $(fmt %.4f "$t") % ($(awk -v t="$t" 'BEGIN{print (t <= 0.02) ? "meets it" : "misses it"}'));" \
			"at most 30 MB RSS: $(fmt %.1f "$(awk -v k="$m" 'BEGIN{print k / 1024}')") MB" \
			"($(awk -v k="$m" 'BEGIN{print (k / 1024 <= 30) ? "meets it" : "misses it"}'))"
		iv=$(awk -v i="$INTERVAL" 'BEGIN{ n = i + 0; if (i ~ /m$/) n *= 60; if (i ~ /ms$/) n /= 1000; print n }')
		echo "  - per ${INTERVAL} interval: emberd's process $(fmt %.2f "$(awk -v s="$s" -v n="$iv" 'BEGIN{print s / 100 * n * 1000}')") ms," \
			"its BPF programs $(fmt %.2f "$(awk -v s="$s" -v t="$t" -v n="$iv" 'BEGIN{print (t - s) / 100 * n * 1000}')") ms"
	fi
	for cfg in ${CONFIGS//,/ }; do
		[[ $cfg == emberd-*-churn ]] || continue
		q=${cfg%-churn}
		echo "- with $CHURN_RATE new processes a second ($cfg): emberd steady with BPF" \
			"$(fmt %.4f "$(med "$cfg" 7 total)") % against $(fmt %.4f "$(med "$q" 7 total)") % quiet;" \
			"process alone $(fmt %.4f "$(med "$cfg" 7 steady)") % against $(fmt %.4f "$(med "$q" 7 steady)") %"
	done
	if [[ ",$CONFIGS," == *,emberd-999,*,perf-999,* ]]; then
		r=$(ratio "$(med perf-999 5)" "$(med emberd-999 5)")
		echo "- target at 999 Hz, at least 10 times less CPU than perf record -g" \
			"$([ "$PERF_SCRIPT" = 1 ] && echo "+ perf script") (whole run, start-up included): $r times" \
			"($(awk -v r="$r" 'BEGIN{print (r + 0 >= 10) ? "meets it" : "misses it"}'))"
	fi
} >"$TABLE"

HDR="workload: $NCPU workers x $UNITS units (~${DURATION} s), $REPEAT runs per configuration, medians; $START; $(uname -r); $NCPU CPUs"
echo
echo "$HDR"
echo
cat "$TABLE"
if [ -n "$REPORT" ]; then
	{ echo "$HDR"; echo; cat "$TABLE"; } >"$REPORT"
fi
