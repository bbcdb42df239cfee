#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Names from the right file, never from another one at the same path:
# - a process in its own mount and pid namespace runs a binary that exists only
#   inside its mounts, while the host has a different binary at that very path;
# - a binary replaced (renamed over, so the running one is deleted) while its
#   process runs.
# Both run fx_work_ab (work_a, work_b); the impostor is fx_busy (burn). The
# folded stacks of each process must name work_a and work_b, and never burn.
. "$(dirname "$0")/lib.sh"
require_bpf
command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"

CPU_S=3
mkdir -p "$T/ns" "$T/del"
# the host's file at the path the namespace's process runs from: the impostor
cp "$FX/fx_busy" "$T/ns/fx_target"
start_emberd --hz 99 --interval 1s

# --- own mount and pid namespace: the binary exists only in its tmpfs ------------------
unshare --mount --pid --fork --propagation private sh -c \
	"mount -t tmpfs tmpfs '$T/ns' && cp '$FX/fx_work_ab' '$T/ns/fx_target' &&
	 exec '$T/ns/fx_target' cpu:$CPU_S ns" &
NS_SH=$!
PIDS+=("$NS_SH")
ns_pid() { pgrep -f "^$T/ns/fx_target cpu:$CPU_S ns\$"; }
wait_for ns_pid >/dev/null || fail "the namespaced workload did not start"
NS_PID=$(ns_pid)
[ "$(readlink "/proc/$NS_PID/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] ||
	fail "the workload is not in its own mount namespace"
cmp -s "$T/ns/fx_target" "$FX/fx_busy" || fail "the host's file at the path is not the impostor"

# --- a binary replaced while it runs ------------------------------------------------------
cp "$FX/fx_work_ab" "$T/del/fx_target"
"$T/del/fx_target" cpu:$CPU_S del &
DEL_PID=$!
PIDS+=("$DEL_PID")
wait_for test -e "/proc/$DEL_PID/exe" || fail "the workload to replace did not start"
cp "$FX/fx_busy" "$T/del/fx_target.new"
mv -f "$T/del/fx_target.new" "$T/del/fx_target"
readlink "/proc/$DEL_PID/exe" | grep -q "(deleted)" || fail "the running binary is not deleted"

wait "$DEL_PID" || fail "the replaced workload failed"
wait "$NS_SH" || fail "the namespaced workload failed"
kill -TERM "$EMBERD_PID"
wait_emberd

# check NAME PID: the process's folded stacks name work_a and work_b, never burn
check() {
	"$EMBERCTL" --data-dir "$T/data" folded --pid "$2" >"$T/$1.folded" ||
		fail "$1: emberctl folded failed"
	grep -q "work_a" "$T/$1.folded" || fail "$1: work_a not named: $(head -5 "$T/$1.folded")"
	grep -q "work_b" "$T/$1.folded" || fail "$1: work_b not named: $(head -5 "$T/$1.folded")"
	! grep -q "burn" "$T/$1.folded" || fail "$1: named from the impostor's file (burn)"
	echo "$1: $(grep -c . "$T/$1.folded") stacks, named from the file the process runs"
}
check namespace "$NS_PID"
check replaced "$DEL_PID"
pass "a binary only inside a mount namespace, and one replaced while running: right names"
