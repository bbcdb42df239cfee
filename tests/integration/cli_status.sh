#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# emberctl status over hand-written status files (no BPF): the numbers of the
# file in both formats (Prometheus checked by promcheck), and each state the
# daemon can be in: running, stale, stopped, gone, pid reused, no file, bad
# file, too big; options, environment and a missing history.
set -euo pipefail
. "$(dirname "$0")/fail_trap.sh"
: "${EMBER_BUILD:?EMBER_BUILD must point at the build directory}"
CTL=$EMBER_BUILD/cli/emberctl
MK=$EMBER_BUILD/tests/tools/mkhistory
PROMCHECK=$EMBER_BUILD/tests/tools/promcheck
T=$(mktemp -d /tmp/ember-cli-status.XXXXXX)
FAKE=
cleanup() { [ -n "$FAKE" ] && kill "$FAKE" 2>/dev/null; rm -rf "$T"; }
at_exit cleanup
fail() { FAIL_SAID=1; echo "FAIL: $*"; exit 1; }
for b in "$CTL" "$MK" "$PROMCHECK"; do [ -x "$b" ] || fail "$b is not built"; done

"$MK" "$T/data" >/dev/null || fail "mkhistory"
# a live process whose comm is "emberd", standing in for the daemon
mkdir -p "$T/bin" "$T/run"
cp "$(command -v sleep)" "$T/bin/emberd"
"$T/bin/emberd" 120 &
FAKE=$!

# now: the time at each call, not at the script's start: "running" and "stale" are ages,
# and on a loaded host the lines between two checks can take seconds.
now() { date +%s%N; }
# write_status PID STATE UPDATED_NS: a status file with known numbers
write_status() {
	cat >"$T/run/status" <<EOF
ember-status 1
version 0.1.0
state $2
pid $1
start_ns 1795300000123456789
updated_ns $3
hz 99
interval_ns 10000000000
intervals 60
processes_tracked 17
processes_seen 123
processes_unread 45
processes_at_exit 41
processes_late 2
samples 98 5940
stacks 12 700
processes 3 180
profiles 2 120
apps 2
bpf_samples 99 5941
history_bytes 135968
collector.configured 1
collector.url https://profiles.example:4040/
collector.outage 0
collector.sent 100
collector.rejected 1
collector.expired 0
collector.retries 4
collector.pending 9
cpu_user_ns 40000000
cpu_system_ns 91500000
memory.limit 67108864
memory.rss 19771392
memory.rss_peak 28196864
memory.bpf_map_bytes 8956488
memory.over 0
memory.shrink_events 2
memory.shrink_runs 5
memory.last_shrink_ns 1795300055000000000
memory.last_freed 1048576
memory.freed_total 3145728
drop stack_map_full 1 7
drop counts_map_full 0 2
skip idle 5 500
cache binaries 45 326420 25165824 3
cache processes 17 0 0 0
bpf_map counts0 1024 115792
bpf_map cpu_bpf.rodata 1 8192
EOF
}
text() { "$CTL" --data-dir "$T/data" status --runtime-dir "$T/run" "$@"; }
prom() { text --format prometheus >"$T/prom" && "$PROMCHECK" -m "$T/prom" >"$T/pc" 2>&1 ||
	fail "not Prometheus text: $(cat "$T/pc")"; }
value() { awk -v n="$1" '$1 == n { print $2 }' "$T/prom"; }
expect() { # expect NAME{LABELS} VALUE
	[ "$(value "$1")" = "$2" ] || fail "$1 is '$(value "$1")', want $2"
}

# running: every number of the file, in both formats
write_status "$FAKE" running "$(now)"
text >"$T/out" || fail "status failed"
grep -q "^emberd: *running, pid $FAKE, version 0.1.0" "$T/out" || fail "not running: $(head -1 "$T/out")"
grep -q "99 Hz per CPU, one profile per app every 10s; 60 intervals" "$T/out" || fail "sampling line"
grep -q "last interval 98 samples in 12 stacks of 3 processes, 2 profiles of 2 apps" "$T/out" ||
	fail "last interval line"
grep -q "last interval: stack_map_full 1$" "$T/out" || fail "interval losses"
grep -q "since start: stack_map_full 7, counts_map_full 2$" "$T/out" || fail "total losses"
grep -q "45 binaries, 318.8 KiB of 24.0 MiB; FULL 3 times" "$T/out" || fail "binaries cache line"
grep -q "RSS 18.9 MiB (peak 26.9 MiB) of memory_limit 64.0 MiB$" "$T/out" || fail "memory line"
grep -q "8.5 MiB in 2 maps" "$T/out" || fail "bpf maps line"
grep -q "17 tracked, 123 seen since the start (45 gone before emberd read them: 41 named from" \
	"$T/out" || fail "processes line"
