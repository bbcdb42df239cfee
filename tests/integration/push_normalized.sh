#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What a real Pyroscope shows equals what emberctl shows: emberd pushes fx_stripped
# (work_a and work_b have no symbol at all, so its frames stay unnamed) to the fake
# collector, which normalizes each profile as Pyroscope does and stores its flame graph
# as folded stacks built from Location.Line entries only (resolver_tree.go: a location
# without a Line shows no frame). Summed over every pushed profile, they must equal
# `emberctl folded` of the same profiles, frame by frame and count by count: every
# unnamed frame is pushed with a Line of the name emberctl shows. Then again with
# [collector] server_symbolization = yes: the unnamed frames go without Lines, and the
# collector's flame graph is emberctl's with them gone (their time their callers').
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/push_lib.sh"
require_bpf
require_collector
APP=fxst
[ -x "$FX/fx_stripped" ] || fail "fixture fx_stripped not built in $FX"

# run_push SERVER_SYMBOLIZATION: one emberd run pushing fx_stripped's profiles to a new
# collector; leaves $T/emberctl.folded and $T/collector.folded (sorted "stack count"
# lines, the collector's summed over its profiles) and n, the profiles pushed.
run_push() {
	rm -rf "$T/data" "$T/run" "$T/stored.txt" "$T/arrived.txt"
	COLL_STORE=$T/store.$1 COLL_PORT=0
	start_collector
	{
		printf '[daemon]\nprofile = matched\n'
		printf '[app "%s"]\nmatch.cmdline = *fx_stripped*\n' "$APP"
		printf '[collector]\nurl = %s\nserver_symbolization = %s\n' "$COLL_URL" "$1"
	} >"$T/ember.conf"
	start_emberd --config "$T/ember.conf" --hz 99 --interval 2s -v
	"$FX/fx_stripped" 6 & W=$!
	PIDS+=("$W")
	wait "$W" || true	# its exit status is its result's low bit
	sleep 2.5	# the interval holding the workload's end is stored
	wait_arrived 20 || { show_lists; fail "$1: not every stored profile arrived exactly once"; }
	kill "$EMBERD_PID"
	wait_emberd
	stop_collector
	n=$(wc -l <"$T/stored.txt")
	[ "$n" -ge 2 ] || { show_lists; fail "$1: only $n profiles of $APP"; }

	# The collector's flame graphs of the app, summed: "stack count" lines, sorted.
	# (CPU ones: the app's memory_growth profiles are pushed too)
	seqs=$(awk -F '\t' -v s="service_name=$APP" '("," $3 ",") ~ ("," s ",") &&
		("," $3 ",") ~ /,__name__=process_cpu,/ { print $1 }' "$COLL_STORE/index.tsv")
	for s in $seqs; do cat "$COLL_STORE/$(printf '%06d' "$s").folded"; done |
		awk '{ c = $NF; $NF = ""; sub(/ $/, ""); sum[$0] += c }
		     END { for (k in sum) print k " " sum[k] }' | LC_ALL=C sort >"$T/collector.folded"
	"$EMBERCTL" --data-dir "$T/data" folded --type cpu --app "$APP" 2>"$T/folded.err" |
		LC_ALL=C sort >"$T/emberctl.folded" || fail "emberctl folded: $(cat "$T/folded.err")"
	[ -s "$T/emberctl.folded" ] || fail "emberctl folded printed nothing: $(cat "$T/folded.err")"
}

# same_folded WANT WHAT: $T/collector.folded equals WANT, or the test fails.
same_folded() {
	if ! diff -u "$1" "$T/collector.folded" >"$T/diff.txt"; then
		head -40 "$T/diff.txt"
		fail "$2: the collector's flame graph differs from emberctl folded" \
			"($(grep -c '^[-+][^-+]' "$T/diff.txt") lines)"
	fi
}

# mean_depth FILE: frames per sample of folded stacks.
mean_depth() {
	awk '{ c = $NF; $NF = ""; f += c * split($0, a, ";"); t += c }
	     END { printf "%.2f", t ? f / t : 0 }' "$1"
}

run_push no
# The unnamed frames are there to compare: fx_stripped+0xOFFSET, on most samples.
total=$(awk '{ t += $NF } END { print t + 0 }' "$T/emberctl.folded")
unnamed=$(awk '/fx_stripped\+0x/ { t += $NF } END { print t + 0 }' "$T/emberctl.folded")
[ "$((unnamed * 2))" -gt "$total" ] ||
	fail "emberctl shows fx_stripped's unnamed frames on $unnamed of $total samples only"
same_folded "$T/emberctl.folded" "server_symbolization = no"
echo "server_symbolization = no: $n profiles, $(wc -l <"$T/emberctl.folded") stacks equal," \
	"unnamed frames on $unnamed of $total samples, mean depth $(mean_depth "$T/collector.folded")"
n_no=$n stacks_no=$(wc -l <"$T/emberctl.folded")

run_push yes
# emberctl still names every frame; the collector, drawing Lines only, loses the frames
# emberctl names FILE+0xOFFSET (no Line), and their time goes to their caller.
awk '{ c = $NF; $NF = ""; sub(/ $/, ""); k = split($0, f, ";"); s = ""
       for (i = 1; i <= k; i++) if (f[i] !~ /\+0x[0-9a-f]+$/) s = s (s == "" ? "" : ";") f[i]
       if (s != "") sum[s] += c }
     END { for (s in sum) print s " " sum[s] }' "$T/emberctl.folded" |
	LC_ALL=C sort >"$T/emberctl.named.folded"
grep -q 'fx_stripped+0x' "$T/emberctl.folded" ||
	fail "server_symbolization = yes: emberctl shows no fx_stripped+0x frame"
grep -q 'fx_stripped+0x' "$T/collector.folded" &&
	fail "server_symbolization = yes: fx_stripped's unnamed frames were pushed with Lines"
same_folded "$T/emberctl.named.folded" "server_symbolization = yes (unnamed frames taken out)"
d_ctl=$(mean_depth "$T/emberctl.folded") d_coll=$(mean_depth "$T/collector.folded")
awk -v a="$d_coll" -v b="$d_ctl" 'BEGIN { exit !(a < b) }' ||
	fail "server_symbolization = yes: stacks as deep at the collector ($d_coll) as in emberctl ($d_ctl)"
pass "$n_no profiles: the collector's flame graph equals emberctl folded, $stacks_no stacks;" \
	"with server_symbolization = yes ($n profiles) the unnamed frames vanish there" \
	"(mean depth $d_coll against emberctl's $d_ctl)"
