#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A young process's samples are walked from a copy of its stack (unwind_young.sh); the copy
# must reach main however deep the stack is, up to 64 KiB: the pages up to the end of the
# stack's mapping are sent, not a fixed 16 KiB. fx_short_lived -d (built without frame
# pointers) execs 40 children one after another, each burning ~150 ms of CPU in child_burn
# under six frames of 6000 bytes of locals (deep_frame: ~36 KiB, as a compiler's deep
# passes use; cc1's samples reached 64 KiB, docs/benchmarks.md). With a 16 KiB copy the walk
# of the first samples ended at its end (`[truncated]` under the second deep_frame): at least
# 97% of the children's samples must reach main through every deep_frame.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/unwind_lib.sh"
require_bpf

start_emberd --hz 99 --interval 10s
"$FX/fx_short_lived" -d 40 >"$T/fx.out" 2>&1 || fail "fx_short_lived -d failed: $(tail -3 "$T/fx.out")"
kill -TERM "$EMBERD_PID" # stores the last interval (and status) on its way out
wait_emberd
deferred=$(status_total unwind samples_deferred)
echo "samples walked from a copy of their stack: ${deferred:-?}"
"$EMBERCTL" --data-dir "$T/data" folded -o "$T/all.folded" 2>"$T/folded.err" ||
	fail "emberctl folded failed: $(cat "$T/folded.err")"
# every stack through child_burn, also one cut short above it
grep -E '(^|;)child_burn(;| [0-9]+$)' "$T/all.folded" >"$T/children.folded" || true
expect_share "$T/children.folded" "children's samples complete to main" 97 300 \
	';main;deep_frame;deep_frame;deep_frame;deep_frame;deep_frame;deep_frame;child_burn;'
[ "${deferred:-0}" -ge 40 ] 2>/dev/null ||
	FAILED+=("only ${deferred:-0} samples walked from a copy, want >= 40 (one a child)")
finish "first samples of 40 children with 36 KiB stacks walked with their tables"
