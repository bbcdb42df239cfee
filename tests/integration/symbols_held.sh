#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The drain never waits for the symbol loader: an interval that falls due while it
# parses is held on the event loop, at most 1 s, and run when the loader says it is
# idle. EMBER_TEST_SLOW_BINARY=PART:MS has the loader wait MS before parsing a binary
# whose path holds PART (a copy of a fixture), standing for a huge or slow file.
# 1. A library that fx_dlopen loads late, parsed 900 ms late, within the limit: its
#    walk meets the library, whose mappings are read again and the library queued at
#    once; no frame is left an address (frame_wait_cut 0: an interval due meanwhile
#    is held until the loader is idle), and nofp_work is named on at least 90 % of
#    the samples after the dlopen.
# 2. Parsed 6 s late: intervals held to the limit, then stored with its frames as
#    addresses (counted in frame_wait_cut), while intervals go on ending (at least 3
#    from the first frame so counted to its name); once parsed, they are named again.
. "$(dirname "$0")/lib.sh"
require_bpf
require_go

mkdir -p "$T/slow"
cp "$FX/fx_busy" "$T/slow/fx_busy_held"

# burn_share FILE: the percentage of FILE's samples (a pprof profile) in burn, whole
burn_share() {
	pprof_top "$1" -sample_index=samples >"$1.top"
	awk -v b="$(flat_of "$1.top" burn)" -v t="$(total_of "$1.top")" \
		'BEGIN { printf "%d\n", (t > 0 ? 100 * b / t : 0) }'
}
export_pid() { # export_pid PID FILE [--since T]
	local pid=$1 out=$2
	shift 2
	"$EMBERCTL" --data-dir "$T/data" export --type cpu --pid "$pid" "$@" -o "$out" 2>/dev/null
}
at_least() { [ "$1" -ge "$2" ]; }

# --- 1. parsed within the limit: held until the loader is idle ---------------------
# fx_dlopen spins until SIGUSR1, then loads the library and works in it for 3 s of
# CPU: its first frames in it are sampled moments after the library is queued.
cp "$FX/libfx_nofp.so" "$T/slow/libfx_nofp_held.so"
EMBER_TEST_SLOW_BINARY=nofp_held:900 start_emberd --hz 99 --interval 1s -v
grep -q 'parsed 900 ms late' "$T/emberd.log" || fail "the test hook was not taken"
run_dlopen "$T/slow/libfx_nofp_held.so" 3
kill -INT "$EMBERD_PID"
wait_emberd
kill "$WL"
export_pid "$WL" "$T/one.pb.gz" || fail "export of pid $WL failed"
pprof_top "$T/one.pb.gz" -sample_index=samples >"$T/one.top"
total=$(total_of "$T/one.top")
spin=$(flat_of "$T/one.top" before_dlopen)
work=$(flat_of "$T/one.top" nofp_work)
after=$((total - spin))
echo "fx_dlopen: $total samples, $spin before its dlopen, $work of the $after after in nofp_work"
[ "$after" -ge 100 ] || fail "only $after samples after the dlopen: too few to judge"
[ $((100 * work / after)) -ge 90 ] || { head -20 "$T/one.top"; fail "nofp_work has $work of $after"; }
cut=$(status_key refused.frames_wait_cut)
[ "${cut:-0}" -eq 0 ] || fail "$cut frames left addresses with a parse inside the limit"
if grep -q "interval held [0-9]* ms, its limit" "$T/emberd.log"; then
	fail "an interval was held to its limit by a 900 ms parse"
fi
held=$(grep -c "interval held [0-9]* ms, until the symbol loader" "$T/emberd.log" || true)
pass "a library parsed 900 ms late: nofp_work named on $work of $after samples, none" \
	"left an address ($held interval(s) held until parsed)"

# --- 2. parsed after the limit: addresses counted, the loop goes on -----------------
rm -rf "$T/data" "$T/run"
EMBER_TEST_SLOW_BINARY=fx_busy_held:6000 start_emberd --hz 99 --interval 1s -v
wait_for intervals_at_least 1 || fail "no interval ended"
"$T/slow/fx_busy_held" 3600 >/dev/null &
WL=$!
PIDS+=("$WL")
cut_seen() { [ "$(status_key refused.frames_wait_cut)" -gt 0 ] 2>/dev/null; }
wait_for cut_seen || fail "no frame counted as left unnamed while its binary was parsed 6 s late"
i0=$(status_key intervals)
wait_for grep -q "interval held [0-9]* ms, its limit" "$T/emberd.log" ||
	fail "no interval was held to its limit"
# named again once parsed: the last 2 s of its samples under burn
named_again() {
	export_pid "$WL" "$T/late.pb.gz" --since -2s && at_least "$(burn_share "$T/late.pb.gz")" 90
}
WAIT_S=60 wait_for named_again || { cat "$T/late.pb.gz.top"; fail "burn never named again"; }
i1=$(status_key intervals)
echo "intervals ended from the first frame left unnamed to burn named: $i0 -> $i1"
[ $((i1 - i0)) -ge 3 ] || fail "only $((i1 - i0)) intervals ended while the binary was parsed"
kill "$WL"
kill -INT "$EMBERD_PID"
wait_emberd
pass "parsed 6 s late: $(status_key refused.frames_wait_cut) frames counted unnamed," \
	"$((i1 - i0)) intervals ended meanwhile, burn named again"
