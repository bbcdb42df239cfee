#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installation: `cmake --install` keeps an edited /etc/ember/ember.conf and
# points the unit at the installed emberd; `cpack -G DEB` (run on the main
# build directory, output in a scratch one) builds a package whose files are
# where its unit expects them, whose emberd runs, whose unit passes
# `systemd-analyze verify`, and whose Depends lists the shared libraries.
. "$(dirname "$0")/lib.sh"
for tool in cpack dpkg-deb dpkg-shlibdeps systemd-analyze; do
	command -v "$tool" >/dev/null ||
		fail "$tool missing (scripts/install-deps.sh installs cmake, dpkg-dev, systemd)"
done

# --- cmake --install into a scratch DESTDIR, twice ---------------------------------
I=$T/inst
DESTDIR=$I cmake --install "$EMBER_BUILD" --prefix /usr >"$T/install.txt" 2>&1 ||
	fail "cmake --install: $(tail -5 "$T/install.txt")"
for f in usr/sbin/emberd usr/bin/emberctl usr/lib/systemd/system/emberd.service \
	etc/ember/ember.conf usr/share/man/man8/emberd.8.gz usr/share/man/man1/emberctl.1.gz \
	usr/share/man/man5/ember.conf.5.gz; do
	[ -e "$I/$f" ] || fail "cmake --install did not install /$f"
done
echo "hz = 7 # edited by the admin" >>"$I/etc/ember/ember.conf"
DESTDIR=$I cmake --install "$EMBER_BUILD" --prefix /usr/local >"$T/install2.txt" 2>&1 ||
	fail "second cmake --install: $(tail -5 "$T/install2.txt")"
grep -q "edited by the admin" "$I/etc/ember/ember.conf" ||
	fail "cmake --install overwrote an edited /etc/ember/ember.conf"
grep -qx "ExecStart=/usr/local/sbin/emberd" "$I/usr/local/lib/systemd/system/emberd.service" ||
	fail "the unit installed with --prefix /usr/local does not run /usr/local/sbin/emberd"
pass "cmake --install: every file in place, an edited ember.conf kept, ExecStart follows the prefix"

# --- the Debian package ---------------------------------------------------------
(cd "$EMBER_BUILD" && cpack -G DEB -B "$T/pkg") >"$T/cpack.txt" 2>&1 ||
	fail "cpack -G DEB: $(tail -10 "$T/cpack.txt")"
DEB=$(ls "$T"/pkg/ember_*.deb 2>/dev/null | head -1)
[ -n "$DEB" ] || fail "cpack made no ember_*.deb: $(tail -5 "$T/cpack.txt")"
dpkg-deb -I "$DEB" >"$T/info.txt" || fail "dpkg-deb -I $DEB"
field() { sed -n "s/^ $1: //p" "$T/info.txt"; }
[ "$(field Package)" = ember ] || fail "package name '$(field Package)', not ember"
depends=$(field Depends)
for lib in libbpf1 libelf1 libsqlite3-0 libzstd1 libcurl4 libsystemd0 libprotobuf-c1 libinih1 libc6 \
	procps; do
	echo "$depends" | grep -q "\b$lib\b" || fail "Depends lacks $lib: $depends"
done
for script in postinst prerm postrm conffiles; do
	grep -q " $script" "$T/info.txt" || fail "the package has no $script"
done
dpkg-deb -e "$DEB" "$T/control"
grep -qx /etc/ember/ember.conf "$T/control/conffiles" || fail "ember.conf is not a conffile"
grep -q 'systemctl enable --now emberd.service' "$T/control/postinst" &&
	grep -q '/run/systemd/system' "$T/control/postinst" ||
	fail "postinst does not enable --now emberd only when systemd runs"
grep -q 'rm -rf /var/lib/ember' "$T/control/postrm" || fail "postrm purge keeps /var/lib/ember"
for s in postinst prerm postrm; do sh -n "$T/control/$s" || fail "$s: shell syntax"; done
pass "$(basename "$DEB"): Depends: $depends"

