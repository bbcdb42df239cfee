#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Short-lived processes are named: a parent execs 30 children one after another,
# each burning ~150 ms in child_burn and exiting long before the next drain.
# At least 90% of the children's samples must carry child_burn.
. "$(dirname "$0")/lib.sh"
require_bpf
require_go

# each child burns 150 ms of its own CPU time: ~450 samples, however loaded the host
start_emberd --hz 99 --interval 10s
"$FX/fx_short_lived" 30 || fail "fixture failed"
kill "$EMBERD_PID"	# SIGTERM: emberd stores the last interval, then exits 0
wait_emberd
# The unwinder forgets processes as they exit: the 30 children (each a fork, then an
# exec) are gone, so emberd's last status (written on its way out) holds fewer
# processes than that: those sampled during the test and still alive.
live=$(ls /proc | grep -c '^[0-9][0-9]*$')
loaded=$(awk '$1 == "cache" && $2 == "unwind_processes" { print $3 }' "$T/run/status")
echo "unwind processes at the end: ${loaded:-?} (live processes on the host: $live)"
[ -n "$loaded" ] && [ "$loaded" -lt 30 ] && [ "$loaded" -le "$live" ] ||
	fail "the unwinder holds ${loaded:-?} processes after 30 short-lived ones exited"

"$EMBERCTL" --data-dir "$T/data" export --type cpu -o "$T/cpu.pb.gz" || fail "export failed"
# The children's samples: comm fx_short_lived, minus the parent's (it only waits).
pprof_top "$T/cpu.pb.gz" -sample_index=samples -tagfocus=comm=fx_short_lived >"$T/top.txt"
total=$(shown_of "$T/top.txt")
named=$(awk '$6 == "child_burn" { print $4 }' "$T/top.txt")
named=${named:-0}
echo "children: $named of $total samples named child_burn"
[ "${total:-0}" -ge 200 ] || fail "too few samples of the children: ${total:-0} (expected ~450)"
awk -v n="$named" -v t="$total" 'BEGIN { exit !(n / t >= 0.9) }' || {
	go tool pprof -traces -symbolize=none -sample_index=samples -tagfocus=comm=fx_short_lived \
		"$T/cpu.pb.gz" 2>/dev/null | awk 'BEGIN { RS = "-----------[+]-+" } !/child_burn/' |
		head -60 || true	# head closing the pipe must not end the script before fail
	fail "only $named of $total samples of short-lived children named child_burn"
}
pass "$named of $total samples of 30 short-lived children named child_burn"
