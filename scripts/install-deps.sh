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
	libc6-dbg		# ld.so's symbols: its lazy-binding trampoline named (unwind_lazy_bind.sh)
	clang-format-14		# scripts/format.sh --check (CI)
	libclang-rt-14-dev	# clang's libFuzzer and sanitizer runtimes: the fuzz targets (scripts/test.sh)
	chromium		# flame graphs opened headless (tests/integration/flamegraph_browser.sh)
	# benchmarks (peers)
	linux-perf bpftrace
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
	echo "install-deps: all ${#PKGS[@]} packages present"
	exit 0
fi

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
