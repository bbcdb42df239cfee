#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A process's off-CPU waits sampled before emberd has loaded its tables go to the daemon
# with a copy of their stack (bpf/offcpu.bpf.c, daemon/sample/deferred.c) and are walked with the
# tables, not by frame pointers. fx_short_lived -w (built without frame pointers) execs 20
# children one after another; each sleeps 100 ms in main -> child_nap -> nanosleep as soon as
# it starts, long before emberd reads it (it does so during the 50 ms of CPU that follow). A frame-pointer walk of those waits keeps libc's
# clock_nanosleep alone (0% complete, measured before); at least 90% of child_nap's off-CPU
# time must reach main, and the children's sleep must add up to about 20 x 100 ms.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/unwind_lib.sh"
. "$(dirname "$0")/offcpu_lib.sh"
require_bpf

offcpu_young_run -w
# each child's sleeps, whole or cut (a frame-pointer walk keeps libc's clock_nanosleep)
: >"$T/naps.folded"
for c in $CHILDREN; do
	"$EMBERCTL" --data-dir "$T/data" folded --type offcpu --sample offcpu --pid "$c" \
		-o "$T/child.folded" 2>"$T/folded.err" ||
		fail "emberctl folded --type offcpu --pid $c failed: $(cat "$T/folded.err")"
	grep -F '[off-CPU: sleep]' "$T/child.folded" >>"$T/naps.folded" || true
done
r=$(share "$T/naps.folded" ';main;child_nap;')
set -- $r
ms=$(($2 / 1000000))
echo "children's sleep: ${ms} ms, of which ${3}% complete to main -> child_nap"
[ "$ms" -ge 1600 ] && [ "$ms" -le 3000 ] ||
	fail "the children's sleep adds up to ${ms} ms, want about 2000 (20 x 100 ms)"
if awk -v p="$3" 'BEGIN { exit !(p < 90) }'; then
	echo "most off-CPU time of the stacks that miss:"
	WANT=';main;child_nap;' awk '{ s = $0; sub(/ [0-9]+$/, "", s); s = ";" s ";"
		if (s !~ ENVIRON["WANT"]) print $NF "\t" $0 }' "$T/naps.folded" |
		sort -nr | head -5 | cut -f2- | cut -c1-300 | sed 's/^/  /' || true # SIGPIPE: head
	fail "only ${3}% of the children's sleep is complete to main -> child_nap, want >= 90%"
fi
pass "${3}% of 20 young children's sleep complete to main -> child_nap (${ms} ms)"
