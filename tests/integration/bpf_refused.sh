#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A program the kernel refuses is said, never lost in silence: which program, why, the
# verifier's last words, and what still runs. EMBER_TEST_REFUSE=WHAT/PROGRAM makes the
# kernel's verifier refuse one program (loaded sleepable, which it refuses for perf_event
# and tracepoint programs). Growth or off-CPU refused: emberd samples on without them;
# the exit walk refused: the rest of the CPU sampler loads; the CPU sampler refused:
# emberd stops, non-zero; a capture's refused: emberctl capture says why.
. "$(dirname "$0")/lib.sh"
require_bpf

RUN=$T/run
printf '[daemon]\noffcpu = on\n' >"$T/on.conf"
# the verifier's own words, whatever this kernel's wording of the refusal (6.18: "Only
# fentry/fexit/fmod_ret, lsm, iter, uprobe, and struct_ops programs can be sleepable")
VERDICT="its last words: '[^']+'"
# said LOG PROGRAM AFTERMATH: the log names PROGRAM, the verifier's verdict, and AFTERMATH
said() {
	grep -q "the kernel's verifier refused $2 " "$1" || fail "$1 does not name $2"
	grep -qE "$VERDICT" "$1" || fail "$1 does not quote the verifier"
	grep -qF "$3" "$1" || fail "$1 does not say '$3'"
}

for r in "growth ember_growth_fault no memory_growth profiles" \
	"offcpu ember_offcpu_switch no offcpu profiles" \
	"cpu ember_cpu_exit samples of a process tearing down its memory keep their leaf alone"; do
	read -r what prog aftermath <<<"$r"
	EMBER_TEST_REFUSE="$what/$prog" start_emberd --config "$T/on.conf" --runtime-dir "$RUN"
	said "$T/emberd.log" "$prog" "$aftermath"
	kill -INT "$EMBERD_PID"
	wait_emberd
	pass "$prog refused: said, and emberd sampled without it"
done

rc=0
EMBER_TEST_REFUSE=cpu/ember_cpu_sample "$EMBERD" --data-dir "$T/data" --runtime-dir "$RUN" \
	--duration 5s >"$T/cpu.log" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "emberd exited 0 without its CPU sampler"
said "$T/cpu.log" ember_cpu_sample "without its CPU sampler emberd stops"
pass "ember_cpu_sample refused: said, and emberd stopped with status $rc"

EMBER_TEST_REFUSE=capture/ember_cpu_sample start_emberd --runtime-dir "$RUN"
rc=0
"$EMBERCTL" capture --runtime-dir "$RUN" --pid "$EMBERD_PID" --duration 1s -o "$T/c.pb.gz" \
	>"$T/capture.log" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "a capture whose program was refused succeeded"
said "$T/capture.log" ember_cpu_sample "cannot load the capture BPF programs"
[ ! -e "$T/c.pb.gz" ] || fail "a refused capture wrote $T/c.pb.gz"
grep -q "sampling" "$T/emberd.log" && pid_alive "$EMBERD_PID" ||
	fail "emberd did not go on after a refused capture"
pass "a capture's ember_cpu_sample refused: emberctl capture said so, emberd went on"
