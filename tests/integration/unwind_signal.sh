#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fx_signal (no frame pointers) spends most of its time in a SIGALRM handler,
# handler_work, interrupting main_loop. The handler's samples must reach main
# through the signal frame: main;main_loop;[what the signal interrupted, e.g.
# clock_gettime;]<__restore_rt>;on_alarm;handler_work.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/unwind_lib.sh"
require_bpf

profile_fixture signal "$FX/fx_signal" 12
F=$T/signal.folded
expect_share "$F" "handler samples reach main through the signal frame" 95 200 \
	';main;main_loop;([^;]+;)+on_alarm;handler_work;' ';handler_work;'
expect_share "$F" "samples in the handler" 50 300 ';handler_work;'
finish "fx_signal: a handler's stacks continue past the signal frame"
