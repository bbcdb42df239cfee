#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The shared stack walk's host build (bpf/uwalk.bpf.h through lib/symbols/uwalk.c) against
# libdw, the independent reader, on the unwinding fixtures' live stacks. uwalk_replay stops a
# fixture with ptrace until 400 stops are in user code, walks the stopped thread from its
# registers and a copy of its stack with uwalk() and the tables unwtab.c compiles from the
# files it maps (the vDSO's from its image in the process), unwinds the same stopped thread
# with libdw, and compares the two frame by frame (raw return addresses). fx_plt_lazy and
# fx_plt_ibt run too briefly to be stopped at random: they are single-stepped instead, every
# instruction of their own (main, the PLT stubs) a sample.
#
# The bands. Both unwinders read the same registers, the same memory and the same .eh_frame;
# ember's rows are that CFI compiled. Where libdw completes a stack (reaches main), ember can
# differ only where a rule compiled lost something (EMBER_CFA_FP rows) or where neither has
# CFI and each falls back its own way; measured: no difference at all, on every fixture. 95%
# allows a rare instruction with such a rule to be caught a few times in 400 stops, and
# still fails a systematic error in any path a fixture spends 5% of its time on. The share
# of each fixture's hot path (the handler, the trampoline, the vDSO) is taken over its stops
# in user code, the fixture's own at any load (check_key says why).
#
# Where the two were seen to disagree, libdw was the one wrong. In the fx_plt_* programs'
# _init and _fini (crti/crtn code without FDEs, which unwtab's crt rules cover) it finds no
# CFI and stops at _init, or skips _dl_fini above _fini. With the leaf in _dl_fixup's
# prologue, before it saves rbx (about 1 stop in 300), it ends at the trampoline, where uwalk
# follows rbx to resolve_loop and main as in every other stop there: elfutils' x86-64 ABI
# rules (0.188, backends/x86_64_cfi.c) give "same value" to DWARF register 0, rax, where rbx
# is 3, so to libdw a caller's rbx is unknown until a callee's CFI saves it, and the
# trampoline's CFA is rbx-based. None reaches main in libdw's stack, so none counts against
# the bands.
#
# No root needed: a parent may trace its own child (Yama's ptrace_scope 0 or 1). 77 only
# where ptrace is refused outright.
. "$(dirname "$0")/lib.sh"

REPLAY=$EMBER_BUILD/tests/tools/uwalk_replay
[ -x "$REPLAY" ] || fail "uwalk_replay not built at $REPLAY"
# stops per fixture; a fixture outlives them by far (each runs for 60 s of CPU time) and is
# killed then
N=400
RUN=60

# replay NAME ARGS...: runs uwalk_replay ARGS into $T/NAME.out and shows it
replay() {
	local name=$1 rc=0
	shift
	"$REPLAY" "$@" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
	# 77: ptrace itself refused (Yama's ptrace_scope 3, a seccomp policy): nothing to compare
	[ "$rc" -ne 77 ] || skip "ptrace refused: $(tail -1 "$T/$name.err")"
	[ "$rc" -eq 0 ] || fail "uwalk_replay on $name exited $rc: $(tail -3 "$T/$name.err")"
	sed "s/^/  $name: /" "$T/$name.out"
}
# val NAME KEY [WORD]: the number on NAME's output line KEY (for "key KEY ...", after WORD)
val() {
	if [ $# -eq 2 ]; then
		awk -v k="$2" '$1 == k { print $2 }' "$T/$1.out"
	else
		awk -v k="$2" -v w="$3" '$1 == "key" && $2 == k {
			for (i = 3; i < NF; i++) if ($i == w) print $(i + 1) }' "$T/$1.out"
	fi
}

FAILED=()
# expect NAME WHAT PART WHOLE MIN_PERCENT MIN_WHOLE: PART is at least MIN_PERCENT of WHOLE,
# and WHOLE at least MIN_WHOLE; prints the figure either way
expect() {
	local name=$1 what=$2 part=${3:-0} whole=${4:-0} min=$5 least=$6
	echo "$name: $what: $part of $whole, want >= $min% of >= $least"
	if [ "$whole" -lt "$least" ] || [ $((100 * part)) -lt $((min * whole)) ]; then
		FAILED+=("$name: $what: $part of $whole")
	fi
}

# check_sampled NAME: the bands every stopped fixture shares. Stops do not fail (the fixture
# outlives them): 90% of N in user code leaves room for one the kernel refuses without hiding
# a pattern (uwalk_replay takes N there, and those at system calls' exits besides).
check_sampled() {
	local n=$1 s
	s=$(val "$n" samples)
	expect "$n" "stops in user code" $((s - $(val "$n" syscall))) "$N" 90 1
	expect "$n" "libdw reaches main" "$(val "$n" libdw_main)" "$s" 95 $((N * 9 / 10))
	expect "$n" "ember equals libdw where libdw reaches main" \
		"$(val "$n" equal_where_libdw_main)" "$(val "$n" libdw_main)" 95 $((N * 8 / 10))
	expect "$n" "ember reaches main" "$(val "$n" ember_main)" "$s" 95 $((N * 9 / 10))
}

