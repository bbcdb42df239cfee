#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# emberd within the unit's sandbox, without systemd: only the capabilities of
# the unit's CapabilityBoundingSet= (setpriv, with no_new_privs), profiling a
# process of another user whose binary only that user can read, and, in a
# first run, deleted while it runs (an upgraded program's); a second run leaves
# out CAP_CHECKPOINT_RESTORE (older kernels), so that files are found without
# map_files. Every system call emberd makes (strace -f, the uploader's
# included) must be one that the unit's SystemCallFilter= allows. A capability
# or a system call the unit lacks makes this test fail, not the service in
# production.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/push_lib.sh"
require_bpf
require_go
for tool in strace setpriv systemd-analyze; do
	command -v "$tool" >/dev/null || fail "$tool missing (scripts/install-deps.sh installs it)"
done
UNIT=$EMBER_SRC/systemd/emberd.service

# CAP_BPF CAP_PERFMON ... -> +bpf,+perfmon,...
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT" | tr 'A-Z' 'a-z' |
	sed 's/cap_/+/g; s/ /,/g')
[ -n "$caps" ] || fail "no CapabilityBoundingSet= in $UNIT"

# The workload: fx_syscall as nobody, from a directory only nobody can enter.
chmod 711 "$T"
mkdir "$T/priv"
chmod 711 "$T/priv"

printf '[daemon]\ninterval = 2s\n' >"$T/ember.conf"
if [ -x "$COLLECTOR" ]; then
	start_collector
	printf '[collector]\nurl = %s\n' "$COLL_URL" >>"$T/ember.conf"
fi

# sandboxed TAG CAPS DELETE: emberd with only CAPS (strace -f into $T/strace-TAG.txt) while
# nobody's fx_syscall runs 5 s, its binary deleted once it runs when DELETE is 1 (a
# package upgrade replaces a running program's file so); then its samples are named
# and whole: the user frame (a binary only nobody can read, or a deleted one), the
# stacks through the unwinder's tables (fx_syscall has no frame pointers), and kernel
# frames (kallsyms).
sandboxed() {
	local tag=$1 caps=$2 delete=$3 wl pid top loop kernel total whole rescans
	mkdir "$T/priv/$tag"
	cp "$FX/fx_syscall" "$T/priv/$tag/"
	chown -R 65534:65534 "$T/priv/$tag"
	chmod 700 "$T/priv/$tag" "$T/priv/$tag/fx_syscall"
	strace -f -qq -o "$T/strace-$tag.txt" \
		setpriv --no-new-privs --inh-caps=-all --bounding-set=-all,"$caps" -- \
		"$EMBERD" --config "$T/ember.conf" --data-dir "$T/data-$tag" --hz 99 --duration 10s -v \
		>"$T/emberd-$tag.log" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	for _ in $(seq 1 300); do
		grep -q "sampling .* CPUs" "$T/emberd-$tag.log" && break
		kill -0 "$pid" 2>/dev/null || fail "$tag: emberd exited during start-up with $caps"
		sleep 0.1
	done
	setpriv --reuid=65534 --regid=65534 --clear-groups "$T/priv/$tag/fx_syscall" 5 &
	wl=$!
	PIDS+=("$wl")
	if [ "$delete" = 1 ]; then
		# once it runs its own binary (not setpriv's), the file goes
		for _ in $(seq 1 100); do
			[ "$(readlink "/proc/$wl/exe")" = "$T/priv/$tag/fx_syscall" ] && break
			sleep 0.05
		done
		rm "$T/priv/$tag/fx_syscall"
		readlink "/proc/$wl/exe" | grep -q '(deleted)' || fail "$tag: fx_syscall's binary is not deleted"
	fi
	wait "$wl" || fail "$tag: fx_syscall as nobody failed"
	EMBERD_PID=$pid
	wait_emberd
	"$EMBERCTL" --data-dir "$T/data-$tag" export --pid "$wl" -o "$T/wl-$tag.pb.gz" ||
		fail "$tag: no samples of $wl"
	top=$T/top-$tag.txt
	pprof_top "$T/wl-$tag.pb.gz" -sample_index=samples >"$top"
	loop=$(flat_of "$top" syscall_loop)
	kernel=$(awk '$6 ~ /^(read_zero|__x64_sys_read|ksys_read|vfs_read|do_syscall_64|entry_SYSCALL_64.*|clear_user.*|iov_iter_zero|_copy_to_iter)$/ { s += $1 } END { print s + 0 }' "$top")
	total=$(total_of "$top")
	grep -q 'syscall_loop' "$top" || { head -30 "$top"; fail "$tag: syscall_loop not named: $caps cannot read nobody's binary"; }
	# the unwinder finds a file's tables again by its identity: from map_files
	# (CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE), else from the path in the process's
	# root while it is the mapped inode; without either it rebuilt them forever
	whole=$(awk '$6 == "syscall_loop" { print $4 }' "$top")
	[ "${whole:-0}" -ge $((total / 2)) ] ||
		{ head -30 "$top"; fail "$tag: only ${whole:-0} of $total samples reach syscall_loop: no unwinding tables in the sandbox"; }
	rescans=$(grep -c 'mappings with a table' "$T/emberd-$tag.log")
	[ "$rescans" -lt 1000 ] || fail "$tag: the unwinder rescanned processes $rescans times in 10 s"
	[ "$kernel" -gt 0 ] || { head -30 "$top"; fail "$tag: no kernel frame named: $caps cannot read /proc/kallsyms"; }
	pass "$tag, with only $caps: of $total samples of nobody's fx_syscall, syscall_loop flat $loop (in $whole stacks), named kernel frames flat $kernel"
}

