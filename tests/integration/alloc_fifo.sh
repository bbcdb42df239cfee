#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sampled allocations from libraries libbpf must not open or map:
# - a library whose path no longer leads to the mapped file: a process in its own mount
#   namespace maps libember_alloc.so (preloaded) from a directory, then mounts a tmpfs over
#   that directory holding a FIFO of the library's name. Opening the FIFO would block until
#   a writer came: emberd reads the probes from the mapped file itself and does not hand
#   libbpf the FIFO's path;
# - a copy a non-root user owns, which they could truncate while libbpf maps it (SIGBUS).
# Neither is attached (counted, logged); emberd keeps its intervals and still attaches the
# library in an ordinary process.
. "$(dirname "$0")/lib.sh"
require_bpf
command -v unshare >/dev/null || fail "unshare missing (util-linux)"
PRELOAD=$EMBER_BUILD/alloc/libember_alloc.so
[ -r "$PRELOAD" ] || fail "libember_alloc.so not built at $PRELOAD"
D=$T/lib
mkdir -p "$D"
cp "$PRELOAD" "$D/"

# the hidden one, started before emberd so that emberd's first scan meets the FIFO
unshare -m --propagation private bash -c '
	D=$1 FX=$2 OUT=$3
	LD_PRELOAD=$D/libember_alloc.so "$FX/fx_alloc_leak" 600 & c=$!
	for _ in $(seq 1 300); do
		grep -q "$D/libember_alloc.so" "/proc/$c/maps" 2>/dev/null && break
		sleep 0.1
	done
	mount -t tmpfs ember-fifo "$D" && mkfifo "$D/libember_alloc.so" && echo "$c" >"$OUT"
	wait "$c"' _ "$D" "$FX" "$T/hidden.pid" &
PIDS+=("$!")
hidden_ready() { [ -s "$T/hidden.pid" ]; }
wait_for hidden_ready || fail "the hidden process did not map its library and hide it"
H=$(cat "$T/hidden.pid")
PIDS+=("$H")
[ -p "/proc/$H/root$D/libember_alloc.so" ] ||
	fail "its library's path in its root is not a FIFO: $(stat -c %F "/proc/$H/root$D/libember_alloc.so")"
grep -q "$D/libember_alloc.so" "/proc/$H/maps" || fail "the hidden process does not map the library"
pass "pid $H maps $D/libember_alloc.so, a FIFO at that path in its namespace"

CONF=$T/ember.conf
printf '[app "leaky"]\nmatch.comm = fx_alloc_leak\nmemory = inuse\n' >"$CONF"
start_emberd --config "$CONF" --interval 1s -v
LD_PRELOAD=$PRELOAD "$FX/fx_alloc_leak" 600 &
B=$!
PIDS+=("$B")
mkdir -p "$T/user"
cp "$PRELOAD" "$T/user/"
chown nobody "$T/user/libember_alloc.so"
LD_PRELOAD=$T/user/libember_alloc.so "$FX/fx_alloc_leak" 600 &
U=$!
PIDS+=("$U")

refused() {
	grep -q "pid $H: $D/libember_alloc.so: its path leads to another file than the one mapped" \
		"$T/emberd.log"
}
wait_for refused || fail "the FIFO at the library's path was not reported"
pass "pid $H: not attached, reported"
user_owned() {
	grep -q "pid $U: $T/user/libember_alloc.so: a non-root user may write it, not attached" \
		"$T/emberd.log"
}
wait_for user_owned || fail "the library owned by nobody was not reported"
pass "pid $U: not attached, reported"
attached() { grep -q "pid $B: sampled allocations from .*libember_alloc.so" "$T/emberd.log"; }
wait_for attached || fail "the ordinary process was not attached"
pass "pid $B: attached"
# emberd's loop goes on (it would stall for good in an open() of the FIFO)
n=$(status_key intervals)
more_intervals() { intervals_at_least $((${n:-0} + 3)); }
wait_for more_intervals || fail "emberd's intervals stopped at ${n:-none}"
[ "$(status_key allocs.not_attached)" -ge 2 ] 2>/dev/null ||
	fail "the status file does not count it: $(grep '^allocs' "$T/run/status")"
pass "intervals go on ($(status_key intervals)), not_attached $(status_key allocs.not_attached)"
has_memory() { "$EMBERCTL" --data-dir "$T/data" list --type memory --app leaky | grep -q ' memory '; }
wait_for has_memory || fail "no memory profile stored"
kill "$EMBERD_PID"
wait_emberd
pass "emberd exited cleanly"
