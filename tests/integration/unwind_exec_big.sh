#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A process emberd sampled and read, holding 1 GiB (fx_bigexec), execs fx_qsort on one
# CPU. Its exec unmaps the old image for a while with the new image's mm already in
# place, before the kernel reports the exec: samples land there (the test wants at
# least one, else it tested nothing). Those must not let the CPU remember the new mm as
# a process already reported (a per-CPU memo of the known map): fx_qsort's first sample
# after the exec reports it, its tables are loaded, and at least 95% of its samples
# reach main, as in unwind_exec. Before the fix the memo kept fx_qsort unreported on
# that CPU until another process was sampled there: its stacks stopped at the leaf (0% in
# 1 run of 2 to 4 here; in the others a kernel thread sampled on that CPU soon replaced
# the memo).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/unwind_lib.sh"
require_bpf
cpu=$(($(nproc) - 1))
start_emberd --hz 99 --interval 5s -v
# emberd's threads elsewhere: sampled on that CPU, they would replace its memo
[ "$cpu" -eq 0 ] || taskset -a -c -p "0-$((cpu - 1))" "$EMBERD_PID" >/dev/null ||
	fail "cannot keep emberd off CPU $cpu"
"$FX/fx_bigexec" "$cpu" 1024 "$T/go" "$FX/fx_qsort" 8 >"$T/exec.out" 2>&1 &
WL=$!
PIDS+=("$WL")
exec_when_loaded fx_bigexec
# samples in the exec after the old image's unmapping began (the new mm in place)
in_exec=$(awk '/(^|;)(exec_mmap|__mmput|exit_mmap)(;| )/ { n += $NF } END { print n + 0 }' \
	"$T/exec.folded")
echo "samples in the exec while the old image was unmapped: $in_exec"
[ "$in_exec" -ge 1 ] || fail "no sample in the exec's unmapping of 1 GiB: the test tested nothing"
# fx_qsort's samples: not fx_bigexec's, nor the exec's
grep -vE '(^|;)(spin_before_exec|execve|__libc_start_call_main;main)( |$)|(^|;)execve;' \
	"$T/exec.folded" >"$T/qsort.folded" || true
expect_share "$T/qsort.folded" "fx_qsort after the exec reaches main through sort_rounds" 95 300 \
	';main;sort_rounds;' ';(sort_rounds|cmp_records|msort_with_tmp[.a-z0-9]*|qsort_r);'
finish "$in_exec samples in the exec's unmapping; fx_qsort reported again after it"
