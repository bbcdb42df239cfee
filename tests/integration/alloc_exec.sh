#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sampled allocations from a process's exec, before any CPU sample: at 1 Hz,
# fx_alloc_burst (asleep but for microseconds every 100 ms) is almost never
# sampled on-CPU, yet it is attached when it execs and its memory profiles hold
# burst_here. Processes no memory application can match (here /bin/true) cost
# the exec event only: emberd does not take them at exec.
. "$(dirname "$0")/lib.sh"
require_bpf
PRELOAD=$EMBER_BUILD/alloc/libember_alloc.so
[ -r "$PRELOAD" ] || fail "libember_alloc.so not built at $PRELOAD"

CONF=$T/ember.conf
printf '[daemon]\ngrowth_fault_period = 0\n' >"$CONF"
printf '[app "bursty"]\nmatch.comm = fx_alloc_burst\nmemory = inuse\n' >>"$CONF"
start_emberd --config "$CONF" --hz 1 --interval 2s -v
wait_for intervals_at_least 1 || fail "no interval within 30 s"

# execs of a program no memory application matches: not taken at exec
for _ in $(seq 1 40); do /bin/true; done
EMBER_ALLOC_SAMPLE_BYTES=65536 LD_PRELOAD=$PRELOAD "$FX/fx_alloc_burst" 600 & B=$!
PIDS+=("$B")
taken() { grep -q "pid $B (fx_alloc_burst): exec'd, taken now" "$T/emberd.log"; }
wait_for taken || fail "the exec of fx_alloc_burst was not taken: $(grep -c "exec'd" "$T/emberd.log")"
! grep -q "(true): exec'd, taken now" "$T/emberd.log" ||
	fail "an exec of /bin/true was taken: $(grep "(true): exec'd" "$T/emberd.log" | head -1)"
pass "taken at exec: fx_alloc_burst; none of 40 execs of /bin/true"

attached() { grep -q "pid $B: sampled allocations from .*libember_alloc.so" "$T/emberd.log"; }
wait_for attached || fail "fx_alloc_burst was not attached at its exec within 30 s"
pass "attached at exec: $(grep "pid $B: sampled allocations" "$T/emberd.log" | head -1)"

# its profiles: burst_here holds the inuse bytes, with a CPU sample of it or not
burst_inuse() {
	"$EMBERCTL" --data-dir "$T/data" top --type memory --app bursty --sample inuse_space \
		>"$T/top.txt" 2>/dev/null &&
		awk '$5 == "burst_here" && $3 > 0 { f = 1 } END { exit !f }' "$T/top.txt"
}
wait_for burst_inuse || fail "no inuse_space of burst_here: $(head -5 "$T/top.txt")"
cpu=$("$EMBERCTL" --data-dir "$T/data" list --type cpu --app bursty 2>/dev/null | grep -c ' cpu ' || true)
pass "burst_here in the memory profiles ($cpu CPU profiles of the app: none was needed)"
kill "$B"
kill "$EMBERD_PID"
wait_emberd
