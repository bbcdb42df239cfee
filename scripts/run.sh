#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Quick start: installs what is missing, builds, and runs emberd in the
# foreground on the local history with the default configuration.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target emberd emberctl >/dev/null
echo "run.sh: built build/daemon/emberd and build/cli/emberctl"
echo "run.sh: starting emberd (Ctrl-C stores the current interval and stops it)"
echo "run.sh: in another terminal: build/cli/emberctl top --since -15m (or list, tree,"
echo "run.sh:   flamegraph -o cpu.html, status; build/cli/emberctl --help lists them all)"
exec build/daemon/emberd "$@"