# check_key NAME KEY MIN_PERCENT [all]: at least MIN_PERCENT of the stops in user mode have a
# KEY frame (the fixture does what it says), and ember equals libdw on 95% of those with one
# where libdw reaches main.
# A stop lands where the thread last left user mode, on a busy host mostly where it was
# preempted: often at the exit of a system call reading a CPU clock, which updates the
# scheduler's accounting and so preempts the thread there once its slice is used up. That
# share (seen: 2% to 49% of fx_qsort's stops from one run to the next, 67% with a CPU hog)
# is the kernel's, the host's and its load's; the user code's shares are the fixture's own.
# "all": of every stop, system calls too (the vDSO's frames stay on the stack of its
# system-call fallback).
check_key() {
	local n=$1 k=$2 min=$3 ks all ksys=0 sys=0
	ks=$(val "$n" "$k" samples)
	all=$(val "$n" samples)
	if [ "${4:-}" != all ]; then
		ksys=$(val "$n" "$k" syscall)
		sys=$(val "$n" syscall)
	fi
	expect "$n" "stops with $k${4:+ (all)}" $((ks - ksys)) $((all - sys)) "$min" $((N * 9 / 10))
	expect "$n" "ember equals libdw with $k where libdw reaches main" \
		"$(val "$n" "$k" equal_where_libdw_main)" "$(val "$n" "$k" libdw_main)" 95 1
}

# no frame pointers: cmp_records under libc's qsort (10% and 13% of the user-mode stops seen,
# 10% of emberd's samples in unwind_qsort.sh; 3% is over 4 standard deviations below 10% at
# 400 user-mode stops)
replay qsort -n $N -i 5 -k cmp_records -- "$FX/fx_qsort" "$RUN"
check_sampled qsort
check_key qsort cmp_records 3
# a signal frame: handler_work runs 8 of each 10 ms of CPU time
replay signal -n $N -i 5 -k handler_work -- "$FX/fx_signal" "$RUN"
check_sampled signal
check_key signal handler_work 50
# ld.so's lazy-binding trampoline (an rbx-based CFA), as unwind_lazy_bind.sh runs it (seen:
# 73% to 98% of the user-mode stops)
replay lazy_bind -n $N -i 5 -k _dl_runtime_resolve -k _dl_fixup -- \
	env LD_BIND_NOT=1 "$FX/fx_lazy_bind" "$RUN"
check_sampled lazy_bind
check_key lazy_bind _dl_runtime_resolve 50
check_key lazy_bind _dl_fixup 5
# the vDSO: its table compiled from the image in the fixture's memory (unwind_clock.sh: 30%)
replay clock -n $N -i 5 -k '[vdso]' -- "$FX/fx_clock" "$RUN"
check_sampled clock
check_key clock '[vdso]' 30 all

# The PLT, single-stepped: the executable's every instruction, ld.so's and libc's every 37th
# once main was entered. A program runs nearly the same instructions each time, so the
# counts move little (a CPU hog added a few stops in the stubs); the floors are half of the
# least seen.
# check_stepped NAME PLT_MIN TRAMPOLINE_MIN
check_stepped() {
	local n=$1
	expect "$n" "ember equals libdw where libdw reaches main" \
		"$(val "$n" equal_where_libdw_main)" "$(val "$n" libdw_main)" 95 50
	expect "$n" "ember equals libdw in PLT stubs where libdw reaches main" \
		"$(val "$n" '[plt]' equal_where_libdw_main)" "$(val "$n" '[plt]' libdw_main)" 95 "$2"
	[ "$3" -eq 0 ] || expect "$n" "ember equals libdw under the trampoline where libdw reaches main" \
		"$(val "$n" _dl_runtime_resolve equal_where_libdw_main)" \
		"$(val "$n" _dl_runtime_resolve libdw_main)" 95 "$3"
}
# lazy binding (.plt stubs, -z lazy): its first strlen and puts go through the trampoline
# (seen: 10 to 13 stops in the stubs under main, 31 to 33 under the trampoline)
replay plt_lazy -s 37 -n 5000 -k '[plt]' -k _dl_runtime_resolve -- "$FX/fx_plt_lazy"
check_stepped plt_lazy 5 15
# -z now with IBT: .plt.sec stubs of two instructions, bound at start-up (seen: 4 to 7)
replay plt_ibt -s 37 -n 5000 -k '[plt]' -- "$FX/fx_plt_ibt"
check_stepped plt_ibt 2 0

[ "${#FAILED[@]}" -eq 0 ] || fail "$(IFS=';'; echo "${FAILED[*]}")"
pass "uwalk equals libdw on the fixtures' stopped stacks (no FP, signal, PLT, ld.so, vDSO)"
