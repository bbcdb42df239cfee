#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# libember_alloc.so under a real USDT attach (bpftrace, the kernel's uprobe semaphore
# reference counting): with no profiler the library samples nothing; with bpftrace on
# otel_memory:alloc and :free, what bpftrace counts is exactly what the library says it
# fired, and the weights it saw add up to the 1 GiB allocated (within 15%, 6.8 sigma of
# the ~2048 samples' Poisson spread).
# Needs root and bpftrace (skips, 77, without them).
# usage: usdt.sh path/to/alloc_test path/to/libember_alloc.so
set -uo pipefail

TEST=${1:?usage: usdt.sh alloc_test libember_alloc.so}
LIB=$(realpath "${2:?usage: usdt.sh alloc_test libember_alloc.so}")
TMP=$(mktemp -d)
BT=
cleanup() {
	[ -n "$BT" ] && kill "$BT" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	[ -f "$TMP/bt" ] && sed 's/^/  bpftrace: /' "$TMP/bt" >&2
	exit 1
}

[ "$(id -u)" -eq 0 ] || { echo "skip: needs root (uprobes)"; exit 77; }
command -v bpftrace >/dev/null || { echo "skip: bpftrace not installed"; exit 77; }

# No profiler: the semaphores are 0, nothing is sampled (alloc_test checks it).
"$TEST" workload >"$TMP/off" || fail "workload without a profiler: $(cat "$TMP/off")"

bpftrace -e "usdt:$LIB:otel_memory:alloc { @allocs = count(); @weight = sum(arg2); }
usdt:$LIB:otel_memory:free { @frees = count(); }" >"$TMP/bt" 2>&1 &
BT=$!
# The workload waits (bounded) for the kernel to raise the semaphore: no sleep here.
"$TEST" workload attached >"$TMP/on" || fail "workload under bpftrace: $(cat "$TMP/on")"
# SIGINT makes bpftrace print its maps and exit. A script's background job starts with
# INT ignored, until bpftrace sets its handler: on a loaded host the workload can end
# before that, so INT is sent again until it exits (bounded), never waited on once.
for _ in $(seq 100); do
	kill -INT "$BT" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$BT" 2>/dev/null; then
	kill -KILL "$BT"
	fail "bpftrace did not exit within 10 s of SIGINT"
fi
wait "$BT" 2>/dev/null
BT=

read -r _ lib_allocs _ lib_frees _ want <"$TMP/on"
bt_allocs=$(awk '/^@allocs:/ { print $2 }' "$TMP/bt")
bt_frees=$(awk '/^@frees:/ { print $2 }' "$TMP/bt")
bt_weight=$(awk '/^@weight:/ { print $2 }' "$TMP/bt")
[ -n "$bt_allocs" ] && [ -n "$bt_frees" ] || fail "bpftrace printed no counts"
[ "$bt_allocs" -eq "$lib_allocs" ] || fail "bpftrace saw $bt_allocs allocs, the library fired $lib_allocs"
[ "$bt_frees" -eq "$lib_frees" ] || fail "bpftrace saw $bt_frees frees, the library fired $lib_frees"
[ "$bt_frees" -eq "$bt_allocs" ] || fail "$bt_allocs allocs but $bt_frees frees (all were freed)"
awk -v w="$bt_weight" -v want="$want" 'BEGIN { exit !(w >= 0.85 * want && w <= 1.15 * want) }' ||
	fail "weights add up to $bt_weight bytes, $want allocated"
echo "ok: usdt: bpftrace saw $bt_allocs allocs and $bt_frees frees, as fired; weights $bt_weight for $want bytes"
