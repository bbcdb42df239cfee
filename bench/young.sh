#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Young processes' stacks: fx_short_lived (built without frame pointers) execs N children
# one after another, each burning ~150 ms of CPU in main -> child_burn, so that a good
# part of each child's samples comes before emberd has loaded its unwind tables. Runs it
# under each emberd given (-e, alternating, at 99 Hz) and under perf record --call-graph
# dwarf and fp, R times, and prints the medians as a Markdown table: the share of the
# children's samples whose stack reaches main, the samples emberd walked from a copy of
# their stack (status: unwind samples_deferred), emberd's CPU over the run (schedstat of
# its threads) and its BPF programs' ns per sample. With -w, the children sleep 100 ms in
# main -> child_nap as soon as they start (then burn 50 ms), emberd runs with offcpu = on
# (every switch-out sampled) and the share is that of their sleep's off-CPU time whose
# stack reaches main; perf is left out. With -d, the children burn under six frames of
# 6000 bytes of locals (~36 KiB of stack, fx_short_lived -d): the share is of their samples
# that reach main through every frame. With -q, each child burns only 10 ms (fx_short_lived
# -q), gone before emberd's next wakeup, at 499 Hz: the share is of all the children's samples
# (ld.so's start-up, the exec and the exit included), and the last column is the BPF time
# of an exit (the exit program sends a young process's mappings). It asserts nothing.
#
# usage: bench/young.sh [-w|-d|-q] [-n CHILDREN] [-r REPEATS] [-s SETTLE] [-b BUILD] [-e EMBERD]...
#   -w  off-CPU: the children's first waits instead of their first samples
#   -d  deep stacks: ~36 KiB between main and child_burn
#   -q  quick children: 10 ms each, at 499 Hz
#   -n  children a run                        (40)
#   -s  seconds after emberd starts sampling before the children start (10: its start-up,
#       the unwind tables of every process it samples first, is left out of its CPU)
#   -r  rounds over the profilers              (3)
#   -b  the build tree with fx_short_lived     (build/)
#   -e  an emberd binary; repeat for an A/B    (BUILD/daemon/emberd)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/.." && pwd)
CHILDREN=40
REPEAT=3
SETTLE=10
DURATION=2 # unused: bench_check_counts wants one
BUILD=$SRC/build
BINS=()
BENCH_NAME=young
. "$HERE/lib.sh"
. "$SRC/tests/integration/unwind_lib.sh" # share
WAITS=
DEEP=
QUICK=
HZ=99
# the frames between main and child_burn that a complete stack has
BURN=';main;child_burn;'
usage() { sed -n '20,29p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
while getopts 'wdqn:r:s:b:e:h' opt; do
	case $opt in
	w) WAITS=1 ;;
	d) DEEP=1 BURN=';main;deep_frame;deep_frame;deep_frame;deep_frame;deep_frame;deep_frame;child_burn;' ;;
	q) QUICK=1 HZ=499 ;;
	n) CHILDREN=$OPTARG ;;
	s) SETTLE=$OPTARG ;;
	r) REPEAT=$OPTARG ;;
	b) BUILD=$OPTARG ;;
	e) BINS+=("$OPTARG") ;;
	h) usage 0 ;;
	*) usage ;;
	esac
done
bench_check_counts
[ $((${WAITS:-0} + ${DEEP:-0} + ${QUICK:-0})) -le 1 ] || die "-w, -d and -q do not go together"
[[ $CHILDREN =~ ^[0-9]+$ && $CHILDREN -ge 1 ]] || die "-n wants a count >= 1, not '$CHILDREN'"
[[ $SETTLE =~ ^[0-9]+$ ]] || die "-s wants whole seconds, not '$SETTLE'"
[ "${#BINS[@]}" -gt 0 ] || BINS=("$BUILD/daemon/emberd")
EMBERCTL=$BUILD/cli/emberctl
FX=$BUILD/tests/fx_short_lived
bench_require "BPF programs, perf, kernel.bpf_stats_enabled"
[ -x "$FX" ] && [ -x "$EMBERCTL" ] || die "fx_short_lived or emberctl not built in $BUILD"
for b in "${BINS[@]}"; do [ -x "$b" ] || die "no emberd at $b"; done

