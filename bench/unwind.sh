#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Unwinding benchmark: runs each unwinding fixture (and Node.js under GC pressure) under
# emberd and under perf record --call-graph dwarf (the reference for correctness) and
# --call-graph fp, R times each, and prints the medians as a Markdown table: the share
# of complete stacks and of the fixture's known stack, the run time of emberd's BPF
# programs per sample at 99 and 19 Hz (kernel.bpf_stats_enabled, over the workload's run),
# and emberd's own CPU. It prints figures and ratios; it never asserts on them.
#
# usage: bench/unwind.sh [-d SECONDS] [-r REPEATS] [-w WORKLOADS] [-b BUILD] [-e EMBERD]
#                        [-P] [-m] [-o REPORT.md] [-k RAW.tsv]
#   -d  CPU seconds each workload runs                    (BENCH_DURATION, 12)
#   -r  repetitions of each run; medians reported         (BENCH_REPEAT, 3)
#   -w  comma-separated workloads                         (BENCH_WORKLOADS, all:
#       qsort,memcpy,clock,mixed,lazy,node; also python, pynative: a Python
#       stack 33 Python frames deep, and a native one as deep, for the runtime
#       walk's cost per sample; js: a JavaScript stack 32 functions deep whose
#       loop runs in on-stack-replaced code, under BENCH_NODE (Node 22 from
#       scripts/install-deps.sh by default), without flags, 55 frames with
#       node's; jsnative: a native stack as deep, 55 frames)
#   -b  the build tree with the fixtures (tests/fx_*)     (EMBER_BUILD, build/)
#   -e  the emberd binary                                 (EMBERD, BUILD/daemon/emberd);
#       or several, LABEL=PATH,LABEL=PATH: each run in turn within every round, so
#       that builds are compared on the same host moments apart (then -P is implied)
#   -P  emberd only: no perf runs (the BPF time per sample alone)
#   -m  emberd profiles the workload alone (profile = matched): the host's other
#       processes' samples end at the process filter, cheap, instead of being walked
#   -o  also write the table to this file
#   -k  also write the raw per-run rows (TSV) to this file
# Quick smoke run: bench/unwind.sh -d 5 -r 1 -w qsort
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/.." && pwd)
DURATION=${BENCH_DURATION:-12}
REPEAT=${BENCH_REPEAT:-3}
WORKLOADS=${BENCH_WORKLOADS:-qsort,memcpy,clock,mixed,lazy,node}
BUILD=${EMBER_BUILD:-$SRC/build}
JS_NODE=${BENCH_NODE:-/usr/local/lib/ember-tools/node_modules/node22/bin/node}
EMBERD=${EMBERD:-}
REPORT=
RAWOUT=
NO_PERF=
MATCHED=

usage() { sed -n '10,25p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
BENCH_NAME=unwind
. "$HERE/lib.sh"
. "$SRC/tests/integration/unwind_lib.sh" # share: the tests' measure of a stack shape
while getopts 'd:r:w:b:e:o:k:Pmh' opt; do
	bench_opt "$opt" "${OPTARG:-}" && continue
	case $opt in
	w) WORKLOADS=$OPTARG ;;
	P) NO_PERF=1 ;;
	m) MATCHED=1 ;;
	b) BUILD=$OPTARG ;;
	h) usage 0 ;;
	*) usage ;;
	esac
done
bench_check_counts
EMBERD=${EMBERD:-$BUILD/daemon/emberd}
EMBERCTL=$BUILD/cli/emberctl
# the builds compared: labels and emberd binaries ("" and EMBERD for one)
LABELS=() EMBERDS=()
if [[ $EMBERD == *,* || $EMBERD == *=* ]]; then
	IFS=, read -ra _builds <<<"$EMBERD"
	for b in "${_builds[@]}"; do
		[[ $b == ?*=?* ]] || die "-e with several builds wants LABEL=PATH,..., not '$b'"
		LABELS+=("${b%%=*}") EMBERDS+=("${b#*=}")
	done
	NO_PERF=1
