#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ember side by side with the OpenTelemetry eBPF profiler (issues 44 and 46's peer) on
# the same Python and Node.js workloads, in one run: how many of each workload's samples
# name its outer function, and what each profiler costs (its process, its BPF programs,
# its start-up). It prints figures; it asserts nothing on timings.
#
# usage: bench/peer.sh [-d SECONDS] [-w WARMUP] [-r ROUNDS] [-e EMBERD] [-c EMBERCTL]
#                      [-o REPORT.md] [-k RAW.tsv] [-f DIR]
#   -d  seconds of CPU each workload runs                      (BENCH_DURATION, 30)
#   -w  seconds after the workloads start before the cost window (BENCH_WARMUP, 5)
#   -r  interleaved rounds; medians and spreads reported        (BENCH_REPEAT, 3)
#   -e  the emberd binary, -c the emberctl binary               (build/)
#   -o  also write the report to this file
#   -k  also write the raw per-run rows (TSV) to this file
#   -f  keep each run's folded stacks of the workloads in this directory
# BENCH_NODE=PATH runs the JavaScript workload under another node (default: Debian's), e.g.
# Node 24's from npm (scripts/install-deps.sh puts it in /usr/local/lib/ember-tools).
# Each round runs each profiler alone (ember at 19 Hz, the peer at its default 20 Hz;
# the order alternates between rounds): start it, wait until it samples, start the two
# workloads (Debian's python3.11 in hot_py_loop -> inner_work, `node app.js` in
# hotJsLoop -> innerJs, both run as users run them, without flags, -d seconds of CPU
# each: the host's two busy CPUs), measure from -w seconds after their start to their
# end, then read each workload's stacks: ember's with `emberctl folded --pid`, the
# peer's from a local OTLP receiver (bench/peer/receiver.go) that folds its exports.
#
# The peer is built from the Go module proxy at the version bench/peer/go.mod pins
# (with the receiver, against the same OTLP profiles package), into a temporary
# directory; nothing fetched is kept in the tree. It is started under bench/memlock_ok.c:
# it raises RLIMIT_MEMLOCK before loading its BPF objects and stops when that fails,
# which it does where the hard limit is low and root lacks CAP_SYS_RESOURCE. Since
# Linux 5.11 BPF memory is charged to the memory cgroup, not to that limit: the launcher
# makes only the attempt to set RLIMIT_MEMLOCK return success (see its header).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/.." && pwd)
DURATION=${BENCH_DURATION:-30}
WARMUP=${BENCH_WARMUP:-5}
REPEAT=${BENCH_REPEAT:-3}
EMBERD=${EMBERD:-$SRC/build/daemon/emberd}
EMBERCTL=${EMBERCTL:-$SRC/build/cli/emberctl}
REPORT=
RAWOUT=
KEEP=
NODE_BIN=${BENCH_NODE:-node}
EMBER_HZ=19
PEER_HZ=20 # the peer's default (-samples-per-second)

usage() { sed -n '8,18p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
BENCH_NAME=peer
. "$HERE/lib.sh"
while getopts 'd:w:r:e:c:o:k:f:h' opt; do
	bench_opt "$opt" "${OPTARG:-}" && continue
	case $opt in
	w) WARMUP=$OPTARG ;;
	c) EMBERCTL=$OPTARG ;;
	f) KEEP=$OPTARG ;;
	h) usage 0 ;;
	*) usage ;;
	esac
done
bench_check_counts
[[ $WARMUP =~ ^[0-9]+$ && $WARMUP -lt $DURATION ]] || die "-w wants whole seconds below -d"
[ -z "$KEEP" ] || mkdir -p "$KEEP" || die "cannot make $KEEP"
[ -x "$EMBERCTL" ] || die "emberctl not built at $EMBERCTL (cmake --build build)"
[ -x /usr/bin/python3.11 ] || die "Debian's python3.11 is not installed (scripts/install-deps.sh)"
need node "install nodejs (Node 20, Debian's): the JavaScript workload"
bench_emberd_setup # root, emberd, bpftool; T, and a trap that stops emberd

# --- clean-up: every process this script started, and the sysctl --------------------
WLS=()
cleanup() {
	local p
	for p in "${WLS[@]}"; do kill "$p" 2>/dev/null || true; done
	otel_stop
	bench_emberd_cleanup # emberd, kernel.bpf_stats_enabled, $T
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- build the peer, the receiver and the launcher; bench/proginfo.c --------------------
otel_build
PEER_VERSION=$OTEL_VERSION
cc -O2 -o "$T/proginfo" "$HERE/proginfo.c" -lbpf || die "cannot build bench/proginfo.c (libbpf-dev?)"

# --- the workloads: issue 44's, tests/integration/hot_loop.{py,js} (runtime_exited.sh's) ---
cp "$SRC/tests/integration/hot_loop.py" "$T/app.py"
cp "$SRC/tests/integration/hot_loop.js" "$T/app.js"
WORKLOADS="python node"
sampler_of() { case $1 in ember) echo ember_cpu_sample ;; peer) echo '[^ ]+' ;; esac; }
hz_of() { case $1 in ember) echo "$EMBER_HZ" ;; peer) echo "$PEER_HZ" ;; esac; }
outer_of() { case $1 in python) echo hot_py_loop ;; node) echo hotJsLoop ;; esac; }

