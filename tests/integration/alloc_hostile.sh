#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sampled allocations against bad input: a preloaded library whose .note.stapsdt
# is malformed (counted and skipped, the good library still attached), processes
# that exit while being attached, and the live-pointer map at its global and
# per-process caps (counted in the log, emberctl status and its Prometheus metrics);
# emberd keeps running and exits cleanly.
. "$(dirname "$0")/lib.sh"
require_bpf
command -v objcopy >/dev/null || fail "objcopy missing (binutils)"
PRELOAD=$EMBER_BUILD/alloc/libember_alloc.so
[ -r "$PRELOAD" ] || fail "libember_alloc.so not built at $PRELOAD"

# a library whose only stapsdt note claims a description running past its section
printf '\x08\x00\x00\x00\x00\x01\x00\x00\x03\x00\x00\x00stapsdt\x00otel_memory\x00alloc\x00' \
	>"$T/bad.bin"
cp "$FX/libfx_shlib.so" "$T/libbadnote.so"
objcopy --add-section .note.stapsdt="$T/bad.bin" \
	--set-section-flags .note.stapsdt=noload,readonly "$T/libbadnote.so" ||
	fail "objcopy could not add the note"

CONF=$T/ember.conf
printf '[daemon]\nlive_allocs = 24\nlive_allocs_per_process = 16\n' >"$CONF"
printf '[app "leaky"]\nmatch.comm = fx_alloc_leak\nmemory = inuse\n' >>"$CONF"
start_emberd --config "$CONF" --interval 1s -v
export EMBER_ALLOC_SAMPLE_BYTES=16384
LD_PRELOAD=$T/libbadnote.so:$PRELOAD "$FX/fx_alloc_leak" 600 & A=$!
PIDS+=("$A")
attached() { grep -q "pid $A: sampled allocations from .*libember_alloc.so" "$T/emberd.log"; }
wait_for attached || fail "the process with the bad library was not attached to the good one"
# A alone first, so that it reaches its cap (16) before anyone else can fill the map (24):
# two leaking at once would share the map and might both stay below the cap
proc_capped() {
	grep -Eq 'live pointers not recorded [0-9]+ \(live map full\) and [1-9][0-9]* \(per-process cap\)' \
		"$T/emberd.log"
}
wait_for proc_capped || fail "A never reached its cap: $(grep 'sampled allocations since' "$T/emberd.log" | tail -1)"
LD_PRELOAD=$PRELOAD "$FX/fx_alloc_leak" 600 & B=$!
PIDS+=("$B")
# processes that exit about when emberd attaches to them: 40, four at a time
for _ in $(seq 1 10); do
	for _ in 1 2 3 4; do LD_PRELOAD=$PRELOAD "$FX/fx_alloc_leak" 1 & done
	wait_short=$(jobs -p | grep -v -e "^$A\$" -e "^$B\$" -e "^$EMBERD_PID\$" || true)
	for p in $wait_short; do wait "$p" 2>/dev/null || true; done
	kill -0 "$EMBERD_PID" 2>/dev/null || fail "emberd exited while processes came and went"
done

malformed() { grep -q "$T/libbadnote.so: malformed .note.stapsdt, not attached" "$T/emberd.log"; }
wait_for malformed || fail "the malformed note was not reported"
pass "malformed .note.stapsdt reported"
# A holds 16 live pointers (its cap), B and the short ones the 8 left before the map is full
capped() {
	grep -Eq 'live pointers not recorded [1-9][0-9]* \(live map full\) and [1-9][0-9]* \(per-process cap\)' \
		"$T/emberd.log"
}
wait_for capped || fail "no losses at the caps logged: $(grep 'sampled allocations since' "$T/emberd.log" | tail -1)"
pass "caps: $(grep 'sampled allocations since' "$T/emberd.log" | tail -1 | sed 's/.*start: //')"
# the same losses in the status file, emberctl status and the Prometheus metrics
status_losses() {
	[ "$(status_key allocs.live_map_full)" -gt 0 ] 2>/dev/null &&
		[ "$(status_key allocs.live_proc_cap)" -gt 0 ] 2>/dev/null &&
		[ "$(status_key allocs.notes_malformed)" -ge 1 ] 2>/dev/null
}
wait_for status_losses || fail "the status file lacks the losses: $(grep '^allocs' "$T/run/status")"
"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/run" >"$T/st.txt" 2>&1 || true
grep -Eq 'live pointers not kept [1-9][0-9]* \(live map full\), [1-9][0-9]* \(per-process cap\)' \
	"$T/st.txt" || fail "emberctl status does not show the losses: $(grep -A1 allocations "$T/st.txt")"
grep -Eq 'malformed .note.stapsdt [1-9]' "$T/st.txt" ||
	fail "emberctl status does not show the malformed note: $(grep -A1 allocations "$T/st.txt")"
"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/run" --format prometheus >"$T/prom" ||
	fail "emberctl status --format prometheus failed"
for c in live_map_full live_per_process_cap note_malformed; do
	grep -Eq "^ember_alloc_losses_total\{cause=\"$c\"\} [1-9]" "$T/prom" ||
		fail "no ember_alloc_losses_total for $c: $(grep ember_alloc_losses "$T/prom")"
done
pass "status: $(grep -A1 allocations "$T/st.txt" | tail -1 | sed 's/^ *//')"
has_memory() { "$EMBERCTL" --data-dir "$T/data" list --type memory --app leaky | grep -q ' memory '; }
wait_for has_memory || fail "no memory profile stored"
kill "$A" "$B"
kill -0 "$EMBERD_PID" 2>/dev/null || fail "emberd is not running"
kill "$EMBERD_PID"
wait_emberd
pass "emberd kept running and exited cleanly"