else
	LABELS=("") EMBERDS=("$EMBERD")
fi

# --- prerequisites ----------------------------------------------------------------
bench_require "BPF programs, perf, kernel.bpf_stats_enabled"
for e in "${EMBERDS[@]}"; do
	[ -x "$e" ] || die "emberd not built at $e (cmake --build build, or pass -b / -e)"
done
[ -x "$EMBERCTL" ] || die "emberctl not built in $BUILD (cmake --build build, or pass -b)"
for w in ${WORKLOADS//,/ }; do
	case $w in
	qsort | memcpy | clock | mixed) [ -x "$BUILD/tests/fx_$w" ] ||
		die "fixture $BUILD/tests/fx_$w not built (cmake --build $BUILD --target fx_$w)" ;;
	lazy) [ -x "$BUILD/tests/fx_lazy_bind" ] ||
		die "fixture $BUILD/tests/fx_lazy_bind not built (cmake --build $BUILD --target fx_lazy_bind)" ;;
	node) need node "install nodejs for the node workload" ;;
	js) [ -x "$JS_NODE" ] || die "$JS_NODE: no such node (scripts/install-deps.sh installs it)" ;;
	python) [ -x /usr/bin/python3.11 ] || die "install python3.11 for the python workload" ;;
	pynative | jsnative) [ -x "$BUILD/tests/fx_deep" ] ||
		die "fixture $BUILD/tests/fx_deep not built (cmake --build $BUILD --target fx_deep)" ;;
	*) die "unknown workload '$w'" ;;
	esac
done

# --- clean-up: every background process, the sysctl, the temp dir ------------------
T=$(mktemp -d "${BENCH_TMPDIR:-/dev/shm}/ember-unwind.XXXXXX") # tmpfs: perf.data costs no disk I/O
BG=()
cleanup() {
	local p
	for p in "${BG[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	bench_restore_bpf_stats
	rm -f /tmp/perf-"$$"-*.map
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the workloads --------------------------------------------------------------------
# Node.js under GC pressure: the unwind_node test's workload
cp "$SRC/tests/integration/gc.js" "$T/gc.js"

# JavaScript: descend x 31 -> spin, whose loop V8 22 on runs in on-stack-replaced code
cat >"$T/deep.js" <<'JS'
'use strict';
function cpuMs() { const u = process.cpuUsage(); return (u.user + u.system) / 1000; }
function spin(end) {
	let x = 0;
	while (cpuMs() < end)
		for (let i = 0; i < 200000; i++)
			x = (x * 31 + i) % 1000003;
	return x;
}
function descend(d, end) { return d === 0 ? spin(end) : descend(d - 1, end) + 1; }
descend(30, cpuMs() + 1000 * Number(process.argv[2]));
JS

# Python: <module> -> descend x 31 -> spin, 33 Python frames on ~11 of the interpreter's
cat >"$T/deep.py" <<'PY'
import sys
import time


def spin(end):
    x = 0
    while time.process_time() < end:
        for i in range(10000):
            x += i
    return x


def descend(d, end):
    if d == 0:
        return spin(end)
    return descend(d - 1, end) + 1


descend(30, time.process_time() + float(sys.argv[1]))
PY

# workload_cmd W: the command line of workload W, using $DURATION s of CPU (not wall:
# on a busy machine it gets as many samples, later)
workload_cmd() {
	case $1 in
	node) echo node --perf-basic-prof "$T/gc.js" "$DURATION" ;;
	python) echo /usr/bin/python3.11 "$T/deep.py" "$DURATION" ;;
	js) echo "$JS_NODE" "$T/deep.js" "$DURATION" ;;
	# as many frames as the python workload's stacks: main, descend x 39, spin, libc's
	pynative) echo "$BUILD/tests/fx_deep" "$DURATION" 38 ;;
	# as many frames as the js workload's: _start, libc's two, main, descend x 50, spin
	jsnative) echo "$BUILD/tests/fx_deep" "$DURATION" 49 ;;
	# ld.so resolves every PLT call again (its lazy-binding trampoline: CFA from rbx)
	lazy) echo env LD_BIND_NOT=1 "$BUILD/tests/fx_lazy_bind" "$DURATION" ;;
	*) echo "$BUILD/tests/fx_$1" "$DURATION" ;;
	esac
}

