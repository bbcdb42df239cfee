#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fx_lazy_bind under LD_BIND_NOT=1: ld.so resolves each of resolve_loop's calls into libc
# again, in its lazy-binding trampoline (_dl_runtime_resolve_*) and _dl_fixup, where nearly
# all the fixture's time goes. The trampoline realigns rsp and keeps its frame in rbx: its
# CFA is rbx + N, and rbx must be followed through _dl_fixup and its callees, which save it.
# At least 90% of the samples must reach main through resolve_loop (without rbx: those in
# ld.so end at the trampoline).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/unwind_lib.sh"
require_bpf

profile_fixture lazy_bind env LD_BIND_NOT=1 "$FX/fx_lazy_bind" 8
F=$T/lazy_bind.folded
expect_share "$F" "reach main through resolve_loop" 90 300 ';main;resolve_loop;'
# the fixture does what it says: most of its samples are in the trampoline and below it
expect_share "$F" "samples in the lazy-binding trampoline" 50 300 ';_dl_runtime_resolve[^;]*;'
expect_share "$F" "the trampoline's callees under it, resolve_loop, main" 90 30 \
	';main;resolve_loop;_dl_runtime_resolve[^;]*;_dl_fixup;' ';_dl_fixup;'
finish "fx_lazy_bind: stacks complete through ld.so's lazy-binding trampoline"
