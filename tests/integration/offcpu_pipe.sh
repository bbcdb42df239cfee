#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Known answer for off-CPU time (bpf/offcpu.bpf.c): fx_offcpu's pipe_worker computes 2 ms,
# then blocks in wait_input's read() for pipe_feeder's next byte, sent 8 ms after it asked on average
# (drawn exponentially, so that its cycle does not beat against 99 Hz sampling)
# (80% off the CPU on an idle machine). Its offcpu profile, read with go tool pprof: >= 90% of its off-CPU time in
# wait_input, and of its waits (not in the run queue) >= 80% an interruptible wait; its off-CPU and on-CPU (cpu profile) shares of
# its wall time within 10 points of what the thread measured itself. On a shared machine
# the worker is also preempted while it computes: that run-queue delay, in compute_chunk,
# is real off-CPU time outside the read and is left out of the 90% (and printed).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/offcpu_lib.sh"
require_bpf
require_go

offcpu_run pipe
wall=$(fx_sum pipe_worker 2)
cpu=$(fx_sum pipe_worker 3)
[ "$wall" -gt 0 ] || fail "fx_offcpu did not report pipe_worker's times: $(cat "$T/fx.out")"
off=$(ns_of "$T/off.pb.gz" offcpu -tagfocus=comm=pipe_worker)
read_off=$(ns_of "$T/off.pb.gz" offcpu -tagfocus=comm=pipe_worker -focus=wait_input)
waiting=$(ns_of "$T/off.pb.gz" offcpu -tagfocus=comm=pipe_worker -focus='off-CPU: wait')
preempted=$(ns_of "$T/off.pb.gz" offcpu -tagfocus=comm=pipe_worker -focus=compute_chunk)
on=$(ns_of "$T/cpu.pb.gz" cpu -tagfocus=comm=pipe_worker)
echo "pipe_worker: wall $wall ns, cpu $cpu ns (itself); profiles: off-CPU $off ns" \
	"(wait_input $read_off, wait $waiting, preempted in compute_chunk $preempted)," \
	"on-CPU $on ns"
[ "$off" -gt 0 ] || fail "no off-CPU time for pipe_worker"
blocked=$((off - preempted))
[ "$(pct "$read_off" "$blocked")" -ge 90 ] ||
	fail "wait_input holds $(pct "$read_off" "$blocked")% of pipe_worker's off-CPU time" \
		"(besides its preemptions in compute_chunk), want >= 90%"
runq=$(ns_of "$T/off.pb.gz" offcpu -tagfocus=comm=pipe_worker -focus='off-CPU: run queue')
[ "$(pct "$waiting" $((off - runq)))" -ge 80 ] ||
	fail "the pipe wait is $(pct "$waiting" $((off - runq)))% of pipe_worker's waits, want >= 80%"
want_off=$(pct $((wall - cpu)) "$wall")
within "$(pct "$off" "$wall")" "$want_off" 10 ||
	fail "off-CPU share $(pct "$off" "$wall")%, want ${want_off}% +- 10 points"
want_on=$(pct "$cpu" "$wall")
within "$(pct "$on" "$wall")" "$want_on" 10 ||
	fail "on-CPU share $(pct "$on" "$wall")%, want ${want_on}% +- 10 points"
pass "wait_input holds $(pct "$read_off" "$blocked")% of pipe_worker's off-CPU time" \
	"($(pct "$preempted" "$off")% preempted in compute_chunk);" \
	"off $(pct "$off" "$wall")% (want $want_off), on $(pct "$on" "$wall")% (want $want_on)"
