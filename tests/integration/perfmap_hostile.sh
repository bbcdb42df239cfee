#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hostile perf maps. Five JIT-like processes (fx_jit: a busy loop in anonymous
# executable memory) whose /tmp/perf-PID.map is: a symlink to a root-only file, a
# file owned by another user, a 1 GiB sparse file, binary garbage followed by one
# good line, and a good file. Each refused file holds a line that would name the
# JIT code SECRET_*: no such name may appear. emberd must survive, exit 0, name
# the good code, and log each refusal.
. "$(dirname "$0")/lib.sh"
require_bpf
require_go
[ -x "$FX/fx_jit" ] || fail "fx_jit not built at $FX/fx_jit"
command -v setpriv >/dev/null || fail "setpriv not installed (util-linux)"
id nobody >/dev/null 2>&1 || fail "no user nobody"

declare -A JPID ADDR
MAPS=()
at_exit 'rm -f "${MAPS[@]}"'

# start_jit NAME USER: runs fx_jit as USER for 3 s of its CPU time, notes its pid and code address.
start_jit() {
	local name=$1 user=$2 rc
	if [ "$user" = root ]; then
		"$FX/fx_jit" cpu:3 >"$T/$name.addr" &
	else
		setpriv --reuid="$user" --regid=nogroup --clear-groups "$FX/fx_jit" cpu:3 \
			>"$T/$name.addr" &
	fi
	JPID[$name]=$!
	PIDS+=("$!")
	for _ in $(seq 1 300); do
		[ -s "$T/$name.addr" ] && break
		sleep 0.1
	done
	if ! [ -s "$T/$name.addr" ]; then
		rc=0
		wait "${JPID[$name]}" || rc=$?
		[ "$rc" -eq 77 ] && skip "fx_jit has no code for this architecture"
		fail "fx_jit ($name) printed no address"
	fi
	ADDR[$name]=$(awk '{ print $1 }' "$T/$name.addr")
	MAPS+=("/tmp/perf-${JPID[$name]}.map")
}

map_of() { echo "/tmp/perf-${JPID[$1]}.map"; }

start_emberd --hz 99 --interval 2s -v

# A symlink to a root-only file that names the code.
start_jit symlink nobody
printf '%s 1000 SECRET_SYMLINK\n' "${ADDR[symlink]}" >"$T/secret"
chmod 0600 "$T/secret"
ln -s "$T/secret" "$(map_of symlink)"

# A root process whose map is owned by someone else.
start_jit owner root
printf '%s 1000 SECRET_OWNER\n' "${ADDR[owner]}" >"$(map_of owner)"
chown nobody "$(map_of owner)"

# A 1 GiB (sparse) file, owned by the process's user.
start_jit huge nobody
printf '%s 1000 SECRET_HUGE\n' "${ADDR[huge]}" >"$(map_of huge)"
truncate -s 1G "$(map_of huge)"
chown nobody "$(map_of huge)"

# Binary garbage, then one good line.
start_jit garbage nobody
{ head -c 65536 /dev/urandom; printf '\n%s 1000 jit_after_garbage\n' "${ADDR[garbage]}"; } \
	>"$(map_of garbage)"
chown nobody "$(map_of garbage)"

# A good map.
start_jit good nobody
printf '%s 1000 jit_good_function\n' "${ADDR[good]}" >"$(map_of good)"
chown nobody "$(map_of good)"

for n in "${!JPID[@]}"; do wait "${JPID[$n]}" || fail "fx_jit ($n) failed"; done
kill -0 "$EMBERD_PID" 2>/dev/null || fail "emberd died while reading hostile perf maps"
kill "$EMBERD_PID"	# SIGTERM: emberd stores the last interval, then exits 0
wait_emberd

"$EMBERCTL" --data-dir "$T/data" export --type cpu -o "$T/all.pb.gz" >/dev/null ||
	fail "export failed"
gzip -dc "$T/all.pb.gz" | grep -aq SECRET_ && fail "a refused perf map was read: SECRET_ in the profile"

# pid_flat NAME FUNC: FUNC's flat samples in NAME's process.
pid_flat() {
	"$EMBERCTL" --data-dir "$T/data" export --type cpu --pid "${JPID[$1]}" \
		-o "$T/$1.pb.gz" >/dev/null || fail "export of $1 failed"
	pprof_top "$T/$1.pb.gz" -sample_index=samples >"$T/$1.top"
	flat_of "$T/$1.top" "$2"
}
good=$(pid_flat good jit_good_function)
after=$(pid_flat garbage jit_after_garbage)
echo "jit_good_function $good of $(total_of "$T/good.top"), jit_after_garbage $after of $(total_of "$T/garbage.top")"
[ "${good:-0}" -gt 0 ] || { head "$T/good.top"; fail "the good perf map did not name the JIT code"; }
[ "${after:-0}" -gt 0 ] || fail "the good line after the garbage did not name the JIT code"

line=$(grep 'perf maps refused' "$T/emberd.log" | tail -1)
echo "emberd: ${line#*: }"
[ -n "$line" ] || fail "emberd logged no perf map refusal"
for what in "symlink" "wrong owner" "too big"; do
	n=$(sed -n "s/.*$what \([0-9]*\).*/\1/p" <<<"$line")
	[ "${n:-0}" -ge 1 ] || fail "refusal '$what' not counted: $line"
done
# -v: every interval's "symbols: ..." line ends with the malformed lines skipped so far.
bad=$(grep 'symbols: ' "$T/emberd.log" | tail -1 | sed -n 's/.*, \([0-9]*\) malformed lines.*/\1/p')
[ "${bad:-0}" -ge 1 ] || fail "garbage lines not counted: $(grep 'symbols: ' "$T/emberd.log" | tail -1)"
pass "hostile perf maps refused and counted, good ones named, emberd exited 0"
