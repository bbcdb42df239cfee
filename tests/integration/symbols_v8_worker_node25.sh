#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# symbols_v8_dispatch.sh under Node 25 (V8 14.1) with its hot function in a worker thread
# while the main thread runs another hot: V8 14.1's isolates share their group's dispatch
# table, so a worker's optimised code is named by the lines of its body, as the main
# thread's is (where Node 26's, each isolate with a table of its own, is named by its
# function's first line: symbols_v8_worker_node26.sh).
NODE25=${EMBER_TEST_NODE25:-/usr/local/lib/ember-tools/node_modules/node25/bin/node}
if [ ! -x "$NODE25" ]; then
	echo "FAIL: $NODE25: no Node 25 (scripts/install-deps.sh installs it from npm)"
	exit 1
fi
EMBER_TEST_DISPATCH_WORKER=lines EMBER_TEST_DISPATCH_NODE=$NODE25 \
	exec bash "$(dirname "$0")/symbols_v8_dispatch.sh"
