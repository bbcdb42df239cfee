#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What starting emberd costs: its CPU until it samples (every thread, from schedstat),
# the main thread's phases as `emberd -v` logs them ("start-up CPU: ..."), and, for each
# BPF program it loaded, the instructions the kernel's verifier processed to accept it
# (bpf_prog_info.verified_insns: a count, the same at every load of the same program on the
# same kernel, where load times follow the host's noise) and its size. Runs emberd with
# --duration 1s R times (alternately with a second binary, -b), offcpu on and off, and
# prints the medians as Markdown. Figures only: it asserts nothing.
#
# usage: bench/startup.sh [-r REPEATS] [-e EMBERD] [-b EMBERD]
#   -r  starts of each configuration, medians reported   (BENCH_REPEAT, 5)
#   -e  the emberd binary                                 (EMBERD, build/daemon/emberd)
#   -b  another emberd to compare (configurations base-*) (EMBERD_BASE, none)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPEAT=${BENCH_REPEAT:-5}
DURATION=2 # unused: bench_check_counts wants one
EMBERD=${EMBERD:-$HERE/../build/daemon/emberd}
BASE=${EMBERD_BASE:-}

usage() { sed -n '11,14p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
BENCH_NAME=startup
. "$HERE/lib.sh"
while getopts 'r:e:b:h' opt; do
	bench_opt "$opt" "${OPTARG:-}" && continue # -r, -e
	case $opt in
	b) BASE=$OPTARG ;;
	h) usage 0 ;;
	*) usage ;;
	esac
done
bench_check_counts
bench_emberd_setup
need cc "install gcc: the reader of the programs' verifier counts is compiled here"
[ -z "$BASE" ] || [ -x "$BASE" ] || die "-b: no emberd at $BASE"

cc -O2 -o "$T/proginfo" "$HERE/proginfo.c" -lbpf || die "cannot build the reader (libbpf-dev?)"
printf '[daemon]\noffcpu = on\ncpu_budget = 0\n' >"$T/offcpu.conf"
: >"$T/empty.conf"

# one_start LABEL BINARY CONF: starts emberd, reads its CPU once it samples, its programs,
# then lets it run out; appends "LABEL cpu_ms main_ms bpf_ms" to runs and the programs to progs
one_start() {
	local label=$1 bin=$2 conf=$3 log=$T/emberd.log i cpu ids line
	rm -rf "$T/data" "$T/run"
	"$bin" -v --config "$conf" --data-dir "$T/data" --runtime-dir "$T/run" --duration 3s \
		>"$log" 2>&1 &
	EPID=$!
	for ((i = 0; i < 2400; i++)); do
		grep -q 'sampling .* CPUs' "$log" && break
		kill -0 "$EPID" 2>/dev/null || die "$bin exited before sampling: $(tail -3 "$log")"
		sleep 0.05
	done
	grep -q 'sampling .* CPUs' "$log" || die "$bin did not start sampling in 120 s"
	cpu=$(cpu_ns "$EPID")
	# (an fd closed between the glob and the read fails grep: no matter)
	ids=$(grep -h '^prog_id:' /proc/"$EPID"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -un || true)
	# shellcheck disable=SC2086
	"$T/proginfo" $ids | sed "s/^/$label /" >>"$T/progs"
	wait "$EPID" || die "$bin exited with status $?: $(tail -3 "$log")"
	EPID=
	line=$(grep -m1 'start-up CPU:' "$log") || die "no start-up line in $bin's -v log"
	# "start-up CPU: A ms before, history and control B, symbolizer C, BPF D"
	# (after LABEL and CPU: fields 7, 13, 15 and the last are the four phases' ms)
	echo "$label $cpu $line" | awk '{ printf "%s %.1f %.1f %.1f\n", $1, $2 / 1e6,
		$7 + $13 + $15 + $NF, $NF }' >>"$T/runs"
}

CONFIGS="cpu offcpu"
[ -z "$BASE" ] || CONFIGS="$CONFIGS base-cpu base-offcpu"
: >"$T/runs"
: >"$T/progs"
for ((r = 1; r <= REPEAT; r++)); do
	for c in $CONFIGS; do
		bin=$EMBERD
		[[ $c == base-* ]] && bin=$BASE
		conf=$T/empty.conf
		[[ $c == *offcpu ]] && conf=$T/offcpu.conf
		one_start "$c" "$bin" "$conf"
	done
	log "run $r/$REPEAT done"
done

# every figure with the kernel it was measured on: the verifier's work differs between kernels
KERNEL=$(uname -r)
echo
echo "emberd start-up, $REPEAT starts per configuration, medians; $(date -u '+%Y-%m-%d %H:%M UTC');" \
	"kernel $KERNEL; $(nproc) CPUs"
echo
echo "| kernel | configuration | process CPU until sampling, ms (every thread) | main thread's phases, ms | of them loading BPF, ms |"
echo "| --- | --- | ---: | ---: | ---: |"
for c in $CONFIGS; do
	printf '| %s | %s | %.1f | %.1f | %.1f |\n' "$KERNEL" "$c" \
		"$(awk -v c="$c" '$1 == c { print $2 }' "$T/runs" | median)" \
		"$(awk -v c="$c" '$1 == c { print $3 }' "$T/runs" | median)" \
		"$(awk -v c="$c" '$1 == c { print $4 }' "$T/runs" | median)"
done
echo
echo "| kernel | configuration | program | instructions verified | xlated bytes | JIT bytes |"
echo "| --- | --- | --- | ---: | ---: | ---: |"
# one row per configuration and program (the counts repeat at every start)
sort -u "$T/progs" | sort -k1,1 -k3,3nr | awk -v k="$KERNEL" '{
	printf "| %s | %s | %s | %d | %d | %d |\n", k, $1, $2, $3, $4, $5
	t[$1] += $3 } END { for (c in t) printf "| %s | %s | **all** | **%d** | | |\n", k, c, t[c] }'
