#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fx_mixed (frame pointers) calls into libfx_nofp.so (no frame pointers), which calls
# back into it, on its main thread and on a second thread. At least 95% of the samples
# must be complete: main (or start_thread -> fp_thread) -> fp_driver, then
# nofp_apply -> fp_callback or nofp_work, every frame in place.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/unwind_lib.sh"
require_bpf

profile_fixture mixed "$FX/fx_mixed" 12
F=$T/mixed.folded
ROOT=';(main|start_thread;fp_thread);fp_driver;'
expect_share "$F" "complete to main or start_thread through fp_driver" 95 300 "$ROOT"
expect_share "$F" "fp_callback called back from nofp_apply" 95 100 \
	"${ROOT}nofp_apply;fp_callback;" ';fp_callback;'
expect_share "$F" "nofp_work under fp_driver" 95 100 "${ROOT}nofp_work;" ';nofp_work;'
expect_share "$F" "samples on the second thread" 30 300 ';start_thread;fp_thread;'
finish "fx_mixed: complete stacks across code with and without frame pointers"
