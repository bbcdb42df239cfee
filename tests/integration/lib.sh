# SPDX-License-Identifier: MIT
# Shared helpers of the integration tests: skip only where BPF truly cannot run,
# start emberd and wait until it samples, and read profiles with go tool pprof.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/fail_trap.sh"

: "${EMBER_BUILD:?EMBER_BUILD must point at the build directory}"
: "${EMBER_SRC:?EMBER_SRC must point at the source directory}"
EMBERD=$EMBER_BUILD/daemon/emberd
EMBERCTL=$EMBER_BUILD/cli/emberctl
FX=$EMBER_BUILD/tests

T=$(mktemp -d /tmp/ember-test.XXXXXX)
# One Go build cache for every test, kept between runs: go (1.26) builds its pprof tool into
# the cache on first use, 20 s to 3 min of a 2-CPU host a fresh cache (every test paid it
# until 2026-12-07, a third of the suite's time). Content-addressed: sharing it changes no
# answer. EMBER_TEST_GOCACHE names another.
export HOME=$T GOCACHE=${EMBER_TEST_GOCACHE:-/var/tmp/ember-test-gocache} PPROF_TMPDIR=$T
PIDS=()
# pid_alive PID: PID runs (a zombie, exited but not yet waited for, does not).
pid_alive() {
	local st
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "${st%% *}" != Z ]
}
cleanup() {
	# p starts empty: with no PIDS the loop below leaves it unset, and set -u stopped the
	# clean-up there (each such test left its directory in /tmp)
	local p= _
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	# what has not ended 10 s after SIGTERM (an emberd stuck in a system call, its SIGTERM
	# blocked for its signalfd) is killed: never left running to skew the tests after
	for _ in $(seq 1 100); do
		for p in "${PIDS[@]}"; do pid_alive "$p" && break; done
		pid_alive "$p" || break
		sleep 0.1
	done
	for p in "${PIDS[@]}"; do ! pid_alive "$p" || kill -KILL "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	# KEEP_T=1 keeps the test's directory (logs, data) to look at a failure
	if [ -n "${KEEP_T:-}" ]; then echo "kept $T"; else rm -rf "$T"; fi
}
at_exit cleanup

# fail_context: what a FAIL line is followed by (fail_trap.sh calls it too).
fail_context() {
	[ -f "$T/emberd.log" ] || return 0
	sed 's/^/  emberd: /' "$T/emberd.log" | tail -20
	# the workload's own lines (WL: its pid, in the tests that start one), however early
	[ -z "${WL:-}" ] || grep -E "pid $WL([^0-9]|\$)" "$T/emberd.log" | head -20 |
		sed "s/^/  emberd (pid $WL): /"
}
skip() { FAIL_SAID=1; echo "SKIP: $*"; exit 77; }
fail() { FAIL_SAID=1; echo "FAIL: $*"; fail_context; exit 1; }
pass() { echo "PASS: $*"; }

