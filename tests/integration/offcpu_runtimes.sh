#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Off-CPU time named through the runtimes' own frames, no flags (issue 44 item 5): a Python
# thread and a Node.js request handler wait the way services wait. Debian's python3.11
# runs serve -> wait_py, which blocks in os.read on a pipe a child writes every 20 ms
# (off-CPU in the read system call, C code called from Python); `node block.js` runs
# handleRequest, which blocks in child_process.execSync('sleep 0.05'). In each process's
# offcpu profile, read with go tool pprof:
# - >= 90% of python's off-CPU time in the read is in stacks that name wait_py at a line
#   of its body in its script, under serve;
# - >= 50% of node's off-CPU time in execSync's wait (node::SyncProcessRunner, which only
#   the main thread runs) is in stacks that name handleRequest with script and line
#   (offcpu_node.sh checks the same through a perf map; here V8's frames are read).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/offcpu_lib.sh"
require_bpf
require_go
[ -x /usr/bin/python3.11 ] || fail "Debian's python3.11 is not installed (scripts/install-deps.sh)"
command -v node >/dev/null || fail "node not installed (scripts/install-deps.sh installs nodejs)"

cat >"$T/wait.py" <<'EOF'
# Spins until SIGUSR1 (on CPU, so that the profiler loads its tables), then reads 60
# bytes from a pipe a child writes one every 20 ms: off-CPU in the read, under wait_py.
import os, signal, subprocess, sys, time
go = False
def on_usr1(sig, frame):
    global go
    go = True
signal.signal(signal.SIGUSR1, on_usr1)
def wait_py(fd):
    return os.read(fd, 1)
def serve(fd, n):
    got = 0
    for _ in range(n):
        got += len(wait_py(fd))
    return got
while not go:
    time.sleep(0)
r, w = os.pipe()
child = subprocess.Popen(['sh', '-c', 'for i in $(seq 60); do sleep 0.02; printf x; done'],
                         stdout=w)
os.close(w)
print(serve(r, 60))
child.wait()
EOF
cp "$(dirname "$0")/block_exec.js" "$T/block.js" # shared with offcpu_node.sh
printf '[daemon]\noffcpu = on\noffcpu_sample_period = 1\ncpu_budget = 0\n' >"$T/ember.conf"
start_emberd --config "$T/ember.conf" --hz 99 --interval 2s -v
/usr/bin/python3.11 "$T/wait.py" >"$T/py.out" 2>&1 &
PY=$!
PIDS+=("$PY")
node "$T/block.js" >"$T/node.out" 2>&1 &
NODE=$!
PIDS+=("$NODE")
# their tables (node's: 4.5 MB of rows) loaded before they wait: the walk reads their frames
for pid in "$PY" "$NODE"; do
	WAIT_S=120 wait_for grep -Eq "unwinder: pid $pid: [0-9]+ of [0-9]+ mappings with a table \(0 to build\)" \
		"$T/emberd.log" || fail "emberd did not load the unwind tables of pid $pid"
done
kill -USR1 "$PY" "$NODE"
wait "$PY" || fail "python3.11 wait.py exited with status $?: $(tail -3 "$T/py.out")"
wait "$NODE" || fail "node exited with status $?: $(tail -3 "$T/node.out")"
kill "$EMBERD_PID"
wait_emberd

"$EMBERCTL" --data-dir "$T/data" export --type offcpu --pid "$PY" -o "$T/py.pb.gz" ||
	fail "export of python's offcpu profile failed"
pprof_top "$T/py.pb.gz" -sample_index=offcpu -focus='^serve$' -lines >"$T/py.lines"
# libc's read (the pipe's wait; not subprocess's own, of the pipe that tells it the child
# ran exec, nor the imports' reads of .py files, off-CPU on a cold page cache: 19% of it
# once), and wait_py, which waits in nothing else
read_ns=$(ns_of "$T/py.pb.gz" offcpu -focus='^(__GI___libc_read|__libc_read|read|__read)$' \
	-ignore='^(_execute_child|_find_and_load)$')
first=$(grep -n '^def wait_py' "$T/wait.py" | cut -d: -f1)
named=$(ns_of "$T/py.pb.gz" offcpu -focus='^wait_py$')
line_ok=$(awk -v f="$T/wait.py" -v lo="$first" -v hi="$((first + 1))" '
	$6 == "wait_py" { split($7, a, ":"); if (a[1] == f && a[2] >= lo && a[2] <= hi) n++ }
	END { print n + 0 }' "$T/py.lines")
echo "python: off-CPU in read $read_ns ns, naming wait_py $named ns; wait_py at wait.py:LINE" \
	"in $line_ok rows"
[ "$read_ns" -gt 0 ] || fail "no off-CPU time of python in read"
[ "$line_ok" -gt 0 ] || { head -20 "$T/py.lines"; fail "wait_py not named at a line of its body"; }
[ "$(pct "$named" "$read_ns")" -ge 90 ] || {
	go tool pprof -traces -sample_index=offcpu -symbolize=none \
		-ignore='^(wait_py|_execute_child|_find_and_load)$' \
		-focus='^(__GI___libc_read|__libc_read|read|__read)$' "$T/py.pb.gz" 2>/dev/null |
		head -40
	fail "wait_py is on $(pct "$named" "$read_ns")% of python's off-CPU time in read, want >= 90%"
}

"$EMBERCTL" --data-dir "$T/data" export --type offcpu --pid "$NODE" -o "$T/node.pb.gz" ||
	fail "export of node's offcpu profile failed"
off=$(ns_of "$T/node.pb.gz" offcpu -focus=SyncProcessRunner)
js=$(ns_of "$T/node.pb.gz" offcpu -focus='^handleRequest$') # it waits in execSync alone
echo "node: off-CPU in execSync's wait $off ns, naming handleRequest $js"
[ "$off" -gt 0 ] || fail "no off-CPU time of node in node::SyncProcessRunner"
[ "$(pct "$js" "$off")" -ge 50 ] ||
	fail "handleRequest is on $(pct "$js" "$off")% of execSync's off-CPU time, want >= 50%"
pass "off-CPU named without flags: wait_py on $(pct "$named" "$read_ns")% of python's reads," \
	"handleRequest on $(pct "$js" "$off")% of node's execSync"
