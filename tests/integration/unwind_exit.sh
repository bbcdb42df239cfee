#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A process tearing down its memory at exit (exit_group: exit_mmap runs once
# exit_mm has released the address space) has no user memory left to read. Its
# last thread's user stack is read at sched_process_exit, before exit_mm, and its
# samples in the teardown take that stack (unwind exit_stacks): under the kernel's
# teardown frames, _start;...;main's caller;exit;...;_exit. Before, they kept the
# interrupted instruction alone (_exit; before that, counted end_unreadable).
# fx_growth touches 512 MiB and exits, again until emberd has counted 5 such. A
# process exiting with its tables not loaded yet keeps _exit alone (end_exited).
. "$(dirname "$0")/lib.sh"
require_bpf
[ -x "$FX/fx_growth" ] || fail "fixture fx_growth not built in $FX"

printf '[app "growth"]\nmatch.comm = fx_growth\n' >"$T/conf"
start_emberd --hz 99 --interval 1s --config "$T/conf"
wait_for intervals_at_least 1 || fail "emberd wrote no status in 30 s"
runs=0
until [ "$(status_total unwind exit_stacks)" -ge 5 ] 2>/dev/null; do
	[ "$runs" -lt 100 ] ||
		fail "$runs runs of fx_growth, $(status_total unwind exit_stacks) samples with the stack read at exit (5 wanted)"
	"$FX/fx_growth" >/dev/null || fail "fx_growth failed"
	runs=$((runs + 1))
done
read_at_exit=$(status_total unwind exit_stacks) exited=$(status_total unwind end_exited)
unreadable=$(status_total unwind end_unreadable)
kill "$EMBERD_PID"
wait_emberd

"$EMBERCTL" --data-dir "$T/data" folded --app growth -o "$T/growth.folded" 2>"$T/folded.err" ||
	fail "emberctl folded --app growth failed: $(cat "$T/folded.err")"
# samples in the exit's teardown (not an exec's of the forked shell's memory, which has the
# old image's registers): their user part, before the kernel's entry, by count (a leaf
# alone under its root frame "[incomplete: memory released at exit]" counted as _exit)
awk '/;do_exit;(.*;)?exit_mmap(;| )/ { n = $NF; u = $0; sub(/;entry_SYSCALL_64.*/, "", u)
	sub(/^\[incomplete: memory released at exit\];/, "", u); c[u] += n }
	END { for (u in c) print c[u], u }' "$T/growth.folded" | sort -nr >"$T/teardown.txt"
echo "$runs runs; status: exit_stacks $read_at_exit, end_exited $exited, end_unreadable $unreadable"
echo "teardown samples by user stack:"
cat "$T/teardown.txt"
[ -s "$T/teardown.txt" ] || fail "no fx_growth sample in exit_mmap"
want="_start;__libc_start_main;__libc_start_call_main;exit;__run_exit_handlers;_exit"
read all whole < <(awk -v w="$want" '{ a += $1 } $2 == w { b += $1 } END { print a + 0, b + 0 }' \
	"$T/teardown.txt")
bad=$(awk -v w="$want" '$2 != w && $2 != "_exit" { n += $1 } END { print n + 0 }' "$T/teardown.txt")
[ "$bad" -eq 0 ] || fail "$bad teardown samples with a user stack other than the exit's or _exit alone"
[ "$((whole * 100))" -ge "$((all * 90))" ] ||
	fail "$whole of $all teardown samples have the stack of the exit, want >= 90%"
[ "${unreadable:-0}" -lt "$read_at_exit" ] ||
	fail "end_unreadable $unreadable is not below exit_stacks $read_at_exit: exits counted unreadable?"
pass "$whole of $all teardown samples under the exit's stack ($read_at_exit read at exit, $exited leaf alone)"
