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
expect_share "$F" "deep samples 255 descend frames deep" 95 200 '(;descend){255};spin;' ';spin;'
longest=$(awk '{ s = $0; sub(/ [0-9]+$/, "", s); n = split(s, a, ";")
	u = 0; for (i = 1; i <= n; i++) if (a[i] == "descend" || a[i] == "spin" || a[i] == "[truncated]") u++
	if (u > m) m = u } END { print m + 0 }' "$F")
echo "longest user stack: $longest frames (with [truncated])"
[ "$longest" -le 257 ] || fail "a stack of $longest frames: more than 256 kept"
finish "fx_deep: stacks cut at 256 frames end in [truncated]"
