#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fx_memcpy is built with frame pointers, as frame-pointer profilers ask, and its hot
# function copy_buffers spends its time in libc's memcpy, which keeps no frame. At least
# 95% of the samples in memcpy (whatever libc's variant is called) must have
# copy_buffers directly above it, and 95% of all samples must reach main. A
# frame-pointer walk skips copy_buffers: main -> memcpy.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/unwind_lib.sh"
require_bpf

profile_fixture memcpy "$FX/fx_memcpy" 12
F=$T/memcpy.folded
MEMCPY=';(__)?mem(cpy|move)[^;]*;'
# the fixture does what it says: nearly all of its time is in memcpy
expect_share "$F" "samples in memcpy" 80 300 "$MEMCPY"
expect_share "$F" "copy_buffers directly above memcpy" 95 250 \
	";main;copy_buffers$MEMCPY" "$MEMCPY"
expect_share "$F" "reach main" 95 300 ';main;'
finish "fx_memcpy: copy_buffers is kept above libc's memcpy"
