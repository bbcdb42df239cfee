#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What a real Pyroscope shows equals what emberctl shows: emberd pushes fx_stripped
# (work_a and work_b have no symbol at all, so its frames stay unnamed) to the fake
# collector, which normalizes each profile as Pyroscope does (an unnamed frame of a
# mapping sent with has_functions vanishes) and stores its flame graph as folded stacks.
# Summed over every pushed profile, they must equal `emberctl folded` of the same
# profiles, frame by frame and count by count.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/push_lib.sh"
require_bpf
require_collector
APP=fxst
[ -x "$FX/fx_stripped" ] || fail "fixture fx_stripped not built in $FX"

start_collector
{
	printf '[daemon]\nprofile = matched\n'
	printf '[app "%s"]\nmatch.cmdline = *fx_stripped*\n' "$APP"
	printf '[collector]\nurl = %s\n' "$COLL_URL"
} >"$T/ember.conf"
start_emberd --config "$T/ember.conf" --hz 99 --interval 2s -v
"$FX/fx_stripped" 6 & W=$!
PIDS+=("$W")
wait "$W" || true	# its exit status is its result's low bit
sleep 2.5	# the interval holding the workload's end is stored
wait_arrived 20 || { show_lists; fail "not every stored profile arrived exactly once"; }
kill "$EMBERD_PID"
wait_emberd
n=$(wc -l <"$T/stored.txt")
[ "$n" -ge 2 ] || { show_lists; fail "only $n profiles of $APP"; }

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

# The unnamed frames are there to compare: fx_stripped+0xOFFSET, on most samples.
total=$(awk '{ t += $NF } END { print t + 0 }' "$T/emberctl.folded")
unnamed=$(awk '/fx_stripped\+0x/ { t += $NF } END { print t + 0 }' "$T/emberctl.folded")
[ "$((unnamed * 2))" -gt "$total" ] ||
	fail "emberctl shows fx_stripped's unnamed frames on $unnamed of $total samples only"
if ! diff -u "$T/emberctl.folded" "$T/collector.folded" >"$T/diff.txt"; then
	head -40 "$T/diff.txt"
	fail "the collector's normalized flame graph differs from emberctl folded" \
		"($(grep -c '^[-+][^-+]' "$T/diff.txt") lines)"
fi
pass "$n profiles: the collector's flame graph equals emberctl folded, $(wc -l <"$T/emberctl.folded") stacks, unnamed frames on $unnamed of $total samples"
