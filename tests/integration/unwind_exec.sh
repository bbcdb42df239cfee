#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A process emberd sampled and read (a shell spinning) execs fx_qsort (as
# distributions build: no frame pointers). Its first sample after the exec must
# report it again, whichever CPU takes it, so that the new program's tables are
# loaded and its frames named: at least 95% of fx_qsort's samples reach main, as
# in unwind_qsort.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/unwind_lib.sh"
require_bpf

# the shell spins until emberd read it (its first sample), then execs
start_emberd --hz 99 --interval 5s -v
bash -c 'while [ ! -e "$1" ]; do :; done; exec "$2" 8' spin "$T/go" "$FX/fx_qsort" \
	>"$T/exec.out" 2>&1 &
WL=$!
PIDS+=("$WL")
scanned() { grep -q "unwinder: pid $WL: .* mappings with a table" "$T/emberd.log"; }
wait_for scanned || fail "emberd never read the shell's mappings"
touch "$T/go"
wait "$WL" || fail "fx_qsort exited with status $?: $(tail -3 "$T/exec.out")"
kill -TERM "$EMBERD_PID"
wait_emberd
"$EMBERCTL" --data-dir "$T/data" folded --pid "$WL" -o "$T/exec.folded" 2>"$T/folded.err" ||
	fail "emberctl folded failed: $(cat "$T/folded.err")"
expect_share "$T/exec.folded" "fx_qsort after the exec reaches main through sort_rounds" 95 300 \
	';main;sort_rounds;' ';(sort_rounds|cmp_records|main);'
finish "a sampled process that execs is read again: the new program's stacks are whole"