grep -q "2 read late: their first sample's report was missed" "$T/out" || fail "read late line"
grep -q "shrinks  *2 times over the limit (caches shrunk in 5 intervals)" "$T/out" || fail "shrinks"
grep -q "sent 100, rejected 1, expired 0, retries 4; 9 pending$" "$T/out" || fail "pushes line"
grep -q "^history: .*history.db" "$T/out" || fail "no history section"
prom
expect ember_up 1
expect 'ember_info{version="0.1.0"}' 1
expect ember_start_time_seconds 1795300000.123
expect ember_sampling_frequency_hertz 99
expect ember_interval_seconds 10
expect ember_samples_total 5940
expect ember_processes_unread_total 45
expect ember_processes_at_exit_total 41
expect ember_processes_late_total 2
expect ember_last_interval_samples 98
expect 'ember_bpf_drops_total{cause="stack_map_full"}' 7
expect 'ember_last_interval_bpf_drops{cause="stack_map_full"}' 1
expect 'ember_bpf_drops_total{cause="user_stack_unreadable"}' 0
expect 'ember_samples_skipped_total{reason="idle"}' 500
expect 'ember_cache_bytes{cache="binaries"}' 326420
expect 'ember_cache_limit_bytes{cache="binaries"}' 25165824
expect 'ember_cache_full_total{cache="binaries"}' 3
expect 'ember_cache_entries{cache="processes"}' 17
expect 'ember_process_cpu_seconds_total{mode="user"}' 0.04
expect 'ember_process_cpu_seconds_total{mode="system"}' 0.0915
expect ember_process_resident_memory_bytes 19771392
expect ember_bpf_map_memory_bytes 8956488
expect 'ember_bpf_map_bytes{map="cpu_bpf.rodata"}' 8192
expect 'ember_bpf_map_max_entries{map="counts0"}' 1024
expect ember_memory_shrinks_total 2
expect ember_memory_shrink_freed_bytes_total 3145728
expect ember_memory_last_shrink_timestamp_seconds 1795300055.000
expect 'ember_collector_pushes_total{result="sent"}' 100
expect ember_collector_retries_total 4
expect ember_history_readable 1
[ "$(value ember_history_profiles)" -gt 0 ] || fail "no history profiles"

# the environment names the runtime dir; --runtime-dir wins over it
write_status "$FAKE" running "$(now)"
EMBER_RUNTIME_DIR=$T/run "$CTL" --data-dir "$T/data" status | grep -q "running, pid $FAKE" ||
	fail "EMBER_RUNTIME_DIR not used"
EMBER_RUNTIME_DIR=$T/nowhere text | grep -q "running, pid $FAKE" || fail "--runtime-dir does not win"

# stale: not rewritten for more than 3 intervals (10 s each)
write_status "$FAKE" running $(($(now) - 31000000000))
text | grep -q "STALE: pid $FAKE is alive but last wrote its status" || fail "not stale"
prom
expect ember_up 0
expect ember_sampling_frequency_hertz 99	# the figures are still there to look at
write_status "$FAKE" running $(($(now) - 25000000000))
text | grep -q "running, pid $FAKE" || fail "stale too early (25 s < 3 intervals)"

# stopped; gone; pid reused by another program; no file
write_status "$FAKE" stopped "$(now)"
text | grep -q "not running (pid $FAKE stopped at" || fail "not 'stopped'"
prom
expect ember_up 0
[ -z "$(value ember_sampling_frequency_hertz)" ] || fail "a stopped daemon's figures are exported"
sh -c 'exit 0' &
gone=$!
wait "$gone"
write_status "$gone" running "$(now)"
text | grep -q "not running (pid $gone is gone" || fail "a dead pid is not gone"
write_status $$ running "$(now)"
text | grep -q "not running (pid $$ is gone" || fail "a pid reused by bash is taken for emberd"
rm "$T/run/status"
text | grep -q "^emberd: *not running (no status file $T/run/status)" || fail "no file"
prom
expect ember_up 0

# bad files: not a status file, another version, too big, bad lines (noted on stderr)
printf 'garbage\n' >"$T/run/status"
text | grep -q "unknown: cannot read $T/run/status: not a status file" || fail "garbage"
prom
expect ember_up 0
printf 'ember-status 9\n' >"$T/run/status"
text | grep -q "written by another version of emberd" || fail "version 9"
head -c 70000 /dev/zero | tr '\0' 'x' >"$T/run/status"
text | grep -q "cannot read .*: too big" || fail "a 70 kB file is not refused"
write_status "$FAKE" running "$(now)"
printf 'hz -1\nsamples x y\n' >>"$T/run/status"
text 2>"$T/err" | grep -q "running, pid $FAKE" || fail "bad lines spoil the file"
grep -q "2 bad lines ignored (line 49: bad value for 'hz')" "$T/err" || fail "bad lines: $(cat "$T/err")"
mkdir -p "$T/link" && ln -sf /etc/passwd "$T/link/status"
"$CTL" --data-dir "$T/data" status --runtime-dir "$T/link" | grep -q "unknown: cannot read" ||
	fail "a symlinked status file is followed"

# usage and a missing history
rc=0; text --format json >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "--format json: exit $rc, want 2"
rc=0; "$CTL" --data-dir "$T/none" status --runtime-dir "$T/run" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "text without a history: exit $rc, want 1"
"$CTL" --data-dir "$T/none" status --runtime-dir "$T/run" --format prometheus >"$T/prom" 2>/dev/null ||
	fail "prometheus without a history must still succeed"
"$PROMCHECK" -m "$T/prom" >/dev/null || fail "not Prometheus text without a history"
expect ember_history_readable 0
expect ember_up 1
echo "PASS: emberctl status: states, numbers and both formats"