require_bpf() {
	[ "$(id -u)" -eq 0 ] || skip "not root: loading BPF programs needs root (or CAP_BPF+CAP_PERFMON)"
	[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF: /sys/kernel/btf/vmlinux missing"
	[ -x "$EMBERD" ] || fail "emberd not built at $EMBERD"
}

require_go() {
	command -v go >/dev/null || fail "go not installed (scripts/install-deps.sh installs golang-go)"
}

# start_emberd ARGS...: runs emberd in the background on $T/data, waits until it samples.
# Its control socket goes to $T/run: never the host's /run/ember, which another
# emberd (or test) may hold.
start_emberd() {
	# a private runtime dir (status file, control socket): never the real /run/ember;
	# "$@" may override it
	"$EMBERD" --data-dir "$T/data" --runtime-dir "$T/run" "$@" >"$T/emberd.log" 2>&1 &
	EMBERD_PID=$!
	PIDS+=("$EMBERD_PID")
	for _ in $(seq 1 300); do
		grep -q "sampling .* CPUs" "$T/emberd.log" && return 0
		kill -0 "$EMBERD_PID" 2>/dev/null || fail "emberd exited during start-up"
		sleep 0.1
	done
	fail "emberd did not start sampling within 30 s"
}

# status_key KEY [FILE]: the first value of KEY in emberd's status file (start_emberd's
# $T/run/status unless FILE), empty while there is none.
status_key() { awk -v k="$1" '$1 == k { print $2 }' "${2:-$T/run/status}" 2>/dev/null || true; }
# status_total GROUP KEY [FILE]: the run's total on the status file's "GROUP KEY INTERVAL TOTAL"
# line (drop, skip, unwind, ...), empty while there is none.
status_total() {
	awk -v g="$1" -v k="$2" '$1 == g && $2 == k { print $4 }' "${3:-$T/run/status}" 2>/dev/null || true
}
# intervals_at_least N: emberd's status file counts N intervals or more.
intervals_at_least() { [ "$(status_key intervals)" -ge "$1" ] 2>/dev/null; }

# true_children N FILE: runs /bin/true N times, one after another; appends to FILE each
# child's pid and the µs from before its fork to after its reaping (a bound on its age).
true_children() {
	local i s c
	for ((i = 0; i < $1; i++)); do
		s=${EPOCHREALTIME/./}
		/bin/true &
		c=$!
		wait "$c"
		echo "$c $((${EPOCHREALTIME/./} - s))" >>"$2"
	done
}

# service_cgroup NAME: makes a cgroup v2 system.slice/NAME.service, as systemd would for a
# unit (on a hybrid host, under /sys/fs/cgroup/unified), removed at exit; sets CGROUP_DIR to
# its directory (write a pid into its cgroup.procs). Fails where cgroup v2 is not mounted.
service_cgroup() {
	local m slice=
	for m in /sys/fs/cgroup /sys/fs/cgroup/unified; do
		[ "$(stat -f -c %T "$m" 2>/dev/null)" = cgroup2fs ] && break
		m=
	done
	[ -n "$m" ] || fail "no cgroup v2 mount at /sys/fs/cgroup or /sys/fs/cgroup/unified"
	[ -d "$m/system.slice" ] || slice=$m/system.slice
	CGROUP_DIR=$m/system.slice/$1.service
	mkdir -p "$CGROUP_DIR" || fail "cannot make cgroup $CGROUP_DIR"
	at_exit "rmdir '$CGROUP_DIR'" # once its processes exited
	[ -z "$slice" ] || at_exit "rmdir '$slice'"
}

# wait_for CMD... : polls CMD every 0.5 s until it succeeds, for at most 30 s (WAIT_S s when
# set: a step known to take long on a loaded host).
wait_for() {
	for _ in $(seq 1 $((2 * ${WAIT_S:-30}))); do
		"$@" && return 0
		sleep 0.5
	done
	return 1
}

# run_dlopen LIB SECS: starts fx_dlopen (its pid in WL), which spins until emberd's unwinder
# has read it (DLOPEN_READS: its reads of it so far), then loads LIB and spends SECS s of CPU
# in it; returns once it has (it stays alive for the drain).
dlopen_done() { grep -q '^done' "$T/dlopen.out" || ! kill -0 "$WL" 2>/dev/null; }
run_dlopen() {
	"$FX/fx_dlopen" "$1" "$2" >"$T/dlopen.out" 2>&1 &
	WL=$!
	PIDS+=("$WL")
	wait_for grep -q "unwinder: pid $WL: .* mappings with a table" "$T/emberd.log" ||
		fail "emberd never read fx_dlopen's mappings"
	DLOPEN_READS=$(grep -c "unwinder: pid $WL: " "$T/emberd.log")
	kill -USR1 "$WL"
	# its CPU seconds: a minute of wall time on a host that gives it a fifteenth of a CPU
	for _ in 1 2; do dlopen_done || wait_for dlopen_done || true; done
	grep -q '^done' "$T/dlopen.out" ||
		fail "fx_dlopen did not finish its work: $(tail -3 "$T/dlopen.out")"
}

# older_than PID MS: PID has lived MS ms or more (its start time in /proc/PID/stat, in
# clock ticks since boot, against /proc/uptime). Memory growth leaves out a process's
# first growth_min_age (100 ms by default): a fixture that grows on a signal gets it
# once it is older than that.
older_than() {
	local start
	start=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $20 }')
	[ -n "$start" ] || return 1
	awk -v s="$start" -v hz="$(getconf CLK_TCK)" -v ms="$2" \
		'{ exit !(($1 - s / hz) * 1000 >= ms) }' /proc/uptime
}

