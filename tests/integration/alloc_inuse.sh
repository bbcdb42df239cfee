#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sampled allocations, memory = inuse: fx_alloc_leak under libember_alloc.so, where
# leak_here keeps 1 MiB/s and churn_here allocates and frees 20 MiB/s. alloc_space
# shows both in proportion (20:1, within 15% or 5 sigma); inuse_space is >= 90%
# leak_here and grows from interval to interval. Views without --sample show
# inuse_space.
. "$(dirname "$0")/lib.sh"
require_bpf
PRELOAD=$EMBER_BUILD/alloc/libember_alloc.so
[ -r "$PRELOAD" ] || fail "libember_alloc.so not built at $PRELOAD"

CONF=$T/ember.conf
printf '[app "leaky"]\nmatch.comm = fx_alloc_leak\nmemory = inuse\n' >"$CONF"
start_emberd --config "$CONF" --interval 2s -v
# a sample every 4 KiB on average (M): each 4 KiB block is sampled with p = 1 - e^-1 = 0.63,
# ~160 a second from leak_here (at 16 KiB, p = 0.22: ~680 samples, and 15% was 4 sigma)
M=4096
EMBER_ALLOC_SAMPLE_BYTES=$M LD_PRELOAD=$PRELOAD "$FX/fx_alloc_leak" 600 & L=$!
PIDS+=("$L")

mem_profiles() { "$EMBERCTL" --data-dir "$T/data" list --type memory --app leaky 2>/dev/null |
	grep -c ' memory ' || true; }
has_profiles() { [ "$(mem_profiles)" -ge "$1" ]; }
# the first profile may start before the attach: 6 whole ones after it
for _ in $(seq 1 240); do
	has_profiles 7 && break
	kill -0 "$EMBERD_PID" 2>/dev/null || fail "emberd exited"
	sleep 0.5
done
has_profiles 7 || fail "fewer than 7 memory profiles of app leaky after 120 s: $(mem_profiles)"
grep -q "pid $L: sampled allocations from .*libember_alloc.so" "$T/emberd.log" ||
	fail "no attach to libember_alloc.so logged"

# the starts of the stored memory profiles, oldest first (skipping the first, partial)
mapfile -t STARTS < <("$EMBERCTL" --data-dir "$T/data" list --type memory --app leaky |
	awk '/ memory / { print $1 }' | sort | tail -n +2)
SINCE=${STARTS[0]}
total_fn() { # total_fn FILE FUNCTION: its total (inclusive) value in a top listing
	awk -v fn="$2" '$5 == fn { print $3; f = 1 } END { if (!f) print 0 }' "$1"
}
"$EMBERCTL" --data-dir "$T/data" top --type memory --app leaky --since "$SINCE" \
	--sample alloc_space >"$T/alloc.txt" || fail "top --sample alloc_space failed"
leak=$(total_fn "$T/alloc.txt" leak_here)
churn=$(total_fn "$T/alloc.txt" churn_here)
[ "$leak" -gt 0 ] || fail "alloc_space has no leak_here: $(head -20 "$T/alloc.txt")"
# Each sample of a 4 KiB block weighs w = 4096 / p bytes, so each function's samples are
# its bytes / w, a binomial count: n samples vary by sqrt(n (1 - p)), and the ratio by
# sqrt((1 - p) (1/n_leak + 1/n_churn)) relatively: 1.4% for the ~1900 leak samples of 6
# profiles (fewer than 500 is lost samples). The band is 15% or 5 sigma, the larger.
read -r ratio nl nc tol < <(awk -v l="$leak" -v c="$churn" -v m="$M" 'BEGIN {
	p = 1 - exp(-4096 / m); w = int(4096 / p + 0.5); nl = l / w; nc = c / w
	t = 500 * sqrt((1 - p) * (1 / nl + 1 / nc)); if (t < 15) t = 15
	printf "%d %d %d %.1f\n", 100 * c / l, nl, nc, t }')
[ "$nl" -ge 500 ] || fail "alloc_space has $leak bytes ($nl samples) of leak_here: want 500 samples"
awk -v r="$ratio" -v t="$tol" 'BEGIN { exit !(r >= 2000 * (1 - t / 100) && r <= 2000 * (1 + t / 100)) }' ||
	fail "alloc_space churn_here/leak_here = $ratio% of $nc/$nl samples (expected 2000% +- $tol%: 15% or 5 sigma)"
pass "alloc_space: churn_here $churn, leak_here $leak bytes ($nc and $nl samples): ratio $ratio% (2000% +- $tol%)"

# inuse per interval: each profile alone, by a window inside it
inuse_of() { # inuse_of START: leak_here's and the total inuse_space of that profile
	local s a b
	s=$(date -u -d "$1" +%s.%N)
	a=$(date -u -d "@$(awk -v s="$s" 'BEGIN { printf "%.3f", s + 0.5 }')" +%Y-%m-%dT%H:%M:%S.%3NZ)
	b=$(date -u -d "@$(awk -v s="$s" 'BEGIN { printf "%.3f", s + 1.0 }')" +%Y-%m-%dT%H:%M:%S.%3NZ)
	"$EMBERCTL" --data-dir "$T/data" top --type memory --app leaky --since "$a" \
		--until "$b" --sample inuse_space >"$T/inuse.txt" ||
		fail "top --sample inuse_space failed for the profile at $1"
	echo "$(total_fn "$T/inuse.txt" leak_here) $(sed -n 's/.*, \([0-9]*\) inuse_space.*/\1/p' "$T/inuse.txt")"
}
prev=0
grew=0
for s in "${STARTS[@]}"; do
	read -r l t <<<"$(inuse_of "$s")"
	[ -n "$t" ] && [ "$t" -gt 0 ] || fail "no inuse_space in the profile at $s"
	[ $((l * 100 / t)) -ge 90 ] || fail "leak_here holds $l of $t inuse bytes at $s (< 90%)"
	[ "$l" -gt "$prev" ] && grew=$((grew + 1))
	prev=$l
done
[ "$grew" -ge $((${#STARTS[@]} - 1)) ] ||
	fail "inuse_space of leak_here grew in only $grew of ${#STARTS[@]} intervals"
pass "inuse_space: >= 90% leak_here in each of ${#STARTS[@]} intervals, growing (last $prev)"

# the default value of a memory view is inuse_space (the profile's default_sample_type)
"$EMBERCTL" --data-dir "$T/data" top --type memory --app leaky --since "$SINCE" >"$T/def.txt" ||
	fail "top --type memory without --sample failed"
grep -q ' inuse_space' "$T/def.txt" || fail "the default value is not inuse_space: $(head -1 "$T/def.txt")"
pass "views default to inuse_space for memory profiles"
kill "$L"
kill "$EMBERD_PID"
wait_emberd
