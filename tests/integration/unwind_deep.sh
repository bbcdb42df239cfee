#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fx_deep recurses 400 frames deep (no frame pointers) and spins at the bottom:
# deeper than the 256 frames ember keeps. Its deep samples must end in a
# [truncated] frame at their root (never look complete), hold at most 256 user
# frames, and be walked that far (descend fills the stack).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/unwind_lib.sh"
require_bpf

profile_fixture deep "$FX/fx_deep" 12
F=$T/deep.folded
expect_share "$F" "deep samples rooted in [truncated]" 95 200 '^;\[truncated\];' ';spin;'
# per stack in spin: its descend frames; mawk has no {n} in regular expressions
read -r deep all longest < <(awk '{ s = $0; sub(/ [0-9]+$/, "", s); n = split(s, a, ";")
	d = 0; u = 0; spin = 0
	for (i = 1; i <= n; i++) {
		if (a[i] == "descend") d++
		if (a[i] == "descend" || a[i] == "spin" || a[i] == "[truncated]") u++
		if (a[i] == "spin") spin = 1
	}
	if (spin) { all += $NF; if (d >= 250) deep += $NF }
	if (u > m) m = u } END { print deep + 0, all + 0, m + 0 }' "$F")
echo "samples in spin under >= 250 descend frames: $deep of $all; longest user stack: $longest"
[ "$all" -ge 200 ] || fail "only $all samples in spin, want >= 200"
[ $((100 * deep)) -ge $((95 * all)) ] || fail "only $deep of $all samples walked 250 frames deep"
[ "$longest" -le 257 ] || fail "a stack of $longest frames: more than 256 kept"
finish "fx_deep: stacks cut at 256 frames end in [truncated]"