# --- reading the profilers ------------------------------------------------------------
# bpf_all PID SAMPLER: "run_time_ns run_cnt sampler_run_cnt verified_insns" over all of
# PID's BPF programs (found by the prog_id of its open fds; a tail call's run time is its
# caller's); the sampler's runs are those of its perf_event programs named by the ERE
# SAMPLER (emberd's growth sampling is a perf_event program too: page faults)
bpf_all() {
	local ids id line t=0 c=0 pe=0 v
	ids=$(grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -un)
	for id in $ids; do
		line=$(bpftool prog show id "$id" 2>/dev/null) || continue
		line=${line//$'\n'/ }
		v=$(sed -n 's/.*run_time_ns \([0-9]*\).*/\1/p' <<<"$line") && t=$((t + ${v:-0}))
		v=$(sed -n 's/.*run_cnt \([0-9]*\).*/\1/p' <<<"$line") && c=$((c + ${v:-0}))
		[[ ! $line =~ " perf_event "\ +"name "($2)" " ]] || pe=$((pe + ${v:-0}))
	done
	# shellcheck disable=SC2086 # one argument per id
	echo "$t $c $pe $("$T/proginfo" $ids | awk '{ s += $2 } END { print s + 0 }')"
}
# share FOLDED NAME: "named total": samples whose stack holds a frame NAME (alone, or
# followed by its file and line), and all samples, of a folded file
share() {
	awk -v f="$2" '{
		n = $NF; t += n; hit = 0
		k = split(substr($0, 1, length($0) - length($NF) - 1), fr, ";")
		for (i = 1; i <= k && !hit; i++)
			if (fr[i] == f || index(fr[i], f " ") == 1 || index(fr[i], f "(") == 1 ||
			    index(fr[i], f ":") == 1) hit = 1
		if (hit) s += n
	} END { print s + 0, t + 0 }' "$1"
}
# start PROFILER: sets PROF_PID (the profiler's pid) once it samples
start() {
	case $1 in
	ember)
		rm -rf "$T/data" "$T/run" "$T/log.ember" # no line of the last run's log read as this one's
		"$EMBERD" --hz "$EMBER_HZ" --data-dir "$T/data" --runtime-dir "$T/run" \
			>"$T/log.ember" 2>&1 &
		EPID=$!
		PROF_PID=$EPID
		wait_line "$T/log.ember" 'sampling .* CPUs' "$EPID" emberd
		;;
	peer)
		otel_start "$T/log.peer"
		PROF_PID=$OTEL_PID
		;;
	esac
}

# stop PROFILER: stops it, its samples flushed (emberd stores its last interval at
# SIGTERM; the peer's are in once two more exports than at the workloads' end arrived)
stop() {
	case $1 in
	ember)
		kill -TERM "$EPID"
		wait "$EPID" || log "emberd exited with status $?"
		EPID=
		;;
	peer) otel_stop flush ;;
	esac
}

# folded PROFILER PID: the workload's folded stacks
folded() {
	case $1 in
	ember) "$EMBERCTL" --data-dir "$T/data" folded --type cpu --pid "$2" 2>/dev/null || true ;;
	peer) cat "$T/otlp/$2.folded" 2>/dev/null || true ;;
	esac
}

