#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A process tearing down its memory at exit (exit_group: exit_mmap runs once
# exit_mm has released the address space) has no user memory left to read: its
# samples there keep the interrupted instruction alone, in libc's _exit. They
# count as exiting (unwind end_exited), not as walks that failed (before, each
# was an end_unreadable), and show _exit under the kernel's teardown frames.
# fx_growth touches 512 MiB and exits, again until emberd has counted 5 such.
. "$(dirname "$0")/lib.sh"
require_bpf
[ -x "$FX/fx_growth" ] || fail "fixture fx_growth not built in $FX"

printf '[app "growth"]\nmatch.comm = fx_growth\n' >"$T/conf"
start_emberd --hz 99 --interval 1s --config "$T/conf"
wait_for intervals_at_least 1 || fail "emberd wrote no status in 30 s"
runs=0
until [ "$(status_total unwind end_exited)" -ge 5 ] 2>/dev/null; do
	[ "$runs" -lt 100 ] ||
		fail "$runs runs of fx_growth, $(status_total unwind end_exited) samples counted exiting (5 wanted)"
	"$FX/fx_growth" >/dev/null || fail "fx_growth failed"
	runs=$((runs + 1))
done
exited=$(status_total unwind end_exited) unreadable=$(status_total unwind end_unreadable)
kill "$EMBERD_PID"
wait_emberd

"$EMBERCTL" --data-dir "$T/data" folded --app growth -o "$T/growth.folded" 2>"$T/folded.err" ||
	fail "emberctl folded --app growth failed: $(cat "$T/folded.err")"
# samples in the exit's teardown (not an exec's of the forked shell's memory, which has the
# old image's registers): their user part, before the kernel's entry, by count
awk '/;do_exit;(.*;)?exit_mmap(;| )/ { n = $NF; u = $0; sub(/;entry_SYSCALL_64.*/, "", u); c[u] += n }
	END { for (u in c) print c[u], u }' "$T/growth.folded" | sort -nr >"$T/teardown.txt"
echo "$runs runs; status: end_exited $exited, end_unreadable $unreadable; teardown samples by user stack:"
cat "$T/teardown.txt"
[ -s "$T/teardown.txt" ] || fail "no fx_growth sample in exit_mmap"
bad=$(awk '$2 != "_exit" { n += $1 } END { print n + 0 }' "$T/teardown.txt")
[ "$bad" -eq 0 ] || fail "$bad teardown samples with a user stack other than _exit alone"
[ "${unreadable:-0}" -lt "$exited" ] ||
	fail "end_unreadable $unreadable is not below end_exited $exited: exits still counted unreadable?"
pass "$exited samples of exiting processes counted as such; teardown samples are _exit alone"