# The same shapes as tests/integration/unwind_*.sh, as EREs over ";root;...;leaf;".
# complete: the stack reaches the process's start (main; node::Start, which Debian's
# node's main tail-calls) or a thread's (start_thread).
COMPLETE=';(main|Py_BytesMain|node::Start(\([^;]*\))?|start_thread);'
# known WANT OF: of the samples matching OF, those with the fixture's known stack
known_of() {
	local vdso='(\[vdso\][^;]*|__vdso_[^;]*|__cvdso_[^;]*)' clk='(__)?clock_gettime(64)?(@[^;]*)?'
	case $1 in
	qsort) printf '%s\t%s\n' ';main;sort_rounds;[^;]*qsort[^;]*;([^;]*;)*cmp_records;' ';cmp_records;' ;;
	memcpy) printf '%s\t%s\n' ';main;copy_buffers;(__)?mem(cpy|move)[^;]*;' ';(__)?mem(cpy|move)[^;]*;' ;;
	clock) printf '%s\t%s\n' ";main;read_clock_loop;$clk;($vdso|clock_gettime);" \
		";$clk;($vdso|clock_gettime);|;$vdso;" ;;
	mixed) printf '%s\t%s\n' ';(main|start_thread;fp_thread);fp_driver;' '' ;;
	lazy) printf '%s\t%s\n' ';main;resolve_loop;' '' ;;
	# spelt out: mawk's EREs have no {n}
	python) printf '%s\t%s\n' ";<module>;$(printf 'descend;%.0s' $(seq 31))spin;" '' ;;
	pynative) printf '%s\t%s\n' ";main;$(printf 'descend;%.0s' $(seq 39))spin;" '' ;;
	jsnative) printf '%s\t%s\n' ";main;$(printf 'descend;%.0s' $(seq 50))spin;" '' ;;
	esac # node: none (tests/integration/unwind_node.sh looks at V8's C++ single-threaded)
}

# perf script of PID in perf.data -> folded stacks, root first (the format of emberctl folded)
perf_folded() {
	perf script -i "$1" -F pid,tid,ip,sym,dso --no-inline 2>/dev/null | awk -v P="$2" '
		function emit(   i, s) {
			if (n > 0 && pid == P) {
				s = f[n]
				for (i = n - 1; i >= 1; i--)
					s = s ";" f[i]
				cnt[s]++
			}
			n = 0
		}
		/^ *[0-9]+\/[0-9]+/ { emit(); pid = $1; sub(/\/.*/, "", pid); next }
		/^[ \t]*$/ { emit(); next }
		{
			sym = $0
			sub(/^[ \t]*[0-9a-f]+ /, "", sym)
			dso = sym
			sub(/.* \(/, "", dso)
			sub(/\)$/, "", dso)
			sub(/ \([^()]*\)$/, "", sym)
			if (sym == "[unknown]" && dso == "[vdso]")
				sym = "[vdso]"
			gsub(/;/, ",", sym)
			f[++n] = sym
		}
		END { emit(); for (s in cnt) print s, cnt[s] }'
}

RAW=$T/raw.tsv
printf 'workload\tprofiler\trep\tsamples\tcomplete\tknown\tknown_of\tbpf_ns\tbpf_cnt\tcpu_ns\twall_ns\trt_stacks\tidle_ns\tidle_cnt\n' >"$RAW"