# run REP PROFILER: one measured run; rows into $RAW
run() {
	local rep=$1 prof=$2 st c0 c1 t0 t1 b0 b1 r0 r1 p0 p1 x w pid named total rss
	start "$prof"
	st=$(cpu_ns "$PROF_PID")
	(cd "$T" && exec /usr/bin/python3.11 app.py "$DURATION") >"$T/cpu.python" &
	WLS=($!)
	(cd "$T" && exec "$NODE_BIN" app.js "$((DURATION * 1000))") >"$T/cpu.node" &
	WLS+=($!)
	sleep "$WARMUP"
	t0=$EPOCHREALTIME c0=$(cpu_ns "$PROF_PID")
	read -r b0 r0 p0 _ <<<"$(bpf_all "$PROF_PID" "$(sampler_of "$prof")")"
	wait "${WLS[0]}" || log "python3.11 exited with status $?"
	wait "${WLS[1]}" || log "node exited with status $?"
	c1=$(cpu_ns "$PROF_PID") t1=$EPOCHREALTIME
	read -r b1 r1 p1 x <<<"$(bpf_all "$PROF_PID" "$(sampler_of "$prof")")"
	rss=$(awk '/^VmRSS:/ { print $2 }' /proc/"$PROF_PID"/status)
	stop "$prof"
	# cost REP PROFILER start_ns proc_ns bpf_ns window_ns runs sampler_runs verified rss_kib
	printf 'cost\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$prof" "$st" $((c1 - c0)) \
		$((b1 - b0)) "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", (b - a) * 1e9 }')" \
		$((r1 - r0)) $((p1 - p0)) "$x" "$rss" >>"$RAW"
	for w in $WORKLOADS; do
		pid=${WLS[0]}
		[ "$w" = python ] || pid=${WLS[1]}
		folded "$prof" "$pid" >"$T/$prof.$w.$rep.folded"
		read -r named total <<<"$(share "$T/$prof.$w.$rep.folded" "$(outer_of "$w")")"
		[ -z "$KEEP" ] || cp "$T/$prof.$w.$rep.folded" "$KEEP/"
		# names REP PROFILER WORKLOAD named total expected (the workload's CPU s x Hz)
		printf 'names\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$prof" "$w" "$named" "$total" \
			"$(awk -v h="$(hz_of "$prof")" '{ printf "%.0f", $1 * h }' "$T/cpu.$w")" >>"$RAW"
	done
	WLS=()
	log "round $rep $prof: start-up $((st / 1000000)) ms, process $(((c1 - c0) / 1000000)) ms," \
		"BPF $(((b1 - b0) / 1000000)) ms; $(awk -F'\t' -v r="$rep" -v p="$prof" \
			'$1 == "names" && $2 == r && $3 == p { printf "%s %s/%s ", $4, $5, $6 }' "$RAW")"
}

# --- run --------------------------------------------------------------------------------
RAW=$T/raw
: >"$RAW"
echo 1 >/proc/sys/kernel/bpf_stats_enabled
START=$(date -u '+%Y-%m-%d %H:%M UTC')
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
for ((rep = 1; rep <= REPEAT; rep++)); do
	if ((rep % 2)); then order="ember peer"; else order="peer ember"; fi
	for prof in $order; do
		run "$rep" "$prof"
	done
done
bench_restore_bpf_stats
[ -z "$RAWOUT" ] || cp "$RAW" "$RAWOUT"

# --- report -----------------------------------------------------------------------------
# med KIND PROFILER [WORKLOAD] EXPR FMT: "median (min-max)" over the runs of an awk
# expression of the raw row
med() {
	local vals
	vals=$(awk -F'\t' -v k="$1" -v p="$2" -v w="$3" '
		$1 == k && $3 == p && (w == "" || $4 == w) { print '"$4"' }' "$RAW")
	[ -n "$vals" ] || { echo -; return; }
	printf "$5 ($5-$5)" "$(median <<<"$vals")" "$(sort -g <<<"$vals" | awk 'NR == 1')" \
		"$(sort -g <<<"$vals" | awk 'END { print }')"
}
{
	echo "Kernel $(uname -r), $(nproc) CPUs, $START, load average at the start $LOAD; $REPEAT" \
		"interleaved rounds, medians (min-max). ember at $EMBER_HZ Hz, the peer" \
		"(OpenTelemetry eBPF profiler $PEER_VERSION) at $PEER_HZ Hz; workloads of ${DURATION} s" \
		"of CPU each, both at once (the host's 2 CPUs busy); cost window from ${WARMUP} s" \
		"after their start to their end; node: $("$NODE_BIN" --version)."
	echo
	echo "| workload | outer function | profiler | samples | named % | expected samples | named % of expected |"
	echo "| --- | --- | --- | --- | --- | --- | --- |"
	for w in $WORKLOADS; do
		for prof in ember peer; do
			printf '| %s | `%s` | %s | %s | %s | %s | %s |\n' "$w" "$(outer_of "$w")" "$prof" \
				"$(med names "$prof" "$w" '$6' %.0f)" \
				"$(med names "$prof" "$w" '$6 ? 100 * $5 / $6 : 0' %.1f)" \
				"$(med names "$prof" "$w" '$7' %.0f)" \
				"$(med names "$prof" "$w" '$7 ? 100 * $5 / $7 : 0' %.1f)"
		done
	done
	echo
	echo "| profiler | process % of one CPU | BPF % | total % | BPF runs / sample |" \
		"BPF ns / run | instructions verified | start-up CPU ms | RSS MB |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	for prof in ember peer; do
		printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$prof" \
			"$(med cost "$prof" '' '$5 * 100 / $7' %.3f)" \
			"$(med cost "$prof" '' '$6 * 100 / $7' %.3f)" \
			"$(med cost "$prof" '' '($5 + $6) * 100 / $7' %.3f)" \
			"$(med cost "$prof" '' '$9 ? $8 / $9 : 0' %.2f)" \
			"$(med cost "$prof" '' '$8 ? $6 / $8 : 0' %.0f)" \
			"$(med cost "$prof" '' '$10' %.0f)" \
			"$(med cost "$prof" '' '$4 / 1e6' %.0f)" \
			"$(med cost "$prof" '' '$11 / 1024' %.1f)"
	done
} | tee "${REPORT:-/dev/null}"
