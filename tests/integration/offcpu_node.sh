#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Off-CPU time through JIT frames: a Node.js (--perf-basic-prof) request handler,
# handleRequest, blocks in child_process.execSync('sleep 0.05') again and again. In the
# offcpu profile, read with go tool pprof, >= 50% of the off-CPU time in execSync's native
# wait (node::SyncProcessRunner, which only the main thread runs: every thread of node is
# named "node") is in stacks that name handleRequest: walked by frame pointers through
# V8's code, named from the perf map.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/offcpu_lib.sh"
require_bpf
require_go
command -v node >/dev/null || fail "node not installed (scripts/install-deps.sh installs nodejs)"

cp "$(dirname "$0")/block_exec.js" "$T/block.js"
printf '[daemon]\noffcpu = on\noffcpu_sample_period = 1\ncpu_budget = 0\n' >"$T/ember.conf"
start_emberd --config "$T/ember.conf" --hz 99 --interval 2s -v
cd "$T" || fail "cannot enter $T"
node --perf-basic-prof "$T/block.js" >"$T/node.out" 2>&1 &
NODE=$!
PIDS+=("$NODE")
trap 'rm -f "/tmp/perf-$NODE.map"; cleanup' EXIT
# node's table (4.5 MB of rows) takes up to a second to build: wait until it is loaded
for _ in $(seq 1 600); do
	grep -Eq "unwinder: pid $NODE: [0-9]+ of [0-9]+ mappings with a table \(0 to build\)" \
		"$T/emberd.log" && break
	kill -0 "$NODE" 2>/dev/null || break
	sleep 0.1
done
grep -Eq "unwinder: pid $NODE: .*\(0 to build\)" "$T/emberd.log" ||
	fail "emberd did not load node's unwind tables within 60 s"
kill -USR1 "$NODE"
wait "$NODE" || fail "node exited with status $?: $(tail -3 "$T/node.out")"
kill "$EMBERD_PID"
wait_emberd
"$EMBERCTL" --data-dir "$T/data" export --type offcpu --pid "$NODE" -o "$T/off.pb.gz" ||
	fail "export of the offcpu profile failed"
off=$(ns_of "$T/off.pb.gz" offcpu -focus=SyncProcessRunner)
js=$(ns_of "$T/off.pb.gz" offcpu -focus='handleRequest')
echo "node: off-CPU in execSync's wait $off ns, naming handleRequest $js"
[ "$off" -gt 0 ] || fail "no off-CPU time in node::SyncProcessRunner"
[ "$(pct "$js" "$off")" -ge 50 ] ||
	fail "handleRequest is on $(pct "$js" "$off")% of execSync's off-CPU time, want >= 50%"
pass "handleRequest is named on $(pct "$js" "$off")% of execSync's off-CPU time"