# row W PROFILER REP FOLDED [BPF_NS BPF_CNT CPU WALL RT_STACKS IDLE_NS IDLE_CNT]: one row into
# $RAW from folded stacks
row() {
	local w=$1 prof=$2 rep=$3 f=$4 complete samples known=- known_of=-
	read -r complete samples _ <<<"$(share "$f" "$COMPLETE")"
	IFS=$'\t' read -r want of <<<"$(known_of "$w")" || true
	[ -z "$want" ] || read -r known known_of _ <<<"$(share "$f" "$want" "$of")"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$prof" "$rep" \
		"$samples" "$complete" "$known" "$known_of" "${5:--}" "${6:--}" "${7:--}" "${8:--}" \
		"${9:--}" "${10:--}" "${11:--}" >>"$RAW"
}

# rt_stacks LOG W: the stacks with runtime frames emberd was sent (EMBER_PROC_RT_FRAMES), from
# its last "read as sampled" line (-v): "in S stacks", or for a build that does not say, the
# frames read over the workload's runtime frames a stack (python: 33); "-" for none
rt_stacks() {
	awk -v w="$2" '/read as sampled/ { line = $0 }
		END {
			if (line == "") { print "-"; exit }
			if (match(line, / in [0-9]+ stacks/)) {
				s = substr(line, RSTART + 4); sub(/ .*/, "", s); print s; exit
			}
			if (w != "python") { print "-"; exit }
			match(line, /read as sampled [0-9]+/)
			s = substr(line, RSTART + 16, RLENGTH - 16); print s / 33 }' "$1"
}

# ember_conf W: a configuration that profiles workload W alone (-m), on stdout
ember_conf() {
	local cmd
	cmd=$(workload_cmd "$1")
	cmd=${cmd#env * } # its program, after env's assignment
	printf '[daemon]\nprofile = matched\n\n[app "bench"]\nmatch.cmdline = *%s\n' \
		"$(basename "${cmd%% *}") ${cmd#* }"
}

# IDLE: seconds emberd samples the host before the workload starts, to learn what the host's
# other samples cost it (see the report's "workload's own")
IDLE=3

# run_ember W HZ REP [LABEL EMBERD]: the workload under a fresh emberd at HZ; the cpu
# sampler's run time and count over IDLE s before the workload, and over the workload's run
run_ember() {
	local w=$1 hz=$2 rep=$3 label=${4:-} emberd=${5:-$EMBERD} d=$T/ember i epid wpid t0 t1 c0 c1
	local bpf_t bpf_c bpf_t0 bpf_c0 idle_t idle_c conf=()
	rm -rf "$d"
	mkdir -p "$d/data"
	if [ -n "$MATCHED" ]; then
		ember_conf "$w" >"$T/ember.conf"
		conf=(--config "$T/ember.conf")
	fi
	"$emberd" "${conf[@]}" --data-dir "$d/data" --runtime-dir "$d/run" --hz "$hz" \
		--interval 5s -v >"$T/emberd.log" 2>&1 &
	epid=$!
	BG+=("$epid")
	for ((i = 0; i < 1800; i++)); do
		grep -q 'sampling .* CPUs' "$T/emberd.log" && break
		kill -0 "$epid" 2>/dev/null || break
		sleep 0.1
	done
	if ! grep -q 'sampling .* CPUs' "$T/emberd.log"; then # a lost run, not a lost benchmark
		local rc=0
		kill -KILL "$epid" 2>/dev/null || true
		wait "$epid" 2>/dev/null || rc=$?
		log "$w at $hz Hz${label:+ ($label)}: emberd did not start sampling within 180 s" \
			"(exit status $rc), run skipped: $(tail -3 "$T/emberd.log" | tr '\n' '|')"
		return 0
	fi
	read -r idle_t idle_c <<<"$(bpf_prog_stats "$epid" ember_cpu_sample)"
	sleep "$IDLE" # a measuring window, not a wait for a condition
	read -r bpf_t0 bpf_c0 <<<"$(bpf_prog_stats "$epid" ember_cpu_sample)"
	t0=$EPOCHREALTIME c0=$(cpu_ns "$epid")
	# in $T: node writes isolate-*-v8.log where it runs; the command line splits on purpose
	# shellcheck disable=SC2046
	(cd "$T" && exec $(workload_cmd "$w")) >/dev/null &
	wpid=$!
	wait "$wpid" || log "$w exited with status $? under emberd"
	c1=$(cpu_ns "$epid") t1=$EPOCHREALTIME
	read -r bpf_t bpf_c <<<"$(bpf_prog_stats "$epid" ember_cpu_sample)"
	kill -TERM "$epid"
	wait "$epid" || log "emberd exited with status $?"
	"$EMBERCTL" --data-dir "$d/data" folded --pid "$wpid" -o "$T/ember.folded" 2>/dev/null ||
		: >"$T/ember.folded"
	rm -f "/tmp/perf-$wpid.map"
	row "$w" "ember-$hz${label:+:$label}" "$rep" "$T/ember.folded" "$((bpf_t - bpf_t0))" \
		"$((bpf_c - bpf_c0))" "$((c1 - c0))" \
		"$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.0f", (b - a) * 1e9}')" \
		"$(rt_stacks "$T/emberd.log" "$w")" "$((bpf_t0 - idle_t))" "$((bpf_c0 - idle_c))"
}