R=$T/root
dpkg-deb -x "$DEB" "$R"
unit=$R/usr/lib/systemd/system/emberd.service
[ -f "$unit" ] || fail "no unit at /usr/lib/systemd/system/emberd.service"
exe=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit")
[ "$exe" = /usr/sbin/emberd ] || fail "packaged ExecStart=$exe, not /usr/sbin/emberd"
[ -x "$R$exe" ] || fail "ExecStart=$exe is not in the package"
"$R$exe" --version | grep -qx "emberd [0-9.]*" || fail "packaged $exe --version: $("$R$exe" --version 2>&1)"
"$R/usr/bin/emberctl" --version >/dev/null || fail "packaged emberctl --version fails"
grep -qx 'ConfigurationDirectory=ember' "$unit" && [ -f "$R/etc/ember/ember.conf" ] ||
	fail "ConfigurationDirectory=ember without /etc/ember/ember.conf in the package"
"$R$exe" --check-config --config "$R/etc/ember/ember.conf" | grep -qx "configuration OK" ||
	fail "the packaged ember.conf does not pass emberd --check-config"
# ExecReload's kill exists on the host (the package relies on procps/util-linux).
reload=$(sed -n 's/^ExecReload=\([^ ]*\).*/\1/p' "$unit")
[ -x "$reload" ] || fail "ExecReload=$reload does not exist on this host"
for m in man8/emberd.8.gz man1/emberctl.1.gz man5/ember.conf.5.gz; do
	[ -f "$R/usr/share/man/$m" ] || fail "no /usr/share/man/$m in the package"
	zcat "$R/usr/share/man/$m" | groff -man -Tutf8 -z -ww 2>"$T/groff.txt" ||
		fail "$m does not format"
	[ -s "$T/groff.txt" ] && fail "$m: groff warns: $(head -3 "$T/groff.txt")"
done
# verify resolves ExecStart on the host: a copy of the unit names the extracted binary,
# and the man pages of Documentation= are looked up in the extracted tree.
sed "s|^ExecStart=/|ExecStart=$R/|" "$unit" >"$T/emberd.service"
MANPATH=$R/usr/share/man systemd-analyze verify "$T/emberd.service" >"$T/verify.txt" 2>&1 ||
	fail "systemd-analyze verify on the packaged unit: $(cat "$T/verify.txt")"
[ -s "$T/verify.txt" ] && fail "systemd-analyze verify warned: $(cat "$T/verify.txt")"
pass "dpkg -x: emberd, emberctl, unit, ember.conf, man pages where the unit expects them; verify OK"

# --- the maintainer scripts, against a stub systemctl ---------------------------------
# In a private mount namespace a tmpfs on /run decides whether "systemd
# runs" (/run/systemd/system), and a systemctl early in PATH records its calls.
[ "$(id -u)" -eq 0 ] || skip "not root: the maintainer scripts need a mount namespace"
mkdir -p "$T/stub"
printf '#!/bin/sh\necho "systemctl $*" >>"%s"\n' "$T/calls" >"$T/stub/systemctl"
chmod +x "$T/stub/systemctl"
run_script() { # run_script SYSTEMD(yes|no) SCRIPT ARGS...: the calls it made, on one line
	local sd=$1; shift
	: >"$T/calls"
	unshare -m --propagation private sh -c '
		mount -t tmpfs -o size=64k tmpfs /run
		[ "$0" = yes ] && mkdir -p /run/systemd/system
		shift
		PATH=$STUB:$PATH sh "$@"' "$sd" x "$@" || fail "$* exited non-zero"
	tr '\n' ';' <"$T/calls"
}
export STUB=$T/stub
C=$T/control
got=$(run_script yes "$C/postinst" configure "")
[ "$got" = "systemctl daemon-reload;systemctl enable --now emberd.service;" ] ||
	fail "postinst on a first install with systemd: $got"
got=$(run_script yes "$C/postinst" configure 0.0.9)
[ "$got" = "systemctl daemon-reload;systemctl try-restart emberd.service;" ] ||
	fail "postinst on an upgrade: $got"
got=$(run_script no "$C/postinst" configure "")
[ -z "$got" ] || fail "postinst without systemd called: $got"
got=$(run_script yes "$C/prerm" remove)
[ "$got" = "systemctl stop emberd.service;systemctl disable emberd.service;" ] ||
	fail "prerm remove: $got"
got=$(run_script yes "$C/prerm" upgrade)
[ -z "$got" ] || fail "prerm upgrade stopped emberd: $got"
pass "postinst enables --now on a first install (try-restart on upgrade, nothing without systemd); prerm stops on remove"
