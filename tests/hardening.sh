#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The shipped binaries are built hardened (EMBER_HARDEN): PIE, full RELRO (relro + now),
# stack protector and FORTIFY_SOURCE, as Debian's dpkg-buildflags gives. Read from the
# binaries themselves with readelf: flags a build dropped show here.
set -euo pipefail
: "${EMBER_BUILD:?EMBER_BUILD must point at the build directory}"
fail() { echo "FAIL: $*"; exit 1; }
command -v readelf >/dev/null || fail "readelf not installed (binutils)"

# check FILE EXEC: EXEC=1 for a program (PIE), 0 for a shared library.
check() {
	local f=$1 exec=$2 hdr dyn syms
	[ -f "$f" ] || fail "$f not built"
	hdr=$(readelf -hlW "$f")
	dyn=$(readelf -dW "$f")
	syms=$(readelf --dyn-syms -W "$f")
	grep -q 'Type:.*DYN' <<<"$hdr" || fail "$f: not position-independent (not ET_DYN)"
	if [ "$exec" = 1 ]; then
		grep -q 'FLAGS_1.*PIE' <<<"$dyn" || fail "$f: not a PIE (no DF_1_PIE)"
	fi
	grep -q 'GNU_RELRO' <<<"$hdr" || fail "$f: no RELRO segment"
	grep -Eq 'BIND_NOW|FLAGS.*NOW' <<<"$dyn" || fail "$f: RELRO not full (no BIND_NOW)"
	grep -q '__stack_chk_fail' <<<"$syms" || fail "$f: no stack protector (__stack_chk_fail)"
	grep -Eq '__[a-z0-9_]+_chk(@| )' <<<"$syms" || fail "$f: no FORTIFY_SOURCE (__*_chk)"
	echo "ok: $f (PIE, full RELRO, stack protector, fortified)"
}
check "$EMBER_BUILD/daemon/emberd" 1
check "$EMBER_BUILD/cli/emberctl" 1
check "$(ls "$EMBER_BUILD"/alloc/libember_alloc.so* | head -1)" 0
echo "PASS: shipped binaries hardened"
