#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Processes gone before emberd reads them are named and walked from what the kernel read
# of their mappings at their exit (bpf/proc.bpf.c). fx_short_lived -q (built without frame
# pointers) execs 150 children one after another, each burning 10 ms of CPU in main ->
# child_burn: sampled young (no wakeup), each is gone long before emberd's next wakeup,
# like an assembler or a sed in a build. At 499 Hz, ~5 samples a child. Without the exit's
# mappings their frames were unnamed addresses (measured: 0.5% of their samples named
# child_burn); at least 80% of the children's samples must be in child_burn (ld.so's start-up,
# the exec and the exit take the rest), and 97% of those complete to _start.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/unwind_lib.sh"
require_bpf

# the children by their comm: the rule that holds for a process already gone
printf '[app "quick"]\nmatch.comm = fx_short_lived\n' >"$T/ember.conf"
start_emberd --config "$T/ember.conf" --hz 499 --interval 10s -v
"$FX/fx_short_lived" -q 150 >"$T/fx.out" 2>&1 || fail "fx_short_lived failed: $(tail -3 "$T/fx.out")"
kill -TERM "$EMBERD_PID" # stores the last interval (and status) on its way out
wait_emberd
"$EMBERCTL" --data-dir "$T/data" folded --app quick -o "$T/children.folded" 2>"$T/folded.err" ||
	fail "emberctl folded failed: $(cat "$T/folded.err")"
expect_share "$T/children.folded" "children's samples named child_burn" 80 300 ';child_burn;'
expect_share "$T/children.folded" "children's child_burn samples complete to main" 97 300 \
	';_start;__libc_start_main;__libc_start_call_main;main;child_burn;' ';child_burn;'
finish "150 children gone before emberd read them, named from their exit"
