#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Processes gone before emberd reads them are named and walked from what the kernel read
# of their mappings at their exit (bpf/proc.bpf.c). fx_short_lived -q (built without frame
# pointers) execs 150 children one after another, each burning 10 ms of CPU in main ->
# child_burn: sampled young (no wakeup), each is gone long before emberd's next wakeup,
# like an assembler or a sed in a build. At 499 Hz, ~5 samples a child. Without the exit's
# mappings their frames were unnamed addresses (measured: 0.5% of their samples named
# child_burn). The children's share in child_burn is what they measured of their own CPU
# (child_burn's, over all they used from fork to exit): ld.so's start-up, the exec and the
# exit take the rest, a larger part on a slower host (76% on one, 93% on another); the
# samples' share must be within 3 standard deviations of a binomial draw of that many
# samples, and 2 points, of it; and 97% of child_burn's samples complete to _start.
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
# what the children measured: the share of their CPU in child_burn, in percent
measured=$(awk '$1 == "burn" { b += $2 } $1 == "children" { c = $2 }
	END { if (c > 0) printf "%.1f", 100 * b / c }' "$T/fx.out")
[ -n "$measured" ] || fail "fx_short_lived -q printed no CPU figures: $(tail -3 "$T/fx.out")"
n=$(share "$T/children.folded" ';child_burn;' | awk '{ print $2 }')
least=$(awk -v p="$measured" -v n="${n:-0}" 'BEGIN { p /= 100
	sd = n > 0 ? sqrt(p * (1 - p) / n) : 1
	printf "%.1f", 100 * (p - 3 * sd) - 2 }')
echo "the children measured ${measured}% of their CPU in child_burn"
expect_share "$T/children.folded" "children's samples named child_burn" "$least" 300 ';child_burn;'
expect_share "$T/children.folded" "children's child_burn samples complete to main" 97 300 \
	';_start;__libc_start_main;__libc_start_call_main;main;child_burn;' ';child_burn;'
finish "150 children gone before emberd read them, named from their exit"
