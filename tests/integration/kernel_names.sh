#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Kernel frames are named by the kernel itself (bpf/ksym.bpf.c): for one text
# symbol in 37 of /proc/kallsyms, the name given for an address inside it must
# be one listed at its address, and an address outside kernel text none.
. "$(dirname "$0")/lib.sh"
require_bpf
KC=$EMBER_BUILD/tests/tools/ksymcheck
[ -x "$KC" ] || fail "ksymcheck not built at $KC"
rc=0
"$KC" 37 >"$T/out" 2>&1 || rc=$?
cat "$T/out"
[ "$rc" -ne 77 ] || skip "$(tail -1 "$T/out")"
[ "$rc" -eq 0 ] || fail "the BPF namer disagrees with /proc/kallsyms"
checked=$(awk '/kernel text symbols checked/ {print $1}' "$T/out")
[ "${checked:-0}" -ge 1000 ] || fail "only ${checked:-0} symbols checked, expected thousands"
pass "$checked kernel symbols named as /proc/kallsyms lists them"
