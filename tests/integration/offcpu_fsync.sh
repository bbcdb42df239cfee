#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Known answer for the I/O reason: fx_offcpu's fs_writer writes 4 KiB and fsyncs it
# (sync_file) in a loop, on a disk-backed file system. Its off-CPU time, read with go tool
# pprof: >= 80% in sync_file, and of its waits (off the CPU, not in the run queue, which
# on a shared machine may be as long) >= 80% uninterruptible: I/O.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/offcpu_lib.sh"
require_bpf
require_go

# fsync on tmpfs returns at once: write where the disk is
dir=$T
[ "$(stat -f -c %T "$dir")" != tmpfs ] || dir=/var/tmp
[ "$(stat -f -c %T "$dir")" != tmpfs ] || skip "no disk-backed directory to fsync in"
offcpu_run fsync "$dir"
off=$(ns_of "$T/off.pb.gz" offcpu -tagfocus=comm=fs_writer)
in_sync=$(ns_of "$T/off.pb.gz" offcpu -tagfocus=comm=fs_writer -focus=sync_file)
io=$(ns_of "$T/off.pb.gz" offcpu -tagfocus=comm=fs_writer -focus='off-CPU: I/O')
runq=$(ns_of "$T/off.pb.gz" offcpu -tagfocus=comm=fs_writer -focus='off-CPU: run queue')
echo "fs_writer: off-CPU $off ns, in sync_file $in_sync, as I/O $io, run queue $runq"
[ "$off" -gt 0 ] || fail "no off-CPU time for fs_writer"
[ "$(pct "$in_sync" "$off")" -ge 80 ] ||
	fail "sync_file holds $(pct "$in_sync" "$off")% of fs_writer's off-CPU time, want >= 80%"
[ "$(pct "$io" $((off - runq)))" -ge 80 ] ||
	fail "I/O is $(pct "$io" $((off - runq)))% of fs_writer's waits, want >= 80%"
pass "sync_file holds $(pct "$in_sync" "$off")% of fs_writer's off-CPU time," \
	"$(pct "$io" $((off - runq)))% of its waits I/O"
