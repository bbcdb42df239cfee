#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Baseline (Sparkplug) frames named by their lines: symbols_v8_dispatch.sh's hot function held
# in baseline code by a flag (--max-opt=1, or V8 10's --no-opt), since without one V8 moves
# hot code on within seconds (the test is about that tier). Baseline code holds no way back
# to its function: the walk gives the function and the pc's offset in its code, and the host
# finds the bytecode there from the code's bytecode offset table and V8's bytecode sizes
# (kBytecodeSizes, read from the binary). Its arithmetic runs in builtins that build no frame:
# the return into big's code is found above their sp. big's samples must be at lines of its
# body; with either left out, nearly all are at its first line and the test fails.
# EMBER_TEST_BASELINE_NODE (or symbols_v8_baseline_nodeNN.sh) runs it under another node.
NODE=${EMBER_TEST_BASELINE_NODE:-${EMBER_TEST_NODE:-$(command -v node)}}
if [ ! -x "$NODE" ]; then
	echo "FAIL: $NODE: no such node (scripts/install-deps.sh installs them)"
	exit 1
fi
flags=--max-opt=1
"$NODE" --v8-options | grep -q -- '--max-opt ' || flags=--no-opt
EMBER_TEST_DISPATCH_NODE=$NODE EMBER_TEST_DISPATCH_FLAGS=$flags \
	exec bash "$(dirname "$0")/symbols_v8_dispatch.sh"
