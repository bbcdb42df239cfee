#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# emberd's command line: help, configuration errors with FILE:LINE, privileges,
# and SIGTERM storing the partial interval.
. "$(dirname "$0")/lib.sh"
require_bpf

"$EMBERD" --help | grep -q -- '--duration' || fail "--help does not document --duration"
out=$("$EMBERD" --check-config --config "$EMBER_SRC/config/ember.conf") || fail "the shipped ember.conf is refused: $out"

# configuration: good, bad (every error with its line), missing
printf '[daemon]\nhz = 49   # comment\ninterval = 5s\n' >"$T/good.conf"
out=$("$EMBERD" --check-config --config "$T/good.conf") || fail "good config refused: $out"
[ "$out" = "configuration OK" ] || fail "unexpected --check-config output: $out"
printf '[daemon]\nhz = 5000\nbogus = 1\n[daemon]\ninterval = 0s\n' >"$T/bad.conf"
if "$EMBERD" --check-config --config "$T/bad.conf" 2>"$T/err"; then fail "bad config accepted"; fi
grep -q "bad.conf:2: hz" "$T/err" || fail "no line 2 error for hz: $(cat "$T/err")"
grep -q "bad.conf:3: unknown key 'bogus'" "$T/err" || fail "no line 3 error: $(cat "$T/err")"
grep -q "bad.conf:5: interval" "$T/err" || fail "no line 5 error: $(cat "$T/err")"
if "$EMBERD" --check-config --config "$T/missing.conf" 2>"$T/err"; then
	fail "missing --config file accepted"
fi
grep -q "missing.conf" "$T/err" || fail "missing file not named: $(cat "$T/err")"
if "$EMBERD" --hz 0 --check-config 2>"$T/err"; then fail "--hz 0 accepted"; fi

# without privileges: one line naming what is missing, non-zero exit
if command -v setpriv >/dev/null; then
	mkdir -p "$T/nobody" && chmod 777 "$T/nobody"
	rc=0
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$EMBERD" --data-dir "$T/nobody/data" --duration 1s 2>"$T/err" || rc=$?
	[ "$rc" -ne 0 ] || fail "emberd ran without privileges"
	[ "$(wc -l <"$T/err")" -eq 1 ] || fail "expected one line, got: $(cat "$T/err")"
	grep -q "CAP_BPF and CAP_PERFMON" "$T/err" || fail "message does not name the caps: $(cat "$T/err")"
fi

# SIGTERM stores the partial interval (profiles exist for what was sampled). The workload
# runs for 1 s of its own CPU time: ~19 samples at the default 19 Hz, on a loaded host too
# (2 s of wall time gave it none once).
start_emberd --interval 60s
"$FX/fx_work_ab" cpu:1
kill -TERM "$EMBERD_PID"
wait_emberd
n=$("$EMBERCTL" --data-dir "$T/data" list --type cpu --app fx_work_ab | grep -c ' cpu ' || true)
[ "$n" -eq 1 ] || fail "expected the partial interval stored on SIGTERM, found $n profiles"
pass "daemon command line"