# The unit's capabilities, the program's binary deleted while it runs.
sandboxed unit "$caps" 1
# Without CAP_CHECKPOINT_RESTORE (a kernel before 5.9, where the unit's name for it is
# unknown): map_files is denied, the files are found by their path in the process's root.
sandboxed nocr "$(echo "$caps" | sed 's/,+checkpoint_restore//; s/+checkpoint_restore,//')" 0

if [ -x "$COLLECTOR" ]; then
	sent=$(coll_stat accepted)
	[ "$sent" -ge 1 ] || fail "nothing reached the collector: $(grep -i collector "$T/emberd.log" | tail -3)"
	pass "$sent profiles pushed from inside the sandbox"
fi

# Every system call after emberd's execve, in either run, is one the unit's filter allows.
filter=$(sed -n 's/^SystemCallFilter=//p' "$UNIT")
[ -n "$filter" ] || fail "no SystemCallFilter= in $UNIT"
systemd-analyze syscall-filter >"$T/groups.txt" 2>/dev/null
awk -v filter="$filter" '
	/^@/ { g = $1; next }
	g != "" && NF == 1 && $1 !~ /^#/ { member[g] = member[g] " " $1 }
	END {
		n = split(filter, want, " ")
		for (i = 1; i <= n; i++) add(want[i])
		for (s in ok) print s
	}
	function add(x,   m, k, j) {
		if (x !~ /^@/) { ok[x] = 1; return }
		if (seen[x]++) return
		k = split(member[x], m, " ")
		for (j = 1; j <= k; j++) add(m[j])
	}
' "$T/groups.txt" | sort -u >"$T/allowed.txt"
grep -qx bpf "$T/allowed.txt" && grep -qx perf_event_open "$T/allowed.txt" &&
	grep -qx openat "$T/allowed.txt" || fail "could not expand the filter: $(wc -l <"$T/allowed.txt") calls"
awk -v exe="$EMBERD" '
	FNR == 1 { started = 0 }
	!started { if (index($0, "execve(\"" exe "\"")) started = 1; next }
	{ sub(/^[0-9]+ +/, ""); if (match($0, /^[a-z_0-9]+\(/)) print substr($0, 1, RLENGTH - 1) }
' "$T/strace-unit.txt" "$T/strace-nocr.txt" | sort -u >"$T/used.txt"
[ "$(wc -l <"$T/used.txt")" -ge 20 ] || fail "strace saw only $(wc -l <"$T/used.txt") system calls"
denied=$(comm -23 "$T/used.txt" "$T/allowed.txt" | tr '\n' ' ')
[ -z "$denied" ] || fail "emberd calls what SystemCallFilter= denies: $denied"
pass "$(wc -l <"$T/used.txt") distinct system calls, all within SystemCallFilter=$filter"
