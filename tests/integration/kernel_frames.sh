#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A syscall-heavy fixture (read() of /dev/zero from syscall_loop) must show
# kernel frames stacked on top of its user frames, in the same samples.
. "$(dirname "$0")/lib.sh"
require_bpf
require_go

start_emberd --hz 99 --interval 2s --duration 8s
"$FX/fx_syscall" 6 &
WL=$!
PIDS+=("$WL")
wait "$WL"
wait_emberd

"$EMBERCTL" --data-dir "$T/data" export --type cpu --pid "$WL" -o "$T/cpu.pb.gz" ||
	fail "export failed"
go tool pprof -traces -symbolize=none -sample_index=samples "$T/cpu.pb.gz" >"$T/traces.txt" \
	2>"$T/pprof.err" || fail "go tool pprof rejected the profile: $(cat "$T/pprof.err")"

# -traces prints each stack leaf first, one frame per line, stacks separated by dashes.
awk '
	/^-+/ { if (k && u) both += n; k = 0; u = 0; n = 0; next }
	NF >= 2 && $1 ~ /^[0-9]+$/ { n = $1; $1 = "" }
	/(ksys_read|vfs_read|read_zero|__x64_sys_read|do_syscall_64|entry_SYSCALL)/ { if (!u) k = 1 }
	/syscall_loop/ { if (k) u = 1 }
	END { if (k && u) both += n; print both + 0 }
' "$T/traces.txt" >"$T/both"
both=$(cat "$T/both")
pprof_top "$T/cpu.pb.gz" -sample_index=samples >"$T/top.txt"
total=$(total_of "$T/top.txt")
echo "samples with kernel frames above syscall_loop: $both of $total"
[ "${both:-0}" -gt 0 ] || { head -60 "$T/traces.txt"; fail "no sample has kernel frames on top of syscall_loop"; }
awk -v b="$both" -v t="$total" 'BEGIN { exit !(t > 0 && b / t >= 0.5) }' ||
	fail "only $both of $total samples have kernel frames over syscall_loop (expected most)"
pass "$both of $total samples show kernel frames over syscall_loop"
