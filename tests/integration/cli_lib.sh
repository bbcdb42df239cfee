# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Helpers of the emberctl tests that read a history written by tests/tools/mkhistory
# (views.sh, views_type.sh, cli_export.sh; sourced after fail_trap.sh). Each check that
# misses is counted by fail; cli_finish exits 1 if any did.

# cli_setup NAME: emberctl and mkhistory from $EMBER_BUILD ($ctl, $mk), a scratch
# directory removed on exit ($tmp) and the history's path in it ($hist).
cli_setup() {
	CLI_NAME=$1
	build=${EMBER_BUILD:?EMBER_BUILD must name the build directory}
	ctl=$build/cli/emberctl
	mk=$build/tests/tools/mkhistory
	for bin in "$ctl" "$mk"; do
		if [[ ! -x $bin ]]; then
			echo "FAIL: $bin is not built" >&2
			FAIL_SAID=1
			exit 1
		fi
	done
	tmp=$(mktemp -d "/tmp/ember-$CLI_NAME.XXXXXX")
	at_exit 'rm -rf "$tmp"'
	hist=$tmp/history
	failures=0
}

fail() {
	echo "FAIL: $*" >&2
	FAIL_SAID=1
	failures=$((failures + 1))
}

# Arguments every run passes first (e.g. -d "$hist").
CTL_ARGS=()

# run ARGS...: runs emberctl; sets $out, $err, $rc
run() {
	out=$("$ctl" "${CTL_ARGS[@]}" "$@" 2>"$tmp/stderr")
	rc=$?
	err=$(<"$tmp/stderr")
}

expect_rc() {
	[[ $rc == "$1" ]] || fail "emberctl $2: exit $rc, want $1 (stderr: $err)"
}

expect_err() {
	[[ $err == *"$1"* ]] || fail "emberctl $2: stderr lacks \"$1\": $err"
}

expect_out() {
	[[ $out == *"$1"* ]] || fail "emberctl $2: stdout lacks \"$1\": $out"
}

# expect ARGS... <<EOF: emberctl ARGS exits 0 and prints exactly the here-document
expect() {
	local want
	want=$(cat)
	run "$@"
	expect_rc 0 "$*"
	[[ $out == "$want" ]] ||
		fail "emberctl $*: output differs (< want, > got):"$'\n'"$(diff <(echo "$want") <(echo "$out") | sed 's/^/  /')"
}

# cli_finish: exits 1 naming how many checks missed, else says the test passed
cli_finish() {
	if ((failures)); then
		echo "FAIL: $CLI_NAME: $failures check(s) failed" >&2
		exit 1
	fi
	echo "$CLI_NAME: ok"
}
