#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Soak (issue 15): emberd at 19 Hz with 10 s intervals, first on a quiet host (its
# baseline), then for a long loaded phase: 100 new processes a second (/bin/true),
# 500 idle processes and one CPU-bound process (niced, so that it takes only an
# idle CPU). Prints emberd's CPU in each phase and above the quiet baseline
# (schedstat, summed over its threads), its RSS every minute and the RSS slope
# over the last half of the loaded phase (least squares, KiB/min), and the BPF
# losses counted over the loaded phase (emberctl status --format prometheus).
# Figures only: it asserts nothing.
#
# usage: bench/soak.sh [-d SECONDS] [-q SECONDS] [-c RATE] [-n IDLE] [-s SECONDS] [-m]
#                      [-e EMBERD] [-o REPORT.md] [-k RAW.tsv]
#   -d  length of the loaded phase                           (BENCH_DURATION, 1800)
#   -q  length of the quiet baseline phase before it         (BENCH_QUIET, 300)
#   -c  new processes (/bin/true) a second                   (BENCH_CHURN_RATE, 100)
#   -n  idle processes                                       (BENCH_IDLE, 500)
#   -s  seconds between two RSS samples                      (BENCH_SAMPLE, 60)
#   -m  profile only the soak's own processes (profile = matched, an [app] for
#       /bin/true and one for the workload): on a shared host, the other tenants'
#       processes are still classified, never captured, so their new binaries do
#       not fill the symbol caches and the RSS figures are the soak's own
#   -e  the emberd binary (emberctl is taken beside it)      (EMBERD, build/daemon/emberd)
#   -o  also write the report to this file
#   -k  also write the samples (TSV: phase, seconds, RSS KiB, CPU ns, cache KiB,
#       processes tracked (these two from emberd's status file), anonymous RSS KiB,
#       SQLite's memory KiB, heap in use KiB (these two from the status file too))
# The quiet phase starts once emberd has drained two intervals (after its start-up).
# Quick smoke run: bench/soak.sh -d 120 -q 30 -s 10
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
DURATION=${BENCH_DURATION:-1800}
QUIET=${BENCH_QUIET:-300}
RATE=${BENCH_CHURN_RATE:-100}
IDLE=${BENCH_IDLE:-500}
EVERY=${BENCH_SAMPLE:-60}
REPEAT=1
EMBERD=${EMBERD:-$HERE/../build/daemon/emberd}
REPORT=
RAWOUT=
MATCHED=

usage() { sed -n '12,28p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
BENCH_NAME=soak
. "$HERE/lib.sh"
while getopts 'd:q:c:n:s:e:o:k:mh' opt; do
	bench_opt "$opt" "${OPTARG:-}" && continue # -d, -e, -o, -k
	case $opt in
	q) QUIET=$OPTARG ;;
	c) RATE=$OPTARG ;;
	n) IDLE=$OPTARG ;;
	s) EVERY=$OPTARG ;;
	m) MATCHED=1 ;;
	h) usage 0 ;;
	*) usage ;;
	esac
