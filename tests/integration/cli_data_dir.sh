#!/bin/bash
# SPDX-License-Identifier: MIT
# A relative --data-dir (and $EMBER_DATA_DIR) is resolved against the working
# directory once at start, by emberctl (before and after the command, through the
# views' reader threads) and emberd (--check-config); a working directory that is
# gone is a clear error. No BPF: it runs anywhere emberctl builds.
# Env: EMBER_BUILD (build dir), EMBER_SRC (source dir). Exit 0 pass, 1 fail.
set -u
. "$(dirname "$0")/fail_trap.sh"
. "$(dirname "$0")/cli_lib.sh"

cli_setup data-dir
emberd=$build/daemon/emberd
"$mk" "$hist" >/dev/null || { fail mkhistory; exit 1; }
mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere" || exit 1
abs=$(realpath "$hist")

# the same three profiles as with the absolute path, named by their absolute place
run -d ../history list
expect_rc 0 "-d ../history list"
expect_out "3 profiles in the history, 55 samples" "-d ../history list"
EMBER_DATA_DIR=../history run list
expect_rc 0 "EMBER_DATA_DIR=../history list"
expect_out "3 profiles in the history" "EMBER_DATA_DIR=../history list"
run -d ../history status
expect_out "history:       $abs/history.db" "-d ../history status"
# a view's own --data-dir, read by one thread per CPU
run top -d ../history -n 1
expect_rc 0 "top -d ../history"
expect_out "55 samples" "top -d ../history"
# a directory that is not there is named whole
run -d ./nothing/here list
expect_rc 1 "-d ./nothing/here list"
expect_err "no history in $tmp/elsewhere/nothing/here" "-d ./nothing/here list"

# emberd takes a relative --data-dir (the configuration's data_dir must be absolute)
out=$("$emberd" --check-config --data-dir data 2>&1) || fail "emberd --data-dir data refused: $out"
[[ $out == "configuration OK" ]] || fail "emberd --check-config --data-dir data: $out"

# a working directory removed under the command: nothing to resolve against
mkdir "$tmp/gone"
cd "$tmp/gone" || exit 1
rmdir "$tmp/gone"
run -d history list
expect_rc 1 "-d history list in a removed directory"
expect_err 'cannot make "history" absolute from the working directory' "-d history list"
out=$("$emberd" --check-config --data-dir data 2>&1)
rc=$?
[[ $rc == 2 && $out == *"cannot make 'data' absolute from the working directory"* ]] ||
	fail "emberd --data-dir data in a removed directory: exit $rc, $out"
cd "$tmp" || exit 1

cli_finish
