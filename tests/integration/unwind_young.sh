#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A process's first samples, taken before emberd has loaded its tables, are walked from a
# copy of their stack once the tables are loaded (daemon/sample/deferred.c), not by frame pointers.
# fx_short_lived (built without frame pointers) execs 40 children one after another, each
# burning ~150 ms of CPU in main -> child_burn: ~15 samples each at 99 Hz, of which the first
# ones (~3 a child) come before the child is loaded. A frame-pointer walk of those keeps
# child_burn alone (80.5% complete, measured before the deferred walks); at least 97% of the
# children's samples must reach main, and emberd must say it walked at least one a child.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/unwind_lib.sh"
require_bpf

start_emberd --hz 99 --interval 10s
"$FX/fx_short_lived" 40 >"$T/fx.out" 2>&1 || fail "fx_short_lived failed: $(tail -3 "$T/fx.out")"
kill -TERM "$EMBERD_PID" # stores the last interval (and status) on its way out
wait_emberd
deferred=$(status_total unwind samples_deferred)
full=$(status_total unwind samples_defer_full)
echo "samples walked from a copy of their stack: ${deferred:-?} (ring full: ${full:-?})"
"$EMBERCTL" --data-dir "$T/data" folded -o "$T/all.folded" 2>"$T/folded.err" ||
	fail "emberctl folded failed: $(cat "$T/folded.err")"
# every stack through child_burn, also one that is child_burn alone (a frame-pointer walk's)
grep -E '(^|;)child_burn(;| [0-9]+$)' "$T/all.folded" >"$T/children.folded" || true
expect_share "$T/children.folded" "children's samples complete to main" 97 300 ';main;child_burn;'
[ "${deferred:-0}" -ge 40 ] 2>/dev/null ||
	FAILED+=("only ${deferred:-0} samples walked from a copy, want >= 40 (one a child)")
finish "first samples of 40 short-lived children walked with their tables"