done
bench_check_counts
for v in QUIET:$QUIET RATE:$RATE IDLE:$IDLE EVERY:$EVERY; do
	[[ ${v#*:} =~ ^[0-9]+$ && ${v#*:} -ge 1 ]] || die "${v%%:*} wants a whole number >= 1, not '${v#*:}'"
done
[ "$(id -u)" -eq 0 ] || die "must run as root (emberd loads BPF programs)"
[ -x "$EMBERD" ] || die "emberd not built at $EMBERD (or pass -e PATH)"
EMBERCTL=$(dirname "$EMBERD")/../cli/emberctl
[ -x "$EMBERCTL" ] || die "emberctl not found at $EMBERCTL"
need cc "install gcc: the workload is compiled here"

T=$(mktemp -d "${BENCH_TMPDIR:-/tmp}/ember-soak.XXXXXX")
EPID= BG=()
cleanup() {
	local p
	for p in "${BG[@]}"; do kill -TERM -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true; done
	[ -z "$EPID" ] || { kill "$EPID" 2>/dev/null; wait "$EPID" 2>/dev/null || true; }
	wait 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the workloads: churn RATE, idle N, spin --------------------------------------------
cat >"$T/load.c" <<'EOF'
#define _GNU_SOURCE
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
static volatile unsigned long sink;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* RATE /bin/true a second on a fixed schedule (catching up when late); reaps them. */
static int churn(long rate)
{
	char *argv[] = {"/bin/true", NULL};
	long long step = 1000000000LL / rate, next = now_ns();
	unsigned long n = 0;

	for (;;) {
		pid_t p;
		long long d;

		if (posix_spawn(&p, argv[0], NULL, NULL, argv, environ) == 0)
			n++;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		next += step;
		d = next - now_ns();
		if (d > 0) {
			struct timespec ts = {d / 1000000000LL, d % 1000000000LL};

			nanosleep(&ts, NULL);
		}
	}
	return 0;
}

/* N children that sleep until killed. */
static int idle(long n)
{
	for (long i = 0; i < n; i++)
		if (fork() == 0) {
			for (;;)
				pause();
		}
	for (;;)
		pause();
	return 0;
}

__attribute__((noinline)) static unsigned long leaf(unsigned long x, int which)
{
	for (int i = 0; i < 100000; i++)
		x = which ? x * 6364136223846793005UL + 1 : x * 2862933555777941757UL + 3;
	return x;
}

__attribute__((noinline)) static unsigned long descend(int depth, unsigned long x)
{
	unsigned long r = depth ? descend(depth - 1, x) : leaf(x, x & 1);

	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

/* CPU-bound: call chains of depth 0..7 to two leaves. */
static int spin(void)
{
	for (unsigned long i = 0;; i++)
		sink += descend(i % 8, sink + i);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "churn"))
		return churn(atol(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "idle"))
		return idle(atol(argv[2]));
	if (argc == 2 && !strcmp(argv[1], "spin"))
		return spin();
	fprintf(stderr, "usage: load churn RATE | load idle N | load spin\n");
	return 2;
}
EOF
cc -O2 -g -fno-omit-frame-pointer -o "$T/load" "$T/load.c" || die "cannot compile the workload"

# bg CMD...: runs CMD in its own process group (killed whole at the end)
bg() {
	setsid "$@" >/dev/null 2>&1 &
	BG+=("$!")
}

# --- emberd --------------------------------------------------------------------------------
mkdir -p "$T/data" "$T/run"
CONF=()
if [ -n "$MATCHED" ]; then
	printf '[daemon]\nprofile = matched\n[app "churn"]\nmatch.exe = %s\n[app "soak"]\nmatch.exe = %s\n' \
		"$(readlink -f /bin/true)" "$T/load" >"$T/ember.conf"
	CONF=(--config "$T/ember.conf")
fi
"$EMBERD" "${CONF[@]}" --data-dir "$T/data" --runtime-dir "$T/run" --hz 19 --interval 10s \
	>"$T/emberd.log" 2>&1 &
EPID=$!
for _ in $(seq 1 600); do
	grep -q "sampling" "$T/emberd.log" && break
	kill -0 "$EPID" 2>/dev/null || die "emberd exited: $(tail -3 "$T/emberd.log")"
	sleep 0.1
done
grep -q "sampling" "$T/emberd.log" || die "emberd did not start within 60 s"
# start-up (reading every running process's binaries) is not the baseline: two intervals first
for _ in $(seq 1 600); do
	[ "$(awk '$1 == "intervals" { print $2 }' "$T/run/status" 2>/dev/null)" -ge 2 ] 2>/dev/null && break
	sleep 0.1
done

rss_kib() { awk '/^VmRSS:/ { print $2 }' /proc/"$EPID"/status; }
# anonymous RSS (heap, stacks): what a leak grows; the rest is shared libraries' pages touched
anon_kib() { awk '/^RssAnon:/ { print $2 }' /proc/"$EPID"/status; }
alive() { kill -0 "$EPID" 2>/dev/null || die "emberd died: $(tail -3 "$T/emberd.log")"; }
# prom: the Prometheus output of emberctl status (the metrics an operator scrapes)
prom() { "$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/run" --format prometheus 2>/dev/null || true; }
# losses FILE: "cause total" of each BPF drop counter
losses() { sed -n 's/^ember_bpf_drops_total{cause="\([a-z_]*\)"} \([0-9]*\)$/\1 \2/p' "$1"; }
intervals() { sed -n 's/^ember_intervals_total \([0-9]*\)$/\1/p' "$1"; }

RAW=$T/raw.tsv
printf 'phase\tseconds\trss_kib\tcpu_ns\tcache_kib\tprocs\tanon_kib\tsqlite_kib\theap_kib\n' >"$RAW"
# status: "cache KiB<TAB>processes tracked" from emberd's status file (its caches' own account
# of their heap; the unwind tables are in BPF maps, not counted)
status() {
	awk '$1 == "cache" && $2 != "unwind_tables" { b += $4 } $1 == "processes_tracked" { p = $2 }
		END { printf "%d\t%d", b / 1024, p }' "$T/run/status" 2>/dev/null || printf -- '-\t-'
}
# heap: "SQLite KiB<TAB>heap in use KiB" from the status file (what anonymous RSS is made of)
heap() {
	awk '$1 == "memory.sqlite" { s = $2 } $1 == "memory.heap_used" { h = $2 }
		END { printf "%d\t%d", s / 1024, h / 1024 }' "$T/run/status" 2>/dev/null || printf -- '-\t-'
}

# phase NAME SECONDS: samples RSS and CPU every EVERY seconds, and at the end;
# sets C0/C1 (emberd's CPU ns) and W0/W1 (wall, s) at its bounds
phase() {
	local name=$1 secs=$2 t0 t next
	sleep 2 # what the phase started settles
	alive
	t0=${EPOCHREALTIME} C0=$(cpu_ns "$EPID") W0=$t0
	printf '%s\t0\t%s\t0\t%s\t%s\t%s\n' "$name" "$(rss_kib)" "$(status)" "$(anon_kib)" \
		"$(heap)" >>"$RAW"
	next=$EVERY
	while :; do
		t=$(awk -v a="$t0" -v b="${EPOCHREALTIME}" 'BEGIN { printf "%d", b - a }')
		[ "$t" -ge "$secs" ] && break
		if [ "$t" -ge "$next" ]; then
			alive
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$t" "$(rss_kib)" \
				"$(($(cpu_ns "$EPID") - C0))" "$(status)" "$(anon_kib)" "$(heap)" >>"$RAW"
			next=$((next + EVERY))
			log "$name: ${t}s of ${secs}s, RSS $(rss_kib) KiB, anonymous $(anon_kib) KiB" \
				"(cache KiB, processes: $(status | tr '\t' ' '))"
		fi
		sleep 1
	done
	alive
	C1=$(cpu_ns "$EPID") W1=${EPOCHREALTIME}
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$secs" "$(rss_kib)" "$((C1 - C0))" \
		"$(status)" "$(anon_kib)" "$(heap)" >>"$RAW"
}
pct() { awk -v c="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.3f", c / ((b - a) * 1e9) * 100 }'; }

START=$(date -u '+%Y-%m-%d %H:%M UTC')
log "quiet phase: ${QUIET}s of emberd alone"
phase quiet "$QUIET"
QPCT=$(pct $((C1 - C0)) "$W0" "$W1")
prom >"$T/prom0"

log "loaded phase: ${DURATION}s of $RATE exec/s, $IDLE idle processes, one CPU-bound process"
bg "$T/load" idle "$IDLE"
bg nice -n 19 "$T/load" spin
bg "$T/load" churn "$RATE"
N0=$(awk '/^processes/ { print $2 }' /proc/stat)
phase loaded "$DURATION"
N1=$(awk '/^processes/ { print $2 }' /proc/stat)
LPCT=$(pct $((C1 - C0)) "$W0" "$W1")
LSECS=$(awk -v a="$W0" -v b="$W1" 'BEGIN { print b - a }')
prom >"$T/prom1"
kill -TERM "$EPID"
wait "$EPID" || log "emberd exited with status $?"
EPID=

# --- report ------------------------------------------------------------------------------
# slope FROM [caches|anon|sqlite|heap]: the least-squares slope (KiB/min) of RSS, of RSS less
# what emberd's caches account for (bounded by memory_limit: what else grows), of anonymous
# RSS, of SQLite's memory or of the heap in use, over the loaded phase's samples at or after
# FROM s
slope() {
	awk -F'\t' -v from="$1" -v what="${2:-}" '$1 == "loaded" && $2 >= from && $5 != "-" {
			x = $2 / 60
			y = what == "caches" ? $3 - $5 : what == "anon" ? $7 : what == "sqlite" ? $8 : what == "heap" ? $9 : $3
			n++; sx += x; sy += y; sxx += x * x; sxy += x * y }
		END { d = n * sxx - sx * sx; if (n < 2 || d == 0) print "-"; else printf "%.1f", (n * sxy - sx * sy) / d }' "$RAW"
}
{
	echo "soak: $START; $(uname -r); $(nproc) CPUs; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "emberd --hz 19 --interval 10s${MATCHED:+, profile = matched (the soak processes only)}; quiet ${QUIET} s, then loaded ${DURATION} s:" \
		"$RATE exec/s asked ($(awk -v n=$((N1 - N0)) -v s="$LSECS" 'BEGIN { printf "%.1f", n / s }') new processes/s on the host)," \
		"$IDLE idle processes, one niced CPU-bound process"
	echo
	echo "| figure | value |"
	echo "| --- | ---: |"
	echo "| emberd CPU, quiet (% of one CPU) | $QPCT |"
	echo "| emberd CPU, loaded (% of one CPU) | $LPCT |"
	echo "| above the quiet baseline (percentage points) | $(awk -v a="$LPCT" -v b="$QPCT" 'BEGIN { printf "%.3f", a - b }') |"
	echo "| RSS at the start / end of the loaded phase (KiB) | $(awk -F'\t' '$1 == "loaded" { if (!f) { f = $3 } l = $3 } END { print f " / " l }' "$RAW") |"
	echo "| RSS slope, whole loaded phase (KiB/min) | $(slope 0) |"
	echo "| RSS slope, last half (KiB/min) | $(slope $((DURATION / 2))) |"
	echo "| caches' own account at the start / end of the loaded phase (KiB) | $(awk -F'\t' '$1 == "loaded" { if (!f) { f = $5 } l = $5 } END { print f " / " l }' "$RAW") |"
	echo "| slope of RSS less the caches, last half (KiB/min) | $(slope $((DURATION / 2)) caches) |"
	echo "| anonymous RSS at the start / end of the loaded phase (KiB) | $(awk -F'\t' '$1 == "loaded" { if (!f) { f = $7 } l = $7 } END { print f " / " l }' "$RAW") |"
	echo "| anonymous RSS slope, last half (KiB/min) | $(slope $((DURATION / 2)) anon) |"
	echo "| SQLite's memory at the start / end of the loaded phase (KiB) | $(awk -F'\t' '$1 == "loaded" { if (!f) { f = $8 } l = $8 } END { print f " / " l }' "$RAW") |"
	echo "| heap in use at the start / end, and its slope over the last half (KiB, KiB/min) | $(awk -F'\t' '$1 == "loaded" { if (!f) { f = $9 } l = $9 } END { print f " / " l }' "$RAW"), $(slope $((DURATION / 2)) heap) |"
	echo "| intervals in the loaded phase | $(($(intervals "$T/prom1") - $(intervals "$T/prom0"))) |"
	losses "$T/prom1" | while read -r cause n; do
		b=$(losses "$T/prom0" | awk -v c="$cause" '$1 == c { print $2 }')
		echo "| BPF losses in the loaded phase: $cause | $((n - ${b:-0})) |"
	done
	echo
	echo "RSS (KiB) every ${EVERY} s of the loaded phase:" \
		"$(awk -F'\t' '$1 == "loaded" { printf "%s%s", s, $3; s = " " }' "$RAW")"
	echo "SQLite's memory (KiB), same samples:" \
		"$(awk -F'\t' '$1 == "loaded" { printf "%s%s", s, $8; s = " " }' "$RAW")"
} >"$T/report"
echo
cat "$T/report"
[ -z "$REPORT" ] || cp "$T/report" "$REPORT"
[ -z "$RAWOUT" ] || cp "$RAW" "$RAWOUT"
