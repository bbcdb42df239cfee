#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# promcheck against fixtures: every good-*.prom passes; every bad-*.prom fails
# with the message its first line names ("# expect: TEXT"). *-m-* files run
# with -m (HELP and TYPE required).
set -u
PROMCHECK=$1 DIR=$2
fails=0 n=0
for f in "$DIR"/good-*.prom "$DIR"/bad-*.prom; do
	n=$((n + 1))
	args=()
	case $(basename "$f") in *-m-*) args=(-m) ;; esac
	out=$("$PROMCHECK" "${args[@]}" "$f" 2>&1)
	rc=$?
	case $(basename "$f") in
	good-*)
		if [ $rc -ne 0 ]; then echo "FAIL: $f rejected: $out"; fails=$((fails + 1)); fi ;;
	bad-*)
		want=$(sed -n '1s/^# expect: //p' "$f")
		if [ $rc -ne 1 ]; then
			echo "FAIL: $f accepted (rc $rc): $out"; fails=$((fails + 1))
		elif [[ $out != *"$want"* ]]; then
			echo "FAIL: $f rejected for another reason: $out (want: $want)"
			fails=$((fails + 1))
		fi ;;
	esac
done
[ $n -ge 20 ] || { echo "FAIL: only $n fixtures found in $DIR"; exit 1; }
[ $fails -eq 0 ] || exit 1
echo "PASS: promcheck: $n fixtures"
