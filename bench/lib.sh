# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# What the benchmarks share (sourced after setting BENCH_NAME): messages, the options
# they all take, the checks of their counts and prerequisites, and the two CPU
# readers (schedstat for a process's threads, bpf_stats for its BPF programs).

die() { echo "$BENCH_NAME: $*" >&2; exit 1; }
log() { echo "$BENCH_NAME: $*" >&2; }
need() { command -v "$1" >/dev/null || die "$1 not found: $2"; }

# bench_opt OPT ARG: the options every benchmark takes (-d -r -e -o -k); 1 for another
bench_opt() {
	case $1 in
	d) DURATION=$2 ;;
	r) REPEAT=$2 ;;
	e) EMBERD=$2 ;;
	o) REPORT=$2 ;;
	k) RAWOUT=$2 ;;
	*) return 1 ;;
	esac
}

# bench_getopts SPEC OWN ARGS...: parses a benchmark's command line by getopts SPEC: the
# options every benchmark takes (bench_opt), -h (usage 0), and the script's own through
# OWN OPT ARG, which returns 1 for an option it does not take (usage)
bench_getopts() {
	local spec=$1 own=$2 opt OPTARG OPTIND=1
	shift 2
	while getopts "$spec" opt; do
		bench_opt "$opt" "${OPTARG:-}" && continue
		case $opt in
		h) usage 0 ;;
		*) "$own" "$opt" "${OPTARG:-}" || usage ;;
		esac
	done
}

# bench_check_counts: -d and -r are whole numbers in range
bench_check_counts() {
	[[ $DURATION =~ ^[0-9]+$ && $DURATION -ge 2 ]] || die "-d wants whole seconds >= 2, not '$DURATION'"
	[[ $REPEAT =~ ^[0-9]+$ && $REPEAT -ge 1 ]] || die "-r wants a count >= 1, not '$REPEAT'"
}

# bench_require WHY: root, perf, bpftool and the bpf_stats sysctl (WHY: what root is for);
# keeps the sysctl's value in OLD_BPF_STATS for bench_restore_bpf_stats
bench_require() {
	[ "$(id -u)" -eq 0 ] || die "must run as root ($1)"
	need perf "install linux-perf (Debian) to compare with perf record"
	need bpftool "install bpftool to read BPF run times"
	[ -r /proc/sys/kernel/bpf_stats_enabled ] || die "no kernel.bpf_stats_enabled sysctl on this kernel"
	OLD_BPF_STATS=$(cat /proc/sys/kernel/bpf_stats_enabled)
}
bench_restore_bpf_stats() {
	echo "$OLD_BPF_STATS" >/proc/sys/kernel/bpf_stats_enabled 2>/dev/null || true
}

# bench_emberd_setup: what a benchmark that runs emberd beside a workload needs: root,
# an emberd built at $EMBERD, bpftool for run times; a temporary directory in T and a
# trap that stops the emberd whose pid is in EPID, restores kernel.bpf_stats_enabled
# and removes T
bench_emberd_setup() {
	[ "$(id -u)" -eq 0 ] || die "must run as root (emberd loads BPF programs)"
	[ -x "$EMBERD" ] || die "emberd not built at $EMBERD"
	need bpftool "install bpftool to read BPF run times"
	OLD_BPF_STATS=$(cat /proc/sys/kernel/bpf_stats_enabled)
	T=$(mktemp -d)
	EPID=
	trap bench_emberd_cleanup EXIT
}
bench_emberd_cleanup() {
	[ -z "$EPID" ] || { kill "$EPID" 2>/dev/null; wait "$EPID" 2>/dev/null || true; }
	bench_restore_bpf_stats
	rm -rf "$T"
}

# the median of the numbers on stdin, one per line
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.6f\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# bench_ratio_table RAW "WORKLOADS" "CONFIGS": from RAW's lines "WORKLOAD CONFIG NS", one
# Markdown row per workload and configuration: the median in ms, its ratio to the
# workload's "off" median, and every run (the header is the caller's)
bench_ratio_table() {
	local w c base m all
	for w in $2; do
		base=$(awk -v w="$w" '$1 == w && $2 == "off" { print $3 }' "$1" | median)
		for c in $3; do
			m=$(awk -v w="$w" -v c="$c" '$1 == w && $2 == c { print $3 }' "$1" | median)
			all=$(awk -v w="$w" -v c="$c" '$1 == w && $2 == c { printf "%s%.0f", s, $3 / 1e6; s = " " }' "$1")
			printf '| %s | %s | %.0f | %.4f | %s |\n' "$w" "$c" "$(echo "$m / 1000000" | bc -l)" \
				"$(echo "$m / $base" | bc -l)" "$all"
		done
	done
}

# on-CPU nanoseconds of every thread of PID (schedstat: ns precision, user+sys)
cpu_ns() {
	local s=0 f v
	for f in /proc/"$1"/task/*/schedstat; do
		read -r v _ <"$f" 2>/dev/null || continue
		s=$((s + v))
	done
	echo "$s"
}

# "run_time_ns run_cnt" of PID's BPF program named NAME (0 0 if it has none)
bpf_prog_stats() {
	local id line t=0 c=0
	for id in $(grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -un); do
		line=$(bpftool prog show id "$id" 2>/dev/null) || continue
		line=${line%%$'\n'*}
		[[ $line == *" name $2 "* ]] || continue
		t=$(sed -n 's/.*run_time_ns \([0-9]*\).*/\1/p' <<<"$line")
		c=$(sed -n 's/.*run_cnt \([0-9]*\).*/\1/p' <<<"$line")
	done
	echo "${t:-0} ${c:-0}"
}

