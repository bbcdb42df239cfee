#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Who woke a wait taken before emberd loaded the waiting process: the wait goes to the
# daemon with a copy of its stack (offcpu_young.sh), and its end, at the thread's return,
# carries the stacks of the thread that woke it (bpf/offcpu.bpf.c's end_deferred). fx_short_lived
# -p (built without frame pointers) execs 20 children one after another; each blocks at once
# in main -> child_wait_input's read of a pipe until the parent, 100 ms later, writes a byte
# in parent_wake_child. In the children's offcpu_wakers profiles, >= 80% of the time waited
# in child_wait_input has a waker stack in parent_wake_child (before: those waits had no
# waker at all).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/offcpu_lib.sh"
require_bpf

offcpu_young_run -p
waits=$(sed -n 's/.*deferred walks since the start: .* of them \([0-9]*\) off-CPU waits.*/\1/p' \
	"$T/emberd.log" | tail -1)
[ "${waits:-0}" -gt 0 ] || fail "no off-CPU wait went to the deferred walks: the children were loaded before they waited"
: >"$T/wakers.folded"
for c in $CHILDREN; do
	if ! "$EMBERCTL" --data-dir "$T/data" folded --type offcpu_wakers --pid "$c" \
		-o "$T/child.folded" 2>"$T/folded.err"; then
		# a child none of whose waits has a waker is in no offcpu_wakers profile
		grep -q "no samples of pid $c" "$T/folded.err" ||
			fail "emberctl folded --type offcpu_wakers --pid $c failed: $(cat "$T/folded.err")"
		continue
	fi
	grep -F ';child_wait_input;' "$T/child.folded" >>"$T/wakers.folded" || true
done
# the time waited in child_wait_input, and the part of it whose waker is parent_wake_child
read -r all woken < <(awk '{ n = $NF; a += n; w = $0; sub(/.*\[woken by\]/, "", w)
	if (w ~ /;parent_wake_child;/) b += n } END { print a + 0, b + 0 }' "$T/wakers.folded")
echo "$waits deferred waits; time waited in child_wait_input with a waker: $all ns," \
	"of it woken in parent_wake_child: $woken ns"
[ "$all" -gt 0 ] || fail "no waker of the children's waits in child_wait_input"
if [ "$((woken * 100))" -lt "$((all * 80))" ]; then
	echo "wakers of the most time:"
	awk '{ print $NF "\t" $0 }' "$T/wakers.folded" | sort -nr | head -3 | cut -f2- |
		cut -c1-400 | sed 's/^/  /' || true # SIGPIPE: head
	fail "$((woken * 100 / all))% of the time waited in child_wait_input was woken in parent_wake_child, want >= 80%"
fi
pass "$((woken * 100 / all))% of 20 young children's waits woken in parent_wake_child"
