#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fx_qsort, built as distributions build (-O2, no frame pointers), spends its time in
# main -> sort_rounds -> qsort (libc) -> cmp_records. At least 95% of its samples must
# reach main through sort_rounds, and 95% of those in cmp_records must show it under
# qsort under sort_rounds under main. A frame-pointer walk gets 0%.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/unwind_lib.sh"
require_bpf

profile_fixture qsort "$FX/fx_qsort" 12
F=$T/qsort.folded
expect_share "$F" "reach main" 95 300 ';main;'
expect_share "$F" "reach main through sort_rounds" 95 300 ';main;sort_rounds;'
expect_share "$F" "cmp_records under qsort, sort_rounds, main" 95 40 \
	';main;sort_rounds;[^;]*qsort[^;]*;([^;]*;)*cmp_records;' ';cmp_records;'
# the fixture does what it says: cmp_records is a good part of the work (over half)
expect_share "$F" "samples in cmp_records" 30 300 ';cmp_records;'
finish "fx_qsort: stacks complete through libc's qsort"
