#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A host at 999 Hz with thousands of distinct stacks, pushed to a collector whose
# limits are low (300 samples a profile, as a real one has 16000): every profile
# must be fitted and accepted (no 400, no 429), keep every sample (the stacks past
# the limit folded into one [truncated] frame, counted in emberctl status), and
# carry valid UTF-8 although the fixture's thread name is cut inside a character.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/push_lib.sh"
require_bpf
require_collector

APP=manystacks
start_collector --max-samples 300
# memory growth off, as push_conf() has it: the fixture's start-up growth would be pushed
# as a memory_growth profile beside the CPU ones whose samples are compared
cat >"$T/ember.conf" <<CONF
[daemon]
profile = matched
growth_fault_period = 0
[app "$APP"]
match.exe = $FX/fx_many_stacks
[collector]
url = $COLL_URL
max_samples = 300
CONF
start_emberd --config "$T/ember.conf" --hz 999 --interval 2s
"$FX/fx_many_stacks" 6 &
W=$!
PIDS+=("$W")
wait "$W" || fail "fx_many_stacks exited with status $?"
kill -TERM "$EMBERD_PID"
wait_emberd

# what emberd stored, and its distinct stacks per profile (thousands: over the limit)
stored=$("$EMBERCTL" --data-dir "$T/data" list --app "$APP" | awk '/ cpu / { n++; s += $5 }
	END { print n + 0, s + 0 }')
read -r nstored samples <<<"$stored"
[ "$samples" -ge 3000 ] || fail "only $samples samples stored (want ~6000 at 999 Hz)"
"$EMBERCTL" --data-dir "$T/data" folded --app "$APP" -o "$T/local.folded" 2>/dev/null ||
	fail "emberctl folded failed"
distinct=$(wc -l <"$T/local.folded")
echo "emberd stored $nstored profiles, $samples samples in $distinct distinct stacks"
[ "$distinct" -ge 600 ] || fail "only $distinct distinct stacks: the fixture did not spread"

# emberd pushes them all (the history is the queue): wait until they arrived, then
# compare sample totals: none lost to the folding
wait_arrived 60 || { show_lists; fail "not every stored profile arrived"; }
rejected=$(( $(coll_stat status.400) + $(coll_stat status.429) ))
[ "$rejected" -eq 0 ] || fail "the collector refused $rejected pushes: $(tail -5 "$T/collector.log")"
arrived=$(awk '{ s += $2 } END { print s + 0 }' "$T/arrived.txt")
[ "$arrived" -eq "$samples" ] || fail "the collector got $arrived samples, emberd stored $samples"
cat "$COLL_STORE"/*.folded >"$T/remote.folded"
trunc=$(awk '/^\[truncated\] / || /;\[truncated\] / { s += $NF } END { print s + 0 }' \
	"$T/remote.folded")
remote_total=$(awk '{ s += $NF } END { print s + 0 }' "$T/remote.folded")
echo "pushed: $arrived samples, $trunc of them in [truncated] stacks ($remote_total in flame graphs)"
[ "$trunc" -gt 0 ] || fail "no [truncated] frame: the profiles were not fitted to 300 samples"
[ "$remote_total" -eq "$samples" ] || fail "the collector's flame graphs hold $remote_total, not $samples"
# no comm as a series label (one series per app), and comm valid UTF-8 in the history
grep -q 'comm=' "$COLL_STORE/series.tsv" && fail "comm became a series label"
"$EMBERCTL" --data-dir "$T/data" export --type cpu --app "$APP" -o "$T/cpu.pb.gz" ||
	fail "export failed"
go tool pprof -raw -symbolize=none "$T/cpu.pb.gz" 2>/dev/null | grep -o 'comm:\[[^]]*\]' |
	sort -u >"$T/comm.txt"
echo "local thread names: $(tr '\n' ' ' <"$T/comm.txt")"
grep -q 'manystacks_ab' "$T/comm.txt" || fail "the fixture's thread name is missing"
iconv -f UTF-8 -t UTF-8 "$T/comm.txt" >/dev/null || fail "a thread name is not valid UTF-8"
"$EMBERCTL" status --runtime-dir "$T/run" >"$T/status.txt" 2>&1 || true
pass "$nstored profiles of $distinct stacks fitted to 300 samples: $arrived samples arrived, $trunc folded"