# run_perf W MODE REP: the workload under perf record --call-graph MODE at 99 Hz
run_perf() {
	local w=$1 mode=$2 rep=$3 pid
	# perf runs the workload: its pid is the one perf.data names most
	# shellcheck disable=SC2046
	(cd "$T" && exec perf record -q -F 99 --call-graph "$mode" -o "$T/perf.data" -- \
		$(workload_cmd "$w")) >/dev/null 2>"$T/perf.err" || log "perf record ($mode) of $w: $(tail -2 "$T/perf.err")"
	pid=$(perf script -i "$T/perf.data" -F pid 2>/dev/null | sort | uniq -c | sort -nr |
		awk 'NR == 1 { print $2 }')
	perf_folded "$T/perf.data" "$pid" >"$T/perf.folded"
	rm -f "/tmp/perf-$pid.map" "$T/perf.data"
	row "$w" "perf-$mode" "$rep" "$T/perf.folded"
}

# --- run ------------------------------------------------------------------------------
echo 1 >/proc/sys/kernel/bpf_stats_enabled
START=$(date -u '+%Y-%m-%d %H:%M UTC')
for ((rep = 1; rep <= REPEAT; rep++)); do
	for w in ${WORKLOADS//,/ }; do
		log "round $rep/$REPEAT: $w"
		for hz in 99 19; do
			for i in "${!EMBERDS[@]}"; do
				run_ember "$w" "$hz" "$rep" "${LABELS[$i]}" "${EMBERDS[$i]}"
			done
		done
		[ -n "$NO_PERF" ] && continue
		run_perf "$w" dwarf "$rep"
		run_perf "$w" fp "$rep"
	done
done
echo "$OLD_BPF_STATS" >/proc/sys/kernel/bpf_stats_enabled
[ -z "$RAWOUT" ] || cp "$RAW" "$RAWOUT"

# --- report: medians per workload and profiler ----------------------------------------
# vals W PROFILER EXPR: an awk expression of each run's row, one a line, sorted
vals() {
	awk -F'\t' -v w="$1" -v p="$2" -v e="$3" '
		$1 == w && $2 == p {
			v = "-"
			if (e == "complete" && $4 > 0) v = 100 * $5 / $4
			else if (e == "known" && $7 != "-" && $7 > 0) v = 100 * $6 / $7
			else if (e == "samples") v = $4
			else if (e == "bpf" && $9 > 0) v = $8 / $9
			else if (e == "cpu" && $11 > 0) v = 100 * $10 / $11
			else if (e == "rt" && $12 != "-" && $4 > 0) v = $12 / $4
			else if (e == "share" && $9 > 0) v = 100 * $4 / $9
			# own: the run time left once the other processes samples
			# are taken at their cost in the idle window before
			else if (e == "own" && $14 > 0 && $4 > 0 && $9 >= $4 && 4 * $4 >= $9)
				v = ($8 - ($9 - $4) * $13 / $14) / $4
			if (v != "-") print v
		}' "$RAW" | sort -g
}
# median of the numbers on stdin, one a line; '-' if none
median() {
	awk '{a[NR] = $1} END {
		if (NR == 0) { print "-"; exit }
		print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
# med W PROFILER EXPR: median over the runs; '-' if none
med() { vals "$@" | median; }
# spread FORMAT: "median [min-max]" of the sorted numbers on stdin; '-' if none
spread() {
	awk -v f="$1" '{a[NR] = $1} END {
		if (NR == 0) { print "-"; exit }
		m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
		printf f " [" f "-" f "]\n", m, a[1], a[NR] }'
}
# ratios PROFILER RT NATIVE [own]: workload RT ÷ NATIVE BPF ns/sample of each round (runs
# moments apart), sorted; own: of the workloads' own (vals' "own")
ratios() {
	awk -F'\t' -v p="$1" -v a="$2" -v b="$3" -v own="${4:-}" '$2 == p && $9 > 0 && ($1 == a || $1 == b) {
			v = $8 / $9
			if (own != "") {
				if ($14 <= 0 || $4 <= 0 || $9 < $4 || 4 * $4 < $9)
					next
				v = ($8 - ($9 - $4) * $13 / $14) / $4
			}
			ns[$1, $3] = v; reps[$3] = 1 }
		END { for (r in reps) if (ns[b, r] > 0 && ns[a, r] != "")
			print ns[a, r] / ns[b, r] }' "$RAW" | sort -g
}
fmt() { [ "$2" = - ] && echo - || awk -v f="$1" -v v="$2" 'BEGIN{printf f, v}'; }
# pct3 W PROFILER EXPR: "ember / dwarf / fp" percentages
pct3() {
	echo "$(fmt %.1f "$(med "$1" "$2" "$3")") / $(fmt %.1f "$(med "$1" perf-dwarf "$3")")" \
		"/ $(fmt %.1f "$(med "$1" perf-fp "$3")")"
}