T=$(mktemp -d "${BENCH_TMPDIR:-/dev/shm}/ember-young.XXXXXX")
EPID=
cleanup() {
	[ -z "$EPID" ] || kill -KILL "$EPID" 2>/dev/null || true
	wait 2>/dev/null || true
	bench_restore_bpf_stats
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

RAW=$T/raw.tsv
: >"$RAW"
# the children's stacks: every stack through child_burn, also child_burn alone
children() { grep -E '(^|;)child_burn(;| [0-9]+$)' "$1" || true; }

# naps D: the children's sleep (-w), whole or cut, from each child's offcpu profile
naps() {
	local c
	for c in $(awk '$1 == "child" { print $2 }' "$1/fx.out"); do
		"$EMBERCTL" --data-dir "$1/data" folded --type offcpu --sample offcpu --pid "$c" \
			2>/dev/null | grep -F '[off-CPU: sleep]' || true
	done
}

# run_ember I REP: the workload under emberd number I of BINS
run_ember() {
	local i=$1 d=$T/ember c0 c1 t c at ac xt xc deferred r conf=()
	rm -rf "$d"
	mkdir -p "$d"
	if [ -n "$WAITS" ]; then
		printf '[daemon]\noffcpu = on\noffcpu_sample_period = 1\ncpu_budget = 0\n' >"$d/ember.conf"
		conf=(--config "$d/ember.conf")
	elif [ -n "$QUICK" ]; then # the children by their comm: the rule that holds once gone
		printf '[app "quick"]\nmatch.comm = fx_short_lived\n' >"$d/ember.conf"
		conf=(--config "$d/ember.conf")
	fi
	"${BINS[$i]}" --data-dir "$d/data" --runtime-dir "$d/run" --hz "$HZ" --interval 10s \
		"${conf[@]}" >"$d/log" 2>&1 &
	EPID=$!
	for _ in $(seq 1 1800); do
		grep -q 'sampling .* CPUs' "$d/log" && break
		kill -0 "$EPID" 2>/dev/null || die "emberd ${BINS[$i]} exited: $(tail -2 "$d/log")"
		sleep 0.1
	done
	sleep "$SETTLE"
	c0=$(cpu_ns "$EPID")
	"$FX" ${WAITS:+-w} ${DEEP:+-d} ${QUICK:+-q} "$CHILDREN" >"$d/fx.out" || log "fx_short_lived failed"
	c1=$(cpu_ns "$EPID")
	read -r t c at ac <<<"$(bpf_stats "$EPID")"
	read -r xt xc <<<"$(bpf_prog_stats "$EPID" ember_proc_exit)"
	[ -z "$WAITS" ] || t=$at c=$ac # every program: the switch's runs
	kill -TERM "$EPID"
	wait "$EPID" || log "emberd exited with status $?"
	EPID=
	deferred=$(awk '$1 == "unwind" && $2 == "samples_deferred" { print $4 }' "$d/run/status")
	if [ -n "$WAITS" ]; then
		naps "$d" >"$d/c.folded"
		r=$(share "$d/c.folded" ';main;child_nap;')
		deferred=-
	elif [ -n "$QUICK" ]; then
		"$EMBERCTL" --data-dir "$d/data" folded --app quick -o "$d/c.folded" 2>/dev/null ||
			: >"$d/c.folded"
		r=$(share "$d/c.folded" "$BURN")
	else
		"$EMBERCTL" --data-dir "$d/data" folded -o "$d/all.folded" 2>/dev/null ||
			: >"$d/all.folded"
		children "$d/all.folded" >"$d/c.folded"
		r=$(share "$d/c.folded" "$BURN")
	fi
	echo "ember$i ${r#* } $((c1 - c0)) $((c ? t / c : 0)) ${deferred:--} $((xc ? xt / xc : 0))" >>"$RAW"
}

# run_perf MODE: the workload under perf record -F 99 --call-graph MODE (children inherit)
run_perf() {
	local mode=$1 r
	perf record -q -F "$HZ" --call-graph "$mode" -o "$T/perf.data" -- "$FX" ${DEEP:+-d} ${QUICK:+-q} "$CHILDREN" \
		>/dev/null 2>"$T/perf.err" || log "perf record ($mode): $(tail -2 "$T/perf.err")"
	perf script -i "$T/perf.data" -F comm,ip,sym --no-inline 2>/dev/null | awk '
		function emit(   i, s) {
			if (n > 0 && comm == "fx_short_lived") {
				s = f[n]
				for (i = n - 1; i >= 1; i--)
					s = s ";" f[i]
				cnt[s]++
			}
			n = 0
		}
		/^[^ \t]/ { emit(); comm = $1; next }
		/^[ \t]*$/ { emit(); next }
		{ sym = $0; sub(/^[ \t]*[0-9a-f]+ /, "", sym); gsub(/;/, ",", sym); f[++n] = sym }
		END { emit(); for (s in cnt) print s, cnt[s] }' >"$T/perf.folded"
	if [ -n "$QUICK" ]; then # every stack of comm fx_short_lived, as emberd's app quick
		cp "$T/perf.folded" "$T/pc.folded"
	else
		children "$T/perf.folded" >"$T/pc.folded"
	fi
	r=$(share "$T/pc.folded" "$BURN")
	echo "perf-$mode ${r#* } - - - -" >>"$RAW"
	rm -f "$T/perf.data"
}

echo 1 >/proc/sys/kernel/bpf_stats_enabled
START=$(date -u '+%Y-%m-%d %H:%M UTC')
for ((rep = 1; rep <= REPEAT; rep++)); do
	for i in "${!BINS[@]}"; do
		log "round $rep/$REPEAT: ${BINS[$i]}"
		run_ember "$i"
	done
	[ -z "$WAITS" ] || continue
	log "round $rep/$REPEAT: perf record"
	run_perf dwarf
	run_perf fp
done
bench_restore_bpf_stats

# RAW: NAME SAMPLES COMPLETE_PCT CPU_NS BPF_NS DEFERRED EXIT_NS
col() { awk -v n="$1" -v c="$2" '$1 == n && $c != "-" { print $c }' "$RAW" | median; }
fmt() { [ -z "$2" ] && echo - || awk -v f="$1" -v v="$2" 'BEGIN { printf f, v }'; }
echo
if [ -n "$WAITS" ]; then
	echo "young -w: $REPEAT rounds of fx_short_lived -w $CHILDREN (each child sleeps 100 ms," \
		"then ~50 ms of CPU), offcpu on, every switch-out sampled, medians; $START;" \
		"$(uname -r); $(nproc) CPUs"
	echo
	echo "| profiler | children's sleep (ns) | complete to main % | - | emberd CPU over the run | BPF ns a run (every program) |"
elif [ -n "$QUICK" ]; then
	echo "young -q: $REPEAT rounds of fx_short_lived -q $CHILDREN (each child ~10 ms of CPU) at 499 Hz," \
		"medians; $START; $(uname -r); $(nproc) CPUs"
	echo
	echo "| profiler | children's samples | complete to main % | walked from a copy | emberd CPU over the run | BPF ns a sample | BPF ns an exit |"
else
	echo "young${DEEP:+ -d}: $REPEAT rounds of fx_short_lived ${DEEP:+-d }$CHILDREN (each child ~150 ms of CPU${DEEP:+ under ~36 KiB of stack}) at 99 Hz," \
		"medians; $START; $(uname -r); $(nproc) CPUs"
	echo
	echo "| profiler | children's samples | complete to main % | walked from a copy | emberd CPU over the run | BPF ns a sample |"
fi
echo "| --- | ---: | ---: | ---: | ---: | ---: |${QUICK:+ ---: |}"
for n in $(awk '{ print $1 }' "$RAW" | sort -u); do
	label=$n
	[[ $n == ember* ]] && label="emberd ${BINS[${n#ember}]}"
	printf '| %s | %s | %s | %s | %s | %s |' "$label" "$(fmt %.0f "$(col "$n" 2)")" \
		"$(fmt %.1f "$(col "$n" 3)")" "$(fmt %.0f "$(col "$n" 6)")" \
		"$(fmt '%.1f ms' "$(awk -v v="$(col "$n" 4)" 'BEGIN { if (v != "") print v / 1e6 }')")" \
		"$(fmt %.0f "$(col "$n" 5)")"
	[ -z "$QUICK" ] || printf ' %s |' "$(fmt %.0f "$(col "$n" 7)")"
	echo
done
