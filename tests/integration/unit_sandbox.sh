#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# emberd within the unit's sandbox, without systemd: only the capabilities of
# the unit's CapabilityBoundingSet= (setpriv, with no_new_privs), profiling a
# process of another user whose binary only that user can read; every system
# call emberd makes (strace -f, the uploader's included) must be one that the
# unit's SystemCallFilter= allows. A capability or a system call the unit
# lacks makes this test fail, not the service in production.
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
cp "$FX/fx_syscall" "$T/priv/"
chown -R 65534:65534 "$T/priv"
chmod 700 "$T/priv" "$T/priv/fx_syscall"

printf '[daemon]\ninterval = 2s\n' >"$T/ember.conf"
if [ -x "$COLLECTOR" ]; then
	start_collector
	printf '[collector]\nurl = %s\n' "$COLL_URL" >>"$T/ember.conf"
fi
strace -f -qq -o "$T/strace.txt" \
	setpriv --no-new-privs --inh-caps=-all --bounding-set=-all,"$caps" -- \
	"$EMBERD" --config "$T/ember.conf" --data-dir "$T/data" --hz 99 --duration 10s -v \
	>"$T/emberd.log" 2>&1 &
EMBERD_PID=$!
PIDS+=("$EMBERD_PID")
for _ in $(seq 1 300); do
	grep -q "sampling .* CPUs" "$T/emberd.log" && break
	kill -0 "$EMBERD_PID" 2>/dev/null || fail "emberd exited during start-up with $caps"
	sleep 0.1
done
setpriv --reuid=65534 --regid=65534 --clear-groups "$T/priv/fx_syscall" 5 &
WL=$!
PIDS+=("$WL")
wait "$WL" || fail "fx_syscall as nobody failed"
wait_emberd
pass "emberd ran with only $caps"

# Named: the user frame (binary readable only by nobody) and kernel frames (kallsyms).
"$EMBERCTL" --data-dir "$T/data" export --pid "$WL" -o "$T/wl.pb.gz" || fail "no samples of $WL"
pprof_top "$T/wl.pb.gz" -sample_index=samples >"$T/top.txt"
loop=$(flat_of "$T/top.txt" syscall_loop)
kernel=$(awk '$6 ~ /^(read_zero|__x64_sys_read|ksys_read|vfs_read|do_syscall_64|entry_SYSCALL_64.*|clear_user.*|iov_iter_zero|_copy_to_iter)$/ { s += $1 } END { print s + 0 }' \
	"$T/top.txt")
total=$(total_of "$T/top.txt")
grep -q 'syscall_loop' "$T/top.txt" || { head -30 "$T/top.txt"; fail "syscall_loop not named: $caps cannot read nobody's binary"; }
# fx_syscall has no frame pointers: its stacks are whole only with the unwinder's tables,
# which it must find again by the files' identity without map_files (CAP_SYS_ADMIN or
# CAP_CHECKPOINT_RESTORE); else it rebuilt them for every rescan, forever
whole=$(awk '$6 == "syscall_loop" { print $4 }' "$T/top.txt")
[ "${whole:-0}" -ge $((total / 2)) ] ||
	{ head -30 "$T/top.txt"; fail "only ${whole:-0} of $total samples reach syscall_loop: no unwinding tables in the sandbox"; }
[ "$(grep -c 'mappings with a table' "$T/emberd.log")" -lt 1000 ] ||
	fail "the unwinder rescanned processes $(grep -c 'mappings with a table' "$T/emberd.log") times in 10 s"
[ "$kernel" -gt 0 ] || { head -30 "$T/top.txt"; fail "no kernel frame named: $caps cannot read /proc/kallsyms"; }
pass "of $total samples of nobody's fx_syscall: syscall_loop flat $loop (in $whole stacks), named kernel frames flat $kernel"

if [ -x "$COLLECTOR" ]; then
	sent=$(coll_stat accepted)
	[ "$sent" -ge 1 ] || fail "nothing reached the collector: $(grep -i collector "$T/emberd.log" | tail -3)"
	pass "$sent profiles pushed from inside the sandbox"
fi

# Every system call after emberd's execve is one the unit's filter allows.
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
	!started { if (index($0, "execve(\"" exe "\"")) started = 1; next }
	{ sub(/^[0-9]+ +/, ""); if (match($0, /^[a-z_0-9]+\(/)) print substr($0, 1, RLENGTH - 1) }
' "$T/strace.txt" | sort -u >"$T/used.txt"
[ "$(wc -l <"$T/used.txt")" -ge 20 ] || fail "strace saw only $(wc -l <"$T/used.txt") system calls"
denied=$(comm -23 "$T/used.txt" "$T/allowed.txt" | tr '\n' ' ')
[ -z "$denied" ] || fail "emberd calls what SystemCallFilter= denies: $denied"
pass "$(wc -l <"$T/used.txt") distinct system calls, all within SystemCallFilter=$filter"
