#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What memory growth sampling costs: a page-fault-heavy workload (mmap 64 MiB, touch
# every page, munmap, over and over) and a system-call-heavy one (getppid in a loop: no
# growth program runs, what any host-wide hook would tax), each with emberd off, with
# emberd sampling CPU only (growth_fault_period = 0) and with emberd at the default
# growth_fault_period. Runs the configurations alternately R times, prints the medians
# of the workload's CPU time and their ratios to emberd off, and the growth programs'
# run time per event (kernel.bpf_stats_enabled). Figures only: it asserts nothing.
#
# usage: bench/growth.sh [-r REPEATS] [-n ROUNDS] [-s SYSCALLS] [-e EMBERD]
#   -r  runs of each configuration, medians reported      (BENCH_REPEAT, 5)
#   -n  mmap/touch/munmap rounds of 64 MiB per run        (BENCH_ROUNDS, 20)
#   -s  getppid calls per run                              (BENCH_SYSCALLS, 2000000)
#   -e  the emberd binary                                  (EMBERD, build/daemon/emberd)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPEAT=${BENCH_REPEAT:-5}
ROUNDS=${BENCH_ROUNDS:-20}
SYSCALLS=${BENCH_SYSCALLS:-2000000}
EMBERD=${EMBERD:-$HERE/../build/daemon/emberd}

usage() { sed -n '11,15p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
BENCH_NAME=growth
. "$HERE/lib.sh"
while getopts 'r:n:s:e:h' opt; do
	bench_opt "$opt" "${OPTARG:-}" && continue # -r, -e
	case $opt in
	n) ROUNDS=$OPTARG ;;
	s) SYSCALLS=$OPTARG ;;
	h) usage 0 ;;
	*) usage ;;
	esac
done
bench_emberd_setup
need cc "install gcc: the workload is compiled here"

cat >"$T/work.c" <<'EOF2'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
/* faults N: N rounds of mmap 64 MiB + a write per page + munmap; syscalls N: N getppid */
int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 0, page = sysconf(_SC_PAGESIZE);
	size_t len = 64u << 20;
	struct rusage ru;

	if (argc > 2 && !strcmp(argv[1], "faults")) {
		for (long r = 0; r < n; r++) {
			char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED)
				return 1;
			for (size_t off = 0; off < len; off += page)
				p[off] = 1;
			munmap(p, len);
		}
	} else {
		for (long i = 0; i < n; i++)
			getppid();
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("%ld\n", (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000L +
				(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000L);
	return 0;
}
EOF2
cc -O2 -o "$T/work" "$T/work.c"
printf '[daemon]\ngrowth_fault_period = 0\n' >"$T/cpu-only.conf"
printf '[daemon]\n' >"$T/growth.conf"

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
stop() {
	local name id line
	if [ "$1" = growth ]; then # the growth programs' run time and count
		for id in $(grep -h '^prog_id:' /proc/"$EPID"/fdinfo/* | awk '{print $2}' | sort -un); do
			line=$(bpftool prog show id "$id" 2>/dev/null) || continue
			line=${line%%$'\n'*}
			name=$(sed -n 's/.* name \([a-z_]*\) .*/\1/p' <<<"$line")
			case $name in
			ember_growth_fa* | ember_growth_ma*)
				echo "$2 $name $(sed -n 's/.*run_time_ns \([0-9]*\) run_cnt \([0-9]*\).*/\1 \2/p' <<<"$line")" >>"$T/bpf"
				;;
			esac
		done
	fi
	kill "$EPID"
	wait "$EPID" || true
	EPID=
}
run() { # config workload
	case $1 in
	cpu-only) start "$T/cpu-only.conf" ;;
	growth) start "$T/growth.conf" ;;
	esac
	if [ "$2" = faults ]; then "$T/work" faults "$ROUNDS"; else "$T/work" syscalls "$SYSCALLS"; fi
	[ "$1" = off ] || stop "$1" "$2"
}

echo 1 >/proc/sys/kernel/bpf_stats_enabled
CONFIGS="off cpu-only growth"
for r in $(seq "$REPEAT"); do
	for w in faults syscalls; do
		for c in $CONFIGS; do
			echo "$w $c $(run "$c" "$w")" >>"$T/raw"
		done
	done
	log "run $r/$REPEAT done"
done

echo "| workload | configuration | CPU ms (median of $REPEAT) | ratio to off | all runs, ms |"
echo "| --- | --- | --- | --- | --- |"
bench_ratio_table "$T/raw" "faults syscalls" "$CONFIGS"
echo
echo "| workload | program | runs (median) | ns per run (median) |"
echo "| --- | --- | --- | --- |"
for w in faults syscalls; do
	for p in ember_growth_fa ember_growth_ma; do
		cnt=$(awk -v w="$w" -v p="$p" '$1 == w && index($2, p) == 1 { print $4 }' "$T/bpf" | median)
		ns=$(awk -v w="$w" -v p="$p" '$1 == w && index($2, p) == 1 && $4 > 0 { print $3 / $4 }' "$T/bpf" | median)
		printf '| %s | %s | %s | %.0f |\n' "$w" "$p" "$cnt" "$ns"
	done
done
# The fault program runs in the faulting task, charged to it: its cost per fault of the
# workload is its time per run over the period, against what one fault costs the
# workload with emberd off (its CPU time over its faults: ROUNDS x 64 MiB of pages).
ns=$(awk '$1 == "faults" && index($2, "ember_growth_fa") == 1 && $4 > 0 { print $3 / $4 }' "$T/bpf" | median)
base=$(awk '$1 == "faults" && $2 == "off" { print $3 }' "$T/raw" | median)
period=100
per_fault=$(echo "$base / ($ROUNDS * 67108864 / $(getconf PAGESIZE))" | bc -l)
printf '\nfaults: %.0f ns of workload CPU per fault with emberd off; the fault program %.0f ns per\n' \
	"$per_fault" "$ns"
printf 'sampled fault at 1 in %d = %.1f ns per fault = %.2f%% of a fault'"'"'s cost\n' "$period" \
	"$(echo "$ns / $period" | bc -l)" "$(echo "100 * $ns / $period / $per_fault" | bc -l)"
