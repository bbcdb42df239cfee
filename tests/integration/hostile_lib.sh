# SPDX-License-Identifier: MIT
# Helpers of the hostile-input tests (issue 47): emberd under the memory limit its unit
# sets, hostile programs run as an unprivileged user, and what emberd's figures say.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The unit's MemoryMax (systemd/emberd.service): over it the kernel kills emberd.
UNIT_MEMORY_MAX=$(sed -n 's/^MemoryMax=//p' "$EMBER_SRC/systemd/emberd.service")
HOSTILE_USER=nobody
HOSTILE_GROUP=nogroup

# memory_cgroup NAME BYTES: a memory cgroup (v2 memory.max, else v1 memory.limit_in_bytes,
# under this shell's own) limited to BYTES, removed at exit; MEMCG_PROCS is its procs file.
memory_cgroup() {
	local v1
	if [ "$(stat -f -c %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then
		service_cgroup "$1"
		echo "$2" >"$CGROUP_DIR/memory.max" || fail "cannot set memory.max in $CGROUP_DIR"
		MEMCG_PROCS=$CGROUP_DIR/cgroup.procs
		return
	fi
	v1=/sys/fs/cgroup/memory$(awk -F: '$2 == "memory" { print $3 }' /proc/self/cgroup)
	[ -d "$v1" ] || fail "no memory cgroup (v2, or v1 at $v1)"
	mkdir -p "$v1/$1" || fail "cannot make memory cgroup $v1/$1"
	at_exit "rmdir '$v1/$1'"
	echo "$2" >"$v1/$1/memory.limit_in_bytes" || fail "cannot limit $v1/$1"
	MEMCG_PROCS=$v1/$1/cgroup.procs
}

# start_bounded_emberd ARGS...: start_emberd inside a memory cgroup at the unit's MemoryMax.
start_bounded_emberd() {
	local real=$EMBERD
	memory_cgroup "ember-hostile-$$" "$UNIT_MEMORY_MAX"
	# the wrapper moves itself into the cgroup, then becomes emberd (same pid)
	EMBERD=$T/emberd-bounded
	printf '#!/bin/sh\necho $$ >%q || exit 70\nexec %q "$@"\n' "$MEMCG_PROCS" "$real" >"$EMBERD"
	chmod 755 "$EMBERD"
	start_emberd "$@"
	EMBERD=$real
	grep -qx "$EMBERD_PID" "$MEMCG_PROCS" || fail "emberd is not in its memory cgroup"
}

# hwm_kib PID: the peak resident set of PID (VmHWM), in KiB.
hwm_kib() { awk '$1 == "VmHWM:" { print $2 }' "/proc/$1/status"; }

# cpu_ticks PID: user + system clock ticks PID used.
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }

# hostile_dir: $T/bin, where the hostile user may run and write its programs.
hostile_dir() {
	chmod 711 "$T"
	mkdir -p "$T/bin"
	chmod 1777 "$T/bin"
}

# as_hostile CMD...: runs CMD as the unprivileged hostile user, in place of this shell: call
# it in a subshell, "(as_hostile CMD) &", and $! is CMD's pid.
as_hostile() {
	exec setpriv --reuid="$HOSTILE_USER" --regid="$HOSTILE_GROUP" --clear-groups -- "$@"
}

# cum_of TOPFILE FUNC: the cumulative count of FUNC in a pprof -top listing (0 if absent).
cum_of() {
	awk -v fn="$2" '$6 == fn { v = $4 } END { print (v == "" ? 0 : v) }' "$1"
}

# pid_top PID OUT: OUT is the pprof -top listing of PID's CPU samples in the history.
pid_top() {
	"$EMBERCTL" --data-dir "$T/data" export --type cpu --pid "$1" -o "$T/$1.pb.gz" \
		>/dev/null || fail "export of pid $1 failed"
	pprof_top "$T/$1.pb.gz" -sample_index=samples >"$2"
}

# longest_interval_ms: the longest CPU profile stored, in ms ("emberctl list" durations).
longest_interval_ms() {
	"$EMBERCTL" --data-dir "$T/data" list --type cpu | awk '
		{ for (i = 2; i <= NF; i++) if ($i == "cpu") d = $(i - 1); else continue
		  ms = d ~ /m$/ ? d * 60000 : d * 1000
		  if (ms > m) m = ms }
		END { printf "%d\n", m }'
}

# intervals_after N: waits until emberd counts N more intervals than now (30 s at most).
intervals_after() {
	local want=$(($(status_key intervals) + $1))
	wait_for intervals_at_least "$want" || fail "emberd did not drain $1 more intervals"
}
