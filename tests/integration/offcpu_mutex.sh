#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Known answer for off-CPU reasons: fx_offcpu's mx_holder holds a mutex 8 ms at a time
# (hold_lock_work) while mx_waiter blocks for it in wait_for_lock. The waiter's off-CPU
# time, read with go tool pprof: >= 90% in wait_for_lock (besides its preemptions while it
# computes, on a shared machine), and of its waits (off the CPU, not in the run queue)
# >= 80% lock (futex) waits. Its top waker stack (offcpu_wakers) is in hold_lock_work, as
# emberctl folded and callees show it; --type wall shows the wait and the holder's work.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/offcpu_lib.sh"
require_bpf
require_go

offcpu_run mutex
off=$(ns_of "$T/off.pb.gz" offcpu -tagfocus=comm=mx_waiter)
in_lock=$(ns_of "$T/off.pb.gz" offcpu -tagfocus=comm=mx_waiter -focus=wait_for_lock)
futex=$(ns_of "$T/off.pb.gz" offcpu -tagfocus=comm=mx_waiter -focus='off-CPU: lock')
runq=$(ns_of "$T/off.pb.gz" offcpu -tagfocus=comm=mx_waiter -focus='off-CPU: run queue')
preempted=$(ns_of "$T/off.pb.gz" offcpu -tagfocus=comm=mx_waiter -focus=compute_chunk)
echo "mx_waiter: off-CPU $off ns, in wait_for_lock $in_lock, as a lock wait $futex," \
	"run queue $runq (preempted in compute_chunk $preempted)"
[ "$off" -gt 0 ] || fail "no off-CPU time for mx_waiter"
[ "$(pct "$in_lock" $((off - preempted)))" -ge 90 ] ||
	fail "wait_for_lock holds $(pct "$in_lock" $((off - preempted)))% of mx_waiter's off-CPU" \
		"time (besides its preemptions in compute_chunk), want >= 90%"
[ "$(pct "$futex" $((off - runq)))" -ge 80 ] ||
	fail "lock waits are $(pct "$futex" $((off - runq)))% of mx_waiter's waits, want >= 80%"
# who woke it: the top waker of the waits in wait_for_lock is mx_holder in hold_lock_work
"$EMBERCTL" --data-dir "$T/data" folded --type offcpu_wakers --pid "$WL" >"$T/wakers.txt" ||
	fail "emberctl folded --type offcpu_wakers failed"
top=$(grep -F ';wait_for_lock;' "$T/wakers.txt" | grep -F '[woken by]' |
	awk '{ print $NF "\t" $0 }' | sort -nr | head -1 | cut -f2-)
[ -n "$top" ] || fail "no waker of wait_for_lock's waits in the offcpu_wakers profile"
waker=${top#*\[woken by\]}
echo "top waker of wait_for_lock: $waker"
[[ $waker == *";hold_lock_work;"* ]] || fail "the top waker of wait_for_lock is not in hold_lock_work"
"$EMBERCTL" --data-dir "$T/data" callees wait_for_lock --type offcpu_wakers --pid "$WL" \
	>"$T/callees.txt" || fail "emberctl callees wait_for_lock --type offcpu_wakers failed"
grep -q ' hold_lock_work$' "$T/callees.txt" ||
	fail "emberctl callees wait_for_lock --type offcpu_wakers does not show hold_lock_work"
# --type wall: the waiter's lock wait and the holder's work, on one view
"$EMBERCTL" --data-dir "$T/data" top --type wall --pid "$WL" -n 0 >"$T/wall.txt" ||
	fail "emberctl top --type wall failed"
grep -q ' \[off-CPU: lock (futex)\]$' "$T/wall.txt" && grep -q ' hold_lock_work$' "$T/wall.txt" ||
	fail "emberctl top --type wall lacks the lock wait or hold_lock_work: $(head -5 "$T/wall.txt")"
pass "wait_for_lock holds $(pct "$in_lock" $((off - preempted)))% of mx_waiter's off-CPU time," \
	"$(pct "$futex" $((off - runq)))% of its waits are lock waits"
