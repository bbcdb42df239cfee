#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The verifier's work on every BPF program emberd and its captures load, from `emberd -v`'s
# "bpf WHAT: instructions verified:" lines (bpf_prog_info.verified_insns: the same at every
# load of a program on a kernel): each program within 20 % of its figure recorded in
# verifier_budget.txt and under 200,000 (a fifth of the kernel's limit of a million), and
# all those of the defaults together under 150,000. Configurations: the defaults, off-CPU
# and sampled allocations on, a CPU capture of a pid and of an app, a malloc capture.
. "$(dirname "$0")/lib.sh"
require_bpf

BUDGET=$EMBER_SRC/tests/integration/verifier_budget.txt
PER_PROG_MAX=200000
DEFAULTS_MAX=150000
RUN=$T/run
# a log line "bpf WHAT: instructions verified: P N, P N; T in all" -> "WHAT P N" lines
figures() {
	sed -n 's/.*debug: bpf \([a-z-]*\): instructions verified: \(.*\);.*/\1 \2/p' "$1" |
		awk '{ what = $1; $1 = ""; n = split($0, p, ","); for (i = 1; i <= n; i++) {
			split(p[i], f, " "); print what, f[1], f[2] } }'
}
# waits up to 30 s for PATTERN in FILE
wait_log() {
	for _ in $(seq 1 300); do grep -q "$2" "$1" && return 0; sleep 0.1; done
	fail "'$2' did not appear in $1"
}

# the defaults, then off-CPU and sampled allocations on (an [app] with memory)
start_emberd -v --runtime-dir "$RUN"
kill -INT "$EMBERD_PID"
wait_emberd
figures "$T/emberd.log" | sed 's/^/defaults /' >"$T/got"
printf '[daemon]\noffcpu = on\n[app "a"]\nmatch.comm = fx_malloc_ab\nmemory = inuse\n' >"$T/on.conf"
start_emberd -v --config "$T/on.conf" --runtime-dir "$RUN"
# captures: of a pid, of an app, of a pid's mallocs
"$FX/fx_malloc_ab" 30 >/dev/null 2>&1 &
WL=$!
PIDS+=("$WL")
"$EMBERCTL" capture --runtime-dir "$RUN" --pid "$WL" --duration 1s -o "$T/c1.pb.gz" ||
	fail "capture of pid $WL failed"
"$EMBERCTL" capture --runtime-dir "$RUN" --app a --duration 1s -o "$T/c2.pb.gz" ||
	fail "capture of app a failed"
"$EMBERCTL" capture --runtime-dir "$RUN" --type malloc --pid "$WL" --duration 1s \
	-o "$T/c3.pb.gz" || fail "malloc capture of pid $WL failed"
wait_log "$T/emberd.log" "bpf malloc: instructions verified"
kill -INT "$EMBERD_PID"
wait_emberd
figures "$T/emberd.log" | awk '$1 == "offcpu" || $1 == "alloc" || $1 == "capture" ||
	$1 == "malloc" { print "on", $0 }' >>"$T/got"

echo "kernel $(uname -r): instructions the verifier processed, against verifier_budget.txt"
awk -v max="$PER_PROG_MAX" -v dmax="$DEFAULTS_MAX" '
	FILENAME == ARGV[1] { if ($0 !~ /^#/ && NF == 4) want[$1 " " $2 " " $3] = $4; next }
	{
		key = $1 " " $2 " " $3; n = $4
		w = want[key]
		printf "  %-10s %-15s %-22s %8d  recorded %8s\n", $1, $2, $3, n, w ? w : "-"
		if (n > max) { printf "FAIL: %s: %d > %d\n", key, n, max; bad = 1 }
		if (w && n > w * 1.2) { printf "FAIL: %s: %d, over 120%% of %d\n", key, n, w; bad = 1 }
		if (!w) { printf "FAIL: %s: no figure recorded in verifier_budget.txt\n", key; bad = 1 }
		if ($1 == "defaults" && !(key in got)) total += n
		got[key] = 1
	}
	END {
		for (k in want) if (!(k in got)) { printf "FAIL: %s: not loaded\n", k; bad = 1 }
		printf "  defaults, all programs: %d (at most %d)\n", total, dmax
		if (total > dmax) { print "FAIL: the defaults verify more than " dmax; bad = 1 }
		exit bad
	}' "$BUDGET" "$T/got" || fail "over the verifier budget (figures above)"
pass "every program within its verifier budget"
