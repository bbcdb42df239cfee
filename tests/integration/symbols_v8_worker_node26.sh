#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# symbols_v8_dispatch.sh under Node 26 (V8 14.6) with its hot function in a worker thread
# while the main thread runs another hot: a worker's isolate has a dispatch table of its own,
# which the walk reaches through the isolate the sampled thread runs (node's thread-local
# v8::internal::g_current_isolate_, below the thread's pointer). Its optimised code must be
# named by its lines, as the main thread's is, and never by the main thread's functions.
NODE26=${EMBER_TEST_NODE26:-/usr/local/lib/ember-tools/node_modules/node26/bin/node}
if [ ! -x "$NODE26" ]; then
	echo "FAIL: $NODE26: no Node 26 (scripts/install-deps.sh installs it from npm)"
	exit 1
fi
EMBER_TEST_DISPATCH_WORKER=lines EMBER_TEST_DISPATCH_NODE=$NODE26 \
	exec bash "$(dirname "$0")/symbols_v8_dispatch.sh"