# "run_time_ns run_cnt" summed over PID's BPF programs of type perf_event, then
# the same over all of its programs: found by the prog_id of its open fds
bpf_stats() {
	local ids id line pe_t=0 pe_c=0 all_t=0 all_c=0 t c
	ids=$(grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -un || true)
	for id in $ids; do
		line=$(bpftool prog show id "$id" 2>/dev/null) || continue # no head: SIGPIPE + pipefail
		line=${line%%$'\n'*}
		t=$(sed -n 's/.*run_time_ns \([0-9]*\).*/\1/p' <<<"$line")
		c=$(sed -n 's/.*run_cnt \([0-9]*\).*/\1/p' <<<"$line")
		t=${t:-0} c=${c:-0}
		all_t=$((all_t + t)) all_c=$((all_c + c))
		if [[ $line == *" perf_event "* ]]; then
			pe_t=$((pe_t + t)) pe_c=$((pe_c + c))
		fi
	done
	echo "$pe_t $pe_c $all_t $all_c"
}

# wait_line FILE ERE PID WHAT: until FILE has a line matching ERE (180 s), or PID dies
wait_line() {
	local i
	for ((i = 0; i < 1800; i++)); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || die "$4 exited: $(tail -3 "$1")"
		sleep 0.1
	done
	die "$4 not ready in 180 s: $(tail -3 "$1")"
}

# --- the OpenTelemetry eBPF profiler, issues 44 and 46's peer ---------------------------
# otel_build: builds into $T the peer at the version bench/peer/go.mod pins (from the Go
# module proxy; nothing fetched is kept in the tree), the local OTLP receiver that folds its
# exports (bench/peer/receiver.go, against the same profiles package) and bench/memlock_ok.c,
# the launcher under which it starts here (see its header); sets OTEL_VERSION
otel_build() {
	local here
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	need go "install Go: the peer and its receiver are built with go build"
	need cc "install gcc: the launcher bench/memlock_ok.c is compiled here"
	[ -r /usr/include/seccomp.h ] || die "no <seccomp.h>: install libseccomp-dev (scripts/install-deps.sh)"
	cc -O2 -Wall -o "$T/memlock_ok" "$here/memlock_ok.c" -lseccomp ||
		die "could not build bench/memlock_ok.c (libseccomp-dev?)"
	log "building the peer and the receiver (go build, module proxy; a minute the first time)"
	(cd "$here/peer" && GOFLAGS=-mod=readonly go build -o "$T/receiver" . &&
		GOFLAGS=-mod=readonly go build -o "$T/ebpf-profiler" go.opentelemetry.io/ebpf-profiler) \
		>"$T/go.log" 2>&1 || die "go build failed: $(tail -5 "$T/go.log")"
	OTEL_VERSION=$(awk '$1 == "go.opentelemetry.io/ebpf-profiler" { print $2 }' "$here/peer/go.mod")
}
# otel_start LOG [ARG...]: starts the receiver (folding into $T/otlp, its log in
# $T/log.recv), then the peer at its defaults but ARGs (its log in LOG) and waits until it
# samples; sets OTEL_PID and OTEL_RECV (the receiver's pid)
otel_start() {
	local addr log=$1
	shift
	rm -rf "$T/otlp" "$T/log.recv" "$log"
	mkdir -p "$T/otlp"
	"$T/receiver" -listen 127.0.0.1:0 -dir "$T/otlp" >"$T/log.recv" 2>&1 &
	OTEL_RECV=$!
	wait_line "$T/log.recv" 'listening on' "$OTEL_RECV" "the receiver"
	addr=$(sed -n 's/.*listening on \(.*\)$/\1/p' "$T/log.recv")
	"$T/memlock_ok" "$T/ebpf-profiler" -collection-agent "$addr" -disable-tls "$@" >"$log" 2>&1 &
	OTEL_PID=$!
	wait_line "$log" 'Attached tracer program' "$OTEL_PID" "the peer"
}
# otel_stop [flush]: stops the peer (with flush, once two more exports than now arrived:
# its samples are in) and its receiver
otel_stop() {
	local n i
	if [ -n "${OTEL_PID:-}" ] && [ "${1:-}" = flush ]; then
		n=$(grep -c 'receiver: export' "$T/log.recv" || true)
		for ((i = 0; i < 600; i++)); do
			[ "$(grep -c 'receiver: export' "$T/log.recv" || true)" -ge $((n + 2)) ] && break
			sleep 0.1
		done
	fi
	if [ -n "${OTEL_PID:-}" ]; then
		kill -INT "$OTEL_PID" 2>/dev/null || true # already stopped by its caller, maybe
		wait "$OTEL_PID" 2>/dev/null || true
	fi
	if [ -n "${OTEL_RECV:-}" ]; then
		kill "$OTEL_RECV" 2>/dev/null || true
		wait "$OTEL_RECV" 2>/dev/null || true
	fi
	OTEL_PID= OTEL_RECV=
}
