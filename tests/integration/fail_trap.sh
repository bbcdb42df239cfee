# SPDX-License-Identifier: MIT
# Sourced first by every integration script: an exit other than 0 always prints a FAIL line.
# fail and skip print their own reason and set FAIL_SAID; any other exit (set -e, set -u, a
# failing $(...), a bare exit) is named by the EXIT trap with its command and line.

FAIL_SAID=
ERR_CMD=
ERR_AT=
AT_EXIT=()

# The ERR trap notes where a command failed; set -E carries it into functions, where most
# commands of these scripts run. It prints nothing: a failure that a condition tests is no exit.
on_err() {
	ERR_CMD=$BASH_COMMAND
	ERR_AT="${BASH_SOURCE[1]##*/}:${BASH_LINENO[0]}"
}

# at_exit CMD: runs CMD (eval'ed) on exit, after the FAIL line; the script's own clean-up.
at_exit() {
	AT_EXIT+=("$1")
}

# on_exit RC COMMAND: the EXIT trap. COMMAND is the one running when the shell exited; its line
# is known when the ERR trap saw it fail (set -u exits bypass ERR, but bash names the line).
on_exit() {
	local rc=$1 cmd=$2 at=${0##*/} c

	if [ "$rc" -ne 0 ] && [ -z "$FAIL_SAID" ]; then
		[ "$cmd" = "$ERR_CMD" ] && at=$ERR_AT
		echo "FAIL: $at: $cmd exited $rc"
		! declare -F fail_context >/dev/null || fail_context
	fi
	for c in "${AT_EXIT[@]}"; do eval "$c" || true; done
	exit "$rc"
}

set -E
trap on_err ERR
trap 'on_exit $? "$BASH_COMMAND"' EXIT