# wait_emberd: waits for emberd to exit by itself and checks its status.
wait_emberd() {
	local rc=0
	wait "$EMBERD_PID" || rc=$?
	[ "$rc" -eq 0 ] || fail "emberd exited with status $rc"
}

# pprof_top FILE [ARGS]: go tool pprof's flat/cum table, no symbolization.
# wl_cpu_top: emberd stopped (SIGTERM: it stores the last interval, then exits 0), the
# workload's (WL) cpu profiles exported to $T/cpu.pb.gz, go tool pprof's -top of their
# samples in $T/top.txt
wl_cpu_top() {
	kill "$EMBERD_PID"
	wait_emberd
	"$EMBERCTL" --data-dir "$T/data" export --type cpu --pid "$WL" -o "$T/cpu.pb.gz" ||
		fail "export failed"
	pprof_top "$T/cpu.pb.gz" -sample_index=samples >"$T/top.txt"
}
pprof_top() {
	local f=$1; shift
	go tool pprof -top -nodecount=100000 -nodefraction=0 -symbolize=none "$@" "$f" \
		2>"$T/pprof.err" ||
		fail "go tool pprof rejected $f: $(cat "$T/pprof.err")"
}

# flat_of TOPFILE FUNC: the flat count of FUNC in a pprof -top listing (0 if absent).
flat_of() {
	awk -v fn="$2" '$6 == fn { v = $1 } END { print (v == "" ? 0 : v) }' "$1"
}

# shown_of TOPFILE: the samples a filtered (-focus/-tagfocus) listing accounts for.
shown_of() {
	sed -n 's/^Showing nodes accounting for \([0-9][0-9]*\),.*/\1/p' "$1" | head -1
}

# share_band A B MIN: "SHARE TOL" for a fixture that spends 3/4 of its CPU in A's function:
# A's share of A + B samples in percent, and the band around 75 to judge it by: MIN points or
# 5 binomial sigma (500 sqrt(.75 x .25 / n)), the larger. Which function a tick lands in is
# chance: 5 points were 3.6 sigma at ~960 samples (a failure in ~3000 runs).
share_band() {
	awk -v a="$1" -v b="$2" -v min="$3" 'BEGIN { n = a + b
		t = 500 * sqrt(0.75 * 0.25 / n); if (t < min) t = min
		printf "%.1f %.1f\n", 100 * a / n, t }'
}

# in_band SHARE TOL: SHARE is within 75 +- TOL.
in_band() { awk -v s="$1" -v t="$2" 'BEGIN { exit !(s >= 75 - t && s <= 75 + t) }'; }

# warm_node NODE: starts an idle NODE (its pid in WARM) and waits until emberd has loaded
# its tables. node's own unwind table (a 100 MB binary) is built once per emberd: until it
# is, a node process's samples wait for it, and those that wait too long are walked without
# it (the deferred walk's concern, not V8's). A node started first has it built for the
# workload: over 30 s at a load of 13 on 2 CPUs.
warm_node() {
	"$1" -e 'setInterval(() => {}, 1000)' &
	WARM=$!
	PIDS+=("$WARM")
	WAIT_S=180 wait_for grep -q "unwinder: pid $WARM: .* (0 to build)" "$T/emberd.log" ||
		fail "emberd did not load the tables of $1"
}

# top_total_pct TOPFILE FUNCTION: FUNCTION's total% in an `emberctl top` listing (rows: self
# self% total total% function), whole, 0 when absent.
top_total_pct() {
	awk -v fn="$2" '$5 == fn { sub("%", "", $4); v = int($4) } END { print v + 0 }' "$1"
}

# cum_share_of TOPFILE FUNCTION: FUNCTION's cumulative value in a go tool pprof -top listing,
# in whole percent of its total (-unit=B: plain numbers); -1 without a total.
cum_share_of() {
	awk -v fn="$2" '/ of [0-9]+B? total/ { for (i = 1; i <= NF; i++) if ($i == "of") t = $(i + 1) }
		$6 == fn { c = $4 } END { gsub(/B/, "", t); gsub(/B/, "", c); printf "%d", (t ? 100 * c / t : -1) }' "$1"
}

# total_of TOPFILE: the profile's total from the "... of N total" line.
total_of() {
	sed -n 's/.* of \([0-9][0-9]*\) total.*/\1/p' "$1" | head -1
}
