#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fx_memcpy is built with frame pointers, as frame-pointer profilers ask, and its hot
# function copy_buffers spends its time in libc's memcpy, which keeps no frame. At least
# 95% of the samples in memcpy (whatever libc's variant is called) must have
# copy_buffers directly above it, and 95% of all samples must reach main. A
# frame-pointer walk skips copy_buffers: main -> memcpy.
# The same fixture copying 64 bytes a call: the fortified copy (__memcpy_chk) falls
# through the nops that align memmove after it, code no FDE covers, a tenth of the
# samples in libc. Walked by frame pointers there, they lost copy_buffers (main ->
# libc.so.6+0x152a6a); now 98% of the copy's samples keep it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/unwind_lib.sh"
require_bpf

start_emberd --hz 99 --interval 5s
"$FX/fx_memcpy" 12 >"$T/big.out" 2>&1 &
BIG=$!
"$FX/fx_memcpy" 8 $((256 * 1024 - 64)) >"$T/small.out" 2>&1 &
SMALL=$!
PIDS+=("$BIG" "$SMALL")
wait "$BIG" || fail "fx_memcpy exited with status $?: $(tail -3 "$T/big.out")"
wait "$SMALL" || fail "fx_memcpy (64 bytes) exited with status $?: $(tail -3 "$T/small.out")"
stop_and_fold "$BIG:$T/big.folded" "$SMALL:$T/small.folded"

F=$T/big.folded
MEMCPY=';(__)?mem(cpy|move)[^;]*;'
# the fixture does what it says: nearly all of its time is in memcpy
expect_share "$F" "samples in memcpy" 80 300 "$MEMCPY"
expect_share "$F" "copy_buffers directly above memcpy" 95 250 \
	";main;copy_buffers$MEMCPY" "$MEMCPY"
expect_share "$F" "reach main" 95 300 ';main;'
# the small copies: every sample in copy_buffers, a memcpy or libc code not named (the
# padding: libc.so.6+0x...), all but main's own clock_gettime
expect_share "$T/small.folded" "64-byte copies: samples in the copy keep copy_buffers" 98 300 \
	';main;copy_buffers;' ';(copy_buffers|__mem[a-z_]*|libc[.]so[.]6[+]0x[0-9a-f]+);'
finish "fx_memcpy: copy_buffers is kept above libc's memcpy, and above its fortified one"
