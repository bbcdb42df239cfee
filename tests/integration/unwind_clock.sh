#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fx_clock (frame pointers) calls clock_gettime in a loop from read_clock_loop: libc's
# clock_gettime calls into the vDSO, and neither keeps a frame. On at least 95% of the
# samples in the vDSO, read_clock_loop must be directly above libc's clock_gettime,
# itself directly above the vDSO frame. A frame-pointer walk skips read_clock_loop.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/unwind_lib.sh"
require_bpf

profile_fixture clock "$FX/fx_clock" 12
F=$T/clock.folded
# a vDSO frame: named by the vDSO's symbols, or [vdso]+offset where it is not
VDSO='(\[vdso\][^;]*|__vdso_[^;]*|__cvdso_[^;]*)'
LIBC_CLOCK='(__)?clock_gettime(64)?(@[^;]*)?'
IN_VDSO=";$LIBC_CLOCK;($VDSO|clock_gettime);|;$VDSO;"
expect_share "$F" "samples in the vDSO" 30 300 "$IN_VDSO"
expect_share "$F" "read_clock_loop above clock_gettime and the vDSO" 95 100 \
	";main;read_clock_loop;$LIBC_CLOCK;($VDSO|clock_gettime);" "$IN_VDSO"
expect_share "$F" "reach main" 95 300 ';main;'
finish "fx_clock: read_clock_loop is kept above clock_gettime and the vDSO"
