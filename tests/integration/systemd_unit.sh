#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# systemd/emberd.service passes `systemd-analyze verify` and its offline
# security exposure stays under a ceiling. verify wants the ExecStart binary
# and the Documentation= man pages to exist: the test points a copy of the
# unit at the build tree's emberd and MANPATH at the build's man pages.
# (No systemd runs as PID 1 here; none is needed.)
. "$(dirname "$0")/lib.sh"
command -v systemd-analyze >/dev/null ||
	fail "systemd-analyze missing (scripts/install-deps.sh installs systemd)"
[ -x "$EMBERD" ] || fail "emberd not built at $EMBERD"
UNIT=$EMBER_SRC/systemd/emberd.service

# What the issue asks of the unit, read back from the file.
for want in '^Type=notify$' '^ExecStart=/usr/sbin/emberd$' '^ExecReload=/bin/kill -HUP \$MAINPID$' \
	'^WatchdogSec=' '^Restart=on-failure$' '^StateDirectory=ember$' '^RuntimeDirectory=ember$' \
	'^ConfigurationDirectory=ember$' '^NoNewPrivileges=yes$' '^ProtectSystem=strict$' \
	'^ProtectHome=read-only$' '^MemoryMax=' \
	'^SystemCallFilter=.*\bbpf\b.*\bperf_event_open\b' \
	'^CapabilityBoundingSet=CAP_BPF CAP_PERFMON CAP_SYS_PTRACE CAP_DAC_READ_SEARCH CAP_SYSLOG CAP_CHECKPOINT_RESTORE$'; do
	grep -Eq "$want" "$UNIT" || fail "emberd.service has no line matching $want"
done
# emberd reads other processes' /tmp/perf-PID.map and /proc/kallsyms.
grep -Eq '^PrivateTmp=(yes|true|on|1)' "$UNIT" && fail "PrivateTmp= would hide the perf maps"
grep -Eq '^ProtectKernelTunables=(yes|true|on|1)' "$UNIT" &&
	fail "ProtectKernelTunables= would hide /proc/kallsyms"
pass "the unit carries the settings asked for"

mkdir -p "$T/man/man1" "$T/man/man5" "$T/man/man8"
cp "$EMBER_SRC/docs/man/emberd.8" "$T/man/man8/"
cp "$EMBER_SRC/docs/man/emberctl.1" "$T/man/man1/"
cp "$EMBER_SRC/docs/man/ember.conf.5" "$T/man/man5/"
sed "s|^ExecStart=/usr/sbin/emberd|ExecStart=$EMBERD|" "$UNIT" >"$T/emberd.service"
MANPATH=$T/man systemd-analyze verify "$T/emberd.service" >"$T/verify.txt" 2>&1 ||
	fail "systemd-analyze verify: $(cat "$T/verify.txt")"
[ -s "$T/verify.txt" ] && fail "systemd-analyze verify warned: $(cat "$T/verify.txt")"
pass "systemd-analyze verify (ExecStart=$EMBERD)"

systemd-analyze security --offline=true "$T/emberd.service" >"$T/security.txt" 2>&1 ||
	fail "systemd-analyze security: $(tail -5 "$T/security.txt")"
score=$(sed -n 's/.*Overall exposure level for emberd.service: \([0-9.]*\).*/\1/p' "$T/security.txt")
[ -n "$score" ] || fail "no exposure level in: $(tail -3 "$T/security.txt")"
# 3.3 when written (10 = fully exposed); a profiler needs BPF, ptrace and root.
awk -v s="$score" 'BEGIN { exit !(s <= 4.0) }' ||
	fail "exposure level $score is above 4.0: $(grep '✗' "$T/security.txt")"
pass "systemd-analyze security --offline=true: exposure $score (ceiling 4.0)"