KNOWN_WHAT="python: <module>, descend x 31, spin (Python frames); pynative: main, descend x 39, spin; jsnative: main, descend x 50, spin; js: none (its names: tests/integration/symbols_v8.sh); qsort: cmp_records under qsort, sort_rounds, main; memcpy: copy_buffers directly above memcpy (of the samples in memcpy); clock: read_clock_loop above clock_gettime and the vDSO (of the samples in the vDSO); mixed: through fp_driver to main or start_thread; node: none (see tests/integration/unwind_node.sh)"
TABLE=$T/table.md
{
	echo "| workload | complete % ember / perf dwarf / perf fp | known stack % ember / dwarf / fp | samples ember / dwarf / fp | ember ÷ dwarf (complete) | BPF ns/sample 99 Hz | BPF ns/sample 19 Hz | emberd % of one CPU 99 Hz | 19 Hz |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	for w in ${WORKLOADS//,/ }; do
		for l in "${LABELS[@]}"; do
			e99=ember-99${l:+:$l} e19=ember-19${l:+:$l}
			e=$(med "$w" "$e99" complete) p=$(med "$w" perf-dwarf complete)
			printf '| %s | %s | %s | %s / %s / %s | %s | %s | %s | %s | %s |\n' "$w${l:+ ($l)}" \
				"$(pct3 "$w" "$e99" complete)" "$(pct3 "$w" "$e99" known)" \
				"$(fmt %.0f "$(med "$w" "$e99" samples)")" "$(fmt %.0f "$(med "$w" perf-dwarf samples)")" \
				"$(fmt %.0f "$(med "$w" perf-fp samples)")" \
				"$(awk -v a="$e" -v b="$p" 'BEGIN{ if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }')" \
				"$(fmt %.0f "$(med "$w" "$e99" bpf)")" "$(fmt %.0f "$(med "$w" "$e19" bpf)")" \
				"$(fmt %.3f "$(med "$w" "$e99" cpu)")" "$(fmt %.3f "$(med "$w" "$e19" cpu)")"
		done
	done
	echo
	echo "| workload | build | BPF ns/sample 99 Hz, median [min-max] | 19 Hz | the workload's own 99 Hz | 19 Hz | its share of samples % 99 / 19 Hz | runtime stacks sent per sample 99 / 19 Hz |"
	echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
	for w in ${WORKLOADS//,/ }; do
		for l in "${LABELS[@]}"; do
			e99=ember-99${l:+:$l} e19=ember-19${l:+:$l}
			printf '| %s | %s | %s | %s | %s | %s | %s / %s | %s / %s |\n' "$w" "${l:--}" \
				"$(vals "$w" "$e99" bpf | spread %.0f)" "$(vals "$w" "$e19" bpf | spread %.0f)" \
				"$(vals "$w" "$e99" own | spread %.0f)" "$(vals "$w" "$e19" own | spread %.0f)" \
				"$(fmt %.0f "$(med "$w" "$e99" share)")" "$(fmt %.0f "$(med "$w" "$e19" share)")" \
				"$(fmt %.3f "$(med "$w" "$e99" rt)")" "$(fmt %.3f "$(med "$w" "$e19" rt)")"
		done
	done
	for pair in python:pynative js:jsnative; do
		a=${pair%:*} b=${pair#*:}
		[[ ,$WORKLOADS, == *,$a,* && ,$WORKLOADS, == *,$b,* ]] || continue
		echo
		echo "| build | $a ÷ $b 99 Hz: of medians; per round, median [min-max] | 19 Hz | the workloads' own 99 Hz | 19 Hz |"
		echo "| --- | ---: | ---: | ---: | ---: |"
		for l in "${LABELS[@]}"; do
			line="| ${l:--} |"
			for x in bpf own; do
				for hz in 99 19; do
					e=ember-$hz${l:+:$l}
					line+=" $(awk -v a="$(med "$a" "$e" "$x")" -v b="$(med "$b" "$e" "$x")" \
						'BEGIN{ if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }');"
					line+=" $(ratios "$e" "$a" "$b" "${x#bpf}" | spread %.2f) |"
				done
			done
			echo "$line"
		done
	done
	echo
	echo "- complete: the stack reaches main (node::Start for node) or start_thread."
	echo "- known stack: $KNOWN_WHAT."
	echo "- BPF ns/sample: run_time_ns / run_cnt of emberd's cpu sampler (ember_cpu_sample) over"
	echo "  the workload's run (every sample of the host, not only the workload's$([ -n "$MATCHED" ] &&
		echo ": with -m, others end at the process filter")); emberd's CPU: its threads'"
	echo "  schedstat over the workload's wall time."
	echo "- the workload's own: the run time less the host's other samples (run_cnt less the"
	echo "  workload's samples) at their cost per sample in the $IDLE s before the workload, over"
	echo "  its samples; its error grows as its share of the samples falls: '-' below 25%."
	echo "- runtime stacks sent: EMBER_PROC_RT_FRAMES records (emberd -v), host-wide, over the"
	echo "  workload's samples."
} >"$TABLE"

HDR="unwind: $REPEAT runs of ${DURATION} CPU s per workload and profiler, medians; perf at 99 Hz; $START; $(uname -r); $(nproc) CPUs; emberd $EMBERD$([ -z "$MATCHED" ] || echo "; profile = matched")"
echo
echo "$HDR"
echo
cat "$TABLE"
if [ -n "$REPORT" ]; then
	{ echo "$HDR"; echo; cat "$TABLE"; } >"$REPORT"
fi
