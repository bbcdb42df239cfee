#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Processes gone before emberd read them, with more executable mappings than an
# exit's record held before (24; cmake maps 50 with its libraries): named and
# walked from the mappings their exits sent. 100 runs of `cmake -E true` (tens of
# ms each, mostly ld.so and the libraries' constructors): outside the exit's
# teardown (after exit_mm nothing is left to read or name for a process first
# sampled there) and the exec (the old image's registers), at most 5 % of the
# stacks have a bare address, and 90 % are complete (to _start; in ld.so, to
# its start, _start where libc6-dbg names it, or to the _dl_start_user that runs
# the constructors). Before: 99 % bare, none complete. The callers of ld.so's
# lazy-binding trampoline (its CFA from rbx) and page faults on a library's
# first instruction (its _init, crti.o's, which has no CFI) were cut until the
# walk followed rbx and _init got crti's rules: 83-100 % complete then (83 % in
# a fresh machine's CI), 98-100 % now. What stays cut: assembly without CFI
# (nettle's _nettle_cpuid, called by an IFUNC resolver), 1 sample in ~100.)
. "$(dirname "$0")/lib.sh"
require_bpf
CMAKE=$(command -v cmake) || fail "cmake is not installed (scripts/install-deps.sh installs it)"
libs=$(ldd "$CMAKE" | grep -c '=> /')
[ "$libs" -gt 24 ] || fail "cmake links $libs libraries here: this test needs more than 24"

printf '[app "cmake"]\nmatch.comm = cmake\n' >"$T/conf"
start_emberd --hz 99 --interval 1s --config "$T/conf"
for _ in $(seq 1 100); do
	"$CMAKE" -E true || fail "cmake -E true failed"
done
kill "$EMBERD_PID"
wait_emberd

"$EMBERCTL" --data-dir "$T/data" folded --app cmake -o "$T/cmake.folded" 2>"$T/folded.err" ||
	fail "emberctl folded --app cmake failed: $(cat "$T/folded.err")"
read -r all bare complete < <(awk '/;(do_exit|__x64_sys_execve);/ { next }
	{ n = $NF; t += n; if ($0 ~ /(^|;)0x[0-9a-f]+(;| )/) b += n
	  if ($0 ~ /^(_start|_dl_start_user|ld-linux[^;]*\+0x[0-9a-f]+);/) c += n }
	END { print t + 0, b + 0, c + 0 }' "$T/cmake.folded")
echo "cmake ($libs libraries): $all samples outside exit and exec, $bare with a bare address, $complete complete"
[ "$all" -ge 20 ] || fail "only $all samples of cmake outside its exit and exec (20 wanted)"
[ $((bare * 100)) -le $((all * 5)) ] || {
	grep -E '(^|;)0x[0-9a-f]+(;| )' "$T/cmake.folded" | grep -vE ';(do_exit|__x64_sys_execve);' | head
	fail "$bare of $all samples with a bare address (5 % at most)"
}
[ $((complete * 100)) -ge $((all * 90)) ] || fail "$complete of $all stacks complete (90 % wanted)"
pass "$all samples of 100 short cmake runs named, $complete complete"
